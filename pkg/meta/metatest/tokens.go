package metatest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// RunTokens runs the meta.TokenStore suite as subtests of t. newStore is
// called once per subtest and must return an empty store, closed by the
// caller's t.Cleanup.
func RunTokens(t *testing.T, newStore func(t *testing.T) meta.TokenStore) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s meta.TokenStore)
	}{
		{"Token/PutGet", testTokenPutGet},
		{"Token/Exists", testTokenExists},
		{"Token/NotFound", testTokenNotFound},
		{"Token/ListSorted", testTokensSorted},
		{"Token/Delete", testTokenDelete},
		{"Token/ConcurrentPut", testTokenConcurrentPut},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func sampleToken(id string) meta.Token {
	p, e := "orders", "billing"
	return meta.Token{
		ID: id, Hash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Description: "billing producer", CreatedMs: 1764500000000, ExpiresMs: 1767225600000,
		Scope: meta.TokenScope{
			Topics:     &meta.NameSet{Prefix: &p},
			Groups:     &meta.NameSet{Exact: &e},
			Operations: []string{"produce", "consume"},
		},
	}
}

func testTokenPutGet(t *testing.T, s meta.TokenStore) {
	ctx := ctxFor(t)
	want := sampleToken("a1")
	must(t, "PutToken", s.PutToken(ctx, want))
	got, err := s.Token(ctx, "a1")
	must(t, "Token", err)
	mustEqual(t, "token", got, want)
	// Names sets and an empty prefix (every name) survive the round trip.
	all := ""
	other := meta.Token{ID: "a2", Hash: want.Hash, Scope: meta.TokenScope{
		Topics: &meta.NameSet{Prefix: &all}, Groups: &meta.NameSet{Names: []string{"x", "y"}},
		Operations: []string{"admin"}}}
	must(t, "PutToken", s.PutToken(ctx, other))
	got, err = s.Token(ctx, "a2")
	must(t, "Token", err)
	mustEqual(t, "token", got, other)
}

func testTokenExists(t *testing.T, s meta.TokenStore) {
	ctx := ctxFor(t)
	must(t, "PutToken", s.PutToken(ctx, sampleToken("a1")))
	other := sampleToken("a1")
	other.Description = "another"
	mustIs(t, "PutToken again", s.PutToken(ctx, other), meta.ErrTokenExists)
	got, err := s.Token(ctx, "a1")
	must(t, "Token", err)
	mustEqual(t, "token after a refused put", got, sampleToken("a1"))
}

func testTokenNotFound(t *testing.T, s meta.TokenStore) {
	ctx := ctxFor(t)
	_, err := s.Token(ctx, "nope")
	mustIs(t, "Token", err, meta.ErrNotFound)
	mustIs(t, "DeleteToken", s.DeleteToken(ctx, "nope"), meta.ErrNotFound)
	list, err := s.Tokens(ctx)
	must(t, "Tokens", err)
	if len(list) != 0 {
		t.Fatalf("Tokens of an empty store: %v", list)
	}
}

func testTokensSorted(t *testing.T, s meta.TokenStore) {
	ctx := ctxFor(t)
	for _, id := range []string{"c3", "a1", "b2"} {
		must(t, "PutToken", s.PutToken(ctx, sampleToken(id)))
	}
	list, err := s.Tokens(ctx)
	must(t, "Tokens", err)
	var ids []string
	for _, tok := range list {
		ids = append(ids, tok.ID)
	}
	mustEqual(t, "ids", ids, []string{"a1", "b2", "c3"})
	mustEqual(t, "first token", list[0], sampleToken("a1"))
}

func testTokenDelete(t *testing.T, s meta.TokenStore) {
	ctx := ctxFor(t)
	must(t, "PutToken", s.PutToken(ctx, sampleToken("a1")))
	must(t, "PutToken", s.PutToken(ctx, sampleToken("b2")))
	must(t, "DeleteToken", s.DeleteToken(ctx, "a1"))
	_, err := s.Token(ctx, "a1")
	mustIs(t, "Token after delete", err, meta.ErrNotFound)
	mustIs(t, "DeleteToken again", s.DeleteToken(ctx, "a1"), meta.ErrNotFound)
	list, err := s.Tokens(ctx)
	must(t, "Tokens", err)
	if len(list) != 1 || list[0].ID != "b2" {
		t.Fatalf("Tokens after delete: %v", list)
	}
}

// testTokenConcurrentPut: of many puts of one id, exactly one succeeds.
func testTokenConcurrentPut(t *testing.T, s meta.TokenStore) {
	ctx := ctxFor(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := sampleToken("same")
			tok.Description = fmt.Sprint("writer ", i)
			errs[i] = s.PutToken(ctx, tok)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			mustIs(t, "losing PutToken", err, meta.ErrTokenExists)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent puts of one id succeeded, want 1", ok, n)
	}
}
