package subscribe

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// MaxStatSeries bounds the (subscription, partition) keys Stats keeps:
// beyond it new keys are counted in Dropped, not kept.
const MaxStatSeries = 1000

// PartitionStats are one subscription partition's counters in this
// process. Fields are atomics: safe for concurrent use.
type PartitionStats struct {
	Invocations     atomic.Int64 // target invocations, whatever their outcome
	Delivered       atomic.Int64 // records the target took
	Failures        atomic.Int64 // failed invocations (whole or partial)
	Retries         atomic.Int64 // records sent again after a failure
	SentToOnFailure atomic.Int64 // records given up and produced to on_failure
	Dropped         atomic.Int64 // records given up without on_failure
	LagRecords      atomic.Int64 // high watermark minus the next offset to deliver
	LagAgeMs        atomic.Int64 // age of the oldest undelivered record (0: none)
}

// StatKey names a PartitionStats.
type StatKey struct {
	Subscription string
	Partition    int
}

// Stats holds every deliverer's counters of this process. Safe for
// concurrent use.
type Stats struct {
	mu      sync.Mutex
	m       map[StatKey]*PartitionStats
	dropped atomic.Int64
}

// NewStats returns empty Stats.
func NewStats() *Stats { return &Stats{m: map[StatKey]*PartitionStats{}} }

var discard PartitionStats

// of returns the counters of k, made on first use; past MaxStatSeries a
// shared sink that is never reported.
func (s *Stats) of(k StatKey) *PartitionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.m[k]; ok {
		return p
	}
	if len(s.m) >= MaxStatSeries {
		s.dropped.Add(1)
		return &discard
	}
	p := &PartitionStats{}
	s.m[k] = p
	return p
}

// forget drops the counters of a deleted subscription.
func (s *Stats) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if k.Subscription == name {
			delete(s.m, k)
		}
	}
}

// Each calls f for every key, by subscription and partition.
func (s *Stats) Each(f func(StatKey, *PartitionStats)) {
	s.mu.Lock()
	keys := make([]StatKey, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	slices.SortFunc(keys, func(a, b StatKey) int {
		return cmp.Or(cmp.Compare(a.Subscription, b.Subscription), cmp.Compare(a.Partition, b.Partition))
	})
	for _, k := range keys {
		s.mu.Lock()
		p := s.m[k]
		s.mu.Unlock()
		if p != nil {
			f(k, p)
		}
	}
}

// Dropped is how many keys were not kept (over MaxStatSeries).
func (s *Stats) Dropped() int64 { return s.dropped.Load() }
