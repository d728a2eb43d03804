package client_test

import (
	"net"
	"net/http"
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

// TestFailFastUnreachable: with WithFailFast, a server never reached is an
// IsUnreachable error after one attempt, well inside Backoff.MaxElapsed;
// without it the client retries. Once the server answered, refused
// connections are retried again (a restart).
func TestFailFastUnreachable(t *testing.T) {
	dead := deadAddr(t)
	slow := client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxElapsed: 30 * time.Second})

	tr := &scriptedTransport{dead: dead, refuse: func(int64) bool { return true }}
	c, err := client.New("http://"+dead, slow, client.WithFailFast(), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Topics(ctxT(t))
	if !client.IsUnreachable(err) || tr.attempts.Load() != 1 {
		t.Fatalf("fail fast: %v (unreachable %v) after %d attempts, %v", err, client.IsUnreachable(err), tr.attempts.Load(), time.Since(start))
	}
	if client.IsUnreachable(&client.Error{Status: 503}) {
		t.Error("a 503 is an answer, not unreachable")
	}

	// Without WithFailFast: retried until MaxElapsed.
	tr = &scriptedTransport{dead: dead, refuse: func(int64) bool { return true }}
	c, _ = client.New("http://"+dead, client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxElapsed: 200 * time.Millisecond}),
		client.WithHTTPClient(&http.Client{Transport: tr}))
	if _, err := c.Topics(ctxT(t)); !client.IsUnreachable(err) || tr.attempts.Load() < 2 {
		t.Fatalf("without fail fast: %v after %d attempts, want retries", err, tr.attempts.Load())
	}

	// After an answer: attempts 2 and 3 are refused, the 4th reaches the
	// server.
	s := newServer(t, nil)
	tr = &scriptedTransport{dead: dead, refuse: func(n int64) bool { return n == 2 || n == 3 }}
	c, _ = client.New(s.URL, slow, client.WithFailFast(), client.WithHTTPClient(&http.Client{Transport: tr}))
	if _, err := c.Topics(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics(ctxT(t)); err != nil || tr.attempts.Load() != 4 {
		t.Fatalf("after an answer: %v after %d attempts, want success at the 4th", err, tr.attempts.Load())
	}
}
