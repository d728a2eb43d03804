package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/subscribe"
)

// Error codes of docs/api.md's table. Never change them: clients switch on them.
const (
	codeInvalidRequest    = "invalid_request"
	codeTopicNotFound     = "topic_not_found"
	codePartitionNotFound = "partition_not_found"
	codeNotFound          = "not_found"
	codeMethodNotAllowed  = "method_not_allowed"
	codeTopicExists       = "topic_exists"
	codePayloadTooLarge   = "payload_too_large"
	codeOffsetOutOfRange  = "offset_out_of_range"
	codeUnavailable       = "unavailable"
	codeInternal          = "internal"
	codeCorruptRecord     = "corrupt_record"  // docs/api.md
	codeRequestTimeout    = "request_timeout" // docs/api.md
	codeOffsetMismatch    = "offset_mismatch"
	codeKeyInUse          = "idempotency_key_in_use"
	codeKeyReused         = "idempotency_key_reused"
	codeGroupNotFound     = "group_not_found"
	codeMemberNotFound    = "member_not_found"
	codeStaleGeneration   = "stale_generation"
	codeNotAssigned       = "not_assigned"
	// codeClientClosed is the code of a request whose client went away
	// before its answer (statusClientClosed): logged and counted, never
	// read by anyone.
	codeClientClosed       = "client_closed_request"
	retryAfterUnavailable  = "1" // seconds, sent with every 503
	contentTypeJSON        = "application/json"
	headerRequestID        = "X-Request-Id"
	internalMessagePattern = "internal error; request id %s"
)

// apiError is an error the API layer itself decides on (bad parameter, bad
// body, unknown route): it already knows its status and code.
type apiError struct {
	status int
	code   string
	msg    string
	allow  string // Allow header of a 405
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: codeInvalidRequest, msg: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: codePayloadTooLarge, msg: fmt.Sprintf(format, args...)}
}

// errorBody is the "error" object of every non-2xx answer.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorResponse is the body of every non-2xx answer. The offset fields are
// set only for offset_out_of_range (docs/api.md: "body also has both"),
// HighWatermark alone for offset_mismatch (the high watermark the
// condition failed on), and NextOffset only for corrupt_record (the first
// readable offset after the damage, docs/api.md).
type errorResponse struct {
	Error          errorBody `json:"error"`
	LogStartOffset *int64    `json:"log_start_offset,omitempty"`
	HighWatermark  *int64    `json:"high_watermark,omitempty"`
	NextOffset     *int64    `json:"next_offset,omitempty"`
}

// classification is what classify decides about an error. logged asks
// the caller to log the full error at logLevel, with the request id: the
// body says less than the error does.
type classification struct {
	status   int
	body     errorResponse
	allow    string
	logLevel slog.Level
	logged   bool
}

// statusClientClosed (nginx's 499 "client closed request") is the status
// a request is logged and counted with (tierlog_http_requests_total's
// code label) when its client went away before the answer: a long-poll
// or a produce the client gave up on. It is not the server failing, so
// it is neither a 503 nor a warning.
const statusClientClosed = 499

// The messages of 503 unavailable, one per kind of cause. They are fixed:
// the cause's own text names server paths, fencing epochs and owners, or
// SDK request ids, which stay in the server's log.
const (
	msgShuttingDown    = "server shutting down: retry"
	msgPartitionBusy   = "partition busy: retry"
	msgMetaDown        = "metadata store unavailable: retry"
	msgCommitUnknown   = "commit outcome unknown: retry"
	msgWaitedOut       = "partition busy until the deadline; outcome unknown: retry with the same Idempotency-Key"
	msgPartitionDown   = "partition unavailable: retry"
	msgInvalidGeneric  = "invalid request"
	msgTooLargeGeneric = "payload too large"
)

