package compactor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/index"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

type env struct {
	t       *testing.T
	ctx     context.Context
	dir     string
	store   meta.Store
	objects objstore.Store
	counts  *objstore.Counters
	clock   *clock
	b       *broker.Broker
	topic   broker.Topic
	acked   map[int64][]byte
}

func ptr[T any](v T) *T { return &v }

func newEnv(t *testing.T, spec broker.TopicSpec) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), dir: t.TempDir(), objects: mem.New(), counts: &objstore.Counters{},
		clock: &clock{}, acked: map[int64][]byte{}}
	e.clock.ms.Store(1_700_000_000_000)
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.store = st
	e.b, err = broker.New(e.ctx, broker.Config{
		DataDir: e.dir, Meta: st, Objects: objstore.Counting(e.objects, e.counts),
		Cache: tier.NewCache(64 << 20), Now: e.clock.now, IndexIntervalBytes: 256,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.b.Close() })
	if spec.Name == "" {
		spec.Name = "logs"
	}
	if spec.SegmentBytes == nil {
		spec.SegmentBytes = ptr(int64(4096))
	}
	if e.topic, err = e.b.CreateTopic(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) compactor(hook func(string, meta.PartitionKey, int64) error) *Compactor {
	c, err := New(Config{Meta: e.store, Objects: objstore.Counting(e.objects, e.counts), HotDir: e.dir,
		Grace: time.Minute, Now: e.clock.now, IndexIntervalBytes: 256, Hook: hook})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// produce appends n batches of 5 records of about 100 bytes, one
// millisecond apart.
func (e *env) produce(n int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		var recs []broker.ProduceRecord
		for j := 0; j < 5; j++ {
			recs = append(recs, broker.ProduceRecord{Key: []byte("k"), Value: []byte(fmt.Sprintf("v%06d-%d-%s", len(e.acked), j, strings.Repeat("x", 80)))})
		}
		res, err := e.b.ProducePartition(e.ctx, e.topic.Name, 0, recs)
		if err != nil {
			e.t.Fatal(err)
		}
		for j, r := range res {
			e.acked[r.Offset] = recs[j].Value
		}
		e.clock.advance(time.Millisecond)
	}
}

func (e *env) key() meta.PartitionKey {
	return meta.PartitionKey{Topic: e.topic.Name, TopicID: e.topic.ID, Partition: 0}
}

// readAll fetches from the log start to the high watermark and checks
// density, timestamps (never back, on an append-time topic) and every
// acknowledged value still retained.
func (e *env) readAll() (logStart int64) {
	e.t.Helper()
	o, err := e.b.Offsets(e.ctx, e.topic.Name, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var lastTS int64
	for off := o.LogStartOffset; off < o.HighWatermark; {
		f, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: off, MaxRecords: 37, MaxBytes: 2000})
		if err != nil {
			e.t.Fatalf("fetch %d: %v", off, err)
		}
		if len(f.Records) == 0 {
			e.t.Fatalf("empty fetch at %d below hw %d", off, o.HighWatermark)
		}
		for _, r := range f.Records {
			if r.Offset != off {
				e.t.Fatalf("I1: offset %d where %d expected", r.Offset, off)
			}
			if r.Timestamp < lastTS && e.topic.TimestampType != broker.TimestampCreate {
				e.t.Fatalf("I6: timestamp went back at %d", off)
			}
			lastTS = r.Timestamp
			if !bytes.Equal(r.Value, e.acked[off]) {
				e.t.Fatalf("I2: offset %d holds %q, acknowledged %q", off, r.Value, e.acked[off])
			}
			off++
		}
	}
	if o.HighWatermark != int64(len(e.acked)) {
		e.t.Fatalf("hw %d, acknowledged %d", o.HighWatermark, len(e.acked))
	}
	return o.LogStartOffset
}

