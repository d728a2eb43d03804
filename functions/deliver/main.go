// Command deliver is tierlog's delivery Lambda function: it pushes the
// records of every enabled subscription to its target (docs/subscriptions.md).
// Woken by produce after committed records (TIERLOG_DELIVER_FUNCTION, an
// asynchronous invoke, debounced) and by an EventBridge schedule as a
// safety net, it delivers until every partition is caught up, then returns.
// Configuration: see package lambdafn.
package main

import (
	"context"

	"github.com/tierlog/tierlog/pkg/lambdafn"
)

func main() {
	fn, err := lambdafn.New(context.Background(), "deliver")
	if err != nil {
		lambdafn.Fatal("deliver", err)
	}
	fn.Start(fn.Deliver())
}
