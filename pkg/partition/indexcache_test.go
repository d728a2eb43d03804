package partition

import (
	"context"
	"testing"
	"time"
)

// A reader caches a segment's index files (openReader). Index entries are
// written before their batch is committed, so the files may hold entries
// for bytes a failed round wrote and the next recovery truncated; the next
// round writes other records there. Cached, such an entry would be a hint
// about records that are not in the log: here the time index would say
// offsets up to 8 are older than 2,000 ms, and OffsetForTime would start
// past offsets 5-7 (9,000 ms) and answer 9. (The failed round's records
// are the size of the next round's: a hint into the middle of a record
// fails its checks, and the search starts over from the top.)
func TestReaderCachesOnlyCommittedIndexEntries(t *testing.T) {
	e := newEnv(t)
	open := func(owner string) *Log {
		l, err := Open(context.Background(), Config{
			Dir: e.dir, Key: e.key, Meta: e.store, Owner: owner,
			LeaseTTL: 10 * time.Second, SegmentBytes: 1 << 20, IndexIntervalBytes: 1,
			FS: e.fs, Now: e.clock.now, CreateTime: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	stamped := func(tag string, ts ...int64) Batch {
		recs := batch(tag, len(ts))
		for i := range recs {
			recs[i].Timestamp, recs[i].HasTimestamp = ts[i], true
		}
		return Batch{Records: recs, Expected: -1}
	}
	ctx := context.Background()
	w, r := open("w"), open("r")
	if _, err := w.AppendBatch(ctx, stamped("a", 1000, 1001, 1002, 1003, 1004)); err != nil {
		t.Fatal(err)
	}
	e.fs.failSync.Store(true) // the round writes offsets 5-8 and their index entries, then fails
	if _, err := w.AppendBatch(ctx, stamped("b", 2000, 2000, 2000, 2000)); err == nil {
		t.Fatal("a round whose fsync failed was acknowledged")
	}
	if _, _, err := r.Read(ctx, 0, 100, 1<<20); err != nil { // r caches the index files as they are
		t.Fatal(err)
	}
	if _, err := w.AppendBatch(ctx, stamped("b", 9000, 9000, 9000, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendBatch(ctx, stamped("c", 9500)); err != nil {
		t.Fatal(err)
	}
	off, ts, found, err := r.OffsetForTime(ctx, 5000, 0)
	if err != nil || !found || off != 5 || ts != 9000 {
		t.Fatalf("OffsetForTime(5000) = %d (timestamp %d, found %v, %v), want offset 5 (9000)", off, ts, found, err)
	}
}
