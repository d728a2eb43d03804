// Package mem is an in-memory objstore.Store: no durability, for unit tests
// of the layers above and as the reference the conformance suite checks
// the real adapters against. Safe for concurrent use.
package mem

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// Store keeps every object in a map under one lock. Stored and returned
// bytes are copies: callers may reuse their buffers.
type Store struct {
	mu      sync.RWMutex
	objects map[string][]byte
}

var _ objstore.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{objects: map[string][]byte{}}
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	b, err := s.read(ctx, key, body, size)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = b
	return nil
}

// PutIfAbsent implements objstore.Store.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	b, err := s.read(ctx, key, body, size)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; ok {
		return fmt.Errorf("%w: key %q", objstore.ErrExists, key)
	}
	s.objects[key] = b
	return nil
}

func (s *Store) read(ctx context.Context, key string, body io.Reader, size int64) ([]byte, error) {
	if err := objstore.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return objstore.ReadBody(body, size)
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := objstore.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("%w: key %q off %d", objstore.ErrRange, key, off)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("%w: key %q", objstore.ErrNotFound, key)
	}
	start, end, err := objstore.Span(key, off, n, int64(len(b)))
	if err != nil {
		return nil, err
	}
	return slices.Clone(b[start:end:end]), nil
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	if err := objstore.CheckKey(key); err != nil {
		return objstore.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return objstore.Info{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.objects[key]
	if !ok {
		return objstore.Info{}, fmt.Errorf("%w: key %q", objstore.ErrNotFound, key)
	}
	return objstore.Info{Key: key, Size: int64(len(b))}, nil
}

// List implements objstore.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]objstore.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	var out []objstore.Info
	for k, b := range s.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, objstore.Info{Key: k, Size: int64(len(b))})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b objstore.Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objstore.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
	return nil
}
