package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func ptr(s string) *string { return &s }

func TestTokenFormat(t *testing.T) {
	s := NewSecret()
	id, secret, err := parseToken(s.Token)
	if err != nil || id != s.ID || !ValidID(id) {
		t.Fatalf("parseToken(%q) = %q, %v", s.Token, id, err)
	}
	if !secretMatches(secret, s.Hash) {
		t.Fatal("the secret does not match its own hash")
	}
	if strings.Contains(s.Hash, secret) {
		t.Fatal("the hash carries the secret")
	}
	other := NewSecret()
	if other.ID == s.ID || other.Token == s.Token {
		t.Fatal("two tokens alike")
	}
	_, otherSecret, _ := parseToken(other.Token)
	if secretMatches(otherSecret, s.Hash) {
		t.Fatal("another secret matches")
	}
	for _, bad := range []string{"", "tl_", s.Token[:len(s.Token)-1], s.Token + "0",
		strings.Replace(s.Token, "tl_", "TL_", 1), strings.ToUpper(s.Token),
		s.Token[:len(tokenPrefix)+idHexLen] + "-" + s.Token[len(tokenPrefix)+idHexLen+1:]} {
		if _, _, err := parseToken(bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("parseToken(%q): %v, want ErrUnauthenticated", bad, err)
		} else if len(bad) > 20 && strings.Contains(err.Error(), bad[20:]) {
			t.Errorf("parseToken error quotes the token: %v", err)
		}
	}
}

func TestCheck(t *testing.T) {
	tok := meta.Token{ID: "t1", Scope: meta.TokenScope{
		Topics:     &meta.NameSet{Prefix: ptr("orders")},
		Groups:     &meta.NameSet{Names: []string{"billing", "audit"}},
		Operations: []string{"produce", "groups"},
	}}
	admin := meta.Token{ID: "t2", Scope: meta.TokenScope{Topics: &meta.NameSet{Prefix: ptr("")}, Operations: []string{"admin"}}}
	narrowAdmin := meta.Token{ID: "t3", Scope: meta.TokenScope{Topics: &meta.NameSet{Exact: ptr("orders")}, Operations: []string{"admin"}}}
	noTopics := meta.Token{ID: "t4", Scope: meta.TokenScope{Operations: []string{"consume"}}}
	for _, c := range []struct {
		tok            meta.Token
		op             Op
		topics, groups []string
		ok             bool
	}{
		{tok, Produce, []string{"orders-eu", "orders"}, nil, true},
		{tok, Produce, []string{"orders-eu", "payments"}, nil, false},
		{tok, Consume, []string{"orders"}, nil, false},
		{tok, Describe, []string{"orders"}, nil, true}, // produce implies describe
		{tok, Describe, []string{"payments"}, nil, false},
		{tok, Groups, []string{"orders"}, []string{"billing"}, true},
		{tok, Groups, []string{"orders"}, []string{"bill"}, false},
		{tok, Admin, []string{"orders"}, nil, false},
		{tok, ManageTokens, nil, nil, false},
		{tok, Open, nil, nil, true},
		{admin, ManageTokens, nil, nil, true},
		{admin, Admin, []string{"anything"}, nil, true},
		{admin, Admin, nil, []string{"g"}, false}, // no groups scope: no group
		{admin, Describe, []string{"x"}, nil, true},
		{narrowAdmin, ManageTokens, nil, nil, false},
		{narrowAdmin, Admin, []string{"orders"}, nil, true},
		{narrowAdmin, Admin, []string{"orders2"}, nil, false},
		{noTopics, Consume, []string{"a"}, nil, false},
		{noTopics, Consume, nil, nil, true},
	} {
		err := Check(c.tok, c.op, c.topics, c.groups)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrForbidden)) {
			t.Errorf("Check(%s, %s, %v, %v) = %v, want ok %v", c.tok.ID, c.op, c.topics, c.groups, err, c.ok)
		}
	}
}

func TestValidateScope(t *testing.T) {
	good := []meta.TokenScope{
		{Operations: []string{"consume"}},
		{Topics: &meta.NameSet{Prefix: ptr("")}, Groups: &meta.NameSet{Names: []string{"a"}}, Operations: []string{"admin", "produce"}},
	}
	for _, s := range good {
		if err := ValidateScope(s); err != nil {
			t.Errorf("ValidateScope(%+v): %v", s, err)
		}
	}
	bad := []meta.TokenScope{
		{},
		{Operations: []string{"write"}},
		{Operations: []string{"consume", "consume"}},
		{Topics: &meta.NameSet{}, Operations: []string{"consume"}},
		{Topics: &meta.NameSet{Prefix: ptr("a"), Exact: ptr("b")}, Operations: []string{"consume"}},
		{Groups: &meta.NameSet{Names: []string{}}, Operations: []string{"consume"}},
		{Groups: &meta.NameSet{Exact: ptr("")}, Operations: []string{"consume"}},
	}
	for _, s := range bad {
		if err := ValidateScope(s); err == nil {
			t.Errorf("ValidateScope(%+v) = nil, want an error", s)
		}
	}
}

