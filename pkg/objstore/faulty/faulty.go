// Package faulty wraps an objstore.Store and makes chosen calls fail, for
// crash and retry tests (STYLE.md habit 13). A rule picks calls by
// operation, key prefix and position, and fails them either before the
// call reaches the inner store (nothing happened) or after it (the write
// happened but the caller sees an error, like a timeout after S3 committed
// it: the "outcome unknown" case).
//
//	f := faulty.New(mem.New())
//	f.FailNext(objstore.OpPutIfAbsent, 1)               // next PutIfAbsent fails, stores nothing
//	f.Add(faulty.Rule{Op: objstore.OpPut, When: faulty.After, Skip: 2, Times: 1})
//
// Safe for concurrent use; rules are checked in the order added and the
// first that matches a call decides it.
package faulty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// ErrInjected is the error a rule returns when it has no Err of its own.
var ErrInjected = errors.New("faulty: injected fault")

// AnyOp in Rule.Op matches every operation.
const AnyOp objstore.Op = -1

// When says whether a fault is injected before or after the inner call.
type When int

const (
	// Before fails the call without reaching the inner store.
	Before When = iota
	// After makes the inner call, discards its result and returns the
	// fault: a write happened that the caller believes failed. Reads
	// return no data.
	After
)

// Rule selects calls to fail.
type Rule struct {
	Op        objstore.Op // the operation, or AnyOp
	KeyPrefix string      // only keys (List: prefixes) starting with this; "" for all
	When      When
	Skip      int   // let this many matching calls through first
	Times     int   // fail this many matching calls, then retire; 0 means every one
	Err       error // returned error; nil means ErrInjected
}

type rule struct {
	Rule
	seen, failed int
	id           uint64
}

// Store is the fault-injecting wrapper. The zero value is not usable; call
// New.
type Store struct {
	inner objstore.Store
	mu    struct {
		sync.Mutex
		rules    []*rule
		nextID   uint64
		injected int
	}
}

var _ objstore.Store = (*Store)(nil)

// New wraps inner with no rules: every call passes through.
func New(inner objstore.Store) *Store {
	return &Store{inner: inner}
}

// Add installs r and returns a function that removes it.
func (s *Store) Add(r Rule) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.nextID++
	id := s.mu.nextID
	s.mu.rules = append(s.mu.rules, &rule{Rule: r, id: id})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.mu.rules {
			if x.id == id {
				s.mu.rules = append(s.mu.rules[:i], s.mu.rules[i+1:]...)
				return
			}
		}
	}
}

// FailNext makes the next n calls of op fail with ErrInjected before
// reaching the inner store.
func (s *Store) FailNext(op objstore.Op, n int) {
	if n > 0 {
		s.Add(Rule{Op: op, Times: n})
	}
}

// Clear removes every rule.
func (s *Store) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.rules = nil
}

// Injected returns how many faults have been injected so far.
func (s *Store) Injected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.injected
}

// Inner returns the wrapped store, for checking what really happened.
func (s *Store) Inner() objstore.Store { return s.inner }

// check returns the fault for this call, if any, and when to inject it.
func (s *Store) check(op objstore.Op, key string) (When, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.mu.rules {
		if (r.Op != AnyOp && r.Op != op) || !strings.HasPrefix(key, r.KeyPrefix) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip {
			continue
		}
		r.failed++
		if r.Times > 0 && r.failed >= r.Times {
			s.mu.rules = append(s.mu.rules[:i], s.mu.rules[i+1:]...)
		}
		s.mu.injected++
		err := r.Err
		if err == nil {
			err = ErrInjected
		}
		return r.When, fmt.Errorf("faulty: %s %q: %w", op, key, err)
	}
	return Before, nil
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	when, fault := s.check(objstore.OpPut, key)
	if fault != nil && when == Before {
		return fault
	}
	err := s.inner.Put(ctx, key, body, size)
	if fault != nil {
		return fault
	}
	return err
}

// PutIfAbsent implements objstore.Store.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	when, fault := s.check(objstore.OpPutIfAbsent, key)
	if fault != nil && when == Before {
		return fault
	}
	err := s.inner.PutIfAbsent(ctx, key, body, size)
	if fault != nil {
		return fault
	}
	return err
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	when, fault := s.check(objstore.OpGet, key)
	if fault != nil && when == Before {
		return nil, fault
	}
	b, err := s.inner.Get(ctx, key, off, n)
	if fault != nil {
		return nil, fault
	}
	return b, err
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	when, fault := s.check(objstore.OpHead, key)
	if fault != nil && when == Before {
		return objstore.Info{}, fault
	}
	info, err := s.inner.Head(ctx, key)
	if fault != nil {
		return objstore.Info{}, fault
	}
	return info, err
}

// List implements objstore.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]objstore.Info, error) {
	when, fault := s.check(objstore.OpList, prefix)
	if fault != nil && when == Before {
		return nil, fault
	}
	infos, err := s.inner.List(ctx, prefix)
	if fault != nil {
		return nil, fault
	}
	return infos, err
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	when, fault := s.check(objstore.OpDelete, key)
	if fault != nil && when == Before {
		return fault
	}
	err := s.inner.Delete(ctx, key)
	if fault != nil {
		return fault
	}
	return err
}
