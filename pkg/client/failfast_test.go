package client_test

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
)

// deadAddr is an address nothing listens on: connections are refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// scriptedTransport sends attempt n (from 1) to the dead address when
// refuse says so, else on to the real server; it counts attempts.
type scriptedTransport struct {
	dead     string
	refuse   func(n int64) bool
	attempts atomic.Int64
}

func (s *scriptedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := s.attempts.Add(1)
	if s.refuse(n) {
		r = r.Clone(r.Context())
		r.URL.Host = s.dead
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestFailFastUnreachable: by default, a server never reached is an
// IsUnreachable error after one attempt, well inside Backoff.MaxElapsed,
// naming the URL; with WithRetryUnreachable the client retries. Once the
// server answered, refused connections are retried again (a restart).
func TestFailFastUnreachable(t *testing.T) {
	dead := deadAddr(t)
	slow := client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxElapsed: 30 * time.Second})

	// The default, and WithFailFast saying the same.
	for _, opts := range [][]client.Option{nil, {client.WithFailFast()}} {
		tr := &scriptedTransport{dead: dead, refuse: func(int64) bool { return true }}
		c, err := client.New("http://"+dead, append(opts, slow, client.WithHTTPClient(&http.Client{Transport: tr}))...)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = c.Topics(ctxT(t))
		if !client.IsUnreachable(err) || tr.attempts.Load() != 1 {
			t.Fatalf("fail fast: %v (unreachable %v) after %d attempts, %v", err, client.IsUnreachable(err), tr.attempts.Load(), time.Since(start))
		}
		if want := "cannot reach a tierlog server at http://" + dead + ": connection refused"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if client.IsUnreachable(&client.Error{Status: 503}) {
		t.Error("a 503 is an answer, not unreachable")
	}

	// WithRetryUnreachable: retried until MaxElapsed.
	tr := &scriptedTransport{dead: dead, refuse: func(int64) bool { return true }}
	c, _ := client.New("http://"+dead, client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxElapsed: 200 * time.Millisecond}),
		client.WithRetryUnreachable(), client.WithHTTPClient(&http.Client{Transport: tr}))
	if _, err := c.Topics(ctxT(t)); !client.IsUnreachable(err) || tr.attempts.Load() < 2 {
		t.Fatalf("with WithRetryUnreachable: %v after %d attempts, want retries", err, tr.attempts.Load())
	}

	// After an answer: attempts 2 and 3 are refused, the 4th reaches the
	// server.
	s := newServer(t, nil)
	tr = &scriptedTransport{dead: dead, refuse: func(n int64) bool { return n == 2 || n == 3 }}
	c, _ = client.New(s.URL, slow, client.WithHTTPClient(&http.Client{Transport: tr}))
	if _, err := c.Topics(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics(ctxT(t)); err != nil || tr.attempts.Load() != 4 {
		t.Fatalf("after an answer: %v after %d attempts, want success at the 4th", err, tr.attempts.Load())
	}
}

// TestFailFastTime: New and Topics against a port nothing listens on,
// with the default options (DefaultBackoff: 30 s of retries), return the
// unreachable error in well under a second, and so does NewConsumer.
func TestFailFastTime(t *testing.T) {
	dead := deadAddr(t)
	c, err := client.New(dead) // HOST:PORT, as kcat's -b
	if err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	for range 5 {
		start := time.Now()
		_, err := c.Topics(ctxT(t))
		took := time.Since(start)
		worst = max(worst, took)
		if !client.IsUnreachable(err) {
			t.Fatalf("Topics: %v, want unreachable", err)
		}
	}
	start := time.Now()
	if _, err := c.NewConsumer(ctxT(t), "orders"); !client.IsUnreachable(err) {
		t.Fatalf("NewConsumer: %v, want unreachable", err)
	}
	worst = max(worst, time.Since(start))
	t.Logf("connection refused answered in at most %v", worst)
	if worst > 500*time.Millisecond {
		t.Errorf("an unreachable server took %v to report, want well under a second", worst)
	}
}
