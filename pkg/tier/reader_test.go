package tier

import (
	"bytes"
	"context"
	"testing"

	"github.com/tierlog/tierlog/pkg/index"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/segment"
)

// A read through the index (cache disabled, or only the index cached)
// whose max_bytes would end its window exactly on a record boundary before
// from still returns from's record: a cold fetch below the segment's end is
// never empty. The windows that used to end there are the ones past the
// last index entry (or in a segment without entries), with max_bytes equal
// to the bytes between the entry and from.
func TestReadIndexWindowNeverEmpty(t *testing.T) {
	for _, n := range []int{2, 300} {
		id := segment.ID{Base: 500, Epoch: 3}
		log := sealedLog(t, id, n)
		obj, f, err := Build(log, id, 200)
		if err != nil {
			t.Fatal(err)
		}
		store := mem.New()
		if err := store.Put(context.Background(), "o", bytes.NewReader(obj), int64(len(obj))); err != nil {
			t.Fatal(err)
		}
		e := f.Entry("o", int64(len(obj)), 1)
		offs, err := index.ParseOffsets(obj[f.Index.Off : f.Index.Off+f.Index.Len])
		if err != nil {
			t.Fatal(err)
		}
		// start[i] is where record base+i begins.
		var start []int64
		for pos := int64(segment.FileHeaderSize); pos < f.Log.Len; {
			_, size, err := segment.DecodeRecord(log[pos:])
			if err != nil {
				t.Fatal(err)
			}
			start = append(start, pos)
			pos += int64(size)
		}
		if len(start) != n {
			t.Fatalf("decoded %d records, wrote %d", len(start), n)
		}
		tail := 0 // records past the last index entry
		if len(offs) > 0 {
			tail = n - int(offs[len(offs)-1].Rel)
		} else {
			tail = n
		}
		if tail < 2 {
			t.Fatalf("%d records: layout leaves %d records past the last index entry, want 2 or more", n, tail)
		}
		for _, opts := range []Options{{}, {CacheEnabled: true}} {
			r := NewReader(store, NewCache(1<<20))
			for i := 0; i < n; i++ {
				from := id.Base + int64(i)
				// Every max_bytes that ends a window from one of the ten
				// records before from exactly at from's start.
				for j := max(0, i-10); j <= i; j++ {
					maxBytes := max(1, int(start[i]-start[j]))
					recs, err := r.Read(context.Background(), e, from, 5, maxBytes, opts)
					if err != nil {
						t.Fatalf("%d records %+v: read %d max_bytes %d: %v", n, opts, from, maxBytes, err)
					}
					if len(recs) == 0 || recs[0].Offset != from {
						t.Fatalf("%d records %+v: read %d max_bytes %d: %d records, want offset %d first (segment [%d, %d), %d index entries)",
							n, opts, from, maxBytes, len(recs), from, e.Base, e.NextOffset, len(offs))
					}
				}
			}
		}
	}
	// maxRecords 0 asks for nothing, as segment.Reader.Read.
	id := segment.ID{Base: 0, Epoch: 1}
	obj, f, err := Build(sealedLog(t, id, 5), id, 200)
	if err != nil {
		t.Fatal(err)
	}
	store := mem.New()
	if err := store.Put(context.Background(), "o", bytes.NewReader(obj), int64(len(obj))); err != nil {
		t.Fatal(err)
	}
	if recs, err := NewReader(store, nil).Read(context.Background(), f.Entry("o", int64(len(obj)), 1), 2, 0, 100, Options{}); err != nil || len(recs) != 0 {
		t.Fatalf("max_records 0: %d records, %v", len(recs), err)
	}
}