// checkConverged checks the catalog and the object store agree one to one,
// and the cold end covers every sealed segment.
func (e *env) checkConverged() {
	e.t.Helper()
	entries, err := e.store.Segments(e.ctx, e.key(), -1, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	objs, err := e.objects.List(e.ctx, "")
	if err != nil {
		e.t.Fatal(err)
	}
	var keys, objKeys []string
	for _, en := range entries {
		keys = append(keys, en.Key)
	}
	for _, o := range objs {
		objKeys = append(objKeys, o.Key)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != strings.Join(objKeys, ",") {
		e.t.Fatalf("catalog %v, objects %v", keys, objKeys)
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].Base != entries[i-1].NextOffset {
			e.t.Fatalf("catalog gap: %d..%d then %d", entries[i-1].Base, entries[i-1].NextOffset, entries[i].Base)
		}
	}
	p, _ := e.store.Partition(e.ctx, e.key())
	for _, s := range p.Sealed {
		if s.NextOffset > p.ColdEnd {
			e.t.Fatalf("sealed segment %d..%d not tiered (cold end %d)", s.Base, s.NextOffset, p.ColdEnd)
		}
	}
}

func hotFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir(dir)
	for _, de := range ents {
		if _, k, ok := segment.ParseName(de.Name()); ok && k == segment.KindLog {
			out = append(out, de.Name())
		}
	}
	return out
}

func TestFinalizeAndReadBothTiers(t *testing.T) {
	e := newEnv(t, broker.TopicSpec{})
	e.produce(100)
	st, err := e.compactor(nil).Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Finalized < 5 {
		t.Fatalf("finalized %d segments, want several", st.Finalized)
	}
	e.checkConverged()
	pdir := partition.Dir(e.dir, e.key())
	before := len(hotFiles(t, pdir))
	e.readAll() // cold tier files still there, but reads go cold below the cold end

	e.clock.advance(2 * time.Minute) // past the grace period
	st, err = e.compactor(nil).Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := len(hotFiles(t, pdir))
	if st.HotFilesDeleted == 0 || after >= before || after > 2 {
		t.Fatalf("hot files: %d before, %d after, %d deleted", before, after, st.HotFilesDeleted)
	}
	e.readAll() // now the old records can only come from the cold tier
	e.produce(20)
	e.readAll()

	// Offset for time reaches into the cold tier.
	first := int64(1_700_000_000_000)
	for _, c := range []struct {
		ts   int64
		want int64
	}{{0, 0}, {first, 0}, {first + 1, 5}, {first + 37, 185}, {first + 99, 495}, {first + 100, 500}} {
		got, err := e.b.OffsetForTime(e.ctx, e.topic.Name, 0, c.ts)
		if err != nil || !got.Found || got.Offset != c.want {
			t.Errorf("offset for %d: %+v %v, want %d", c.ts, got, err, c.want)
		}
	}
}

// A cold fetch costs 2 GETs with nothing cached, 1 with the index cached,
// and 0 while read-ahead has the segment in memory.
func TestColdFetchRequestBudget(t *testing.T) {
	for _, c := range []struct {
		name        string
		cache       bool
		readAhead   int
		first, next int64 // GETs for the first fetch and for a second fetch in the same segment
	}{
		{"nocache", false, 0, 2, 2},
		{"index-cached", true, 0, 2, 1},
		{"read-ahead", true, 1, 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, broker.TopicSpec{CacheEnabled: ptr(c.cache), ReadAheadSegments: ptr(c.readAhead)})
			e.produce(100)
			if _, err := e.compactor(nil).Run(e.ctx); err != nil {
				t.Fatal(err)
			}
			e.counts.Reset()
			fetch := func(off int64) int64 {
				before := e.counts.Calls(objstore.OpGet)
				f, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: off, MaxRecords: 3})
				if err != nil || len(f.Records) != 3 || f.Records[0].Offset != off {
					t.Fatalf("fetch %d: %v %d records", off, err, len(f.Records))
				}
				return e.counts.Calls(objstore.OpGet) - before
			}
			if n := fetch(40); n != c.first {
				t.Errorf("first cold fetch: %d GETs, want %d", n, c.first)
			}
			if n := fetch(45); n != c.next {
				t.Errorf("second fetch in the segment: %d GETs, want %d", n, c.next)
			}
			if c.readAhead > 0 {
				entries, _ := e.store.Segments(e.ctx, e.key(), 40, 2)
				// Its own data is in memory; the one GET reads the next
				// segment ahead.
				if n := fetch(entries[1].Base + 1); n != 1 {
					t.Errorf("fetch in the segment read ahead: %d GETs, want 1 (the next read-ahead)", n)
				}
			}
		})
	}
}

