// Command compactor is tierlog's compactor Lambda function: on the
// EventBridge schedule a pass over every partition (seal to S3, retention,
// cleanup), on produce's "segment rolled" event a pass over the partitions
// it names. Configuration: see package lambdafn.
package main

import (
	"context"

	"github.com/tierlog/tierlog/pkg/lambdafn"
)

func main() {
	fn, err := lambdafn.New(context.Background(), "compactor")
	if err != nil {
		lambdafn.Fatal("compactor", err)
	}
	fn.Start(fn.Compactor())
}
