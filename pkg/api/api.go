package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/subscribe"
)

// Option configures the handler New returns.
type Option func(*config)

type config struct {
	log         *slog.Logger
	bodyTimeout time.Duration
	extra       []extraRoute
	requests    *metrics.HTTP
	stream      *StreamConfig // nil: no streaming fetch (sse.go)
	subs        *subscribe.Service
	auth        *auth.Verifier // nil: no token routes (auth.go)
	enforce     bool           // token auth on (WithAuth)
	trusted     func(*http.Request) bool
}

// extraRoute is a route outside docs/api.md that the handler serves as well.
type extraRoute struct {
	method, path string
	h            http.Handler
	open         func(*http.Request) bool // nil, or true for a request that needs no token (WithOpenRoute)
}

// WithLogger sets the logger for internal errors, the causes of 503s,
// recovered panics and (at debug level) one line per request. Nil means
// discard, the default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}

// WithBodyReadTimeout bounds how long reading one request body may take,
// from the moment the handler gets the request: a body still arriving
// then is cut, answered 408 request_timeout, and nothing it carried is
// applied. It needs a server connection that supports read deadlines
// (http.ResponseController); elsewhere (Lambda, where the body is already
// in memory) it does nothing. 0, the default, means no bound.
func WithBodyReadTimeout(d time.Duration) Option {
	return func(c *config) { c.bodyTimeout = d }
}

// WithRoute serves h at method path (a ServeMux pattern's two halves,
// such as "GET" "/metrics") besides docs/api.md's routes, behind the same
// path canonicalisation, request id and panic recovery; other methods on
// path are 405 in docs/api.md's shape. The local server serves /metrics so:
// no path ever reaches a ServeMux that would answer it with a redirect.
func WithRoute(method, path string, h http.Handler) Option {
	return func(c *config) { c.extra = append(c.extra, extraRoute{method: method, path: path, h: h}) }
}

// WithOpenRoute is WithRoute for a route whose requests that open reports
// true for need no token with token auth on: static files that hold no
// data (the web console's pages, which send the token with every request
// they make for data).
func WithOpenRoute(method, path string, h http.Handler, open func(*http.Request) bool) Option {
	return func(c *config) { c.extra = append(c.extra, extraRoute{method: method, path: path, h: h, open: open}) }
}

// WithRequestMetrics counts every request into m: by route pattern
// ("/v1/topics/{topic}", UnmatchedRoute, or a WithRoute path; never a raw
// path), method and status code. Requests whose path has an empty segment
// are answered 404 before any route and are not counted. Nil, the
// default, counts nothing.
func WithRequestMetrics(m *metrics.HTTP) Option {
	return func(c *config) { c.requests = m }
}

// applyDefaults is the one place defaults are set.
func applyDefaults(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// server serves docs/api.md over one broker. It is safe for concurrent use: it
// has no mutable state of its own.
type server struct {
	b           *broker.Broker
	log         *slog.Logger
	mux         *http.ServeMux
	bodyTimeout time.Duration
	requests    *metrics.HTTP      // by route pattern (routes.go)
	stream      *StreamConfig      // nil: no streaming fetch (sse.go)
	subs        *subscribe.Service // nil: no subscription routes (subscriptions.go)
	auth        *auth.Verifier     // nil: no token routes (auth.go)
	enforce     bool               // token auth on: admit checks tokens
	trusted     func(*http.Request) bool
}

// New returns the http.Handler of docs/api.md serving b. The handler is safe for
// concurrent use; it answers every request with a fresh X-Request-Id header.
func New(b *broker.Broker, opts ...Option) http.Handler {
	c := applyDefaults(opts)
	if c.enforce && c.auth == nil {
		panic("api: WithAuth(nil): token auth needs a verifier")
	}
	s := &server{b: b, log: c.log, mux: http.NewServeMux(), bodyTimeout: c.bodyTimeout, requests: c.requests, stream: c.stream,
		subs: c.subs, auth: c.auth, enforce: c.enforce, trusted: c.trusted}
	s.routes(c.extra)
	return s
}

func (s *server) routes(extra []extraRoute) {
	type path struct {
		pattern string
		allow   []string
	}
	var paths []path
	seen := map[string]bool{}
	register := func(method, pattern string, h http.HandlerFunc) {
		s.mux.HandleFunc(method+" "+pattern, s.observed(pattern, h))
		if !seen[pattern] {
			seen[pattern] = true
			paths = append(paths, path{pattern: pattern})
		}
		for i := range paths {
			if paths[i].pattern == pattern {
				paths[i].allow = append(paths[i].allow, method)
				if method == http.MethodGet { // a GET pattern also serves HEAD
					paths[i].allow = append(paths[i].allow, http.MethodHead)
				}
			}
		}
	}
	for _, rt := range routeTable {
		serve, op, query, method, pattern := rt.serve, rt.op, rt.query, rt.Method, rt.Path
		register(rt.Method, rt.Path, func(w http.ResponseWriter, r *http.Request) {
			// The one error exit of every handler: a handler that
			// returns an error has written nothing. The route's
			// operation is checked first (auth.go), then that the
			// query names only the route's parameters (params.go).
			r, err := s.admit(r, op)
			if err == nil {
				err = query.check(r, method, pattern)
			}
			if err == nil {
				err = serve(s, w, r)
			}
			if err != nil {
				s.writeError(w, r, err)
			}
		})
	}
	for _, e := range extra {
		h, open := e.h, e.open
		register(e.method, e.path, func(w http.ResponseWriter, r *http.Request) {
			op := extraRouteOp
			if open != nil && open(r) {
				op = auth.Open
			}
			r, err := s.admit(r, op)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	for _, p := range paths {
		// The method-less pattern is less specific than the ones above, so
		// it only sees the methods they do not serve: answer 405 in docs/api.md's
		// shape instead of ServeMux's plain-text one.
		allowHeader := strings.Join(p.allow, ", ")
		pattern := p.pattern
		s.mux.HandleFunc(pattern, s.observed(pattern, func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, &apiError{
				status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed, allow: allowHeader,
				msg: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, pattern, allowHeader),
			})
		}))
	}
	s.mux.HandleFunc("/", s.observed(UnmatchedRoute, func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound(r))
	}))
}

