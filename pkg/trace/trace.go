// Package trace is tierlog's tracing hook: named spans around the steps worth
// seeing in a trace (an EFS append and fsync, a metadata commit, a compactor
// step), without tying the storage packages to a tracing SDK.
//
// The Tracer travels in the context, so a request's spans nest under the
// request's own trace wherever the context goes (the Lambda functions put an
// X-Ray tracer there; see package lambdafn). Without one, Capture just calls
// fn: the cost is one context lookup.
//
// Span names are constants below; never change them lightly, dashboards and
// tests look for them.
package trace

import "context"

// Span names used by the storage packages.
const (
	SpanAcquire     = "tierlog.lease_acquire"      // partition: the lease's conditional write
	SpanAppendFsync = "tierlog.efs_append_fsync"   // partition: pwrite of a batch and fsync
	SpanCommit      = "tierlog.metadata_commit"    // partition: the commit's conditional write
	SpanCompactPart = "tierlog.compact_partition"  // compactor: one pass over one partition
	SpanFinalize    = "tierlog.compact_finalize"   // compactor: one sealed segment to the cold tier
	SpanRetention   = "tierlog.compact_retention"  // compactor: advance the log start
	SpanHotCleanup  = "tierlog.compact_hot_clean"  // compactor: delete hot files
	SpanColdCleanup = "tierlog.compact_cold_clean" // compactor: delete artifacts below the log start
)

// Tracer runs fn inside a span called name. The context fn receives carries
// the span, so spans started inside nest under it. Capture returns fn's error
// (and may record it on the span). Implementations must be safe for
// concurrent use.
type Tracer interface {
	Capture(ctx context.Context, name string, fn func(context.Context) error) error
}

type ctxKey struct{}

// WithTracer returns a context whose Capture calls go to t. A nil t removes
// any tracer.
func WithTracer(ctx context.Context, t Tracer) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the context's Tracer, or nil.
func FromContext(ctx context.Context) Tracer {
	t, _ := ctx.Value(ctxKey{}).(Tracer)
	return t
}

// Capture runs fn in a span called name of the context's Tracer, or simply
// calls fn(ctx) when the context has none.
func Capture(ctx context.Context, name string, fn func(context.Context) error) error {
	if t := FromContext(ctx); t != nil {
		return t.Capture(ctx, name, fn)
	}
	return fn(ctx)
}