// classify is the one place that maps errors to docs/api.md's status/code table.
// It is used for request-level errors (writeError) and for the per-record
// errors of a produce answer. Unmapped errors are internal: the message
// names the request id only; the error itself is logged by the caller.
//
// Messages never carry what lies below the API: a 503 answers a fixed
// message per kind (unavailableMessage), a 500 the request id, and a 400 or
// 413 from the broker its own validation message, unless a lower-level
// error (a file, a socket) rides along (foreign).
func classify(err error, requestID string) classification {
	var (
		ae  *apiError
		mbe *http.MaxBytesError
		oor *broker.OffsetOutOfRangeError
		dmg *partition.DamagedError
		om  *broker.OffsetMismatchError
	)
	c := func(status int, code, msg string) classification {
		return classification{status: status, body: errorResponse{Error: errorBody{Code: code, Message: msg}}}
	}
	if cl, ok := authRefusal(err); ok {
		return cl
	}
	switch {
	case errors.As(err, &ae):
		cl := c(ae.status, ae.code, ae.msg)
		cl.allow = ae.allow
		return cl
	case errors.As(err, &mbe):
		return c(http.StatusRequestEntityTooLarge, codePayloadTooLarge,
			fmt.Sprintf("request body is larger than %d bytes", mbe.Limit))
	case errors.As(err, &oor):
		cl := c(http.StatusRequestedRangeNotSatisfiable, codeOffsetOutOfRange, publicMessage(err))
		lso, hw := oor.LogStartOffset, oor.HighWatermark
		cl.body.LogStartOffset, cl.body.HighWatermark = &lso, &hw
		return cl
	case errors.As(err, &dmg):
		cl := c(http.StatusInternalServerError, codeCorruptRecord, damagedMessage(dmg))
		next := dmg.Next
		cl.body.NextOffset = &next
		cl.logLevel, cl.logged = slog.LevelError, true
		return cl
	case errors.As(err, &om):
		// Nothing was appended; the client re-reads and decides.
		cl := c(http.StatusConflict, codeOffsetMismatch, fmt.Sprintf(
			"expected_offset %d does not match the partition's high watermark %d: nothing was appended",
			om.Expected, om.HighWatermark))
		hw := om.HighWatermark
		cl.body.HighWatermark = &hw
		return cl
	case errors.Is(err, broker.ErrOffsetMismatch):
		// The sentinel without its *OffsetMismatchError: no high
		// watermark to report (a broker bug, logged).
		cl := c(http.StatusConflict, codeOffsetMismatch, "expected_offset does not match the partition's high watermark: nothing was appended")
		cl.logLevel, cl.logged = slog.LevelError, true
		return cl
	case errors.Is(err, broker.ErrIdempotencyKeyInUse):
		return c(http.StatusConflict, codeKeyInUse, keyMessage(err,
			"is in use by another request still in flight: retry once it has completed (a retry with the same body then answers its result)"))
	case errors.Is(err, broker.ErrIdempotencyKeyReused):
		return c(http.StatusUnprocessableEntity, codeKeyReused, keyMessage(err,
			"was used before for a request with other contents: nothing was appended; use a new key for a new request"))
	case errors.Is(err, broker.ErrGroupNotFound):
		return c(http.StatusNotFound, codeGroupNotFound, publicMessage(err))
	case errors.Is(err, broker.ErrMemberNotFound):
		return c(http.StatusNotFound, codeMemberNotFound, publicMessage(err))
	case errors.Is(err, broker.ErrStaleGeneration):
		return c(http.StatusConflict, codeStaleGeneration, publicMessage(err))
	case errors.Is(err, broker.ErrNotAssigned):
		return c(http.StatusConflict, codeNotAssigned, publicMessage(err))
	case errors.Is(err, subscribe.ErrNotFound):
		return c(http.StatusNotFound, codeSubscriptionNotFound, publicMessage(err))
	case errors.Is(err, subscribe.ErrExists):
		return c(http.StatusConflict, codeSubscriptionExists, publicMessage(err))
	case errors.Is(err, subscribe.ErrInvalid):
		return validation(c(http.StatusBadRequest, codeInvalidRequest, publicMessage(err)), err, msgInvalidGeneric)
	case errors.Is(err, broker.ErrTopicNotFound):
		return c(http.StatusNotFound, codeTopicNotFound, publicMessage(err))
	case errors.Is(err, broker.ErrPartitionNotFound):
		return c(http.StatusNotFound, codePartitionNotFound, publicMessage(err))
	case errors.Is(err, broker.ErrTopicExists):
		return c(http.StatusConflict, codeTopicExists, publicMessage(err))
	case errors.Is(err, broker.ErrTooLarge):
		return validation(c(http.StatusRequestEntityTooLarge, codePayloadTooLarge, publicMessage(err)), err, msgTooLargeGeneric)
	case errors.Is(err, broker.ErrInvalid):
		return validation(c(http.StatusBadRequest, codeInvalidRequest, publicMessage(err)), err, msgInvalidGeneric)
	case unavailable(err):
		// Safe to retry: nothing was acknowledged. The message is fixed
		// per kind; the cause is logged.
		cl := c(http.StatusServiceUnavailable, codeUnavailable, unavailableMessage(err))
		cl.logLevel, cl.logged = slog.LevelWarn, true
		return cl
	default:
		cl := c(http.StatusInternalServerError, codeInternal, fmt.Sprintf(internalMessagePattern, requestID))
		cl.logLevel, cl.logged = slog.LevelError, true
		return cl
	}
}

