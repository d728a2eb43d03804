package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/metrics"
)

// Bounds of one sample: what a sample keeps past them is dropped (and the
// sample says how much).
const (
	// MaxTierPartitions bounds the partitions whose sizes one sample reads
	// (two metadata reads each): the first by topic and partition.
	MaxTierPartitions = 1000
	// MaxLagSeries bounds the group partitions whose lag one sample keeps:
	// the first by group, topic and partition.
	MaxLagSeries = 256
	// MaxRequestSeries bounds the route, method and code triples one
	// sample keeps (the API has a few dozen in practice).
	MaxRequestSeries = 128
)

// Sources are the parts of a running server the sampler reads.
type Sources struct {
	Broker   *broker.Broker
	Meta     meta.Store
	Metrics  *metrics.Set  // nil: no engine counters
	Requests *metrics.HTTP // nil: no request counts
	// Streamed returns how many records streaming fetches have sent since
	// the start; nil when the server does not stream.
	Streamed func() int64
}

// Sample is what the server looked like at T. Counters are deltas since the
// previous sample (the first: since the sampler started); sizes and lags
// are as read at T.
type Sample struct {
	T                 int64          `json:"t"` // unix ms
	RecordsIn         int64          `json:"records_in"`
	BytesIn           int64          `json:"bytes_in"`
	RecordsStreamed   int64          `json:"records_streamed"`
	Fetches           int64          `json:"fetches"` // plain and streaming fetch requests answered
	SegmentsFinalized int64          `json:"segments_finalized"`
	BytesFinalized    int64          `json:"bytes_finalized"`
	HotBytes          int64          `json:"hot_bytes"`
	ColdBytes         int64          `json:"cold_bytes"`
	PendingBytes      int64          `json:"pending_bytes"` // sealed hot segments not yet in the cold tier
	Requests          []RequestCount `json:"requests,omitempty"`
	RequestsDropped   int            `json:"requests_dropped,omitempty"`
	Lags              []Lag          `json:"-"` // served per group: LagHistory
	LagsDropped       int            `json:"lags_dropped,omitempty"`
	PartitionsDropped int            `json:"partitions_dropped,omitempty"` // over MaxTierPartitions, not sized
}

// RequestCount is the requests of one route, method and code in a sample.
type RequestCount struct {
	Route  string `json:"route"`
	Method string `json:"method"`
	Code   int    `json:"code"`
	Count  int64  `json:"count"`
}

// Lag is one group partition's lag at a sample.
type Lag struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Lag       int64  `json:"lag"`
}

// PartitionSize is one partition as the last sample read it.
type PartitionSize struct {
	Partition      int   `json:"partition"`
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
	HotBytes       int64 `json:"hot_bytes"`
	ColdBytes      int64 `json:"cold_bytes"`
	HotSegments    int   `json:"hot_segments"`
	ColdSegments   int   `json:"cold_segments"`
}

// TopicSize is one topic as the last sample read it.
type TopicSize struct {
	Topic      string          `json:"topic"`
	HotBytes   int64           `json:"hot_bytes"`
	ColdBytes  int64           `json:"cold_bytes"`
	Partitions []PartitionSize `json:"partitions"`
	pending    int64           // sealed hot bytes not yet tiered
}

// counters are the cumulative values the deltas are taken from.
type counters struct {
	recordsIn, bytesIn, streamed, segs, segBytes int64
	requests                                     map[metrics.HTTPKey]int64
}

// sampler keeps the last Window/Interval samples in a ring. Safe for
// concurrent use: Sample (the ticker, or a test) writes; the handlers read.
// Lock order: run, then mu. I/O (metadata reads) happens under run only,
// never under mu, so the handlers never wait for it.
type sampler struct {
	src  Sources
	now  func() time.Time
	size int // ring capacity

	run sync.Mutex // one Sample at a time (the ticker and a caller)
	mu  struct {
		sync.Mutex
		ring   []Sample // oldest first once full: ring[next:] then ring[:next]
		next   int
		full   bool
		last   counters
		topics []TopicSize // as the latest sample read them
		intern map[string]string
	}
}

func newSampler(src Sources, now func() time.Time, size int) *sampler {
	s := &sampler{src: src, now: now, size: size}
	s.mu.ring = make([]Sample, 0, size)
	s.mu.last = s.read()
	s.mu.intern = map[string]string{}
	return s
}

