package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/server"
)

// handClock is a clock the test moves.
type handClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *handClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *handClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// twoAWSServers opens two servers with token auth over one DynamoDB table
// and bucket (an in-process emulator) and one hot dir, as two processes
// (or function instances) of one deployment are; opts configure both
// verifiers.
func twoAWSServers(t *testing.T, opts ...auth.Option) (a, b *server.Server) {
	t.Helper()
	useEmulator(t)
	hot := t.TempDir()
	open := func(owner string) *server.Server {
		s, err := server.Open(context.Background(), server.Config{
			Backend: server.BackendAWS, HotDir: hot, Table: "tokens", Bucket: "tokens", Owner: owner,
			CreateResources: true, CompactInterval: -1, Auth: server.AuthTokens, AuthOptions: opts,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open("a"), open("b")
}

func statusOf(t *testing.T, h http.Handler, token string) int {
	t.Helper()
	req := httptest.NewRequest("GET", "/v1/topics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func makeToken(t *testing.T, s *server.Server) (meta.Token, string) {
	t.Helper()
	all := ""
	tok, secret, err := s.Tokens.Create(context.Background(), "test", 0,
		meta.TokenScope{Topics: &meta.NameSet{Prefix: &all}, Operations: []string{"consume"}})
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

// TestRevocationAcrossServers: a token revoked through server a is
// refused by a at once and by server b, which shares the table, as soon
// as b's cache entry is DefaultCacheTTL old, and not before.
func TestRevocationAcrossServers(t *testing.T) {
	clk := &handClock{t: time.Now()}
	a, b := twoAWSServers(t, auth.WithClock(clk.Now))
	tok, secret := makeToken(t, a)
	if got := statusOf(t, b.Handler(), secret); got != 200 {
		t.Fatalf("b with a fresh token from a: %d", got)
	}
	if err := a.Tokens.Revoke(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, a.Handler(), secret); got != 401 {
		t.Fatalf("a right after revoking: %d, want 401", got)
	}
	step := 100 * time.Millisecond
	var refusedAfter time.Duration
	for waited := time.Duration(0); waited <= 5*time.Second; waited += step {
		if statusOf(t, b.Handler(), secret) == 401 {
			refusedAfter = waited
			break
		}
		clk.Add(step)
	}
	if refusedAfter != auth.DefaultCacheTTL {
		t.Fatalf("b refused the revoked token %v after the revocation, want exactly the cache TTL %v", refusedAfter, auth.DefaultCacheTTL)
	}
}

// TestRevocationAcrossServersMeasured measures the bound on the real
// clock: how long after a revocation through a does b, which used the
// token just before, refuse it.
func TestRevocationAcrossServersMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("waits the cache TTL on the real clock; TestRevocationAcrossServers covers the bound with a hand-moved clock")
	}
	a, b := twoAWSServers(t)
	tok, secret := makeToken(t, a)
	if got := statusOf(t, b.Handler(), secret); got != 200 {
		t.Fatalf("b: %d", got)
	}
	if err := a.Tokens.Revoke(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tick := time.NewTicker(2 * time.Millisecond) // the measurement's resolution
	defer tick.Stop()
	for statusOf(t, b.Handler(), secret) != 401 {
		if time.Since(start) > 2*auth.DefaultCacheTTL {
			t.Fatalf("b still accepts the token %v after its revocation", time.Since(start))
		}
		<-tick.C
	}
	took := time.Since(start)
	t.Logf("revoked through a, refused by b after %v (cache TTL %v)", took.Round(time.Millisecond), auth.DefaultCacheTTL)
	if took > auth.DefaultCacheTTL+100*time.Millisecond {
		t.Errorf("refused after %v, more than the documented bound %v", took, auth.DefaultCacheTTL)
	}
}
