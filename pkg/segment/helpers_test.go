package segment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// genRecords makes n records from offset base with a deterministic mix of
// shapes: absent keys, empty keys, tombstones, empty values and values of
// varied length, and headers on some records (repeated keys, null and
// empty values). Timestamps never decrease and sometimes repeat.
func genRecords(base int64, n int, ts0 int64) []Record {
	recs := make([]Record, n)
	for i := range recs {
		off := base + int64(i)
		r := Record{Offset: off, Timestamp: ts0 + int64(i/3)*10}
		switch {
		case off%7 == 3:
			r.Key = nil
		case off%11 == 5:
			r.Key = []byte{}
		default:
			r.Key = fmt.Appendf(nil, "key-%d", off%17)
		}
		switch {
		case off%13 == 4:
			r.Value = nil
		case off%19 == 6:
			r.Value = []byte{}
		default:
			r.Value = bytes.Repeat([]byte{byte('a' + off%26)}, int(off*37%300)+1)
		}
		if off%5 == 2 {
			r.Headers = genHeaders(off)
		}
		recs[i] = r
	}
	return recs
}

// shuffleTimestamps permutes the timestamps of recs deterministically (a
// create-time segment's: they go back and forth).
func shuffleTimestamps(recs []Record, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(recs), func(i, j int) { recs[i].Timestamp, recs[j].Timestamp = recs[j].Timestamp, recs[i].Timestamp })
}

// genHeaders makes one to three headers for the record at off.
func genHeaders(off int64) []Header {
	hs := []Header{{Key: "trace-id", Value: fmt.Appendf(nil, "t-%d", off)}}
	if off%3 == 0 {
		hs = append(hs, Header{Key: "null", Value: nil}, Header{Key: "trace-id", Value: []byte{}})
	}
	return hs
}

// sameHeaders compares headers including the nil-ness of values; nil and
// empty lists are the same (no headers).
func sameHeaders(a, b []Header) bool {
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

// encodeAll is the .log body of recs: their encodings back to back.
func encodeAll(t testing.TB, recs []Record) []byte {
	t.Helper()
	var b []byte
	for i := range recs {
		var err error
		if b, err = AppendRecord(b, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func encodedLen(recs []Record) int64 {
	var n int64
	for i := range recs {
		n += int64(EncodedSize(&recs[i]))
	}
	return n
}

// sameRecord compares records including the nil-ness of Key and Value: an
// absent key is not an empty key and a tombstone is not an empty value.
func sameRecord(a, b Record) bool {
	return a.Offset == b.Offset && a.Timestamp == b.Timestamp &&
		(a.Key == nil) == (b.Key == nil) && bytes.Equal(a.Key, b.Key) &&
		(a.Value == nil) == (b.Value == nil) && bytes.Equal(a.Value, b.Value) &&
		sameHeaders(a.Headers, b.Headers) && a.raw == nil && b.raw == nil
}

func fmtRecord(r Record) string {
	key, val := "nil", "nil"
	if r.Key != nil {
		key = fmt.Sprintf("%q", r.Key)
	}
	if r.Value != nil {
		val = fmt.Sprintf("%d bytes", len(r.Value))
	}
	return fmt.Sprintf("{off %d ts %d key %s value %s headers %d}", r.Offset, r.Timestamp, key, val, len(r.Headers))
}

func checkRecords(t testing.TB, what string, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !sameRecord(got[i], want[i]) {
			t.Fatalf("%s: record %d = %s, want %s", what, i, fmtRecord(got[i]), fmtRecord(want[i]))
		}
	}
}

// writeSegment creates segment id in dir and appends each batch followed by
// a Sync, then closes the writer. It returns the final state.
func writeSegment(t testing.TB, dir string, id ID, opts Options, batches ...[]Record) State {
	t.Helper()
	w, err := Create(dir, id, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := w.Append(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	st := w.State()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

// split cuts recs into batches of the given sizes (the last takes the rest).
func split(recs []Record, sizes ...int) [][]Record {
	var out [][]Record
	for _, n := range sizes {
		n = min(n, len(recs))
		out = append(out, recs[:n])
		recs = recs[n:]
	}
	if len(recs) > 0 {
		out = append(out, recs)
	}
	return out
}

// readAll reads every record of segment id below limit through OpenReader.
func readAllRecords(t testing.TB, dir string, id ID, limit int64) []Record {
	t.Helper()
	r, c, err := OpenReader(dir, id, limit, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []Record
	from := id.Base
	for {
		recs, err := r.Read(from, 50, 4096)
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		if len(recs) == 0 {
			return out
		}
		out = append(out, recs...)
		from = recs[len(recs)-1].Offset + 1
	}
}

type segFiles struct{ log, idx, tidx []byte }

func readFiles(t testing.TB, dir string, id ID) segFiles {
	t.Helper()
	var f segFiles
	for _, x := range []struct {
		dst *[]byte
		k   Kind
	}{{&f.log, KindLog}, {&f.idx, KindIndex}, {&f.tidx, KindTimeIndex}} {
		b, err := os.ReadFile(id.Path(dir, x.k))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		*x.dst = b
	}
	return f
}

func sameFiles(t testing.TB, what string, got, want segFiles) {
	t.Helper()
	for _, c := range []struct {
		k         Kind
		got, want []byte
	}{{KindLog, got.log, want.log}, {KindIndex, got.idx, want.idx}, {KindTimeIndex, got.tidx, want.tidx}} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: %s differs: %d bytes, want %d (first difference at %d)", what, c.k, len(c.got), len(c.want), firstDiff(c.got, c.want))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// reference writes recs as a fresh segment in a new directory, the way an
// uninterrupted writer would, and returns its files.
func reference(t testing.TB, id ID, opts Options, recs []Record) segFiles {
	t.Helper()
	dir := t.TempDir()
	writeSegment(t, dir, id, opts, recs)
	return readFiles(t, dir, id)
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func truncateFile(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func mustWriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// positions returns the .log position of each record, plus the end.
func positions(recs []Record) []int64 {
	pos := []int64{FileHeaderSize}
	for i := range recs {
		pos = append(pos, pos[len(pos)-1]+int64(EncodedSize(&recs[i])))
	}
	return pos
}
