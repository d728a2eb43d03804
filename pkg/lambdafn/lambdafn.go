// Package lambdafn is what the three Lambda functions share: configuration
// from the environment, the server over the AWS adapters, JSON logs that
// carry the Lambda request id, X-Ray, one CloudWatch Embedded Metric Format
// line per invocation, and the handlers each function's main starts.
//
//	functions/produce    HTTP  POST, PUT, DELETE   Function.HTTP(WriteMethods)
//	functions/fetch      HTTP  GET, HEAD           Function.HTTP(ReadMethods)
//	functions/compactor  EventBridge schedule and "segment rolled" events
//	                                               Function.Compactor
//
// # HTTP
//
// API Gateway (HTTP API, payload format 2.0) events reach the server's one
// http.Handler (package api) through aws-lambda-go-api-proxy's httpadapter,
// behind a route filter: a function answers only the methods it serves. A
// request for a known route with a method the function does not serve is
// 405 method_not_allowed, an unknown path 404 not_found, both in docs/api.md's
// error shape (see routes.go). HEAD answers carry no body.
//
// # Lambda's rules (docs/lambda.md "Lambda rules")
//
// Nothing runs after the answer: leases are released by every batch
// (ReleaseEachBatch), the compactor has no timer (CompactInterval -1), and
// when a produce request seals a segment the function sends the compactor
// ONE asynchronous invoke (InvocationType Event) naming the partitions that
// rolled, bounded by a short timeout, before it returns the answer. On
// SIGTERM (Lambda's shutdown, enabled by lambda.WithEnableSIGTERM) the
// server is closed: files synced, leases released.
//
// # Observability
//
//   - Logs: one JSON object a line on stdout with Lambda's field names
//     (timestamp, level, message, requestId) and the function name.
//   - X-Ray: each invocation is a subsegment "tierlog.<function>" under the
//     function's segment; inside it the DynamoDB, S3 and Lambda calls
//     (awsv2 instrumentation) and the spans of package trace: lease
//     acquire, EFS append+fsync, metadata commit, compactor steps. Build
//     with -tags noxray to leave the SDK out (used to measure its cost).
//   - Metrics: one EMF line per invocation, namespace "tierlog", dimension
//     Function: Invocations, Errors, ColdStarts, Duration, and the deltas of
//     the server's counters (flushes, records, bytes, lease conflicts,
//     finalized segments, S3 and DynamoDB requests by operation, cache hits).
//
// A Function serves one invocation at a time, as Lambda calls it; its
// handlers are nevertheless safe for concurrent use.
package lambdafn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/server"
	"github.com/tierlog/tierlog/pkg/trace"
)

// Function is one Lambda function's process: its configuration, logger,
// tracer, server and metrics.
type Function struct {
	name   string
	env    Env
	log    *slog.Logger
	ids    *requestIDs
	tracer trace.Tracer // nil without X-Ray
	emf    *emfWriter
	srv    *server.Server

	notifier Notifier // produce only; nil otherwise
	rolls    rollSet
	// waker wakes the delivery function after committed records
	// (produce only; nil otherwise); lastWake is when, in unix ns.
	waker    Notifier
	lastWake atomic.Int64

	// after runs a produce's work after its answer (New registers it for
	// the functions that write, in Lambda); nil: that work runs before the
	// answer.
	after *afterAnswer

	invoked   atomic.Bool // false until the first invocation: cold start
	closeOnce sync.Once
	closeErr  error
}

// Option configures New.
type Option func(*options)

type options struct {
	notifier NotifierFactory
	waker    NotifierFactory
	stdout   io.Writer
	getenv   func(string) string
}

// WithRollNotifier makes the function notify the compactor function
// (TIERLOG_COMPACTOR_FUNCTION; none set, no notices) through the Notifier
// factory builds, once per request that sealed segments. The produce
// function passes compactnotify.New.
func WithRollNotifier(factory NotifierFactory) Option {
	return func(o *options) { o.notifier = factory }
}

