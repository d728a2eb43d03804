package broker_test

// Tests for reads racing a compactor pass: a fetch or offset-for-time must
// neither skip a segment nor answer an error other than records or out of
// range while segments move to the cold tier. The race is injected
// deterministically: the broker's metadata store is wrapped so that its
// catalog read (Segments) runs one whole compactor pass first (or right
// after), exactly where a concurrent compactor Lambda could run.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/faulty"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/tier"
)

// raceStore runs hook once, before (or after) the next Segments call.
type raceStore struct {
	meta.Store
	mu    sync.Mutex
	hook  func()
	after bool
}

func (r *raceStore) arm(after bool, f func()) {
	r.mu.Lock()
	r.hook, r.after = f, after
	r.mu.Unlock()
}

func (r *raceStore) take() (func(), bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, a := r.hook, r.after
	r.hook = nil
	return f, a
}

func (r *raceStore) Segments(ctx context.Context, k meta.PartitionKey, from int64, limit int) ([]meta.CatalogEntry, error) {
	f, after := r.take()
	if f != nil && !after {
		f()
	}
	out, err := r.Store.Segments(ctx, k, from, limit)
	if f != nil && after {
		f()
	}
	return out, err
}

type raceEnv struct {
	t       *testing.T
	ctx     context.Context
	inner   *local.Store
	rs      *raceStore
	clock   *raceClock
	b       *broker.Broker
	c       *compactor.Compactor
	objects objstore.Store
	topic   broker.Topic
}

func newRaceEnv(t *testing.T, spec broker.TopicSpec) *raceEnv {
	t.Helper()
	e := &raceEnv{t: t, ctx: context.Background(), clock: &raceClock{}}
	e.clock.ms.Store(1_700_000_000_000)
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.inner = st
	e.rs = &raceStore{Store: st}
	objects := mem.New()
	e.objects = objects
	dir := t.TempDir()
	e.b, err = broker.New(e.ctx, broker.Config{
		DataDir: dir, Meta: e.rs, Objects: objects,
		Cache: tier.NewCache(64 << 20), Now: e.clock.now, IndexIntervalBytes: 256,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.b.Close() })
	e.c, err = compactor.New(compactor.Config{Meta: st, Objects: objects, HotDir: dir, Grace: time.Minute, Now: e.clock.now, IndexIntervalBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	spec.Name = "logs"
	spec.SegmentBytes = ref(int64(4096))
	if e.topic, err = e.b.CreateTopic(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *raceEnv) produce(n int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		var recs []broker.ProduceRecord
		for j := 0; j < 5; j++ {
			recs = append(recs, broker.ProduceRecord{Key: []byte("k"), Value: []byte(fmt.Sprintf("v%d-%s", j, strings.Repeat("x", 80)))})
		}
		if _, err := e.b.ProducePartition(e.ctx, e.topic.Name, 0, recs); err != nil {
			e.t.Fatal(err)
		}
		e.clock.advance(time.Millisecond)
	}
}

func (e *raceEnv) pass() {
	e.t.Helper()
	st, err := e.c.Run(e.ctx)
	if err != nil {
		e.t.Errorf("compactor pass: %v", err)
	}
	e.t.Logf("compactor pass: %+v", st)
}

// A cold fetch whose catalog read races retention (log start advanced,
// artifact and entry deleted) must answer offset_out_of_range, not 500.
func TestColdFetchRacingRetentionIsOutOfRange(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := "entry-deleted-before-catalog-read"
		if after {
			name = "object-deleted-after-catalog-read"
		}
		t.Run(name, func(t *testing.T) {
			e := newRaceEnv(t, broker.TopicSpec{RetentionMs: ref(int64(60_000)), CacheEnabled: ref(false)})
			e.produce(50)
			e.pass() // tiers the sealed segments; nothing is old enough to drop
			e.clock.advance(time.Hour)
			e.produce(50)
			o, _ := e.b.Offsets(e.ctx, e.topic.Name, 0)
			t.Logf("before the fetch: log start %d, hw %d", o.LogStartOffset, o.HighWatermark)

			e.rs.arm(after, e.pass) // a compactor pass lands during the fetch
			var logbuf bytes.Buffer
			h := api.New(e.b, api.WithLogger(slog.New(slog.NewTextHandler(&logbuf, nil))))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/topics/logs/partitions/0/records?offset=0", nil))
			o2, _ := e.b.Offsets(e.ctx, e.topic.Name, 0)
			t.Logf("after: log start %d; fetch offset 0 answered %d %s", o2.LogStartOffset, rec.Code, strings.TrimSpace(rec.Body.String()))
			t.Logf("server log: %s", strings.TrimSpace(logbuf.String()))
			if rec.Code != http.StatusRequestedRangeNotSatisfiable {
				t.Errorf("fetch racing retention: HTTP %d, want 416 offset_out_of_range", rec.Code)
			}
			// Control: the same fetch once the pass is over is a clean 416.
			_, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: 0})
			var oor *broker.OffsetOutOfRangeError
			t.Logf("control fetch after the pass: out of range=%v (%v)", errors.As(err, &oor), err)
		})
	}
}