// unavailable reports whether err is a 503: a busy or unreachable lower
// layer, whichever package says so, a shutdown (another instance, or this
// one restarted, will answer), or the request's own deadline or client
// going away (for a produce the commit's outcome is then unknown).
func unavailable(err error) bool {
	for _, target := range []error{
		broker.ErrUnavailable, broker.ErrClosed,
		partition.ErrUnavailable, partition.ErrClosed,
		meta.ErrUnavailable, meta.ErrLeaseHeld, meta.ErrFenced,
		context.DeadlineExceeded, context.Canceled,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// unavailableMessage is the fixed message of a 503, by cause. The order
// matters: the most specific cause wins (a fenced commit is wrapped in
// partition and broker ErrUnavailable too).
func unavailableMessage(err error) string {
	switch {
	case errors.Is(err, broker.ErrClosed), errors.Is(err, partition.ErrClosed):
		return msgShuttingDown
	case errors.Is(err, partition.ErrWaitedOut):
		return msgWaitedOut
	case errors.Is(err, meta.ErrLeaseHeld), errors.Is(err, meta.ErrFenced):
		// Another writer holds the partition or took it over: nothing of
		// this request was committed.
		return msgPartitionBusy
	case errors.Is(err, meta.ErrUnavailable):
		return msgMetaDown
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return msgCommitUnknown
	}
	return msgPartitionDown
}

// validation keeps a broker validation message unless the error carries a
// lower-level one (a path, a socket): then the generic message.
func validation(cl classification, err error, generic string) classification {
	if foreign(err) {
		cl.body.Error.Message = generic
		cl.logLevel, cl.logged = slog.LevelWarn, true
	}
	return cl
}

// foreign reports whether err wraps an error of the operating system or
// the network, whose text may name server paths or addresses.
func foreign(err error) bool {
	var (
		pe *fs.PathError
		le *os.LinkError
		se *os.SyscallError
		ne *net.OpError
	)
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &ne)
}

// keyMessage is the message of an idempotency error: the key (when the
// handler wrapped err in a keyedError) and what is wrong with it.
func keyMessage(err error, what string) string {
	var ke *keyedError
	if errors.As(err, &ke) {
		return fmt.Sprintf("%s %s %s", headerIdempotencyKey, quote(ke.key), what)
	}
	return fmt.Sprintf("the %s %s", headerIdempotencyKey, what)
}

// damagedMessage names what is damaged and where to go on, without the
// check's own text (file names, positions): that is logged.
func damagedMessage(d *partition.DamagedError) string {
	return fmt.Sprintf("records %d to %d of topic %s partition %d are damaged on disk and cannot be served; "+
		"the next readable offset is %d (next_offset)", d.First, d.Next-1, quote(d.Topic), d.Partition, d.Next)
}

// writeError answers err through classify, logging what the body leaves
// out (internal errors, the causes of 503s, damage) with the request id.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	cl := s.classifyLogged(r, err, "request failed")
	h := w.Header()
	if cl.allow != "" {
		h.Set("Allow", cl.allow)
	}
	if cl.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", "Bearer")
	}
	if cl.status == http.StatusServiceUnavailable || cl.body.Error.Code == codeKeyInUse {
		// A key in use is retriable too: once the first request is
		// done, the retry answers its result.
		h.Set("Retry-After", retryAfterUnavailable)
	}
	if cl.body.Error.Code != codeRequestTimeout { // a body that stopped arriving is not waited for again
		drainBody(w, r)
	}
	if cl.body.Error.Code == codeRequestTimeout || (cl.status == http.StatusRequestEntityTooLarge && r.ContentLength > maxBodyBytes) {
		// The body was not (or not all) read: the connection cannot
		// carry another request.
		h.Set("Connection", "close")
	}
	s.writeJSON(w, r, cl.status, &cl.body)
}

