// Package examples holds runnable examples of tierlog as a library: an
// embedded server (pkg/server) with the Go client (pkg/client) producing
// and consuming, the consumer's reset policy, and a client that signs its
// requests for an IAM-protected API Gateway. `go test ./examples` runs
// them; each is also shown on the package's documentation page.
package examples