// WithDeliverWaker makes the function wake the delivery function
// (TIERLOG_DELIVER_FUNCTION; none set, no wake) through the Notifier
// factory builds, after a produce that committed records, at most once
// per DeliverWakeInterval. The produce function passes compactnotify.New.
func WithDeliverWaker(factory NotifierFactory) Option {
	return func(o *options) { o.waker = factory }
}

// withOutput sends logs and metrics to w instead of stdout (tests).
func withOutput(w io.Writer) Option { return func(o *options) { o.stdout = w } }

// withGetenv reads configuration with getenv instead of os.Getenv (tests).
func withGetenv(getenv func(string) string) Option { return func(o *options) { o.getenv = getenv } }

// New reads the environment and builds the function named name ("produce",
// "fetch", "compactor"): logger, X-Ray, the server over DynamoDB and S3. It
// makes no network call unless TIERLOG_CREATE_RESOURCES is set, so a cold
// start stays short.
func New(ctx context.Context, name string, opts ...Option) (*Function, error) {
	start := time.Now()
	o := options{stdout: os.Stdout, getenv: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	out := &syncWriter{w: o.stdout}
	ids := &requestIDs{fallback: lambdacontext.MaxConcurrency() <= 1}
	env, err := LoadEnv(o.getenv)
	if err != nil {
		return nil, err
	}
	log := newLogger(out, env.LogLevel, name, ids)
	f := &Function{name: name, env: env, log: log, ids: ids, emf: &emfWriter{w: out}}

	tracer, apiOptions, err := setupXRay(log)
	if err != nil {
		return nil, err
	}
	f.tracer = tracer

	cfg := server.Config{
		Backend:          server.BackendAWS,
		HotDir:           env.HotDir,
		Table:            env.Table,
		Bucket:           env.Bucket,
		Prefix:           env.Prefix,
		CreateResources:  env.CreateResources,
		APIOptions:       apiOptions,
		CompactInterval:  -1, // no timers in Lambda: the schedule invokes the compactor
		CompactGrace:     env.CompactGrace,
		LeaseTTL:         env.LeaseTTL,
		CacheBytes:       env.CacheBytes,
		AnswerCacheBytes: env.AnswerCacheBytes,
		Logger:           log,
		// API Gateway buffers every answer: a streaming fetch
		// (Accept: text/event-stream) answers as a plain fetch (docs/api.md).
		DisableStreaming: true,
	}
	if env.Auth == AuthTokens {
		cfg.Auth, cfg.AuthTrusted = server.AuthTokens, iamAuthorized
	}
	release := true // a frozen container must not sit on a lease
	cfg.ReleaseEachBatch = &release
	// Registered during Init, before the runtime asks for its first
	// invocation (Lambda takes extensions only then).
	f.startAfterAnswer(o.getenv("AWS_LAMBDA_RUNTIME_API"))
	if f.after != nil {
		cfg.Detach = f.after.detach
	}
	// The fetch function mounts EFS read-only: it must never write there.
	cfg.ReadOnly = name == "fetch"
	if o.notifier != nil && env.CompactorFunction != "" {
		n, err := o.notifier(ctx, env.CompactorFunction, apiOptions)
		if err != nil {
			return nil, err
		}
		f.notifier = n
		cfg.OnRoll = f.rolls.add
	}
	if o.waker != nil && env.DeliverFunction != "" {
		w, err := o.waker(ctx, env.DeliverFunction, apiOptions)
		if err != nil {
			return nil, err
		}
		f.waker = w
	}
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	f.srv = srv
	log.Info("initialized", "auth", env.Auth, "hot_dir", env.HotDir, "table", env.Table, "bucket", env.Bucket,
		"prefix", env.Prefix, "xray", XRayBuilt, "notify", f.notifier != nil,
		"new_ms", float64(time.Since(start).Microseconds())/1000)
	return f, nil
}

// Logger returns the function's logger.
func (f *Function) Logger() *slog.Logger { return f.log }

// Server returns the assembled server.
func (f *Function) Server() *server.Server { return f.srv }

// Start hands handler to the Lambda runtime and never returns. SIGTERM
// closes the function first.
func (f *Function) Start(handler any) {
	lambda.StartWithOptions(handler, lambda.WithEnableSIGTERM(f.shutdown))
}

// startAfterAnswer registers the extension that lets a function that writes
// answer before the work its rounds leave (afteranswer.go), when it runs
// in Lambda, one invocation at a time. Without it that work runs before
// the answer.
func (f *Function) startAfterAnswer(runtimeAPI string) {
	if runtimeAPI == "" || (f.name != "produce" && f.name != "deliver") || lambdacontext.MaxConcurrency() > 1 {
		return
	}
	a, err := startAfterAnswer(runtimeAPI, f.notifyRolls)
	if err != nil {
		f.log.Warn("after-answer extension not registered: produce answers after its checkpoint", "err", err)
		return
	}
	f.after = a
	f.log.Info("after-answer extension registered", "extension", extensionName)
}

// notifyRolls notifies the compactor of the segments the work after an
// answer sealed (the handler notified of those sealed before).
func (f *Function) notifyRolls() {
	if keys := f.rolls.take(); len(keys) > 0 && f.notifier != nil {
		notify(context.Background(), f.notifier, f.env.NotifyTimeout, keys, f.log)
	}
}

// shutdown runs on SIGTERM (Lambda sends it between invocations, then
// SIGKILL): close the server (sync, release leases) and exit.
func (f *Function) shutdown() {
	start := time.Now()
	err := f.Close()
	f.log.Info("shutdown", "err", errString(err), "took_ms", time.Since(start).Milliseconds())
	os.Exit(0)
}

// Close closes the server once.
func (f *Function) Close() error {
	f.closeOnce.Do(func() { f.closeErr = f.srv.Close() })
	return f.closeErr
}

// invocation is what an invocation reports for its EMF line.
type invocation struct {
	failed     bool
	metrics    snapshot
	properties map[string]any
}

// invoke runs one invocation: request id for the logs, the tracer in the
// context, a "tierlog.<function>" subsegment around fn, and the EMF line
// after it.
func (f *Function) invoke(ctx context.Context, fn func(ctx context.Context, inv *invocation) error) error {
	start := time.Now()
	cold := !f.invoked.Swap(true)
	lc, _ := lambdacontext.FromContext(ctx)
	reqID := ""
	if lc != nil {
		reqID = lc.AwsRequestID
	}
	f.ids.set(reqID)
	defer f.ids.clear()
	if f.after != nil && reqID != "" {
		defer f.after.handlerReturned(reqID)
	}
	if f.tracer != nil {
		ctx = trace.WithTracer(ctx, f.tracer)
	}
	before := snapshotOf(f.srv)
	inv := &invocation{properties: map[string]any{}}
	err := trace.Capture(ctx, "tierlog."+f.name, func(ctx context.Context) error {
		err := fn(ctx, inv)
		annotate(ctx, map[string]any{"function": f.name, "cold_start": cold})
		return err
	})
	if err != nil {
		inv.failed = true
		f.log.ErrorContext(ctx, "invocation failed", "err", err)
	}
	if reqID != "" {
		inv.properties[logKeyRequestID] = reqID
	}
	rec := emfRecord{function: f.name, start: start, duration: time.Since(start), coldStart: cold,
		failed: inv.failed, metrics: inv.metrics, properties: inv.properties}
	if werr := f.emf.write(rec, before, snapshotOf(f.srv)); werr != nil {
		f.log.WarnContext(ctx, "write metrics", "err", werr)
	}
	return err
}

// rollSet collects the partitions that sealed a segment during one
// request (server.Config.OnRoll). Safe for concurrent use.
type rollSet struct {
	mu   sync.Mutex
	keys []meta.PartitionKey
}

func (r *rollSet) add(k meta.PartitionKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.keys {
		if x == k {
			return
		}
	}
	r.keys = append(r.keys, k)
}

func (r *rollSet) take() []meta.PartitionKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys
	r.keys = nil
	return k
}

// syncWriter serialises whole-line writes of logs and metrics.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Fatal logs err as JSON on stdout and exits 1, so the runtime reports a
// failed init. For mains whose New failed.
func Fatal(name string, err error) {
	newLogger(os.Stdout, slog.LevelInfo, name, &requestIDs{}).Error("init failed", "err", err)
	os.Exit(1)
}
