// Package mem is an in-memory meta.Store: no durability, for unit tests of
// the layers above and as the reference the conformance suite checks the
// real adapters against. Safe for concurrent use.
package mem

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Store keeps every item in maps under one mutex.
type Store struct {
	mu     sync.Mutex
	topics map[string]meta.TopicConfig
	parts  map[meta.PartitionKey]meta.Partition
	groups map[string]map[string]map[int]meta.GroupOffset    // group -> topic -> partition
	segs   map[meta.PartitionKey]map[int64]meta.CatalogEntry // by NextOffset
	// gstates are the group state items.
	gstates map[string]meta.GroupState
	subs    *subs // subscriptions.go; made on first use
	// tokens are the access tokens (tokens.go).
	tokens tokenItems
}

var _ meta.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{
		topics: map[string]meta.TopicConfig{},
		parts:  map[meta.PartitionKey]meta.Partition{},
		groups: map[string]map[string]map[int]meta.GroupOffset{},
		segs:   map[meta.PartitionKey]map[int64]meta.CatalogEntry{},
	}
}

// CreateTopic implements meta.Store.
func (s *Store) CreateTopic(_ context.Context, t meta.TopicConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.topics[t.Name]; ok {
		return fmt.Errorf("%w: %q", meta.ErrTopicExists, t.Name)
	}
	s.topics[t.Name] = t
	return nil
}

// Topic implements meta.Store.
func (s *Store) Topic(_ context.Context, name string) (meta.TopicConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return t, fmt.Errorf("%w: topic %q", meta.ErrNotFound, name)
	}
	return t, nil
}

// Topics implements meta.Store.
func (s *Store) Topics(context.Context) ([]meta.TopicConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]meta.TopicConfig, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteTopic implements meta.Store.
func (s *Store) DeleteTopic(_ context.Context, name, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.topics[name]; !ok || t.ID != id {
		return fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, name, id)
	}
	delete(s.topics, name)
	return nil
}

func (s *Store) get(k meta.PartitionKey) meta.Partition {
	p, ok := s.parts[k]
	if !ok {
		return meta.Partition{Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition, LastTS: -1}
	}
	return clone(p)
}

func clone(p meta.Partition) meta.Partition {
	if p.Active != nil {
		a := *p.Active
		p.Active = &a
	}
	p.Sealed = append([]meta.SegmentInfo(nil), p.Sealed...)
	return p
}

// Partition implements meta.Store.
func (s *Store) Partition(_ context.Context, k meta.PartitionKey) (meta.Partition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(k), nil
}

// Acquire implements meta.Store.
func (s *Store) Acquire(_ context.Context, k meta.PartitionKey, owner string, now time.Time, ttl time.Duration) (meta.Acquired, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(k)
	if p.Deleted {
		return meta.Acquired{}, fmt.Errorf("%w: partition %v is deleted", meta.ErrNotFound, k)
	}
	live := p.Owner != "" && now.UnixMilli() < p.LeaseUntil
	if live && p.Owner != owner {
		return meta.Acquired{}, fmt.Errorf("%w: %v by %q until %d", meta.ErrLeaseHeld, k, p.Owner, p.LeaseUntil)
	}
	takenOver := p.Owner != ""
	p.Epoch++
	p.Version++
	p.Owner = owner
	p.LeaseUntil = now.Add(ttl).UnixMilli()
	s.parts[k] = clone(p)
	return meta.Acquired{Partition: p, TakenOver: takenOver}, nil
}

// Commit implements meta.Store.
func (s *Store) Commit(_ context.Context, p meta.Partition, release bool, now time.Time, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := meta.PartitionKey{Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition}
	cur, ok := s.parts[k]
	if !ok || cur.Deleted || cur.Epoch != p.Epoch || cur.Owner != p.Owner || cur.Version != p.Version || p.Owner == "" {
		return fmt.Errorf("%w: %v epoch %d owner %q version %d, item has epoch %d owner %q version %d deleted %v",
			meta.ErrFenced, k, p.Epoch, p.Owner, p.Version, cur.Epoch, cur.Owner, cur.Version, cur.Deleted)
	}
	p.LogStartOffset, p.ColdEnd = cur.LogStartOffset, cur.ColdEnd
	p.Version = cur.Version + 1
	p.Deleted = false
	if release {
		p.Owner, p.LeaseUntil = "", 0
	} else {
		p.LeaseUntil = now.Add(ttl).UnixMilli()
	}
	s.parts[k] = clone(p)
	return nil
}

// FencePartition implements meta.Store.
func (s *Store) FencePartition(_ context.Context, k meta.PartitionKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(k)
	p.Epoch++
	p.Version++
	p.Owner, p.LeaseUntil = "", 0
	p.Deleted = true
	s.parts[k] = p
	return nil
}

func (s *Store) advance(k meta.PartitionKey, field func(*meta.Partition) *int64, v int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.parts[k]
	if !ok {
		return fmt.Errorf("%w: partition %v", meta.ErrNotFound, k)
	}
	if f := field(&p); v > *f {
		*f = v
		s.parts[k] = p
	}
	return nil
}

