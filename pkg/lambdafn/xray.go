//go:build !noxray

package lambdafn

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-xray-sdk-go/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"
	"github.com/aws/smithy-go/middleware"

	"github.com/tierlog/tierlog/pkg/trace"
)

// XRayBuilt reports whether this binary has the X-Ray SDK (built without
// the noxray tag).
const XRayBuilt = true

// setupXRay configures the X-Ray SDK for Lambda and returns the tracer for
// the storage packages' spans and the middleware that instruments AWS SDK
// v2 clients.
//
// The SDK sends segments over UDP to AWS_XRAY_DAEMON_ADDRESS (Lambda's
// daemon). Without a daemon (the Runtime Interface Emulator, a laptop) a
// send is a lost datagram, never an error for the caller. A call with no
// segment in its context (a storage layer using context.Background) is
// logged at debug level and runs untraced: the SDK's RUNTIME_ERROR strategy,
// which panics, is overridden.
func setupXRay(log *slog.Logger) (trace.Tracer, []func(*middleware.Stack) error, error) {
	xray.SetLogger(xrayLogger{log})
	if strings.EqualFold(os.Getenv("AWS_XRAY_CONTEXT_MISSING"), "RUNTIME_ERROR") {
		log.Warn("AWS_XRAY_CONTEXT_MISSING=RUNTIME_ERROR would panic outside a traced request; using LOG_ERROR")
		os.Setenv("AWS_XRAY_CONTEXT_MISSING", "LOG_ERROR")
	}
	if err := xray.Configure(xray.Config{ContextMissingStrategy: contextMissing{log}}); err != nil {
		return nil, nil, fmt.Errorf("lambdafn: configure X-Ray: %w", err)
	}
	var opts []func(*middleware.Stack) error
	awsv2.AWSV2Instrumentor(&opts)
	return xrayTracer{}, opts, nil
}

// xrayTracer makes each span an X-Ray subsegment.
type xrayTracer struct{}

func (xrayTracer) Capture(ctx context.Context, name string, fn func(context.Context) error) error {
	return xray.Capture(ctx, name, fn)
}

// annotate adds indexed annotations to the subsegment in ctx, if any.
func annotate(ctx context.Context, kv map[string]any) {
	if xray.GetSegment(ctx) == nil {
		return
	}
	for k, v := range kv {
		_ = xray.AddAnnotation(ctx, k, v)
	}
}

// contextMissing logs X-Ray's "no segment in context" at debug level.
type contextMissing struct{ log *slog.Logger }

func (c contextMissing) ContextMissing(v any) {
	c.log.Debug("x-ray: untraced call", "detail", fmt.Sprint(v))
}

// xrayLogger passes the SDK's own messages to slog: its errors (a failed
// UDP send, a bad daemon address) as warnings, its info at debug, its
// debug (a line per subsegment) at LevelTrace.
type xrayLogger struct{ log *slog.Logger }

func (l xrayLogger) Log(level xraylog.LogLevel, msg fmt.Stringer) {
	lv := LevelTrace
	switch level {
	case xraylog.LogLevelInfo:
		lv = slog.LevelDebug
	case xraylog.LogLevelWarn, xraylog.LogLevelError:
		lv = slog.LevelWarn
	}
	if !l.log.Enabled(context.Background(), lv) {
		return
	}
	l.log.Log(context.Background(), lv, "x-ray: "+msg.String())
}
