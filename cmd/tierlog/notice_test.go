package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

// TestRetryNotice: on a terminal a retry prints "tierlog: retrying..."
// with the wait and the reason; elsewhere it prints nothing.
func TestRetryNotice(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"unavailable","message":"partition busy: retry"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"topics":[]}`))
	}))
	defer srv.Close()
	for _, terminal := range []bool{true, false} {
		n.Store(0)
		var buf bytes.Buffer
		c, err := tlclient.New(srv.URL, tlclient.WithLogger(clientLogger(&buf, terminal, false)),
			tlclient.WithBackoff(tlclient.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, MaxElapsed: 10 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.Topics(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if terminal && (!strings.HasPrefix(got, "tierlog: retrying... (attempt=1, next try in ") || !strings.Contains(got, "partition busy: retry")) {
			t.Errorf("on a terminal: %q", got)
		}
		if !terminal && got != "" {
			t.Errorf("not a terminal: %q, want nothing", got)
		}
	}
}