func TestRetention(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		e := newEnv(t, broker.TopicSpec{RetentionBytes: ptr(int64(10_000))})
		e.produce(100)
		c := e.compactor(nil)
		if _, err := c.Run(e.ctx); err != nil {
			t.Fatal(err)
		}
		ls := e.readAll()
		if ls == 0 {
			t.Fatal("log start did not move")
		}
		p, _ := e.store.Partition(e.ctx, e.key())
		entries, _ := e.store.Segments(e.ctx, e.key(), -1, 0)
		total := p.Active.Size
		for _, en := range entries {
			total += en.LogLen
		}
		if total < 10_000 || total > 10_000+4096 {
			t.Errorf("retained %d bytes, want 10000 plus less than a segment", total)
		}
		e.checkConverged()
		_, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: ls - 1})
		var oor *broker.OffsetOutOfRangeError
		if !errors.As(err, &oor) || oor.LogStartOffset != ls {
			t.Fatalf("fetch below log start: %v", err)
		}
	})
	t.Run("time", func(t *testing.T) {
		e := newEnv(t, broker.TopicSpec{RetentionMs: ptr(int64(60_000))})
		e.produce(50)
		e.clock.advance(time.Hour)
		e.produce(50)
		if _, err := e.compactor(nil).Run(e.ctx); err != nil {
			t.Fatal(err)
		}
		ls := e.readAll()
		// Every segment holding only old records went; the first segment
		// with a new record stayed.
		if ls > 250 || ls < 200 {
			t.Fatalf("log start %d, want just below offset 250", ls)
		}
		e.checkConverged()
	})
}

// A pass that stops at any step (a crash there) is followed by a pass that
// converges: every record readable, one catalog entry and one object per
// segment, nothing lost or duplicated.
func TestCrashAtEveryStep(t *testing.T) {
	steps := []string{StepUpload, StepUploaded, StepCataloged, StepColdEnd, StepColdMarked, StepLogStart, StepHotDeleted, StepColdDeleted}
	for _, step := range steps {
		for _, nth := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d", step, nth), func(t *testing.T) {
				e := newEnv(t, broker.TopicSpec{RetentionBytes: ptr(int64(12_000))})
				e.produce(60)
				var hits atomic.Int32
				crash := errors.New("crash")
				hook := func(s string, _ meta.PartitionKey, _ int64) error {
					if s == step && hits.Add(1) == int32(nth) {
						return crash
					}
					return nil
				}
				// Passes with the hook until it crashed (hot files go only
				// a grace after the pass that tiered them).
				c := e.compactor(hook)
				for i := 0; hits.Load() < int32(nth); i++ {
					if i == 3 {
						t.Fatalf("step %s reached %d times in %d passes, want %d", step, hits.Load(), i, nth)
					}
					e.clock.advance(2 * time.Minute)
					_, err := c.Run(e.ctx)
					if hits.Load() >= int32(nth) && !errors.Is(err, crash) {
						t.Fatalf("pass did not stop at %s: %v", step, err)
					}
					if hits.Load() < int32(nth) && err != nil {
						t.Fatal(err)
					}
					e.readAll() // consistent even mid-way
					if hits.Load() < int32(nth) {
						e.produce(20) // more to tier and retain
					}
				}
				e.produce(40)
				e.clock.advance(2 * time.Minute)
				for i := 0; i < 2; i++ { // the second pass finds nothing left to do
					if _, err := e.compactor(nil).Run(e.ctx); err != nil {
						t.Fatal(err)
					}
					e.clock.advance(2 * time.Minute)
				}
				e.readAll()
				e.checkConverged()
			})
		}
	}
}

