package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/meta/local"
)

// testServer is the real API (broker, embedded meta store, handler) in
// process, optionally behind a wrapper that injects faults.
type testServer struct {
	*httptest.Server
	t *testing.T
}

// newServer starts the real server; wrap (may be nil) goes in front of the
// handler.
func newServer(t *testing.T, wrap func(http.Handler) http.Handler) *testServer {
	t.Helper()
	root := t.TempDir()
	store, err := local.Open(filepath.Join(root, "meta"))
	if err != nil {
		t.Fatalf("local.Open: %v", err)
	}
	b, err := broker.New(context.Background(), broker.Config{DataDir: filepath.Join(root, "data"), Meta: store})
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	var h http.Handler = api.New(b, api.WithLogger(log))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := b.Close(); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("store.Close: %v", err)
		}
	})
	return &testServer{Server: srv, t: t}
}

// client returns a client of s with a test logger and a fast backoff.
func (s *testServer) client(opts ...client.Option) *client.Client {
	s.t.Helper()
	log := slog.New(slog.NewTextHandler(s.t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	base := []client.Option{
		client.WithLogger(log),
		client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, MaxElapsed: 10 * time.Second}),
	}
	c, err := client.New(s.URL, append(base, opts...)...)
	if err != nil {
		s.t.Fatalf("client.New: %v", err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t *testing.T, c *client.Client, name string, partitions int) {
	t.Helper()
	if _, err := c.CreateTopic(ctxT(t), client.TopicSpec{Name: name, Partitions: partitions}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// readAll fetches partition p from offset 0 to the high watermark,
// checking that offsets are dense.
func readAll(t *testing.T, c *client.Client, topic string, p int) []client.Message {
	t.Helper()
	var out []client.Message
	for off := int64(0); ; {
		res, err := c.Fetch(ctxT(t), topic, p, off, client.FetchOptions{MaxRecords: 10000, MaxBytes: 4 << 20})
		if err != nil {
			t.Fatalf("fetch %s/%d@%d: %v", topic, p, off, err)
		}
		for _, m := range res.Messages {
			if m.Offset != off {
				t.Fatalf("partition %d: offset %d where %d expected (gap or duplicate offset)", p, m.Offset, off)
			}
			off++
			out = append(out, m)
		}
		if off >= res.HighWatermark {
			return out
		}
		if len(res.Messages) == 0 {
			t.Fatalf("partition %d: empty fetch at %d below high watermark %d", p, off, res.HighWatermark)
		}
	}
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func formats() []client.Format { return []client.Format{client.JSON, client.Binary} }

func eachFormat(t *testing.T, fn func(t *testing.T, f client.Format)) {
	for _, f := range formats() {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			t.Parallel()
			fn(t, f)
		})
	}
}
