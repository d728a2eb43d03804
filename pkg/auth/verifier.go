package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Defaults of a Verifier. DefaultCacheTTL is the revocation bound: a token
// revoked elsewhere is refused here at most this long after.
const (
	DefaultCacheTTL     = 2 * time.Second
	DefaultCacheEntries = 10_000
)

// Option configures a Verifier.
type Option func(*options)

type options struct {
	ttl     time.Duration
	entries int
	now     func() time.Time
}

// WithCacheTTL sets how long a token read from the store (or found
// missing) is trusted: the revocation bound. 0 means DefaultCacheTTL;
// negative means no cache (every request reads the store).
func WithCacheTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// WithCacheEntries bounds the cache (0: DefaultCacheEntries).
func WithCacheEntries(n int) Option { return func(o *options) { o.entries = n } }

// WithClock sets the clock for expiry and the cache (tests); nil means
// time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

func applyDefaults(opts []Option) options {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.ttl == 0 {
		o.ttl = DefaultCacheTTL
	}
	if o.entries <= 0 {
		o.entries = DefaultCacheEntries
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Verifier authenticates requests against a token store and manages its
// tokens. It is safe for concurrent use. Its cache holds at most the
// configured number of tokens, each for at most the cache TTL.
type Verifier struct {
	store meta.TokenStore
	o     options

	// mu guards the cache; no store call runs under it.
	mu struct {
		sync.Mutex
		cache map[string]cached // by token id
	}
}

// cached is what the store answered for one id, and when.
type cached struct {
	tok   meta.Token
	found bool
	at    time.Time
}

// New returns a Verifier over store.
func New(store meta.TokenStore, opts ...Option) *Verifier {
	v := &Verifier{store: store, o: applyDefaults(opts)}
	v.mu.cache = map[string]cached{}
	return v
}

// CacheTTL is the Verifier's revocation bound (0 with no cache).
func (v *Verifier) CacheTTL() time.Duration { return max(v.o.ttl, 0) }

// Now is the Verifier's clock.
func (v *Verifier) Now() time.Time { return v.o.now() }

// Authenticate returns the token an Authorization header value carries
// ("Bearer <token>"), or an error wrapping ErrUnauthenticated that names
// at most the token's id, never its secret. Other errors are the store's
// (meta.ErrUnavailable and the like).
func (v *Verifier) Authenticate(ctx context.Context, header string) (meta.Token, error) {
	if header == "" {
		return meta.Token{}, fmt.Errorf("%w: no Authorization: Bearer token", ErrUnauthenticated)
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return meta.Token{}, fmt.Errorf("%w: the Authorization header is not \"Bearer <token>\"", ErrUnauthenticated)
	}
	id, secret, err := parseToken(strings.TrimSpace(tok))
	if err != nil {
		return meta.Token{}, err
	}
	t, found, err := v.lookup(ctx, id)
	if err != nil {
		return meta.Token{}, err
	}
	if !found || !secretMatches(secret, t.Hash) {
		return meta.Token{}, fmt.Errorf("%w: token %s is unknown, revoked, or its secret is wrong", ErrUnauthenticated, id)
	}
	if t.ExpiresMs != 0 && v.o.now().UnixMilli() >= t.ExpiresMs {
		return meta.Token{}, fmt.Errorf("%w: token %s expired at %s", ErrUnauthenticated, id,
			time.UnixMilli(t.ExpiresMs).UTC().Format(time.RFC3339))
	}
	return t, nil
}

// lookup reads id through the cache.
func (v *Verifier) lookup(ctx context.Context, id string) (meta.Token, bool, error) {
	now := v.o.now()
	if v.o.ttl > 0 {
		v.mu.Lock()
		c, ok := v.mu.cache[id]
		v.mu.Unlock()
		if ok && now.Sub(c.at) < v.o.ttl {
			return c.tok, c.found, nil
		}
	}
	t, err := v.store.Token(ctx, id)
	found := err == nil
	if err != nil && !errors.Is(err, meta.ErrNotFound) {
		return meta.Token{}, false, fmt.Errorf("auth: read token %s: %w", id, err)
	}
	if v.o.ttl > 0 {
		v.put(id, cached{tok: t, found: found, at: now})
	}
	return t, found, nil
}

// put caches c, first dropping stale entries (and, if none was stale, an
// arbitrary one) when the cache is full.
func (v *Verifier) put(id string, c cached) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.mu.cache[id]; !ok && len(v.mu.cache) >= v.o.entries {
		for k, e := range v.mu.cache {
			if c.at.Sub(e.at) >= v.o.ttl {
				delete(v.mu.cache, k)
			}
		}
		for k := range v.mu.cache {
			if len(v.mu.cache) < v.o.entries {
				break
			}
			delete(v.mu.cache, k)
		}
	}
	v.mu.cache[id] = c
}

// forget drops id from the cache.
func (v *Verifier) forget(id string) {
	v.mu.Lock()
	delete(v.mu.cache, id)
	v.mu.Unlock()
}

// Create makes and stores a token with scope (already validated by
// ValidateScope), description and expiry (unix ms, 0: never), and
// returns it with the token string to show once.
func (v *Verifier) Create(ctx context.Context, description string, expiresMs int64, scope meta.TokenScope) (meta.Token, string, error) {
	for attempt := 0; ; attempt++ {
		sec := NewSecret()
		t := meta.Token{ID: sec.ID, Hash: sec.Hash, Description: description,
			CreatedMs: v.o.now().UnixMilli(), ExpiresMs: expiresMs, Scope: scope}
		err := v.store.PutToken(ctx, t)
		if err == nil {
			v.forget(t.ID) // a negative entry for the id, however unlikely
			return t, sec.Token, nil
		}
		if !errors.Is(err, meta.ErrTokenExists) || attempt == 2 {
			return meta.Token{}, "", fmt.Errorf("auth: store token: %w", err)
		}
	}
}

// Revoke deletes the token with id (meta.ErrNotFound if there is none).
// This Verifier refuses it at once; others within their cache TTL.
func (v *Verifier) Revoke(ctx context.Context, id string) error {
	err := v.store.DeleteToken(ctx, id)
	v.forget(id)
	if err != nil {
		return fmt.Errorf("auth: revoke token %s: %w", id, err)
	}
	return nil
}

// Tokens lists every token, sorted by id (no secrets: the store has none).
func (v *Verifier) Tokens(ctx context.Context) ([]meta.Token, error) {
	return v.store.Tokens(ctx)
}