func TestWithin(t *testing.T) {
	outer := meta.TokenScope{Topics: &meta.NameSet{Prefix: ptr("orders")}, Operations: []string{"produce", "admin"}}
	for _, c := range []struct {
		in meta.TokenScope
		ok bool
	}{
		{meta.TokenScope{Topics: &meta.NameSet{Prefix: ptr("orders-eu")}, Operations: []string{"produce"}}, true},
		{meta.TokenScope{Topics: &meta.NameSet{Exact: ptr("orders")}, Operations: []string{"admin"}}, true},
		{meta.TokenScope{Topics: &meta.NameSet{Names: []string{"orders1", "orders2"}}, Operations: []string{"admin"}}, true},
		{meta.TokenScope{Topics: &meta.NameSet{Prefix: ptr("ord")}, Operations: []string{"produce"}}, false},
		{meta.TokenScope{Topics: &meta.NameSet{Names: []string{"orders1", "x"}}, Operations: []string{"admin"}}, false},
		{meta.TokenScope{Operations: []string{"consume"}}, false},
		{meta.TokenScope{Groups: &meta.NameSet{Prefix: ptr("")}, Operations: []string{"produce"}}, false},
	} {
		if got := Within(c.in, outer); got != c.ok {
			t.Errorf("Within(%+v) = %v, want %v", c.in, got, c.ok)
		}
	}
}

// countingStore counts the reads that reach the store.
type countingStore struct {
	*mem.Store
	mu    sync.Mutex
	reads int
}

func (s *countingStore) Token(ctx context.Context, id string) (meta.Token, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.Token(ctx, id)
}

func bearer(tok string) string { return "Bearer " + tok }

// TestRevocationBound: a token revoked through one verifier is refused by
// it at once, and by another over the same store once the cache TTL has
// passed on its clock, not before the TTL (it was cached) and not after.
func TestRevocationBound(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	clk := &fakeClock{t: time.UnixMilli(1_764_500_000_000)}
	a := New(store, WithClock(clk.Now))
	b := New(store, WithClock(clk.Now))
	tok, secret, err := a.Create(ctx, "x", 0, meta.TokenScope{Operations: []string{"consume"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []*Verifier{a, b} {
		if _, err := v.Authenticate(ctx, bearer(secret)); err != nil {
			t.Fatalf("fresh token refused: %v", err)
		}
	}
	if err := a.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, bearer(secret)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoking verifier: %v, want ErrUnauthenticated at once", err)
	}
	clk.Add(DefaultCacheTTL - time.Millisecond)
	if _, err := b.Authenticate(ctx, bearer(secret)); err != nil {
		t.Fatalf("other verifier within its cache TTL: %v (the cache is what bounds store reads)", err)
	}
	clk.Add(time.Millisecond)
	if _, err := b.Authenticate(ctx, bearer(secret)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("other verifier at the bound: %v, want ErrUnauthenticated", err)
	}
	if err := a.Revoke(ctx, tok.ID); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("revoke again: %v, want ErrNotFound", err)
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{t: time.UnixMilli(1_764_500_000_000)}
	v := New(mem.New(), WithClock(clk.Now))
	_, secret, err := v.Create(ctx, "", clk.Now().Add(time.Hour).UnixMilli(), meta.TokenScope{Operations: []string{"consume"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Authenticate(ctx, bearer(secret)); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	_, err = v.Authenticate(ctx, bearer(secret))
	if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v, want ErrUnauthenticated naming the expiry", err)
	}
}

// TestAuthenticateRefusals: each kind of bad header is 401, none quotes
// the secret, and a cached token still needs its secret.
func TestAuthenticateRefusals(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: mem.New()}
	v := New(store)
	_, secret, err := v.Create(ctx, "", 0, meta.TokenScope{Operations: []string{"consume"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Authenticate(ctx, bearer(secret)); err != nil {
		t.Fatal(err)
	}
	wrong := secret[:len(secret)-4] + "0000"
	if wrong == secret {
		wrong = secret[:len(secret)-4] + "1111"
	}
	unknown := NewSecret().Token
	for _, h := range []string{"", "Basic abc", "Bearer", "Bearer tl_zz", bearer(wrong), bearer(unknown), secret} {
		_, err := v.Authenticate(ctx, h)
		if !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Authenticate(%q): %v, want ErrUnauthenticated", h, err)
			continue
		}
		if s := secret[len(secret)-64:]; strings.Contains(err.Error(), s) || strings.Contains(err.Error(), wrong[len(wrong)-64:]) {
			t.Errorf("error quotes a secret: %v", err)
		}
	}
	// Cached: the wrong secret and the good one read the store once in
	// all; the unknown id once and then from the negative cache.
	before := store.reads
	for range 3 {
		_, _ = v.Authenticate(ctx, bearer(secret))
		_, _ = v.Authenticate(ctx, bearer(unknown))
	}
	if store.reads != before {
		t.Errorf("%d store reads for cached ids, want 0", store.reads-before)
	}
}

func TestCacheBounded(t *testing.T) {
	ctx := context.Background()
	v := New(mem.New(), WithCacheEntries(4))
	for range 20 {
		_, _ = v.Authenticate(ctx, bearer(NewSecret().Token))
	}
	v.mu.Lock()
	n := len(v.mu.cache)
	v.mu.Unlock()
	if n > 4 {
		t.Fatalf("cache holds %d entries, bound 4", n)
	}
}
