// Command fetch is tierlog's fetch Lambda function: the read routes of the
// HTTP API (records from the hot or cold tier, offsets, topic and group
// reads, health) behind API Gateway (HTTP API, payload 2.0).
// Configuration: see package lambdafn.
package main

import (
	"context"

	"github.com/tierlog/tierlog/pkg/lambdafn"
)

func main() {
	fn, err := lambdafn.New(context.Background(), "fetch")
	if err != nil {
		lambdafn.Fatal("fetch", err)
	}
	fn.Start(fn.HTTP(lambdafn.ReadMethods...))
}