func notFound(r *http.Request) error {
	return &apiError{status: http.StatusNotFound, code: codeNotFound,
		msg: fmt.Sprintf("no route for %s %s", r.Method, r.URL.EscapedPath())}
}

type ctxKey struct{}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ServeHTTP is the outer middleware: request id, panic recovery, request
// log, and the path canonicalisation ServeMux would otherwise answer with a
// redirect.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := newRequestID()
	w.Header().Set(headerRequestID, id)
	sw := &statusWriter{ResponseWriter: w}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value, compared as net/http does
				panic(v)
			}
			s.log.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
				slog.String("request_id", id), slog.String("method", r.Method),
				slog.String("path", r.URL.EscapedPath()), slog.Any("panic", v),
				slog.String("stack", string(debug.Stack())))
			if sw.status == 0 {
				s.writeError(sw, r, fmt.Errorf("panic: %v", v))
			}
		}
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "request",
			slog.String("request_id", id), slog.String("method", r.Method),
			slog.String("path", r.URL.EscapedPath()), slog.Int("status", sw.status),
			slog.Duration("duration", time.Since(start)))
	}()

	r, ok := canonicalPath(r)
	if !ok {
		s.writeError(sw, r, notFound(r))
		return
	}
	s.boundBody(sw, r)
	s.mux.ServeHTTP(sw, r)
}

// boundBody sets the connection's read deadline for r's body (r is this
// handler's own shallow copy, so its Body may be replaced) and clears it
// once the body is read to its end: without that, the server's background
// read of the idle connection would hit the deadline and cancel a request
// that is still working (a produce waiting its turn).
func (s *server) boundBody(w http.ResponseWriter, r *http.Request) {
	if s.bodyTimeout <= 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)); err != nil {
		return // no connection to bound (Lambda, a test recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, limit: s.bodyTimeout}
}

// deadlineBody is a body read under a connection read deadline.
type deadlineBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	limit time.Duration
	done  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil || b.done:
	case errors.Is(err, io.EOF):
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{}) // the next request sets its own
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		err = &bodyTimeoutError{limit: b.limit, err: err}
	}
	return n, err
}

// bodyTimeoutError is a body that did not arrive within the limit.
type bodyTimeoutError struct {
	limit time.Duration
	err   error
}

func (e *bodyTimeoutError) Error() string {
	return fmt.Sprintf("request body not received within %v: %v", e.limit, e.err)
}

func (e *bodyTimeoutError) Unwrap() error { return e.err }

// canonicalPath prepares r for ServeMux without letting it redirect. Paths
// are taken literally, never resolved: a "." or ".." segment is re-escaped
// (%2E) so ServeMux matches it as a plain segment and the handler rejects it
// as a name or number ("/v1/topics/.." is a bad topic name, 400, exactly
// like "/v1/topics/%2e%2e"). A path with an empty segment ("//") matches no
// route: ok is false and the caller answers 404 not_found.
func canonicalPath(r *http.Request) (_ *http.Request, ok bool) {
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
		return r, false
	}
	segs := strings.Split(p[1:], "/")
	dots := false
	for i, seg := range segs {
		switch seg {
		case ".":
			segs[i], dots = "%2E", true
		case "..":
			segs[i], dots = "%2E%2E", true
		}
	}
	if !dots {
		return r, true
	}
	u := *r.URL
	u.RawPath = "/" + strings.Join(segs, "/")
	r2 := r.WithContext(r.Context())
	r2.URL = &u
	return r2, true
}

// statusWriter records whether and with which status the answer started,
// so the panic handler knows whether it can still answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// unwrapWriter returns the server's own ResponseWriter, which
// http.MaxBytesReader uses to close the connection after an oversize body.
func unwrapWriter(w http.ResponseWriter) http.ResponseWriter {
	if sw, ok := w.(*statusWriter); ok {
		return sw.ResponseWriter
	}
	return w
}

// Output buffers: a fetch answer is up to ~6 MiB (4 MiB of base64), so
// buffers are pooled, and dropped when one grew beyond maxPooledBuffer.
const maxPooledBuffer = 8 << 20

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeJSON encodes v and answers it with status. Nothing is written if
// encoding fails: the client gets a 500 instead of half a body.
func (s *server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			bufPool.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if status == http.StatusInternalServerError {
			// Encoding the error body itself failed: cannot happen for
			// errorResponse, but never recurse.
			w.Header().Set("Content-Type", contentTypeJSON)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"internal","message":"internal error"}}` + "\n"))
			return
		}
		s.writeError(w, r, fmt.Errorf("encode response: %w", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *server) health(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, r, http.StatusOK, struct {
		Status string `json:"status"`
	}{"ok"})
	return nil
}
