package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Error codes of docs/api.md. A server may add codes; switch with a default.
const (
	CodeInvalidRequest    = "invalid_request"
	CodeTopicNotFound     = "topic_not_found"
	CodePartitionNotFound = "partition_not_found"
	CodeNotFound          = "not_found"
	CodeMethodNotAllowed  = "method_not_allowed"
	CodeTopicExists       = "topic_exists"
	CodePayloadTooLarge   = "payload_too_large"
	CodeOffsetOutOfRange  = "offset_out_of_range"
	CodeUnavailable       = "unavailable"
	CodeInternal          = "internal"
	// CodeCorruptRecord (500, docs/api-extensions.md): records of the
	// partition are damaged on disk; the answer names the next readable
	// offset (Error.NextOffset, DamagedError.Next).
	CodeCorruptRecord = "corrupt_record"
	// CodeRequestTimeout (408): the request body did not arrive in time.
	CodeRequestTimeout = "request_timeout"
	// CodeOffsetMismatch (409): a conditional append found the high
	// watermark elsewhere (Error.HighWatermark); nothing was appended.
	CodeOffsetMismatch = "offset_mismatch"
	// CodeIdempotencyKeyInUse (409): another request with the same
	// Idempotency-Key is still in flight. Produce calls retry it.
	CodeIdempotencyKeyInUse = "idempotency_key_in_use"
	// CodeIdempotencyKeyReused (422): the Idempotency-Key was used for a
	// request with other records; nothing was appended.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeUnauthorized (401): token auth is on and the request carries no
	// valid token (none, malformed, unknown, expired, revoked).
	CodeUnauthorized = "unauthorized"
	// CodeForbidden (403): the token's scope does not cover the request.
	CodeForbidden = "forbidden"
	// CodeTokenNotFound (404): revoking an unknown token id.
	CodeTokenNotFound = "token_not_found"
)

// Errors of idempotent and conditional produce, for errors.Is: an *Error
// with the matching code is each of them.
var (
	ErrOffsetMismatch       = errors.New("client: offset mismatch")
	ErrIdempotencyKeyInUse  = errors.New("client: idempotency key in use")
	ErrIdempotencyKeyReused = errors.New("client: idempotency key reused with other records")
)

// Is makes errors.Is(err, ErrOffsetMismatch), ErrIdempotencyKeyInUse and
// ErrIdempotencyKeyReused hold for an answer with that code.
func (e *Error) Is(target error) bool {
	switch target { //nolint:errorlint // comparing the target sentinels
	case ErrOffsetMismatch:
		return e.Code == CodeOffsetMismatch
	case ErrIdempotencyKeyInUse:
		return e.Code == CodeIdempotencyKeyInUse
	case ErrIdempotencyKeyReused:
		return e.Code == CodeIdempotencyKeyReused
	}
	return false
}

// OffsetMismatchError is a conditional append (ProduceOptions.ExpectedOffset)
// refused: the partition's high watermark was HighWatermark, not
// Expected. Nothing was appended. errors.Is(err, ErrOffsetMismatch) holds.
type OffsetMismatchError struct {
	Expected      int64
	HighWatermark int64
	Err           *Error // the server's answer
}

func (e *OffsetMismatchError) Error() string {
	return fmt.Sprintf("client: expected offset %d, but the high watermark is %d: %v", e.Expected, e.HighWatermark, e.Err)
}

// Unwrap gives the server's *Error (errors.As, IsCode, errors.Is).
func (e *OffsetMismatchError) Unwrap() error { return e.Err }

// asMismatch turns an offset_mismatch answer into an *OffsetMismatchError.
func asMismatch(err error, expected int64) error {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeOffsetMismatch {
		return &OffsetMismatchError{Expected: expected, HighWatermark: e.HighWatermark, Err: e}
	}
	return err
}

// Error is an error answer of the API, or the error of one record of a
// produce answer (Status is then the status docs/api.md gives its code).
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is docs/api.md's error code, or "" when the answer was not in
	// docs/api.md's shape (for example API Gateway's own 403).
	Code string
	// Message is the server's message.
	Message string
	// RetryAfter is the Retry-After header, 0 if absent.
	RetryAfter time.Duration
	// RequestID is the X-Request-Id header, for the server's log.
	RequestID string
	// Op is the request, as "GET /v1/topics/t".
	Op string
	// LogStartOffset and HighWatermark are the partition bounds an
	// offset_out_of_range answer carries, HighWatermark alone that of an
	// offset_mismatch answer (valid when Code says so).
	LogStartOffset int64
	HighWatermark  int64
	// NextOffset is the first readable offset after the damage a
	// corrupt_record answer reports (valid when Code says so).
	NextOffset int64
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.Status)
	}
	if e.Op == "" {
		return fmt.Sprintf("%s (%s)", e.Message, code)
	}
	return fmt.Sprintf("%s (HTTP %d %s on %s)", e.Message, e.Status, code, e.Op)
}

