package tier

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/segment"
)

func sameRecord(a, b segment.Record) bool {
	if a.Offset != b.Offset || a.Timestamp != b.Timestamp || (a.Key == nil) != (b.Key == nil) || !bytes.Equal(a.Key, b.Key) ||
		(a.Value == nil) != (b.Value == nil) || !bytes.Equal(a.Value, b.Value) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		x, y := a.Headers[i], b.Headers[i]
		if x.Key != y.Key || (x.Value == nil) != (y.Value == nil) || !bytes.Equal(x.Value, y.Value) {
			return false
		}
	}
	return true
}

// createTimeLog writes a create-time segment of n records with headers on
// some and shuffled timestamps, and returns its .log bytes and records.
func createTimeLog(t *testing.T, id segment.ID, n int) ([]byte, []segment.Record) {
	t.Helper()
	dir := t.TempDir()
	w, err := segment.Create(dir, id, segment.Options{IndexIntervalBytes: 200, CreateTime: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	recs := make([]segment.Record, n)
	for i := range recs {
		recs[i] = segment.Record{Offset: id.Base + int64(i), Timestamp: 1000 + rng.Int64N(500), Value: fmt.Appendf(nil, "v%d", i)}
		if i%3 == 0 {
			recs[i].Headers = []segment.Header{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}, {Key: "null"}}
		}
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	size := w.Size()
	w.Close()
	b, err := os.ReadFile(id.Path(dir, segment.KindLog))
	if err != nil || int64(len(b)) != size {
		t.Fatalf("read back %d of %d bytes: %v", len(b), size, err)
	}
	return b, recs
}

// segmentRecords decodes every record of a .log with the segment reader.
func segmentRecords(t *testing.T, log []byte, id segment.ID) []segment.Record {
	t.Helper()
	recs, err := segment.NewReader(bytes.NewReader(log), id, int64(len(log)), nil, nil).Read(id.Base, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestArtifactRecordVersions: artifacts of a version 1 segment (the golden
// file the version 1 writer wrote), of the version 2 golden segment and of
// a create-time segment with headers and shuffled timestamps read back the
// records of the segment, headers included, and answer offset-for-time as
// a brute force scan does, with and without the cache.
func TestArtifactRecordVersions(t *testing.T) {
	golden := func(dir string) ([]byte, []segment.Record, segment.ID) {
		id := segment.ID{Base: 1000, Epoch: 0x2a}
		b, err := os.ReadFile(id.Path(filepath.Join("..", "segment", "testdata", dir), segment.KindLog))
		if err != nil {
			t.Fatal(err)
		}
		return b, segmentRecords(t, b, id), id
	}
	ctID := segment.ID{Base: 70, Epoch: 3}
	ctLog, ctRecs := createTimeLog(t, ctID, 400)
	for _, tc := range []struct {
		name    string
		version uint16
		log     func() ([]byte, []segment.Record, segment.ID)
	}{
		{"version 1 golden", 1, func() ([]byte, []segment.Record, segment.ID) { return golden("golden") }},
		{"version 2 golden", 2, func() ([]byte, []segment.Record, segment.ID) { return golden("golden-v2") }},
		{"create time", 2, func() ([]byte, []segment.Record, segment.ID) { return ctLog, ctRecs, ctID }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, want, id := tc.log()
			if h, err := segment.ReadFileHeader(bytes.NewReader(log)); err != nil || h.Version != tc.version {
				t.Fatalf("file header %+v, %v; want version %d", h, err, tc.version)
			}
			headers := 0
			for _, r := range want {
				headers += len(r.Headers)
			}
			if tc.version == 2 && headers == 0 {
				t.Fatal("no headers: the test would not test them")
			}
			obj, f, err := Build(log, id, 64)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := want[0].Timestamp, want[0].Timestamp
			for _, r := range want {
				lo, hi = min(lo, r.Timestamp), max(hi, r.Timestamp)
			}
			if f.FirstTS != lo || f.LastTS != hi || f.NextOffset != id.Base+int64(len(want)) {
				t.Fatalf("footer %+v; want first %d (smallest), last %d (largest)", f, lo, hi)
			}
			store := mem.New()
			key := ObjectKey(meta.PartitionKey{Topic: "t", TopicID: "1", Partition: 0}, id)
			if err := store.Put(context.Background(), key, bytes.NewReader(obj), int64(len(obj))); err != nil {
				t.Fatal(err)
			}
			e := f.Entry(key, int64(len(obj)), 1)
			for _, opts := range []Options{{}, {CacheEnabled: true, ReadAhead: []meta.CatalogEntry{e}}} {
				r := NewReader(store, NewCache(1<<20))
				for from := id.Base; from < f.NextOffset; from += 7 {
					got, err := r.Read(context.Background(), e, from, 5, 1<<20, opts)
					if err != nil || len(got) == 0 {
						t.Fatalf("read %d: %d records, %v", from, len(got), err)
					}
					for i, rec := range got {
						if w := want[from-id.Base+int64(i)]; !sameRecord(rec, w) {
							t.Fatalf("read %d: record %+v, want %+v", from, rec, w)
						}
					}
				}
				for ts := lo - 1; ts <= hi+1; ts++ {
					wi := -1
					for i, rec := range want {
						if rec.Timestamp >= ts {
							wi = i
							break
						}
					}
					off, at, ok, err := r.OffsetForTime(context.Background(), e, ts, opts)
					if err != nil || ok != (wi >= 0) || ok && (off != want[wi].Offset || at != want[wi].Timestamp) {
						t.Fatalf("%+v: offset for %d: %d@%d %v %v; want index %d", opts, ts, off, at, ok, err, wi)
					}
				}
			}
		})
	}
}
