package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Format is how produce and fetch bodies travel.
type Format int

// The formats. JSON is docs/api.md's; Binary is docs/api-binary.md's.
const (
	JSON Format = iota
	Binary
)

func (f Format) String() string {
	if f == Binary {
		return "binary"
	}
	return "json"
}

// Backoff is the retry schedule: exponential from Initial, doubling up to
// Max, each wait randomised by ±50% (jitter), and never shorter than the
// server's Retry-After. MaxElapsed bounds the retries of one Client call;
// 0 turns them off.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	MaxElapsed time.Duration
}

// DefaultBackoff is the schedule unless WithBackoff says otherwise.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: 30 * time.Second}

// maxRetryAfter caps how long a Retry-After header can make a client wait.
const maxRetryAfter = time.Minute

// maxResponseBytes bounds an answer body the client reads. A fetch answer
// is at most ~4 MiB of records; a produce answer of 10,000 failed entries
// with long messages can be larger.
const maxResponseBytes = 32 << 20

// DefaultSigV4Service is the SigV4 service name of an API Gateway API.
const DefaultSigV4Service = "execute-api"

// Option configures New.
type Option func(*config)

type config struct {
	hc         *http.Client
	creds      aws.CredentialsProvider
	region     string
	service    string
	log        *slog.Logger
	format     Format
	backoff    Backoff
	userAgent  string
	backoffSet bool
	// retryUnreachable: retry a server never reached (WithRetryUnreachable);
	// false, the default, fails fast.
	retryUnreachable bool
	token            string // access token, sent as "Authorization: Bearer"
	hooks            []Hooks
}

// Hooks observe every HTTP attempt the client makes, for metrics and
// tracing (as kgo's hooks and kprom): BeforeRequest may add headers (a
// traceparent) to the request about to be sent, after the client set its
// own and before SigV4 signing; AfterRequest sees how it ended. Either
// may be nil. They run on the calling goroutine, once per attempt
// (retries included), and must be safe for concurrent use. A Stream's
// event-stream connections get BeforeRequest only (they last as long as
// the stream); its polls, when the server cannot stream, get both.
type Hooks struct {
	BeforeRequest func(*http.Request)
	AfterRequest  func(RequestInfo)
}

// RequestInfo is one finished attempt, for Hooks.AfterRequest.
type RequestInfo struct {
	// Method and Path are the request's (Path escaped, from /v1 on,
	// without the query: topic and group names appear in it).
	Method string
	Path   string
	// Status is the HTTP status, 0 when no answer arrived.
	Status int
	// Duration is from sending to the end of reading the answer.
	Duration time.Duration
	// RequestBytes and ResponseBytes are the body sizes.
	RequestBytes, ResponseBytes int
	// Err is the attempt's error: an *Error for a non-2xx answer, a
	// transport failure, or the context's error; nil for a 2xx.
	Err error
}

// WithHooks adds h to the client's hooks (several WithHooks add several;
// they run in the order given).
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = append(c.hooks, h) } }

// WithHTTPClient sets the HTTP client. The default has no overall timeout
// (calls are bounded by their context; long polls last up to 20 s) and
// keeps up to 64 idle connections per host, so a producer writing many
// partitions at once does not reconnect per batch. Whichever client is
// used, redirects are never followed (its CheckRedirect is replaced, on a
// copy): docs/api.md has no 3xx, and following one that keeps the method can
// turn a request into another (a DELETE of a partition path into a DELETE
// of the topic). A 3xx answer is an *Error.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.hc = hc } }

// WithSigV4 signs every request with AWS Signature Version 4 for an
// IAM-protected API Gateway: credentials from creds (wrapped in an
// aws.CredentialsCache unless it is one), service "execute-api" (see
// WithSigV4Service) and region.
func WithSigV4(creds aws.CredentialsProvider, region string) Option {
	return func(c *config) { c.creds, c.region = creds, region }
}

// WithToken sends token (tl_<id>_<secret>, docs/auth.md) as
// "Authorization: Bearer <token>" with every request, for a server with
// token auth on. It cannot be combined with WithSigV4, which uses the
// same header. The token is never logged.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithSigV4Service overrides the SigV4 service name ("execute-api"), for
// example "lambda" for a function URL.
func WithSigV4Service(service string) Option { return func(c *config) { c.service = service } }

// WithLogger sets the logger for retries and resets (Warn) and requests
// (Debug). Nil means discard, the default.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithFormat sets the format of produce and fetch bodies. Default JSON.
func WithFormat(f Format) Option { return func(c *config) { c.format = f } }

// WithBackoff sets the retry schedule (DefaultBackoff otherwise).
func WithBackoff(b Backoff) Option { return func(c *config) { c.backoff, c.backoffSet = b, true } }