// fetchRoute is the fetch route's pattern, as the request counters name it.
const fetchRoute = "/v1/topics/{topic}/partitions/{partition}/records"

// read takes the cumulative counters; it does no I/O.
func (s *sampler) read() counters {
	c := counters{requests: map[metrics.HTTPKey]int64{}}
	if m := s.src.Metrics; m != nil {
		c.recordsIn, c.bytesIn = m.FlushRecords.Load(), m.FlushBytes.Load()
		c.segs, c.segBytes = m.SegmentsFinalized.Load(), m.BytesFinalized.Load()
	}
	if s.src.Streamed != nil {
		c.streamed = s.src.Streamed()
	}
	s.src.Requests.Each(func(k metrics.HTTPKey, h *metrics.Histogram) {
		_, _, _, n := h.Snapshot()
		c.requests[k] = int64(n)
	})
	return c
}

// Sample reads the server once and appends the sample to the ring, the
// oldest falling out when it is full. The ticker calls it every Interval;
// tests call it directly. Sizes or lags it could not read are logged by
// the caller from the error, and the sample is kept without them.
func (s *sampler) Sample(ctx context.Context) error {
	s.run.Lock()
	defer s.run.Unlock()
	t := s.now()
	topics, dropped, errT := s.sizes(ctx)
	lags, lagsDropped, errL := s.lags(ctx)
	c := s.read()

	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.mu.last
	smp := Sample{
		T:                 t.UnixMilli(),
		RecordsIn:         c.recordsIn - prev.recordsIn,
		BytesIn:           c.bytesIn - prev.bytesIn,
		RecordsStreamed:   c.streamed - prev.streamed,
		SegmentsFinalized: c.segs - prev.segs,
		BytesFinalized:    c.segBytes - prev.segBytes,
		PartitionsDropped: dropped,
		LagsDropped:       lagsDropped,
	}
	for k, n := range c.requests {
		d := n - prev.requests[k]
		if d == 0 {
			continue
		}
		if k.Route == fetchRoute && k.Method == "GET" {
			smp.Fetches += d
		}
		if len(smp.Requests) == MaxRequestSeries {
			smp.RequestsDropped++
			continue
		}
		smp.Requests = append(smp.Requests, RequestCount{Route: k.Route, Method: k.Method, Code: k.Code, Count: d})
	}
	slices.SortFunc(smp.Requests, cmpRequests)
	if errT == nil {
		s.mu.topics = topics
	}
	// Sizes not read this time are the last ones read, not zeros.
	for _, ts := range s.mu.topics {
		smp.HotBytes += ts.HotBytes
		smp.ColdBytes += ts.ColdBytes
	}
	smp.PendingBytes = pendingOf(s.mu.topics)
	// Lags keep their names through the intern table: a group's name is
	// held once however many samples mention it. The table is rebuilt
	// from this sample's names, so names gone from the server leave it.
	intern := make(map[string]string, len(s.mu.intern))
	name := func(v string) string {
		if w, ok := s.mu.intern[v]; ok {
			v = w
		}
		intern[v] = v
		return v
	}
	for i := range lags {
		lags[i].Group, lags[i].Topic = name(lags[i].Group), name(lags[i].Topic)
	}
	s.mu.intern = intern
	smp.Lags = lags
	s.mu.last = c
	if len(s.mu.ring) < s.size {
		s.mu.ring = append(s.mu.ring, smp)
	} else {
		s.mu.ring[s.mu.next] = smp
		s.mu.next = (s.mu.next + 1) % s.size
		s.mu.full = true
	}
	return errors.Join(errT, errL)
}

func cmpRequests(a, b RequestCount) int {
	if c := strings.Compare(a.Route, b.Route); c != 0 {
		return c
	}
	if c := strings.Compare(a.Method, b.Method); c != 0 {
		return c
	}
	return a.Code - b.Code
}

// pendingOf sums the sealed hot bytes the compactor has not tiered yet.
func pendingOf(topics []TopicSize) int64 {
	var n int64
	for _, t := range topics {
		n += t.pending
	}
	return n
}