// Offset-for-time racing tiering: the broker asks the cold tier with an old
// view (segment still hot, so the cold entry is skipped), then the hot tier
// with a new view (segment tiered, so it is skipped too): the records of
// the segment that just moved are never considered.
func TestOffsetForTimeRacingTieringSkipsNothing(t *testing.T) {
	e := newRaceEnv(t, broker.TopicSpec{})
	e.produce(100)
	ts := int64(1_700_000_000_000) + 1 // the second batch: offsets 5..9
	want, err := e.b.OffsetForTime(e.ctx, e.topic.Name, 0, ts)
	if err != nil || !want.Found || want.Offset != 5 {
		t.Fatalf("before any compaction: %+v %v, want offset 5", want, err)
	}

	e.rs.arm(false, e.pass) // the compactor tiers everything mid-lookup
	got, err := e.b.OffsetForTime(e.ctx, e.topic.Name, 0, ts)
	t.Logf("racing a pass: %+v %v", got, err)
	if err != nil || !got.Found || got.Offset != 5 {
		t.Errorf("offset for time %d racing tiering: %+v (err %v), want offset 5", ts, got, err)
	}
	again, err := e.b.OffsetForTime(e.ctx, e.topic.Name, 0, ts)
	t.Logf("after the pass: %+v %v", again, err)
}

type raceClock struct{ ms atomic.Int64 }

func (c *raceClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *raceClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func ref[T any](v T) *T { return &v }

// A cold fetch whose object store fails (an S3 5xx after the SDK's retries)
// is a retryable 503, not a 500: nothing is wrong with the data.
func TestColdFetchObjectStoreFailureIsUnavailable(t *testing.T) {
	ctx := context.Background()
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := &raceClock{}
	clock.ms.Store(1_700_000_000_000)
	objects := faulty.New(mem.New())
	dir := t.TempDir()
	b, err := broker.New(ctx, broker.Config{DataDir: dir, Meta: st, Objects: objects, Now: clock.now, IndexIntervalBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := compactor.New(compactor.Config{Meta: st, Objects: objects, HotDir: dir, Grace: time.Minute, Now: clock.now, IndexIntervalBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic(ctx, broker.TopicSpec{Name: "logs", SegmentBytes: ref(int64(4096)), CacheEnabled: ref(false)}); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		if _, err := b.ProducePartition(ctx, "logs", 0, []broker.ProduceRecord{{Value: []byte(strings.Repeat("x", 200))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	objects.Add(faulty.Rule{Op: objstore.OpGet, Err: errors.New("injected: 503 SlowDown")})
	_, err = b.Fetch(ctx, broker.FetchRequest{Topic: "logs", Offset: 0})
	if !errors.Is(err, broker.ErrUnavailable) {
		t.Errorf("cold fetch with the object store failing: %v, want ErrUnavailable", err)
	}
}

// partitionReads counts reads of partition items.
type partitionReads struct {
	meta.Store
	n atomic.Int64
}

func (s *partitionReads) Partition(ctx context.Context, k meta.PartitionKey) (meta.Partition, error) {
	s.n.Add(1)
	return s.Store.Partition(ctx, k)
}

// A cold fetch costs one read of the partition item (the view that sent it
// to the cold tier) and one catalog read: the cold read answers with that
// view's bounds rather than reading them again.
func TestColdFetchReadsThePartitionOnce(t *testing.T) {
	e := newRaceEnv(t, broker.TopicSpec{CacheEnabled: ref(false)})
	e.produce(50)
	e.pass()
	counted := &partitionReads{Store: e.rs}
	b, err := broker.New(e.ctx, broker.Config{DataDir: t.TempDir(), Meta: counted, Objects: e.objects, ReadOnly: true, Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: 0}); err != nil {
		t.Fatal(err) // warms the topic and partition caches
	}
	counted.n.Store(0)
	f, err := b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: 0})
	if err != nil || len(f.Records) == 0 {
		t.Fatalf("cold fetch: %+v %v", f, err)
	}
	if n := counted.n.Load(); n != 1 {
		t.Errorf("a cold fetch read the partition item %d times, want 1", n)
	}
}