// WithFailFast makes a client that has not had an answer from the server
// yet give up at once when it cannot connect at all (IsUnreachable:
// connection refused, a host that does not resolve): the usual cause is a
// server not started or a wrong URL, and the caller should hear so at
// once, with the URL in the error, instead of after Backoff.MaxElapsed.
// Once any answer arrived, such errors are retried as before (a server
// restarting). This is the default; WithRetryUnreachable turns it off.
func WithFailFast() Option { return func(c *config) { c.retryUnreachable = false } }

// WithRetryUnreachable makes a client retry a server it has never reached
// for Backoff.MaxElapsed, as it retries one that went away: for a program
// started together with its server (a compose file, a test), where
// "connection refused" at first means "not up yet".
func WithRetryUnreachable() Option { return func(c *config) { c.retryUnreachable = true } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *config) { c.userAgent = ua } }

// applyDefaults is the one place defaults are set and options checked.
func applyDefaults(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Transport: tr}
	} else {
		hc := *c.hc // the caller's client keeps its own CheckRedirect
		c.hc = &hc
	}
	c.hc.CheckRedirect = refuseRedirect
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if !c.backoffSet {
		c.backoff = DefaultBackoff
	}
	if c.backoff.Initial <= 0 {
		c.backoff.Initial = DefaultBackoff.Initial
	}
	if c.backoff.Max < c.backoff.Initial {
		c.backoff.Max = max(c.backoff.Initial, DefaultBackoff.Max)
	}
	if c.service == "" {
		c.service = DefaultSigV4Service
	}
	if c.userAgent == "" {
		c.userAgent = "tierlog-go-client"
	}
	if c.format != JSON && c.format != Binary {
		return c, fmt.Errorf("client: unknown format %d", c.format)
	}
	if c.creds != nil && c.token != "" {
		return c, errors.New("client: WithToken and WithSigV4 both set the Authorization header: use one")
	}
	if strings.ContainsAny(c.token, " \t\r\n") {
		return c, errors.New("client: the token has white space in it")
	}
	if c.creds != nil {
		if c.region == "" {
			return c, errors.New("client: SigV4 needs a region")
		}
		if _, ok := c.creds.(*aws.CredentialsCache); !ok {
			c.creds = aws.NewCredentialsCache(c.creds)
		}
	}
	return c, nil
}

// Client speaks docs/api.md to one server. It is safe for concurrent use.
type Client struct {
	base     string // scheme://host[/prefix], no trailing slash
	cfg      config
	signer   *v4.Signer
	answered atomic.Bool // some request got an HTTP answer (WithFailFast, the default)
}

// New returns a client of the API at baseURL: "http://127.0.0.1:8080", or
// an API Gateway stage URL such as "https://id.execute-api.eu-west-1.amazonaws.com/prod".
// A URL without a scheme is a host and port, as kcat's -b takes it
// ("127.0.0.1:8080", "localhost:8080"): http, or https for an AWS host
// (one ending in amazonaws.com, which serves nothing else).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := ParseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: no query or fragment allowed", baseURL)
	}
	cfg, err := applyDefaults(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), cfg: cfg}
	if cfg.creds != nil {
		c.signer = v4.NewSigner()
	}
	return c, nil
}

// ParseURL reads a base URL as New does: with a scheme, http:// or
// https://; without one, host[:port][/prefix], which gets http:// (https://
// for an amazonaws.com host).
func ParseURL(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errors.New("client: empty base URL: want http://HOST:PORT or HOST:PORT")
	}
	if !strings.Contains(s, "://") {
		scheme := "http://"
		host, _, _ := strings.Cut(s, "/")
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn") {
			scheme = "https://"
		}
		s = scheme + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("client: base URL %q: want http://HOST:PORT or HOST:PORT", raw)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("client: base URL %q: want http:// or https:// and a host, or HOST:PORT", raw)
	}
	if _, port, err := net.SplitHostPort(u.Host); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("client: base URL %q: port %q: want 1 to 65535", raw, port)
		}
	}
	return u, nil
}

// Format is the client's body format.
func (c *Client) Format() Format { return c.cfg.format }

// request is one API call: what to send and what to accept.
type request struct {
	method      string
	path        string // escaped, from /v1 on
	query       url.Values
	body        []byte
	contentType string
	accept      string
	// idempotencyKey, if not empty, is sent as Idempotency-Key: the
	// same on every attempt of the request.
	idempotencyKey string
}

// response is a 2xx answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// transportError is a failure to get an answer: connection refused or
// reset, a timeout, a body cut short. Retriable; the outcome of a write is
// unknown.
type transportError struct {
	op   string
	base string // the client's base URL
	err  error
}

func (e *transportError) Error() string {
	if cause := unreachableCause(e.err); cause != "" {
		return fmt.Sprintf("client: cannot reach a tierlog server at %s: %s (is it running, and is that its URL?) (%s)", e.base, cause, e.op)
	}
	return fmt.Sprintf("%s: %v", e.op, e.err)
}
func (e *transportError) Unwrap() error { return e.err }