// sizes reads every topic's partitions from the metadata store: bounds,
// hot segment sizes, cold catalog sizes. Two metadata reads a partition,
// for at most MaxTierPartitions partitions; dropped counts the rest.
func (s *sampler) sizes(ctx context.Context) (_ []TopicSize, dropped int, _ error) {
	if s.src.Broker == nil || s.src.Meta == nil {
		return nil, 0, nil
	}
	topics, err := s.src.Broker.Topics(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("console: list topics: %w", err)
	}
	out := make([]TopicSize, 0, len(topics))
	read := 0
	for _, t := range topics {
		ts := TopicSize{Topic: t.Name, Partitions: []PartitionSize{}}
		for p := range t.Partitions {
			if read == MaxTierPartitions {
				dropped++
				continue
			}
			read++
			k := meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p}
			item, err := s.src.Meta.Partition(ctx, k)
			if err != nil {
				return nil, 0, fmt.Errorf("console: read partition %s/%d: %w", t.Name, p, err)
			}
			cat, err := s.src.Meta.Segments(ctx, k, 0, 0)
			if err != nil {
				return nil, 0, fmt.Errorf("console: read catalog of %s/%d: %w", t.Name, p, err)
			}
			ps := PartitionSize{Partition: p, LogStartOffset: item.LogStartOffset, HighWatermark: item.NextOffset}
			if item.Active != nil {
				ps.HotBytes += item.Active.Size
				ps.HotSegments++
			}
			for _, sg := range item.Sealed {
				if sg.NextOffset <= item.ColdEnd {
					continue // in the catalog already: counted cold
				}
				ps.HotBytes += sg.Size
				ps.HotSegments++
				ts.pending += sg.Size
			}
			for _, e := range cat {
				ps.ColdBytes += e.Size
				ps.ColdSegments++
			}
			ts.HotBytes += ps.HotBytes
			ts.ColdBytes += ps.ColdBytes
			ts.Partitions = append(ts.Partitions, ps)
		}
		out = append(out, ts)
	}
	return out, dropped, nil
}

// lags reads every group's committed offsets and their lags (the broker's
// GroupOffsets: the offsets and each partition's bounds), keeping at most
// MaxLagSeries; dropped counts the rest.
func (s *sampler) lags(ctx context.Context) (_ []Lag, dropped int, _ error) {
	if s.src.Broker == nil || s.src.Meta == nil {
		return nil, 0, nil
	}
	groups, err := s.src.Meta.Groups(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("console: list groups: %w", err)
	}
	var out []Lag
	for _, g := range groups {
		for _, topic := range g.OffsetTopics {
			offs, err := s.src.Broker.GroupOffsets(ctx, g.Group, topic)
			if errors.Is(err, broker.ErrTopicNotFound) {
				continue // deleted since: its offsets went with it
			}
			if err != nil {
				return out, dropped, fmt.Errorf("console: offsets of group %s on %s: %w", g.Group, topic, err)
			}
			for _, o := range offs {
				if len(out) == MaxLagSeries {
					dropped++
					continue
				}
				out = append(out, Lag{Group: g.Group, Topic: topic, Partition: o.Partition, Lag: o.Lag})
			}
		}
	}
	return out, dropped, nil
}

// History is the kept samples, oldest first.
func (s *sampler) History() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sample, 0, len(s.mu.ring))
	out = append(out, s.mu.ring[s.mu.next:]...)
	return append(out, s.mu.ring[:s.mu.next]...)
}

// Topics is the topics as the latest sample read them.
func (s *sampler) Topics() []TopicSize {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.topics
}

// LagPoint is one group partition's lag over the kept samples: Lags[i]
// is at the i-th time of LagHistory's answer, -1 where that sample did not
// have it.
type LagPoint struct {
	Topic     string  `json:"topic"`
	Partition int     `json:"partition"`
	Lags      []int64 `json:"lags"`
}

// LagHistory is one group's lag per partition over the kept samples.
func (s *sampler) LagHistory(group string) (times []int64, series []LagPoint) {
	h := s.History()
	times = make([]int64, len(h))
	idx := map[string]map[int]int{}
	for i, smp := range h {
		times[i] = smp.T
		for _, l := range smp.Lags {
			if l.Group != group {
				continue
			}
			k := l.Topic
			if idx[k] == nil {
				idx[k] = map[int]int{}
			}
			j, ok := idx[k][l.Partition]
			if !ok {
				j = len(series)
				idx[k][l.Partition] = j
				lags := make([]int64, len(h))
				for n := range lags {
					lags[n] = -1
				}
				series = append(series, LagPoint{Topic: l.Topic, Partition: l.Partition, Lags: lags})
			}
			series[j].Lags[i] = l.Lag
		}
	}
	slices.SortFunc(series, func(a, b LagPoint) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return a.Partition - b.Partition
	})
	return times, series
}
