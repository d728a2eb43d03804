package segment

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The golden segment pins the bytes the writer produces. Regenerate it after
// a deliberate format change (there should be none: wire constants never
// change) with
//
//	TIERLOG_UPDATE_GOLDEN=1 go test ./pkg/segment -run TestGolden
const goldenDir = "testdata/golden"

var (
	goldenID   = ID{Base: 1000, Epoch: 0x2a}
	goldenOpts = Options{IndexIntervalBytes: 64}
)

// goldenBatches are the fixed records of the golden segment, appended and
// synced batch by batch.
func goldenBatches() [][]Record {
	const t0 = 1700000000000 // 2023-11-14T22:13:20Z
	return [][]Record{
		{
			{Offset: 1000, Timestamp: t0, Key: []byte("user-1"), Value: []byte(`{"name":"ada"}`)},
			{Offset: 1001, Timestamp: t0, Key: nil, Value: []byte("no key at all")},
			{Offset: 1002, Timestamp: t0 + 1, Key: []byte{}, Value: []byte("an empty key")},
			{Offset: 1003, Timestamp: t0 + 1, Key: []byte("user-2"), Value: []byte{}},
		},
		{
			{Offset: 1004, Timestamp: t0 + 5, Key: []byte("user-1"), Value: nil}, // tombstone
			{Offset: 1005, Timestamp: t0 + 5, Key: nil, Value: nil},
			{Offset: 1006, Timestamp: t0 + 9, Key: []byte("user-3"), Value: bytes.Repeat([]byte("0123456789"), 10)},
		},
		{
			{Offset: 1007, Timestamp: t0 + 1000, Key: []byte("user-4"), Value: []byte("four")},
			{Offset: 1008, Timestamp: t0 + 1000, Key: []byte("user-5"), Value: []byte("five")},
			{Offset: 1009, Timestamp: t0 + 2000, Key: []byte("\x00\xff binary key"), Value: []byte("\x00\x01\x02\xfe\xff")},
			{Offset: 1010, Timestamp: t0 + 3000, Key: []byte("user-2"), Value: nil},
		},
	}
}

func goldenRecords() []Record {
	var all []Record
	for _, b := range goldenBatches() {
		all = append(all, b...)
	}
	return all
}

func TestGolden(t *testing.T) {
	dir := t.TempDir()
	st := writeSegment(t, dir, goldenID, goldenOpts, goldenBatches()...)
	got := readFiles(t, dir, goldenID)
	if len(got.idx) == 0 || len(got.tidx) == 0 {
		t.Fatalf("the golden segment has no index entries (.index %d bytes, .timeindex %d bytes)", len(got.idx), len(got.tidx))
	}
	if os.Getenv("TIERLOG_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		copyDir(t, dir, goldenDir)
		t.Logf("wrote %s: %d log bytes, %d index bytes, %d time index bytes", goldenDir, len(got.log), len(got.idx), len(got.tidx))
	}
	want := readFiles(t, goldenDir, goldenID)
	sameFiles(t, "writer output vs "+goldenDir, got, want)
	if st.Size != int64(len(want.log)) {
		t.Fatalf("writer state size %d, golden log has %d bytes", st.Size, len(want.log))
	}
	checkIndexes(t, goldenDir, goldenID, goldenRecords(), goldenOpts.IndexIntervalBytes)
}

// TestGoldenRead reads the committed golden files, as written by an earlier
// version of the writer, through the public reader.
func TestGoldenRead(t *testing.T) {
	fi, err := os.Stat(goldenID.Path(goldenDir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	recs := goldenRecords()
	f, err := os.Open(goldenID.Path(goldenDir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr, err := ReadFileHeader(f)
	if err != nil || hdr != (FileHeader{Version: 1, BaseOffset: 1000, Epoch: 0x2a}) {
		t.Fatalf("golden file header %+v, %v", hdr, err)
	}

	r, c, err := OpenReader(goldenDir, goldenID, size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(r.offs) == 0 || len(r.times) != len(r.offs) {
		t.Fatalf("reader uses %d offset and %d time entries from the golden indexes", len(r.offs), len(r.times))
	}
	for from := goldenID.Base; from <= goldenID.Base+int64(len(recs)); from++ {
		got, err := r.Read(from, 100, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		checkRecords(t, "golden records", got, recs[from-goldenID.Base:])
	}
	next, lastTS, err := r.Verify()
	if err != nil || next != 1011 || lastTS != recs[len(recs)-1].Timestamp {
		t.Fatalf("Verify = %d, %d, %v", next, lastTS, err)
	}
	for i, rec := range recs {
		off, ts, ok, err := r.OffsetForTime(rec.Timestamp)
		want := i
		for want > 0 && recs[want-1].Timestamp == rec.Timestamp {
			want--
		}
		if err != nil || !ok || off != recs[want].Offset || ts != rec.Timestamp {
			t.Fatalf("OffsetForTime(%d) = %d, %d, %v, %v; want %d", rec.Timestamp, off, ts, ok, err, recs[want].Offset)
		}
	}

	// Recovering a copy changes nothing, with or without a committed length.
	for _, committed := range []int64{size, Unknown} {
		dir := t.TempDir()
		copyDir(t, goldenDir, dir)
		st, err := Recover(dir, goldenID, committed, goldenOpts)
		if err != nil {
			t.Fatal(err)
		}
		if want := (State{Size: size, NextOffset: 1011, LastTS: lastTS}); st != want {
			t.Fatalf("Recover(%d) = %+v, want %+v", committed, st, want)
		}
		sameFiles(t, "recovered golden copy", readFiles(t, dir, goldenID), readFiles(t, goldenDir, goldenID))
	}
}

func TestGoldenFilesOnly(t *testing.T) {
	ents, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if id, _, ok := ParseName(e.Name()); !ok || id != goldenID {
			t.Errorf("stray file %s in %s", filepath.Join(goldenDir, e.Name()), goldenDir)
		}
	}
	if len(names) != 3 {
		t.Errorf("%s holds %v, want the three files of %s", goldenDir, names, goldenID)
	}
}
