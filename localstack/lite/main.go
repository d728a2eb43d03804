// Command lite serves S3 and DynamoDB on one LocalStack-style endpoint from
// in-process emulators (gofakes3 and minidyn), so tierlog's AWS code path
// runs without Docker or AWS:
//
//	make lite                                     # http://127.0.0.1:4566
//	AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 \
//	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
//	  tierlog serve --backend aws --create-resources --hot-dir ./.hot --table tierlog --bucket tierlog
//
// Routing and emulator limits are documented in package
// localstack/emulator; the walkthrough is localstack/README.md. S3 objects
// are kept in memory, or with --data-dir in one bbolt file (bolt.go).
// lite is a module of its own, so that bbolt stays out of tierlog's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tierlog/tierlog/localstack/emulator"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:4566", "address to serve S3 and DynamoDB on")
	dataDir := flag.String("data-dir", "", "keep S3 buckets and objects in this directory (file s3.bolt); "+
		"empty keeps them in memory. DynamoDB tables are always in memory and lost on exit")
	allowRemote := flag.Bool("allow-remote", false, "allow a non-loopback --listen address (the endpoint has no authentication)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: lite [flags]

Serves S3 (gofakes3, path-style) and DynamoDB (minidyn) on one endpoint,
with LocalStack's GET /_localstack/health. Point every SDK client at it with
AWS_ENDPOINT_URL=http://<listen> and any static credentials.

S3 objects are kept in memory, or on disk with --data-dir. DynamoDB tables are
in memory only: they are lost when lite stops, even with --data-dir.

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger, *listen, *dataDir, *allowRemote); err != nil {
		logger.Error("lite", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, logger *slog.Logger, listen, dataDir string, allowRemote bool) error {
	if err := emulator.CheckListenAddr(ctx, listen, allowRemote); err != nil {
		return err
	}
	opts := emulator.Options{Logger: logger}
	if dataDir != "" {
		backend, err := openBolt(dataDir, 2*time.Second)
		if err != nil {
			return err
		}
		defer backend.Close() // on early returns; emu.Close below closes it first
		opts.S3 = backend
	}
	emu, err := emulator.New(opts)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: emu, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	s3 := "memory"
	if dataDir != "" {
		s3 = dataDir
	}
	logger.Info("lite listening", "addr", ln.Addr().String(), "endpoint", "http://"+ln.Addr().String(),
		"s3", s3, "dynamodb", "memory")

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("shutdown", "err", err)
	}
	if err := emu.Close(); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
