package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	tlserver "github.com/tierlog/tierlog/pkg/server"
)

type serveOpts struct {
	listen   string
	logJSON  bool
	logLevel slog.Level
	cfg      tlserver.Config
}

// defaultListen is where `tierlog serve` listens and the client commands
// look (defaultURL) unless told otherwise.
const defaultListen = "127.0.0.1:8080"

func newServeCmd() *cobra.Command {
	var o serveOpts
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run tierlog as one process: the whole HTTP API, the compactor and /metrics",
		Long: `Run tierlog as one process serving the HTTP API of API.md, with the
compactor on a timer and Prometheus metrics at GET /metrics.

With --backend local (the default) everything lives under --data-dir:
metadata, the hot tier and the cold tier. With --backend aws the metadata
is in a DynamoDB table, the cold tier in an S3 bucket and the hot tier in
--hot-dir, which several such processes may share; AWS settings come from
the SDK's usual sources (AWS_ENDPOINT_URL, AWS_REGION, credentials).

Every flag can also be set by the environment variable named after it
(--compact-interval: TIERLOG_COMPACT_INTERVAL); the flag wins. A duration
or size of 0 means the server's default; "off" turns a timer off.

--auth tokens requires an access token on every route but GET /v1/health
(docs/auth.md). At the first start with tokens on and none made yet, it
makes an admin token and prints it once on stdout; 'tierlog tokens create
--data-dir DIR' makes one while the server is stopped. Without --auth
tokens the server only listens on a loopback address (127.0.0.1, ::1,
localhost) unless --auth none is given explicitly.

It stops gracefully on SIGTERM or SIGINT: in-flight requests finish, files
are synced and leases released.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return serve(ctx, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.listen, "listen", defaultListen, "address to serve HTTP on")
	f.StringVar(&o.cfg.Auth, "auth", "", "none or tokens: require an access token on every route but /v1/health (docs/auth.md);\n"+
		"without tokens only a loopback --listen is allowed unless none is given explicitly")
	f.StringVar(&o.cfg.Backend, "backend", tlserver.BackendLocal, "local or aws")
	f.StringVar(&o.cfg.DataDir, "data-dir", "", "local backend: directory for everything (default ./.tierlog, the server's)")
	f.StringVar(&o.cfg.HotDir, "hot-dir", "", "aws backend: hot tier directory, may be shared")
	f.StringVar(&o.cfg.Table, "table", "", "aws backend: DynamoDB table")
	f.StringVar(&o.cfg.Bucket, "bucket", "", "aws backend: S3 bucket")
	f.StringVar(&o.cfg.Prefix, "prefix", "", "aws backend: S3 key prefix")
	f.BoolVar(&o.cfg.CreateResources, "create-resources", false, "aws backend: create the table and bucket if absent (emulators, LocalStack)")
	f.Var(offDuration{&o.cfg.CompactInterval}, "compact-interval", "compactor timer, besides a pass when a segment rolls; 0: the server's default, off: no compactor at all")
	f.DurationVar(&o.cfg.CompactGrace, "compact-grace", 0, "how long hot files of tiered segments stay; 0: the server's default")
	f.DurationVar(&o.cfg.LeaseTTL, "lease-ttl", 0, "how long a partition lease lives without a commit; 0: the server's default")
	f.DurationVar(&o.cfg.BusyWait, "busy-wait", 0, "how long a produce waits its turn on a partition another writer holds, before 503; 0: the server's default")
	f.Int64Var(&o.cfg.CacheBytes, "cache-bytes", 0, "cold-tier cache budget in bytes; 0: the server's default")
	f.Int64Var(&o.cfg.AnswerCacheBytes, "answer-cache-bytes", 0, "budget of encoded fetch answers kept for readers that ask the same again; 0: the server's default, negative: none")
	o.cfg.BodyReadTimeout = tlserver.DefaultBodyReadTimeout
	o.cfg.RunSubscriptions = true // serve delivers its subscriptions in-process
	f.Var(offDuration{&o.cfg.BodyReadTimeout}, "body-read-timeout",
		"how long one request body may take to arrive before it is cut with 408; 0: the server's default, off: no limit")
	f.Var(latencyFlag{&o.cfg.HotFSLatency}, "hot-fs-latency",
		"benchmarking and testing: charge each hot-tier file-system call the network latency of its round trip under this profile: none, efs-regional or efs-onezone (docs/benchmarks.md)")
	f.Var(levelFlag{&o.logLevel}, "log-level", "log level: debug, info, warn or error")
	f.BoolVar(&o.logJSON, "log-json", false, "log JSON lines instead of text")
	bindEnv(c)
	return c
}

// checkListen refuses to serve a non-loopback address without token
// auth, unless auth says "none" explicitly ("" is the default, none).
func checkListen(listen, auth string) error {
	switch auth {
	case "", tlserver.AuthNone, tlserver.AuthTokens:
	default:
		return usagef("--auth %q: want %s or %s", auth, tlserver.AuthNone, tlserver.AuthTokens)
	}
	if auth != "" || loopback(listen) {
		return nil
	}
	return usagef("--listen %s is not a loopback address: anyone who can reach it could read, write and delete every topic. "+
		"Start with --auth tokens (docs/auth.md), or --auth none to serve it without auth anyway", listen)
}

// loopback reports whether the listen address only accepts connections
// from this machine.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// firstToken makes an admin token when token auth is on and the store has
// none yet, and prints it once on out (stdout: never the log).
func firstToken(ctx context.Context, s *tlserver.Server, out io.Writer) error {
	list, err := s.Tokens.Tokens(ctx)
	if err != nil || len(list) > 0 {
		return err
	}
	t, secret, err := s.Tokens.Create(ctx, "first admin token, made at the first start", 0, adminScope())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "No access token existed: made admin token %s. It is shown only now:\n\n  export TIERLOG_TOKEN=%s\n\n", t.ID, secret)
	return err
}

func serve(ctx context.Context, o serveOpts) error {
	if err := checkListen(o.listen, o.cfg.Auth); err != nil {
		return err
	}
	ho := &slog.HandlerOptions{Level: o.logLevel}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, ho)
	if o.logJSON {
		h = slog.NewJSONHandler(os.Stderr, ho)
	}
	logger := slog.New(h)
	cfg := o.cfg // the flags mean what Config's fields mean: 0 the default, < 0 off
	cfg.Logger = logger
	cfg.Console = true // the web console at /ui/ (docs/console.md)
	s, err := tlserver.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if cfg.Auth == tlserver.AuthTokens {
		if err := firstToken(ctx, s, os.Stdout); err != nil {
			return fmt.Errorf("first access token: %w", err)
		}
	}
	s.Start()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := s.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("tierlog listening", "addr", ln.Addr().String(), "backend", cfg.Backend, "auth", cmp.Or(cfg.Auth, tlserver.AuthNone))

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	// Long polls last up to 20 s; give them that and a little more.
	sctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("shutdown", "err", err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	logger.Info("stopped")
	return nil
}