// IsRetriable reports whether the request may succeed if sent again: 503
// unavailable, and what gateways answer for the same situations (429 too
// many requests, 502 bad gateway, 504 gateway timeout). For a produce the
// first attempt may have been committed: see the package doc on
// duplicates.
func (e *Error) IsRetriable() bool {
	switch e.Status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// IsRetriable reports whether err is worth retrying: a retriable *Error,
// or a failure to get an answer at all (connection refused or reset, a
// body cut short). A cancelled or expired context is not.
func IsRetriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.IsRetriable()
	}
	var te *transportError
	return errors.As(err, &te) || isNetError(err)
}

// IsUnreachable reports whether err is a failure to connect at all:
// nothing listens at the address (connection refused), the host name does
// not resolve, or there is no route to it. No request was sent, so any
// call may be repeated; whether to wait for the server is the caller's
// choice (see WithFailFast).
func IsUnreachable(err error) bool {
	var te *transportError
	return errors.As(err, &te) && unreachableCause(te.err) != ""
}

// unreachableCause names why err is a failure to connect at all
// ("connection refused", "no such host h", "no route to host"), or is ""
// for any other error.
func unreachableCause(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return "no such host " + dns.Name
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return ""
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	}
	return ""
}

// IsCode reports whether err is an *Error with docs/api.md code code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// statusOf is the status docs/api.md gives a code, for per-record errors.
func statusOf(code string) int {
	switch code {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeTopicNotFound, CodePartitionNotFound, CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeTopicExists, CodeOffsetMismatch, CodeIdempotencyKeyInUse:
		return http.StatusConflict
	case CodeIdempotencyKeyReused:
		return http.StatusUnprocessableEntity
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeOffsetOutOfRange:
		return http.StatusRequestedRangeNotSatisfiable
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeRequestTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// DamagedError is a fetch that reached records the server holds damaged
// on disk (corrupt_record): they cannot be read, now or on a retry. Next
// is the first offset after the damage that can be read, so a consumer
// may skip to it, losing the records in between; nothing skips by itself
// (see WithSkipDamaged for the Consumer).
type DamagedError struct {
	Topic     string
	Partition int
	Offset    int64 // the offset the fetch asked for
	Next      int64 // the first readable offset after the damage
	Err       *Error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("client: topic %q partition %d: records from offset %d are damaged; next readable offset %d: %v",
		e.Topic, e.Partition, e.Offset, e.Next, e.Err)
}

// Unwrap gives the server's *Error (errors.As, IsCode).
func (e *DamagedError) Unwrap() error { return e.Err }

// asDamaged turns a corrupt_record answer to a fetch into a *DamagedError.
func asDamaged(err error, topic string, partition int, offset int64) error {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeCorruptRecord && e.NextOffset > offset {
		return &DamagedError{Topic: topic, Partition: partition, Offset: offset, Next: e.NextOffset, Err: e}
	}
	return err
}

// parseError builds the *Error of a non-2xx answer: docs/api.md's shape, or
// API Gateway's {"message":...}, or the body as text.
func parseError(op string, res *http.Response, body []byte) *Error {
	e := &Error{
		Status:     res.StatusCode,
		Op:         op,
		RequestID:  res.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(res.Header.Get("Retry-After"), time.Now()),
	}
	var api struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Message        *string `json:"message"`
		LogStartOffset int64   `json:"log_start_offset"`
		HighWatermark  int64   `json:"high_watermark"`
		NextOffset     int64   `json:"next_offset"`
	}
	switch {
	case json.Unmarshal(body, &api) == nil && api.Error != nil:
		e.Code, e.Message = api.Error.Code, api.Error.Message
		e.LogStartOffset, e.HighWatermark = api.LogStartOffset, api.HighWatermark
		e.NextOffset = api.NextOffset
	case api.Message != nil:
		e.Message = *api.Message
	default:
		e.Message = strings.TrimSpace(cutText(body, 512))
	}
	if e.Message == "" {
		e.Message = http.StatusText(res.StatusCode)
	}
	return e
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 if absent or
// unreadable, capped at maxRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		d = time.Duration(max(n, 0)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	}
	return min(d, maxRetryAfter)
}

// cutText returns b as text, at most n bytes, without splitting a rune.
func cutText(b []byte, n int) string {
	if len(b) > n {
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		return string(b[:n]) + "..."
	}
	return string(b)
}
