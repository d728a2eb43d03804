package lambdafn

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Log field names, those of Lambda's own JSON log format.
const (
	logKeyTime      = "timestamp"
	logKeyMessage   = "message"
	logKeyRequestID = "requestId"
	logKeyFunction  = "function"
)

// requestIDs tracks the invocation in flight, for log records made with a
// context that does not carry it (a storage layer logging with
// context.Background, the compactor's inner loops). A Lambda container
// serves one invocation at a time; with more (Lambda Managed Instances,
// AWS_LAMBDA_MAX_CONCURRENCY > 1) the fallback is off and only contexts
// name the request.
type requestIDs struct {
	current  atomic.Pointer[string]
	fallback bool
}

func (r *requestIDs) set(id string) {
	if r.fallback {
		r.current.Store(&id)
	}
}

func (r *requestIDs) clear() { r.current.Store(nil) }

func (r *requestIDs) from(ctx context.Context) string {
	if ctx != nil {
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			return lc.AwsRequestID
		}
	}
	if p := r.current.Load(); p != nil {
		return *p
	}
	return ""
}

// newLogger returns a JSON logger writing one object a line to w, in the
// field names of Lambda's JSON log format (timestamp, level, message,
// requestId), with the function's name on every record.
func newLogger(w io.Writer, level slog.Leveler, function string, ids *requestIDs) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 {
				switch a.Key {
				case slog.TimeKey:
					a.Key = logKeyTime
				case slog.MessageKey:
					a.Key = logKeyMessage
				}
			}
			return a
		},
	})
	return slog.New(&requestHandler{h: h.WithAttrs([]slog.Attr{slog.String(logKeyFunction, function)}), ids: ids})
}

// requestHandler adds the request id to every record. Records logged
// through WithGroup get it inside the group (nothing in tierlog groups).
type requestHandler struct {
	h   slog.Handler
	ids *requestIDs
}

func (h *requestHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *requestHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := h.ids.from(ctx); id != "" {
		r.AddAttrs(slog.String(logKeyRequestID, id))
	}
	return h.h.Handle(ctx, r)
}

func (h *requestHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &requestHandler{h: h.h.WithAttrs(as), ids: h.ids}
}

func (h *requestHandler) WithGroup(name string) slog.Handler {
	return &requestHandler{h: h.h.WithGroup(name), ids: h.ids}
}