// recordError is the per-record "error" of a produce answer, classified
// like a request-level error.
func (s *server) recordError(r *http.Request, err error) *errorBody {
	cl := s.classifyLogged(r, err, "produce result failed")
	return &cl.body.Error
}

// classifyLogged is classify for an error of r, logging what the answer
// leaves out (classification.logged) as msg, with the request id. An
// unavailable error of a request whose client went away is a 499
// client_closed_request (statusClientClosed), logged at debug only: the
// client's leaving ended the request (a long-poll, a produce it gave up
// on), not a failure of the server.
func (s *server) classifyLogged(r *http.Request, err error, msg string) classification {
	id := requestIDFrom(r.Context())
	cl := classify(err, id)
	if cl.status == http.StatusServiceUnavailable && clientGone(r) {
		cl.status, cl.logLevel = statusClientClosed, slog.LevelDebug
		cl.body.Error = errorBody{Code: codeClientClosed, Message: "the client closed the request before its answer"}
	}
	if !cl.logged {
		return cl
	}
	level := cl.logLevel
	s.log.LogAttrs(r.Context(), level, msg,
		slog.String("request_id", id), slog.String("method", r.Method),
		slog.String("path", r.URL.EscapedPath()), slog.Int("status", cl.status),
		slog.String("code", cl.body.Error.Code), slog.String("err", err.Error()))
	return cl
}

// clientGone reports whether r's client went away: net/http cancels the
// request's context when it sees the connection close (a deadline on the
// context, as a function's invocation has, is not the client leaving).
func clientGone(r *http.Request) bool {
	return errors.Is(r.Context().Err(), context.Canceled)
}

// What an error answer leaves of the request body unread (an oversized
// body; the body of a request refused before it was read: a bad topic
// name, an unknown route) is read and dropped before the answer, up to
// maxDrainBytes and for at most maxDrainTime: a client that sends its
// whole body before it reads the answer (most HTTP libraries) then reads
// the error, where a connection closed under its upload would reset. A
// larger or slower body is cut (the connection closes).
const (
	maxDrainBytes = 32 << 20
	maxDrainTime  = 10 * time.Second
)

// drainBody reads what is left of r's body, within the bounds above. A
// client that asked "Expect: 100-continue" sent no body: nothing to read.
func drainBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(maxDrainTime)) // unsupported: no deadline to set
	_, _ = io.CopyN(io.Discard, r.Body, maxDrainBytes)
	_ = rc.SetReadDeadline(time.Time{})
}
