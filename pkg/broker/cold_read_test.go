package broker_test

import (
	"runtime"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/objstore"
	objlocal "github.com/tierlog/tierlog/pkg/objstore/local"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
)

// coldBacklog writes n records of 1 KiB to partition 0 of topic in
// segments of segBytes and tiers every sealed one (their hot files gone).
// It returns the hot start.
func coldBacklog(t *testing.T, e *coldEnv, topic string, segBytes int64, n int) int64 {
	t.Helper()
	if _, err := e.b.CreateTopic(e.ctx, broker.TopicSpec{Name: topic, SegmentBytes: ref(segBytes)}); err != nil {
		t.Fatal(err)
	}
	recs := make([]broker.ProduceRecord, 100)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: make([]byte, 1024), Partition: 0}
	}
	for i := 0; i < n; i += len(recs) {
		if _, err := e.b.ProducePartition(e.ctx, topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	hotStart := e.tier(topic)
	if hotStart < int64(n)/2 {
		t.Fatalf("hot start %d of %d: want most records tiered", hotStart, n)
	}
	return hotStart
}

// TestColdFetchAnswerReadsIntoScratch: a FetchAnswer served from an
// artifact the cold-tier cache holds whole copies its records into the
// pooled memory hot reads use, not into memory made for each fetch (each
// fetch of a backlog allocating, zeroing and faulting in its window was
// most of a tiered backlog's read time).
func TestColdFetchAnswerReadsIntoScratch(t *testing.T) {
	e := newColdEnvOn(t, true, mem.New())
	const topic, maxBytes = "scratch", 64 << 10
	hotStart := coldBacklog(t, e, topic, 1<<20, 8000)
	pass := func() (fetches int) {
		for off := int64(0); off < hotStart; fetches++ {
			var next int64
			_, _, err := e.b.FetchAnswer(e.ctx, broker.FetchRequest{Topic: topic, Offset: off, MaxRecords: broker.MaxFetchRecords, MaxBytes: maxBytes}, "none", nil,
				func(dst []byte, res *broker.FetchResult) ([]byte, error) {
					next = res.NextOffset
					return dst, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			off = next
		}
		return fetches
	}
	pass() // the cache loads every artifact
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fetches := pass()
	runtime.ReadMemStats(&after)
	// A fetch reads a window of maxBytes and the segment reader's slack
	// (64 KiB): made per fetch, that is 128 KiB a fetch. Pooled, it is
	// made again only when a pool drops it: 5 KB a fetch here, 37-46 KB
	// with -race (a pool then drops a quarter of what is put back).
	const window = maxBytes + 64<<10
	if per := int64(after.TotalAlloc-before.TotalAlloc) / int64(fetches); per > window*3/4 {
		t.Errorf("%d bytes allocated per cold fetch of a %d-byte window (%d fetches)", per, window, fetches)
	}
}

// TestColdReadInPlace: on a store whose objects are files (the local
// server's), a cold fetch reads the window it answers from the artifact in
// place: a small fetch moves its index and a few KiB, not the artifact
// whole and the next one (read-ahead).
func TestColdReadInPlace(t *testing.T) {
	files, err := objlocal.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var c objstore.Counters
	e := newColdEnvOn(t, true, objstore.Counting(files, &c))
	const topic, segBytes = "inplace", 1 << 20
	hotStart := coldBacklog(t, e, topic, segBytes, 4000)
	for _, off := range []int64{0, hotStart / 2, hotStart - 1} {
		c.Reset()
		f, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Offset: off, MaxRecords: 2, MaxBytes: 4 << 10})
		if err != nil || len(f.Records) == 0 || f.Records[0].Offset != off {
			t.Fatalf("fetch at %d: %d records, %v", off, len(f.Records), err)
		}
		if down := c.BytesDown(); down > segBytes/4 {
			t.Errorf("a fetch of %d records at %d moved %d bytes from the cold tier; segments are %d", len(f.Records), off, down, segBytes)
		}
	}
}
