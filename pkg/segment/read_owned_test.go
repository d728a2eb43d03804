package segment

import (
	"bytes"
	"fmt"
	"testing"
)

// TestReadRecordsOwnMemory checks that the records a Read returns, whose
// keys and values are slices of the bytes the read filled, keep their
// contents through later reads of the same and other readers: nothing the
// package reuses may back them.
func TestReadRecordsOwnMemory(t *testing.T) {
	dir := t.TempDir()
	id := ID{Base: 100, Epoch: 1}
	want := genRecords(id.Base, 3000, 1000)
	for i := range want {
		if i%3 == 0 {
			want[i].Headers = []Header{{Key: "h", Value: []byte(fmt.Sprint("v", i))}, {Key: "null"}}
		}
	}
	st := writeSegment(t, dir, id, Options{}, split(want, 700, 1100)...)
	r, c, err := OpenReader(dir, id, st.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	type kept struct {
		rec        Record
		key, value []byte // copies taken at read time
		headers    []Header
	}
	var all []kept
	for from := id.Base; from < id.Base+int64(len(want)); {
		recs, err := r.Read(from, 400, 16<<10)
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		if len(recs) == 0 {
			t.Fatalf("Read(%d): no records below the end", from)
		}
		for _, rec := range recs {
			k := kept{rec: rec, key: bytes.Clone(rec.Key), value: bytes.Clone(rec.Value)}
			for _, h := range rec.Headers {
				k.headers = append(k.headers, Header{Key: h.Key, Value: bytes.Clone(h.Value)})
			}
			all = append(all, k)
		}
		from = recs[len(recs)-1].Offset + 1
		// Other reads in between, from other places, with other limits.
		for _, off := range []int64{id.Base, id.Base + 2999, from} {
			if _, err := r.Read(off, 1000, 1<<20); err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
		}
	}
	if len(all) != len(want) {
		t.Fatalf("read %d records, want %d", len(all), len(want))
	}
	for i, k := range all {
		for j, h := range k.rec.Headers {
			if !bytes.Equal(h.Value, k.headers[j].Value) {
				t.Fatalf("record %d header %d changed after later reads: %q, read as %q", k.rec.Offset, j, h.Value, k.headers[j].Value)
			}
		}
		if !bytes.Equal(k.rec.Key, k.key) || !bytes.Equal(k.rec.Value, k.value) {
			t.Fatalf("record %d changed after later reads: key %q value %q, read as %q %q", k.rec.Offset, k.rec.Key, k.rec.Value, k.key, k.value)
		}
		if !sameRecord(k.rec, want[i]) {
			t.Fatalf("record %d: got %s, want %s", i, fmtRecord(k.rec), fmtRecord(want[i]))
		}
	}
}
