package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/tierlog/tierlog/pkg/broker"
)

// Error codes of API.md's table. Never change them: clients switch on them.
const (
	codeInvalidRequest     = "invalid_request"
	codeTopicNotFound      = "topic_not_found"
	codePartitionNotFound  = "partition_not_found"
	codeNotFound           = "not_found"
	codeMethodNotAllowed   = "method_not_allowed"
	codeTopicExists        = "topic_exists"
	codePayloadTooLarge    = "payload_too_large"
	codeOffsetOutOfRange   = "offset_out_of_range"
	codeUnavailable        = "unavailable"
	codeInternal           = "internal"
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
// set only for offset_out_of_range (API.md: "body also has both").
type errorResponse struct {
	Error          errorBody `json:"error"`
	LogStartOffset *int64    `json:"log_start_offset,omitempty"`
	HighWatermark  *int64    `json:"high_watermark,omitempty"`
}

// classification is what classify decides about an error.
type classification struct {
	status int
	body   errorResponse
	allow  string
}

// classify is the one place that maps errors to API.md's status/code table.
// It is used for request-level errors (writeError) and for the per-record
// errors of a produce answer. Unmapped errors are internal: the message
// names the request id only; the error itself is logged by the caller.
func classify(err error, requestID string) classification {
	var (
		ae  *apiError
		mbe *http.MaxBytesError
		oor *broker.OffsetOutOfRangeError
	)
	c := func(status int, code, msg string) classification {
		return classification{status: status, body: errorResponse{Error: errorBody{Code: code, Message: msg}}}
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
		cl := c(http.StatusRequestedRangeNotSatisfiable, codeOffsetOutOfRange, err.Error())
		lso, hw := oor.LogStartOffset, oor.HighWatermark
		cl.body.LogStartOffset, cl.body.HighWatermark = &lso, &hw
		return cl
	case errors.Is(err, broker.ErrTopicNotFound):
		return c(http.StatusNotFound, codeTopicNotFound, err.Error())
	case errors.Is(err, broker.ErrPartitionNotFound):
		return c(http.StatusNotFound, codePartitionNotFound, err.Error())
	case errors.Is(err, broker.ErrTopicExists):
		return c(http.StatusConflict, codeTopicExists, err.Error())
	case errors.Is(err, broker.ErrTooLarge):
		return c(http.StatusRequestEntityTooLarge, codePayloadTooLarge, err.Error())
	case errors.Is(err, broker.ErrInvalid):
		return c(http.StatusBadRequest, codeInvalidRequest, err.Error())
	case errors.Is(err, broker.ErrUnavailable), errors.Is(err, broker.ErrClosed):
		// ErrClosed: this instance is shutting down; another (or this one
		// restarted) will answer, so a retry is safe.
		return c(http.StatusServiceUnavailable, codeUnavailable, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// The request ran out of time or the client went away: for a
		// produce the commit's outcome is unknown, which is exactly what
		// 503 unavailable means ("safe to retry").
		return c(http.StatusServiceUnavailable, codeUnavailable, err.Error())
	default:
		return c(http.StatusInternalServerError, codeInternal, fmt.Sprintf(internalMessagePattern, requestID))
	}
}

// writeError answers err through classify, logging internal errors with the
// request id.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	id := requestIDFrom(r.Context())
	cl := classify(err, id)
	if cl.status == http.StatusInternalServerError {
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", id), slog.String("method", r.Method),
			slog.String("path", r.URL.EscapedPath()), slog.String("err", err.Error()))
	}
	h := w.Header()
	if cl.allow != "" {
		h.Set("Allow", cl.allow)
	}
	if cl.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", retryAfterUnavailable)
	}
	s.writeJSON(w, r, cl.status, &cl.body)
}

// recordError is the per-record "error" of a produce answer, classified
// like a request-level error.
func (s *server) recordError(r *http.Request, err error) *errorBody {
	id := requestIDFrom(r.Context())
	cl := classify(err, id)
	if cl.status == http.StatusInternalServerError {
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error in produce result",
			slog.String("request_id", id), slog.String("path", r.URL.EscapedPath()),
			slog.String("err", err.Error()))
	}
	return &cl.body.Error
}
