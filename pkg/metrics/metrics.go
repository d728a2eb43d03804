// Package metrics holds tierlog's own counters as plain atomics, so every
// layer can count without importing an exporter. The local server exposes
// them (with the adapters' request counters) to Prometheus at /metrics; the
// Lambda functions write them as CloudWatch Embedded Metric Format lines.
// A nil *Set is valid and counts nothing.
package metrics

import (
	"math"
	"sync/atomic"
	"time"
)

// Set is one process's counters. Safe for concurrent use.
type Set struct {
	// Produce path.
	Flush          Histogram // seconds per group-commit flush (write, fsync, commit)
	FlushRecords   atomic.Int64
	FlushBytes     atomic.Int64
	LeaseConflicts atomic.Int64 // lease busy or commit fenced
	// AfterAnswer is the time (ns) spent on produce work after the
	// answer (partition.Config.Detach): the checkpoint, chained rounds,
	// the release. Lambda bills it with the invocation.
	AfterAnswer atomic.Int64

	// Damage: reads answered with damaged records (never served), and
	// sealed segments the compactor quarantined. Either nonzero is an alarm.
	DamagedReads        atomic.Int64
	SegmentsQuarantined atomic.Int64

	// Compactor.
	SegmentsFinalized atomic.Int64
	BytesFinalized    atomic.Int64
	LogStartAdvances  atomic.Int64
}

// New returns an empty Set.
func New() *Set { return &Set{Flush: NewHistogram(FlushBuckets)} }

// ObserveFlush records one flush.
func (s *Set) ObserveFlush(d time.Duration, records, bytes int) {
	if s == nil {
		return
	}
	s.Flush.Observe(d.Seconds())
	s.FlushRecords.Add(int64(records))
	s.FlushBytes.Add(int64(bytes))
}

// ObserveAfterAnswer records work done after a produce's answer.
func (s *Set) ObserveAfterAnswer(d time.Duration) {
	if s != nil {
		s.AfterAnswer.Add(int64(d))
	}
}

// Conflict counts a lease conflict.
func (s *Set) Conflict() {
	if s != nil {
		s.LeaseConflicts.Add(1)
	}
}

// Damaged counts a read that reached damaged records.
func (s *Set) Damaged() {
	if s != nil {
		s.DamagedReads.Add(1)
	}
}

// FlushBuckets are upper bounds in seconds, from 100 µs to 10 s.
var FlushBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// Histogram is a fixed-bucket histogram of float64 observations.
type Histogram struct {
	bounds []float64
	counts []atomic.Int64 // len(bounds)+1: the last is +Inf
	sum    atomic.Uint64  // float64 bits
	n      atomic.Int64
}

// NewHistogram returns a histogram with the given ascending upper bounds.
func NewHistogram(bounds []float64) Histogram {
	return Histogram{bounds: bounds, counts: make([]atomic.Int64, len(bounds)+1)}
}

// Observe adds v.
func (h *Histogram) Observe(v float64) {
	if h.counts == nil {
		return
	}
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.n.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Snapshot returns the bucket bounds, cumulative counts per bound, the sum
// and the count.
func (h *Histogram) Snapshot() (bounds []float64, cumulative []uint64, sum float64, count uint64) {
	bounds = h.bounds
	cumulative = make([]uint64, len(h.bounds))
	var c uint64
	for i := range h.bounds {
		c += uint64(h.counts[i].Load())
		cumulative[i] = c
	}
	return bounds, cumulative, math.Float64frombits(h.sum.Load()), uint64(h.n.Load())
}
