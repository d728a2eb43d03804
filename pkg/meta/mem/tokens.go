package mem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tierlog/tierlog/pkg/meta"
)

// tokenItems are the token items, under their own mutex (no method holds
// both it and Store.mu). The zero value is empty.
type tokenItems struct {
	mu sync.Mutex
	m  map[string]meta.Token
}

var _ meta.TokenStore = (*Store)(nil)

// PutToken implements meta.TokenStore.
func (s *Store) PutToken(_ context.Context, t meta.Token) error {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	if _, ok := s.tokens.m[t.ID]; ok {
		return fmt.Errorf("%w: %q", meta.ErrTokenExists, t.ID)
	}
	if s.tokens.m == nil {
		s.tokens.m = map[string]meta.Token{}
	}
	s.tokens.m[t.ID] = t.Clone()
	return nil
}

// Token implements meta.TokenStore.
func (s *Store) Token(_ context.Context, id string) (meta.Token, error) {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	t, ok := s.tokens.m[id]
	if !ok {
		return meta.Token{}, fmt.Errorf("%w: token %q", meta.ErrNotFound, id)
	}
	return t.Clone(), nil
}

// Tokens implements meta.TokenStore.
func (s *Store) Tokens(context.Context) ([]meta.Token, error) {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	out := make([]meta.Token, 0, len(s.tokens.m))
	for _, t := range s.tokens.m {
		out = append(out, t.Clone())
	}
	slices.SortFunc(out, func(a, b meta.Token) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteToken implements meta.TokenStore.
func (s *Store) DeleteToken(_ context.Context, id string) error {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	if _, ok := s.tokens.m[id]; !ok {
		return fmt.Errorf("%w: token %q", meta.ErrNotFound, id)
	}
	delete(s.tokens.m, id)
	return nil
}
