package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/objstore"
	objlocal "github.com/tierlog/tierlog/pkg/objstore/local"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/tier"
)

// coldEnv is a broker and a compactor over one hot directory, one metadata
// store and one object store, on a fake clock.
type coldEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *raceClock
	b     *broker.Broker
	c     *compactor.Compactor
	store *local.Store
	objs  objstore.Store
	m     *metrics.Set
	cfg   broker.Config
}

func newColdEnv(t *testing.T, cache bool) *coldEnv {
	t.Helper()
	return newColdEnvOn(t, cache, mem.New())
}

// coldStores are the object stores the cold-tier tests run on: in memory
// (read with ranged Gets, or whole with the cache) and files on this
// machine (objstore.Files: read in place, as the local server reads them).
var coldStores = []struct {
	name string
	new  func(t *testing.T) objstore.Store
}{
	{"mem", func(*testing.T) objstore.Store { return mem.New() }},
	{"files", func(t *testing.T) objstore.Store {
		s, err := objlocal.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// newColdEnvOn is newColdEnv on the object store objects.
func newColdEnvOn(t *testing.T, cache bool, objects objstore.Store) *coldEnv {
	t.Helper()
	e := &coldEnv{t: t, ctx: context.Background(), clock: &raceClock{}}
	e.clock.ms.Store(1_700_000_000_000)
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.store = st
	e.objs, e.m = objects, &metrics.Set{}
	dir := t.TempDir()
	cfg := broker.Config{DataDir: dir, Meta: st, Objects: objects, Now: e.clock.now, IndexIntervalBytes: 256, Metrics: e.m}
	if cache {
		cfg.Cache = tier.NewCache(64 << 20)
	}
	e.cfg = cfg
	if e.b, err = broker.New(e.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.b.Close() })
	e.c, err = compactor.New(compactor.Config{Meta: st, Objects: objects, HotDir: dir, Grace: time.Minute, Now: e.clock.now, IndexIntervalBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// tier runs compactor passes (past the grace period, so the hot copies go)
// and returns the partition's hot start.
func (e *coldEnv) tier(topic string) int64 {
	e.t.Helper()
	for i := 0; i < 2; i++ {
		if _, err := e.c.Run(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		e.clock.advance(2 * time.Minute)
	}
	tp, err := e.b.Topic(e.ctx, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := e.store.Partition(e.ctx, partitionKey(tp))
	if err != nil {
		e.t.Fatal(err)
	}
	return p.ColdEnd
}

// fetchAll reads [0, hw) through Fetch in small pieces.
func (e *coldEnv) fetchAll(topic string, hw int64) []broker.Record {
	e.t.Helper()
	var out []broker.Record
	for off := int64(0); off < hw; {
		f, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Offset: off, MaxRecords: 97, MaxBytes: 8000})
		if err != nil {
			e.t.Fatalf("fetch %d: %v", off, err)
		}
		if len(f.Records) == 0 {
			e.t.Fatalf("empty fetch at %d below %d", off, hw)
		}
		out = append(out, f.Records...)
		off = f.NextOffset
	}
	return out
}

func sameHeaders(a, b []broker.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || (a[i].Value == nil) != (b[i].Value == nil) || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// TestCreateTimeAcrossTiers produces 10,000 records with headers and
// shuffled producer timestamps to a create-time topic, tiers most of them
// (the compactor turns sealed segments into artifacts and drops the hot
// copies), and checks that every record comes back whole from the cold
// and the hot tier, and that offset-for-timestamp matches a brute force
// scan, for timestamps answered in either tier and for none. With and
// without the cold-tier cache (the artifact read whole, or by sections).
func TestCreateTimeAcrossTiers(t *testing.T) {
	for _, st := range coldStores {
		for _, cache := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cache=%v", st.name, cache), func(t *testing.T) {
				createTimeAcrossTiers(t, newColdEnvOn(t, cache, st.new(t)), cache)
			})
		}
	}
}

func createTimeAcrossTiers(t *testing.T, e *coldEnv, cache bool) {
	const topic, n = "events", 10000
	if _, err := e.b.CreateTopic(e.ctx, broker.TopicSpec{Name: topic, SegmentBytes: ref(int64(16 << 10)),
		TimestampType: ref(broker.TimestampCreate), CacheEnabled: ref(cache)}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	t0 := e.clock.now().UnixMilli()
	recs := make([]broker.ProduceRecord, n)
	for i := range recs {
		r := broker.ProduceRecord{Value: fmt.Appendf(nil, "v%05d", i), Partition: 0}
		if i%97 != 0 {
			// A trend with noise: timestamps go back often, and the
			// answers spread over the whole log.
			r.Timestamp, r.HasTimestamp = t0-50_000+int64(i)*10+rng.Int64N(3_000)-1_500, true
		}
		switch i % 5 {
		case 0:
			r.Headers = []broker.Header{{Key: "trace-id", Value: fmt.Appendf(nil, "t%d", i)}}
		case 1:
			r.Headers = []broker.Header{{Key: "k", Value: nil}, {Key: "k", Value: []byte{}}, {Key: "bin", Value: []byte{0, 0xff, byte(i)}}}
		}
		recs[i] = r
	}
	ts := make([]int64, n)
	for i := 0; i < n; i += 100 {
		res, err := e.b.ProducePartition(e.ctx, topic, 0, recs[i:i+100])
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range res {
			if r.Offset != int64(i+j) {
				t.Fatalf("record %d at offset %d", i+j, r.Offset)
			}
			ts[i+j] = r.Timestamp
		}
		e.clock.advance(time.Millisecond)
	}
	coldEnd := e.tier(topic)
	if coldEnd < n/2 || coldEnd >= n {
		t.Fatalf("cold end %d: want most records tiered, some hot", coldEnd)
	}

	got := e.fetchAll(topic, n)
	for i, r := range got {
		w := recs[i]
		if r.Offset != int64(i) || !bytes.Equal(r.Value, w.Value) || r.Timestamp != ts[i] || !sameHeaders(r.Headers, w.Headers) {
			t.Fatalf("offset %d (cold end %d): %q ts %d headers %+v; want %q ts %d headers %+v", i, coldEnd, r.Value, r.Timestamp, r.Headers, w.Value, ts[i], w.Headers)
		}
	}

	// Brute force: the earliest offset whose timestamp is >= T.
	sorted := append([]int64(nil), ts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	probes := []int64{0, sorted[0] - 1, sorted[0], sorted[n-1], sorted[n-1] + 1}
	for i := 0; i < 400; i++ {
		v := sorted[rng.IntN(n)]
		probes = append(probes, v-1, v, v+1)
	}
	for i := 0; i < 100; i++ { // answered near the hot tail
		v := ts[int(coldEnd)+rng.IntN(n-int(coldEnd))]
		probes = append(probes, v-1, v, v+1)
	}
	inCold, inHot := 0, 0
	for _, q := range probes {
		want := -1
		for off, v := range ts {
			if v >= q {
				want = off
				break
			}
		}
		to, err := e.b.OffsetForTime(e.ctx, topic, 0, q)
		if err != nil {
			t.Fatalf("OffsetForTime(%d): %v", q, err)
		}
		switch {
		case want < 0:
			if to.Found || to.Offset != n {
				t.Fatalf("OffsetForTime(%d) = %+v; want none (offset %d)", q, to, n)
			}
		case !to.Found || to.Offset != int64(want) || to.Timestamp != ts[want]:
			t.Fatalf("OffsetForTime(%d) = %+v; want offset %d with timestamp %d (cold end %d)", q, to, want, ts[want], coldEnd)
		case int64(want) < coldEnd:
			inCold++
		default:
			inHot++
		}
	}
	if inCold < 50 || inHot < 20 {
		t.Fatalf("%d answers in the cold tier, %d in the hot: the probes should cover both", inCold, inHot)
	}
}

func partitionKey(tp broker.Topic) meta.PartitionKey {
	return meta.PartitionKey{Topic: tp.Name, TopicID: tp.ID, Partition: 0}
}
