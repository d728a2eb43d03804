// Package api is tierlog's HTTP API (docs/api.md in the repository) as one
// http.Handler over a *broker.Broker. The local server serves it with
// net/http; Lambda serves the same handler through an API Gateway v2
// adapter. Errors become status codes in one place: classify, errors.go.
//
// # Routes
//
// The route table is routeTable (routes.go); docs/api.md documents each
// route, and TestAPIDocRoutes keeps the two equal.
//
//	GET    /v1/health                                          {"status":"ok"}
//	POST   /v1/topics                                          201 topic
//	GET    /v1/topics                                          {"topics":[...]} by name
//	GET    /v1/topics/{topic}                                  topic
//	PATCH  /v1/topics/{topic}                                  topic
//	DELETE /v1/topics/{topic}                                  204
//	POST   /v1/topics/{topic}/records                          Broker.ProduceWith
//	POST   /v1/topics/{topic}/partitions/{partition}/records   Broker.ProducePartitionWith
//	GET    /v1/topics/{topic}/partitions/{partition}/records   Broker.FetchAnswer (or a stream, sse.go)
//	GET    /v1/topics/{topic}/partitions/{partition}/offsets   Offsets / OffsetForTime
//	PUT    /v1/groups/{group}/offsets                          204
//	GET    /v1/groups/{group}/offsets?topic=T                  offsets with lag
//	POST   /v1/groups/{group}/offsets/reset                    offsets with lag
//	GET    /v1/groups                                          {"groups":[...]} by name
//	GET    /v1/groups/{group}                                  generation, members, offset topics
//	DELETE /v1/groups/{group}                                  204
//	POST   /v1/groups/{group}/members                          201 membership
//	POST   /v1/groups/{group}/members/{member}/heartbeat       membership
//	DELETE /v1/groups/{group}/members/{member}                 204
//
// Routing uses ServeMux patterns. A GET route also answers HEAD. Any other
// method on a known path is 405 method_not_allowed with an Allow header;
// any other path is 404 not_found; both in the API's error shape.
//
// # Decisions
//
// How the handler reads requests and answers them; docs/api.md states the
// same for clients.
//
//   - Paths are taken literally, never resolved: "/v1/topics/.." names the
//     topic "..", which is 400 like "/v1/topics/%2e%2e" (ServeMux would
//     answer a redirect). A path with an empty segment ("//") is 404
//     not_found. "%2F" inside a segment is part of the name (400). No
//     answer is ever a 3xx: routes outside the route table (the local
//     server's /metrics) are served by this handler too (WithRoute),
//     behind the same canonicalisation, never by a ServeMux in front of
//     it.
//   - Validation happens before any broker call: path names first, then
//     path numbers, then headers, query and body. Topic names follow
//     broker.ValidTopicName; group names the same rule
//     (`^[A-Za-z0-9._-]{1,249}$`, not "." or "..").
//   - Numbers in paths and queries are ASCII digits only: no sign, space,
//     exponent or hex, not empty. Offsets and timestamps must fit an int64,
//     partitions an int32 (Kafka's type); a bigger number is 400, while a
//     partition that fits but the topic lacks is 404 partition_not_found.
//     A query parameter given twice is 400; unknown parameters are ignored.
//   - Fetch caps are clamped, not refused: max_records above 10,000 reads
//     10,000, max_bytes above 4 MiB reads 4 MiB, wait_ms above 20,000 waits
//     20 s. Below the minimum is 400: max_records and max_bytes >= 1,
//     wait_ms >= 0.
//   - Bodies: at most 5 MiB (413). Strict (readJSON, decode.go): an
//     unknown field, a field given twice or a field in the wrong case is
//     400 naming the field with its path; wrong JSON types, malformed JSON
//     and anything but white space after the object are 400. Absent or
//     null optional fields take their defaults.
//   - Records: "key" absent or null is no key; "value" null is a tombstone;
//     "value" absent is 400 "value is required (use null for a
//     tombstone)", so a typo is not a silent delete. "" is an empty,
//     non-nil key or value, distinct from null. "partition" null is
//     absent; otherwise a non-negative integer (1.0, 1e0 are 400). On the
//     partition route a record with a partition is 400.
//   - utf8 mode on produce never alters bytes either: a string that is not
//     valid UTF-8, or has an unpaired surrogate escape (\ud800) that
//     encoding/json would turn into U+FFFD, is 400; such bytes travel as
//     base64. base64 is standard, padded (RFC 4648 section 4), strict:
//     non-zero padding bits, white space and line breaks are 400 (the
//     standard decoder would skip "\r" and "\n").
//   - More than 10,000 records is 413, refused while streaming at record
//     10,001. A record whose key, value and headers exceed 1 MiB (after
//     base64 decoding) is 413.
//   - Fetch in utf8 mode: a record without key has "key":null, a tombstone
//     "value":null. key_encoding / value_encoding appear only on a field
//     that is base64 because it is not valid UTF-8. In base64 mode every
//     key and value is base64 and no *_encoding field appears.
//   - Topics are shown with the configuration fields of the create
//     request (topicJSON). The store's incarnation id and creation time are internal
//     and not shown (adding them later is compatible; removing is not).
//   - Group commits: "topic", "partition", "offset" required, "metadata"
//     optional ("" when absent), at most 4 KiB (Kafka's
//     offset.metadata.max.bytes; more is 413), 1 to 10,000 entries, no
//     (topic, partition) twice (400). An unknown group reads as
//     {"offsets":[]}.
//   - Context errors (deadline, client gone) and broker.ErrClosed are 503
//     unavailable with Retry-After: 1, like ErrUnavailable of the broker,
//     package partition or package meta (the metadata store): the outcome
//     is unknown and a retry is safe. A 503's message is fixed per cause
//     ("partition busy: retry", "metadata store unavailable: retry", ...):
//     the cause names files, epochs and SDK internals, and is logged with
//     the request id instead (at debug when the client had gone away).
//   - Records damaged on disk (*partition.DamagedError) are 500
//     corrupt_record with "next_offset", the first readable offset after
//     the damage, beside "error" (docs/api.md, "Damaged records").
//   - A body over 5 MiB by its Content-Length is 413 before it is read (no
//     100 Continue). With WithBodyReadTimeout, a body still arriving after
//     the timeout is 408 request_timeout and the connection is closed.
//   - Binary batches (docs/api-binary.md, package wire) are negotiated,
//     never required: a produce body is a binary batch only when its
//     Content-Type is exactly application/vnd.tierlog.batch.v1 or .v2
//     (parameters ignored); any other or no Content-Type is JSON (curl
//     sends a form type; there is no 415). Produce and fetch answer binary
//     only when Accept names one of those types with q > 0 (version 2 if
//     it names that); "*/*" is JSON. The two directions are independent.
//     Errors are always JSON in the API's error shape.
//     Produce and fetch answers carry "Vary: Accept". Binary bodies have
//     the JSON limits (10,000 records, 1 MiB a record: 413; 5 MiB body:
//     413); a malformed batch is 400 with the decoder's reason; zero
//     records is 400; a per-record partition on the partition route is
//     400. On fetch, the encoding parameter is still validated but has no
//     effect on a binary answer (bytes are bytes).
//   - Every answer has an X-Request-Id (generated, never taken from the
//     request). A 500 says only "internal error; request id X"; the log has
//     the error. A panic is recovered into a 500 and logged with its stack.
package api
