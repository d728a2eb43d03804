package local

import (
	"context"
	"fmt"

	"github.com/tierlog/tierlog/pkg/meta"
)

var _ meta.TokenStore = (*Store)(nil)

// PutToken implements meta.TokenStore: one put_token entry.
func (s *Store) PutToken(ctx context.Context, t meta.Token) error {
	tok := t.Clone()
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if _, ok := st.tokens[t.ID]; ok {
			return nil, fmt.Errorf("%w: %q", meta.ErrTokenExists, t.ID)
		}
		return &entry{Op: opPutToken, Token: &tok}, nil
	})
}

// Token implements meta.TokenStore.
func (s *Store) Token(ctx context.Context, id string) (meta.Token, error) {
	var out meta.Token
	err := s.read(ctx, func(st *state) error {
		t, ok := st.tokens[id]
		if !ok {
			return fmt.Errorf("%w: token %q", meta.ErrNotFound, id)
		}
		out = t.Clone()
		return nil
	})
	return out, err
}

// Tokens implements meta.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]meta.Token, error) {
	var out []meta.Token
	err := s.read(ctx, func(st *state) error {
		out = make([]meta.Token, 0, len(st.tokens))
		for _, id := range sortedKeys(st.tokens) {
			out = append(out, st.tokens[id].Clone())
		}
		return nil
	})
	return out, err
}

// DeleteToken implements meta.TokenStore: one del_token entry.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if _, ok := st.tokens[id]; !ok {
			return nil, fmt.Errorf("%w: token %q", meta.ErrNotFound, id)
		}
		return &entry{Op: opDelToken, Name: id}, nil
	})
}
