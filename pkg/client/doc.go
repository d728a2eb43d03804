// Package client is the Go client of tierlog's HTTP API (API.md): one
// method per route on Client, a batching Producer and a long-polling
// Consumer on top. The CLI, the benchmarks and the end-to-end tests use
// it; it imports nothing of the server (only package wire, the binary
// batch format).
//
// # Formats
//
// JSON is the default. WithFormat(Binary) sends produce bodies as binary
// batches (application/vnd.tierlog.batch.v1, docs/api-binary.md) and asks
// for binary produce and fetch answers, so neither side pays for JSON or
// base64. Errors are JSON either way. Keys and values are bytes in both:
// in JSON the client picks utf8 or base64 per request so bytes are never
// altered.
//
// # Errors and retries
//
// A non-2xx answer is an *Error with the status, API.md's code and
// message, and Retry-After. IsRetriable says whether trying again is
// reasonable: 503 unavailable (and 429, 502, 504, which API Gateway
// answers), or a connection error before an answer arrived.
//
// Redirects are never followed, whatever http.Client is used: API.md has
// no 3xx, and a followed redirect that keeps the method can address
// another resource. A 3xx is an *Error. Records damaged on the server's
// disk are a *DamagedError naming the next readable offset: nothing skips
// them unless asked (Consumer: WithSkipDamaged).
//
// Client methods that change nothing (GETs) or that can be repeated
// (the group-offset PUT) retry retriable errors with exponential backoff
// and jitter, never sooner than Retry-After, for up to Backoff.MaxElapsed.
// Produce, create and delete are sent once by Client; the Producer retries
// produce batches for up to its delivery timeout.
//
// # Duplicates
//
// There is no idempotent producer yet. A 503 or a lost connection means
// the outcome of a produce is unknown: the records may have been
// committed. Retrying such a batch (the Producer does) can therefore
// append it twice, in order, after itself. Requests refused before the
// server touched the log (for example a 503 answered by a gateway or a
// busy lease before the append) are not duplicated. Consumers that cannot
// tolerate a duplicate must deduplicate, for example by a key or an id in
// the value.
//
// # Concurrency
//
// Client is safe for concurrent use and holds no per-request state.
// Producer is safe for concurrent use: Send from many goroutines; records
// of one partition are sent in Send order, at most one batch in flight per
// partition. Consumer's Poll is for one goroutine at a time; Commit,
// Position and Close may be called from any goroutine.
package client