// send makes one attempt. A non-2xx answer is an *Error; a failure to get
// an answer is a *transportError (or the context's error). The hooks see
// it.
func (c *Client) send(ctx context.Context, rq *request) (*response, error) {
	if len(c.cfg.hooks) == 0 {
		return c.attempt(ctx, rq, nil)
	}
	start := time.Now()
	status := 0
	res, err := c.attempt(ctx, rq, &status)
	info := RequestInfo{Method: rq.method, Path: rq.path, Status: status, Duration: time.Since(start),
		RequestBytes: len(rq.body), Err: err}
	if res != nil {
		info.ResponseBytes = len(res.body)
	}
	for _, h := range c.cfg.hooks {
		if h.AfterRequest != nil {
			h.AfterRequest(info)
		}
	}
	return res, err
}

// attempt is send without the AfterRequest hooks; status, if not nil, is
// set to the answer's status.
func (c *Client) attempt(ctx context.Context, rq *request, status *int) (*response, error) {
	u := c.base + rq.path
	if len(rq.query) > 0 {
		u += "?" + rq.query.Encode()
	}
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", rq.method, rq.path, err)
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	if rq.accept != "" {
		req.Header.Set("Accept", rq.accept)
	}
	if rq.idempotencyKey != "" {
		req.Header.Set(headerIdempotencyKey, rq.idempotencyKey)
	}
	req.Header.Set("User-Agent", c.cfg.userAgent)
	c.authorize(req)
	for _, h := range c.cfg.hooks {
		if h.BeforeRequest != nil {
			h.BeforeRequest(req)
		}
	}
	if c.signer != nil {
		if err := c.sign(ctx, req, rq.body); err != nil {
			return nil, err
		}
	}
	op := rq.method + " " + rq.path
	start := time.Now()
	res, err := c.cfg.hc.Do(req)
	if res != nil {
		c.answered.Store(true)
		if status != nil {
			*status = res.StatusCode
		}
	}
	if err != nil {
		if re := (*redirectError)(nil); errors.As(err, &re) {
			// An answer, not a transport failure: never retried.
			var id string
			if res != nil {
				id = res.Header.Get("X-Request-Id")
			}
			return nil, &Error{Status: re.status, Message: re.Error(), Op: op, RequestID: id}
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("client: %s: %w", op, cerr)
		}
		return nil, &transportError{op: op, base: c.base, err: err}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("client: %s: %w", op, cerr)
		}
		return nil, &transportError{op: op, base: c.base, err: fmt.Errorf("read answer: %w", err)}
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("client: %s: answer larger than %d bytes", op, maxResponseBytes)
	}
	c.cfg.log.LogAttrs(ctx, slog.LevelDebug, "request", slog.String("op", op),
		slog.Int("status", res.StatusCode), slog.Duration("duration", time.Since(start)))
	if res.StatusCode/100 != 2 {
		return nil, parseError(op, res, data)
	}
	return &response{status: res.StatusCode, header: res.Header, body: data}, nil
}

// authorize adds the access token, if any.
func (c *Client) authorize(req *http.Request) {
	if c.cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.token)
	}
}

// sign adds SigV4 headers (Authorization, X-Amz-Date, and the session
// token if any) for this attempt; retries sign again with a fresh date.
func (c *Client) sign(ctx context.Context, req *http.Request, body []byte) error {
	creds, err := c.cfg.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("client: SigV4 credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), c.cfg.service, c.cfg.region, time.Now()); err != nil {
		return fmt.Errorf("client: SigV4 sign: %w", err)
	}
	return nil
}

// do sends rq once, or, for a call that may be repeated, retries it per
// the client's backoff.
func (c *Client) do(ctx context.Context, rq *request, repeatable bool) (*response, error) {
	if !repeatable || c.cfg.backoff.MaxElapsed <= 0 {
		return c.send(ctx, rq)
	}
	return retry(ctx, c.cfg.backoff, c.cfg.backoff.MaxElapsed, c.cfg.log, c.giveUp, func() (*response, error) {
		return c.send(ctx, rq)
	})
}

// giveUp reports whether a retriable err ends the retries anyway: unless
// WithRetryUnreachable, a server never reached.
func (c *Client) giveUp(err error) bool {
	return !c.cfg.retryUnreachable && !c.answered.Load() && IsUnreachable(err)
}

// redirectError is what refuseRedirect stops a redirect with.
type redirectError struct {
	status   int
	location string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("redirect (HTTP %d) to %s refused: the API never redirects", e.status, e.location)
}

// refuseRedirect is every Client's CheckRedirect: a redirect is never
// followed.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	e := &redirectError{location: req.URL.Redacted()}
	if req.Response != nil {
		e.status = req.Response.StatusCode
	}
	return e
}

// isNetError reports whether err looks like a network failure (used for
// errors that did not come through send).
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}
