package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// run serves until its context ends, logs one ready line with the address,
// and stops cleanly, releasing the data dir.
func TestRunServesAndStops(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, logger, addr, dir, false) }()

	var body []byte
	testenv.Eventually(t, 5*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/_localstack/health")
		if err != nil {
			return fmt.Errorf("lite is not up: %w\n%s", err, logs.String())
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err
	})
	if !strings.Contains(string(body), `"dynamodb":"running"`) {
		t.Fatalf("health = %s", body)
	}
	if !strings.Contains(logs.String(), "addr="+addr) {
		t.Fatalf("no ready line with the address in:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	// The data dir is free again.
	if err := run(canceled(), logger, freeAddr(t), dir, false); err != nil {
		t.Fatalf("run again on the same data dir: %v", err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestRunRefusesRemote(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		if err := run(canceled(), logger, addr, "", false); err == nil {
			t.Errorf("run(%q) without --allow-remote succeeded", addr)
		}
	}
}
