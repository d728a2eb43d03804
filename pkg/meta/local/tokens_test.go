package local

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

func TestTokenConformance(t *testing.T) {
	metatest.RunTokens(t, func(t *testing.T) meta.TokenStore { return openT(t, t.TempDir()) })
}

// TestTokensSurviveReopen: tokens and revocations are in the journal and
// in snapshots (a tiny snapshot threshold rotates on every few entries).
func TestTokensSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openT(t, dir, WithSnapshotBytes(256))
	for i := range 6 {
		if err := s.PutToken(ctx, meta.Token{ID: fmt.Sprint("t", i), Hash: "ab", Scope: meta.TokenScope{Operations: []string{"consume"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteToken(ctx, "t2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir)
	list, err := s.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		t.Fatalf("after reopen: %d tokens, want 5: %v", len(list), list)
	}
	if _, err := s.Token(ctx, "t2"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("revoked token after reopen: %v, want ErrNotFound", err)
	}
}
