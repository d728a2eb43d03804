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
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta/local"
)

type serveOpts struct {
	listen  string
	dataDir string
	logJSON bool
}

func newServeCmd() *cobra.Command {
	var o serveOpts
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run tierlog locally: the whole HTTP API on the embedded default",
		Long: `Run tierlog as one local process serving the HTTP API of API.md, with the
hot tier, the metadata and the consumer-group offsets under --data-dir.
It stops gracefully on SIGTERM or SIGINT: in-flight requests finish and files
are synced.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return serve(ctx, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.listen, "listen", envDefault("TIERLOG_LISTEN", "127.0.0.1:8080"), "address to serve HTTP on (env TIERLOG_LISTEN)")
	f.StringVar(&o.dataDir, "data-dir", envDefault("TIERLOG_DATA_DIR", "./.tierlog"), "directory for segments and metadata (env TIERLOG_DATA_DIR)")
	f.BoolVar(&o.logJSON, "log-json", false, "log JSON lines instead of text")
	return c
}

func serve(ctx context.Context, o serveOpts) error {
	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if o.logJSON {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	logger := slog.New(h)

	store, err := local.Open(filepath.Join(o.dataDir, "meta"))
	if err != nil {
		return fmt.Errorf("open metadata: %w", err)
	}
	defer store.Close()
	b, err := broker.New(ctx, broker.Config{
		DataDir: filepath.Join(o.dataDir, "topics"),
		Meta:    store,
		Logger:  logger,
	})
	if err != nil {
		return err
	}
	defer b.Close()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           api.New(b, api.WithLogger(logger)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("tierlog listening", "addr", ln.Addr().String(), "data_dir", o.dataDir)

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
	if err := b.Close(); err != nil {
		return fmt.Errorf("close broker: %w", err)
	}
	logger.Info("stopped")
	return nil
}
