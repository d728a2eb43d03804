// Package client is the Go client of tierlog's HTTP API (docs/api.md): one
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
// A non-2xx answer is an *Error with the status, docs/api.md's code and
// message, and Retry-After. IsRetriable says whether trying again is
// reasonable: 503 unavailable (and 429, 502, 504, which API Gateway
// answers), or a connection error before an answer arrived.
//
// Redirects are never followed, whatever http.Client is used: docs/api.md has
// no 3xx, and a followed redirect that keeps the method can address
// another resource. A 3xx is an *Error. Records damaged on the server's
// disk are a *DamagedError naming the next readable offset: nothing skips
// them unless asked (Consumer: WithSkipDamaged).
//
// Client methods that change nothing (GETs) or that can be repeated
// (the group-offset PUT, and produce: see below) retry retriable errors
// with exponential backoff and jitter, never sooner than Retry-After, for
// up to Backoff.MaxElapsed. Create and delete are sent once by Client; the
// Producer retries produce batches for up to its delivery timeout.
//
// # Duplicates
//
// Every produce request carries an Idempotency-Key (docs/api.md): a random
// 128-bit key per call (per batch for the Producer) unless the caller
// gives one (ProduceOptions.IdempotencyKey), and every retry of that call
// carries the same key. Produce calls retry 503 (and 429, 502, 504), lost
// connections, 408 request_timeout and 409 idempotency_key_in_use (an
// earlier attempt still in flight). A server that implements docs/api.md's
// idempotency appends a retried request once and answers it with the
// first attempt's offsets (Result.Replayed, ProduceReply.Replayed). When
// the retries give up, the call's error (the Producer: each record's Err)
// is the last attempt's, as before: the outcome is then unknown, and a
// later call with the same key and records settles it.
//
// # Concurrency
//
// Client is safe for concurrent use and holds no per-request state.
// Producer is safe for concurrent use: Send from many goroutines; records
// of one partition are sent in Send order, at most one batch in flight per
// partition. Consumer's Poll is for one goroutine at a time; Commit,
// Position and Close may be called from any goroutine.
package client
