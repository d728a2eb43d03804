package main

import (
	"context"
	"errors"
	"fmt"
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
	listen  string
	logJSON bool
	cfg     tlserver.Config
	envErr  error // a TIERLOG_ variable that does not parse
}

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

It stops gracefully on SIGTERM or SIGINT: in-flight requests finish, files
are synced and leases released.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.envErr != nil {
				return usageError{o.envErr}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return serve(ctx, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.listen, "listen", envDefault("TIERLOG_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (env TIERLOG_LISTEN)")
	f.StringVar(&o.cfg.Backend, "backend", envDefault("TIERLOG_BACKEND", tlserver.BackendLocal), "local or aws (env TIERLOG_BACKEND)")
	f.StringVar(&o.cfg.DataDir, "data-dir", envDefault("TIERLOG_DATA_DIR", "./.tierlog"), "local backend: directory for everything (env TIERLOG_DATA_DIR)")
	f.StringVar(&o.cfg.HotDir, "hot-dir", envDefault("TIERLOG_HOT_DIR", ""), "aws backend: hot tier directory, may be shared (env TIERLOG_HOT_DIR)")
	f.StringVar(&o.cfg.Table, "table", envDefault("TIERLOG_TABLE", ""), "aws backend: DynamoDB table (env TIERLOG_TABLE)")
	f.StringVar(&o.cfg.Bucket, "bucket", envDefault("TIERLOG_BUCKET", ""), "aws backend: S3 bucket (env TIERLOG_BUCKET)")
	f.StringVar(&o.cfg.Prefix, "prefix", envDefault("TIERLOG_PREFIX", ""), "aws backend: S3 key prefix (env TIERLOG_PREFIX)")
	f.BoolVar(&o.cfg.CreateResources, "create-resources", false, "aws backend: create the table and bucket if absent (emulators, LocalStack)")
	f.DurationVar(&o.cfg.CompactInterval, "compact-interval", 10*time.Second, "compactor timer; 0 disables it")
	f.DurationVar(&o.cfg.CompactGrace, "compact-grace", 30*time.Second, "how long hot files of tiered segments stay")
	f.DurationVar(&o.cfg.LeaseTTL, "lease-ttl", 10*time.Second, "how long a partition lease lives without a commit")
	bodyTimeout, err := envDuration("TIERLOG_BODY_READ_TIMEOUT", tlserver.DefaultBodyReadTimeout)
	o.envErr = err
	f.DurationVar(&o.cfg.BodyReadTimeout, "body-read-timeout", bodyTimeout,
		"how long one request body may take to arrive before it is cut with 408; 0 means no limit (env TIERLOG_BODY_READ_TIMEOUT)")
	f.BoolVar(&o.logJSON, "log-json", false, "log JSON lines instead of text")
	return c
}

// envDuration is envDefault for a duration: the variable's value, or def.
func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := envDefault(name, "")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return def, fmt.Errorf("env %s=%q: want a duration such as 30s: %w", name, v, err)
	}
	return d, nil
}

func serve(ctx context.Context, o serveOpts) error {
	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if o.logJSON {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	logger := slog.New(h)
	cfg := o.cfg
	cfg.Logger = logger
	if cfg.CompactInterval == 0 {
		cfg.CompactInterval = -1 // the flag's 0 means off
	}
	if cfg.BodyReadTimeout == 0 {
		cfg.BodyReadTimeout = -1 // the flag's 0 means no limit
	}
	s, err := tlserver.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	s.Start()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := s.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("tierlog listening", "addr", ln.Addr().String(), "backend", cfg.Backend)

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