// AdvanceLogStart implements meta.Store.
func (s *Store) AdvanceLogStart(_ context.Context, k meta.PartitionKey, v int64) error {
	return s.advance(k, func(p *meta.Partition) *int64 { return &p.LogStartOffset }, v)
}

// AdvanceColdEnd implements meta.Store.
func (s *Store) AdvanceColdEnd(_ context.Context, k meta.PartitionKey, v int64) error {
	return s.advance(k, func(p *meta.Partition) *int64 { return &p.ColdEnd }, v)
}

// PutSegment implements meta.Store.
func (s *Store) PutSegment(_ context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.segs[k]
	if m == nil {
		m = map[int64]meta.CatalogEntry{}
		s.segs[k] = m
	}
	if cur, ok := m[e.NextOffset]; ok {
		if cur.Base == e.Base && cur.Key == e.Key {
			return nil
		}
		return fmt.Errorf("%w: segment ending at %d is %s, not %s", meta.ErrConflict, e.NextOffset, cur.Key, e.Key)
	}
	m[e.NextOffset] = e
	return nil
}

// Segments implements meta.Store.
func (s *Store) Segments(_ context.Context, k meta.PartitionKey, from int64, limit int) ([]meta.CatalogEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []meta.CatalogEntry
	for end, e := range s.segs[k] {
		if end > from {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NextOffset < out[j].NextOffset })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// MarkSegmentCold implements meta.Store.
func (s *Store) MarkSegmentCold(_ context.Context, k meta.PartitionKey, nextOffset, ms int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.segs[k][nextOffset]
	if !ok {
		return fmt.Errorf("%w: segment ending at %d of %v", meta.ErrNotFound, nextOffset, k)
	}
	if e.ColdMs == 0 {
		e.ColdMs = ms
		s.segs[k][nextOffset] = e
	}
	return nil
}

// DeleteSegment implements meta.Store.
func (s *Store) DeleteSegment(_ context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.segs[k], e.NextOffset)
	return nil
}

// DeletePartition implements meta.Store.
func (s *Store) DeletePartition(_ context.Context, k meta.PartitionKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parts, k)
	return nil
}

// CommitOffsets implements meta.Store.
func (s *Store) CommitOffsets(_ context.Context, group string, offsets []meta.GroupOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		g = map[string]map[int]meta.GroupOffset{}
		s.groups[group] = g
	}
	for _, o := range offsets {
		if g[o.Topic] == nil {
			g[o.Topic] = map[int]meta.GroupOffset{}
		}
		if cur, ok := g[o.Topic][o.Partition]; ok && !o.Replaces(cur) {
			continue
		}
		g[o.Topic][o.Partition] = o
	}
	return nil
}

// GroupOffsets implements meta.Store.
func (s *Store) GroupOffsets(_ context.Context, group, topic string) ([]meta.GroupOffset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []meta.GroupOffset{}
	for _, o := range s.groups[group][topic] {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// Close implements meta.Store.
func (s *Store) Close() error { return nil }

// Group implements meta.Store.
func (s *Store) Group(_ context.Context, group string) (meta.GroupState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.gstates[group]; ok {
		return g.Clone(), nil
	}
	return meta.GroupState{Group: group}, nil
}

// PutGroup implements meta.Store.
func (s *Store) PutGroup(_ context.Context, g meta.GroupState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gstates == nil {
		s.gstates = map[string]meta.GroupState{}
	}
	cur := s.gstates[g.Group]
	if cur.Version != g.Version {
		return fmt.Errorf("%w: group %q is at version %d, not %d", meta.ErrConflict, g.Group, cur.Version, g.Version)
	}
	g = g.Clone()
	g.Version++
	s.gstates[g.Group] = g
	return nil
}

// DeleteGroup implements meta.Store.
func (s *Store) DeleteGroup(_ context.Context, group string, version uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.gstates[group]; cur.Version != version {
		return fmt.Errorf("%w: group %q is at version %d, not %d", meta.ErrConflict, group, cur.Version, version)
	}
	delete(s.gstates, group)
	return nil
}

// Groups implements meta.Store.
func (s *Store) Groups(context.Context) ([]meta.GroupState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]meta.GroupState, 0, len(s.gstates))
	for _, g := range s.gstates {
		out = append(out, g.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// DeleteGroupOffsets implements meta.Store.
func (s *Store) DeleteGroupOffsets(_ context.Context, group, topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.groups[group], topic)
	return nil
}

// UpdateTopic implements meta.Store.
func (s *Store) UpdateTopic(_ context.Context, old, t meta.TopicConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.topics[t.Name]
	if !ok || cur.ID != t.ID || old.ID != t.ID {
		return fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, t.Name, t.ID)
	}
	if cur.Partitions != old.Partitions {
		return fmt.Errorf("%w: topic %q has %d partitions, not %d", meta.ErrConflict, t.Name, cur.Partitions, old.Partitions)
	}
	s.topics[t.Name] = t
	return nil
}
