// Command produce is tierlog's produce Lambda function: the write routes of
// the HTTP API (records, topic create and delete, group commits) behind API
// Gateway (HTTP API, payload 2.0). When a request seals a segment it sends
// the compactor function (TIERLOG_COMPACTOR_FUNCTION) one asynchronous
// invoke before answering; after committed records it wakes the delivery
// function (TIERLOG_DELIVER_FUNCTION) the same way, debounced.
// Configuration: see package lambdafn.
package main

import (
	"context"

	"github.com/tierlog/tierlog/pkg/lambdafn"
	"github.com/tierlog/tierlog/pkg/lambdafn/compactnotify"
)

func main() {
	fn, err := lambdafn.New(context.Background(), "produce",
		lambdafn.WithRollNotifier(compactnotify.New), lambdafn.WithDeliverWaker(compactnotify.New))
	if err != nil {
		lambdafn.Fatal("produce", err)
	}
	fn.Start(fn.HTTP(lambdafn.WriteMethods...))
}