func TestConcurrentCompactors(t *testing.T) {
	e := newEnv(t, broker.TopicSpec{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // a producer keeps rolling segments meanwhile
		defer wg.Done()
		for i := 0; i < 30; i++ {
			e.produce(5)
		}
		close(stop)
	}()
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := e.compactor(nil)
			for {
				if _, err := c.Run(e.ctx); err != nil {
					t.Error(err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	wg.Wait()
	if _, err := e.compactor(nil).Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.readAll()
	e.checkConverged()
}

// A file no committed state names, from an epoch older than the current
// one (a zombie's roll), is removed; one of the current epoch is not.
func TestOrphanFiles(t *testing.T) {
	e := newEnv(t, broker.TopicSpec{})
	e.produce(10)
	p, _ := e.store.Partition(e.ctx, e.key())
	dir := partition.Dir(e.dir, e.key())
	old := segment.ID{Base: 999, Epoch: p.Epoch - 1 + 0}
	cur := segment.ID{Base: 1999, Epoch: p.Epoch}
	for _, id := range []segment.ID{old, cur} {
		w, err := segment.Create(dir, id, segment.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	if old.Epoch == cur.Epoch {
		t.Fatal("test needs an older epoch")
	}
	e.clock.advance(time.Hour) // past the grace period; files' mtimes are real time
	c := e.compactor(nil)
	c.cfg.Now = func() time.Time { return time.Now().Add(time.Hour) }
	if _, err := c.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old.Path(dir, segment.KindLog)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan of an older epoch kept: %v", err)
	}
	if _, err := os.Stat(cur.Path(dir, segment.KindLog)); err != nil {
		t.Errorf("file of the current epoch removed: %v", err)
	}
	e.readAll()
}

// retainedBytes is the partition's size as retention must see it: each
// offset range from the log start once, cold or hot.
func (e *env) retainedBytes() int64 {
	e.t.Helper()
	p, err := e.store.Partition(e.ctx, e.key())
	if err != nil {
		e.t.Fatal(err)
	}
	entries, err := e.store.Segments(e.ctx, e.key(), p.LogStartOffset, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	total := int64(0)
	if p.Active != nil {
		total += p.Active.Size
	}
	cold := map[int64]bool{}
	for _, en := range entries {
		total += en.LogLen
		cold[en.NextOffset] = true
	}
	for _, s := range p.Sealed {
		if s.NextOffset > p.LogStartOffset && !cold[s.NextOffset] {
			total += s.Size
		}
	}
	return total
}

// Two passes overlap (the schedule and the invoke on roll) while a
// producer rolls: pass A read the item while segment S was active; pass B
// seals-and-tiers S before A reads the catalog. A must not count S twice
// (as an entry and as its stale active), which made it drop one segment
// more than retention_bytes allows.
func TestOverlappingPassesCountRetentionOnce(t *testing.T) {
	const limit = 12_000
	e := newEnv(t, broker.TopicSpec{RetentionBytes: ptr(int64(limit))})
	e.produce(40)
	if _, err := e.compactor(nil).Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	active := func() meta.SegmentInfo {
		p, err := e.store.Partition(e.ctx, e.key())
		if err != nil || p.Active == nil {
			t.Fatalf("partition: %+v %v", p, err)
		}
		return *p.Active
	}
	// One sealed segment for pass A to tier, then an active S filled to
	// just below a roll.
	for base := active().Base; active().Base == base; {
		e.produce(1)
	}
	for active().Size+5*119 <= 4096 {
		e.produce(1)
	}
	var passB Stats
	a := e.compactor(func(step string, _ meta.PartitionKey, _ int64) error {
		if step != StepColdEnd || passB.Partitions > 0 {
			return nil
		}
		for s := active().Base; active().Base == s; {
			e.produce(1) // S rolls
		}
		var err error
		if passB, err = e.compactor(nil).Run(e.ctx); err != nil || passB.Finalized == 0 {
			t.Fatalf("pass B: %+v %v", passB, err)
		}
		return nil
	})
	st, err := a.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if passB.Partitions == 0 || st.Finalized == 0 {
		t.Fatalf("pass B did not run inside pass A (%+v, %+v)", passB, st)
	}
	if got := e.retainedBytes(); got < limit || got > limit+4096 {
		t.Errorf("retention kept %d bytes, want %d plus less than a segment", got, limit)
	}
	e.readAll()
	e.checkConverged()
}

// A cold fetch past a segment's last sparse index entry, with max_bytes
// ending the first window exactly on a record boundary before the offset,
// still returns the offset (it used to answer empty below the high
// watermark). The tier package tests every such window; this is the fetch.
func TestColdFetchPastLastIndexEntry(t *testing.T) {
	e := newEnv(t, broker.TopicSpec{CacheEnabled: ptr(false)})
	e.produce(60)
	if _, err := e.compactor(nil).Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := e.store.Segments(e.ctx, e.key(), -1, 0)
	if err != nil || len(entries) == 0 {
		t.Fatalf("catalog: %v %d", err, len(entries))
	}
	en := entries[0]
	b, err := e.objects.Get(e.ctx, en.Key, 0, en.Size)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := index.ParseOffsets(b[en.IndexOff : en.IndexOff+en.IndexLen])
	if err != nil || len(offs) == 0 {
		t.Fatalf("index of %s: %d entries, %v", en.Key, len(offs), err)
	}
	// The second record after the last entry, with max_bytes the size of
	// the two before it.
	last := offs[len(offs)-1]
	pos, off, gap := int64(last.Pos), en.Base+int64(last.Rel), 0
	for i := 0; i < 2; i++ {
		_, n, err := segment.DecodeRecord(b[pos:en.LogLen])
		if err != nil {
			t.Fatal(err)
		}
		pos += int64(n)
		gap += n
		off++
	}
	if off >= en.NextOffset {
		t.Fatalf("segment [%d, %d) has fewer than 3 records past its last index entry at %d", en.Base, en.NextOffset, off-2)
	}
	f, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: off, MaxBytes: gap})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Records) == 0 || f.Records[0].Offset != off || !bytes.Equal(f.Records[0].Value, e.acked[off]) {
		t.Fatalf("cold fetch at %d (max_bytes %d) below hw %d: %d records", off, gap, f.HighWatermark, len(f.Records))
	}
}

// The hot files of a tiered segment stay a grace after readers were
// switched to the cold tier (the cold end advance, recorded as the entry's
// ColdMs), not after the entry was made: a pass that only now moves the
// cold end past an entry an earlier, interrupted pass made must not delete
// its hot files at once. Nor must a pass that finds an entry the cold end
// passed without a mark (a crash between the two steps).
func TestHotGraceCountsFromColdEnd(t *testing.T) {
	for _, stop := range []string{StepCataloged, StepColdEnd} {
		t.Run(stop, func(t *testing.T) {
			e := newEnv(t, broker.TopicSpec{})
			e.produce(20)
			crash := errors.New("crash")
			_, err := e.compactor(func(s string, _ meta.PartitionKey, _ int64) error {
				if s == stop {
					return crash
				}
				return nil
			}).Run(e.ctx)
			if !errors.Is(err, crash) {
				t.Fatalf("first pass: %v", err)
			}
			first, err := e.store.Segments(e.ctx, e.key(), -1, 1)
			if err != nil || len(first) != 1 || first[0].ColdMs != 0 {
				t.Fatalf("after the interrupted pass: %+v %v, want one entry not marked cold", first, err)
			}
			dir := partition.Dir(e.dir, e.key())
			hot := len(hotFiles(t, dir))

			e.clock.advance(2 * time.Minute) // past the grace since the entry was made
			switched := e.clock.now().UnixMilli()
			st, err := e.compactor(nil).Run(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.HotFilesDeleted != 0 || len(hotFiles(t, dir)) != hot {
				t.Fatalf("pass that switched readers to the cold tier deleted %d segments' hot files", st.HotFilesDeleted)
			}
			entries, err := e.store.Segments(e.ctx, e.key(), -1, 0)
			if err != nil || len(entries) < 2 {
				t.Fatalf("catalog: %d entries, %v", len(entries), err)
			}
			for _, en := range entries {
				if en.ColdMs != switched {
					t.Fatalf("entry %d..%d: ColdMs %d, want %d (when the cold end passed it)", en.Base, en.NextOffset, en.ColdMs, switched)
				}
			}
			e.readAll()

			e.clock.advance(59 * time.Second)
			if st, err := e.compactor(nil).Run(e.ctx); err != nil || st.HotFilesDeleted != 0 {
				t.Fatalf("pass within the grace: %+v %v", st, err)
			}
			e.clock.advance(time.Second)
			if st, err := e.compactor(nil).Run(e.ctx); err != nil || st.HotFilesDeleted != len(entries) {
				t.Fatalf("pass a grace after the switch: %+v %v, want %d segments' hot files deleted", st, err, len(entries))
			}
			e.readAll()
			e.checkConverged()
		})
	}
}

// A staged batch whose waiter crashed stays in the write buffer of a
// partition nobody writes again: a pass removes it once no waiter can be
// waiting for it (partition.StagedExpiry), and leaves younger ones.
func TestExpiredStagedBatchesRemoved(t *testing.T) {
	e := newEnv(t, broker.TopicSpec{})
	e.produce(3)
	wbuf := filepath.Join(partition.Dir(e.dir, e.key()), partition.StageDir)
	if err := os.MkdirAll(wbuf, 0o755); err != nil {
		t.Fatal(err)
	}
	name := func(age time.Duration) string {
		return fmt.Sprintf("%016x-%016x.stg", e.clock.now().Add(-age).UnixMilli(), uint64(age))
	}
	expired, young := name(partition.StagedExpiry+time.Second), name(partition.StagedExpiry-time.Minute)
	for _, n := range []string{expired, young} {
		if err := os.WriteFile(filepath.Join(wbuf, n), []byte("TLS1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.compactor(nil).Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wbuf, expired)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staged file %v old kept: %v", partition.StagedExpiry+time.Second, err)
	}
	if _, err := os.Stat(filepath.Join(wbuf, young)); err != nil {
		t.Errorf("staged file younger than the expiry removed: %v", err)
	}
	e.readAll()
}
