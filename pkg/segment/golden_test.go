package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The golden segments pin the bytes of each format version. testdata/golden
// holds a version 1 segment written by the version 1 writer: it is never
// regenerated, only read. testdata/golden-v2 pins what the writer produces
// now (a create-time segment with headers and timestamps that go back);
// regenerate it after a deliberate format change (there should be none:
// wire constants never change) with
//
//	TIERLOG_UPDATE_GOLDEN=1 go test ./pkg/segment -run TestGolden
const (
	goldenDir   = "testdata/golden"
	goldenV2Dir = "testdata/golden-v2"
)

var (
	goldenID   = ID{Base: 1000, Epoch: 0x2a}
	goldenOpts = Options{IndexIntervalBytes: 64}
	goldenV2   = Options{IndexIntervalBytes: 64, CreateTime: true}
)

// goldenBatches are the fixed records of the version 1 golden segment,
// appended and synced batch by batch.
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

// goldenV2Batches are the fixed records of the version 2 golden segment:
// the version 1 shapes with headers of every shape on some records, and
// create-time timestamps that go back.
func goldenV2Batches() [][]Record {
	const t0 = 1700000000000
	bs := goldenBatches()
	ts := []int64{t0, t0 - 50, t0 + 1, t0 + 1, t0 - 100, t0 + 5, t0 + 9, t0 + 1000, t0 + 3, t0 + 2000, t0 + 1500}
	hs := map[int64][]Header{
		1000: {{Key: "trace-id", Value: []byte("abc")}},
		1002: {{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}},
		1004: {{Key: "k", Value: []byte("1")}, {Key: "k", Value: []byte("2")}, {Key: "\u00e9t\u00e9", Value: []byte("\x00\xff")}},
		1006: {{Key: "big", Value: bytes.Repeat([]byte("h"), 80)}},
		1009: {{Key: "content-type", Value: []byte("application/octet-stream")}},
	}
	for _, b := range bs {
		for i := range b {
			b[i].Timestamp = ts[b[i].Offset-1000]
			b[i].Headers = hs[b[i].Offset]
		}
	}
	return bs
}

func flatten(bs [][]Record) []Record {
	var all []Record
	for _, b := range bs {
		all = append(all, b...)
	}
	return all
}

func goldenRecords() []Record { return flatten(goldenBatches()) }

func TestGolden(t *testing.T) {
	dir := t.TempDir()
	st := writeSegment(t, dir, goldenID, goldenV2, goldenV2Batches()...)
	got := readFiles(t, dir, goldenID)
	if len(got.idx) == 0 || len(got.tidx) == 0 {
		t.Fatalf("the golden segment has no index entries (.index %d bytes, .timeindex %d bytes)", len(got.idx), len(got.tidx))
	}
	if os.Getenv("TIERLOG_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(goldenV2Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		copyDir(t, dir, goldenV2Dir)
		t.Logf("wrote %s: %d log bytes, %d index bytes, %d time index bytes", goldenV2Dir, len(got.log), len(got.idx), len(got.tidx))
	}
	want := readFiles(t, goldenV2Dir, goldenID)
	sameFiles(t, "writer output vs "+goldenV2Dir, got, want)
	if st.Size != int64(len(want.log)) {
		t.Fatalf("writer state size %d, golden log has %d bytes", st.Size, len(want.log))
	}
	checkIndexes(t, goldenV2Dir, goldenID, flatten(goldenV2Batches()), goldenV2.IndexIntervalBytes)
}

// TestGoldenRead reads the committed golden files of both versions, as
// written by earlier versions of the writer, through the public reader.
func TestGoldenRead(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		recs []Record
		hdr  FileHeader
		opts Options
	}{
		{goldenDir, goldenRecords(), FileHeader{Version: 1, BaseOffset: 1000, Epoch: 0x2a}, goldenOpts},
		{goldenV2Dir, flatten(goldenV2Batches()), FileHeader{Version: 2, Flags: FlagCreateTime, BaseOffset: 1000, Epoch: 0x2a}, goldenV2},
	} {
		t.Run(tc.dir, func(t *testing.T) { checkGolden(t, tc.dir, tc.recs, tc.hdr, tc.opts) })
	}
}

func checkGolden(t *testing.T, dir string, recs []Record, wantHdr FileHeader, opts Options) {
	fi, err := os.Stat(goldenID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	f, err := os.Open(goldenID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr, err := ReadFileHeader(f)
	if err != nil || hdr != wantHdr {
		t.Fatalf("golden file header %+v, %v; want %+v", hdr, err, wantHdr)
	}

	r, c, err := OpenReader(dir, goldenID, size, nil)
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
	maxTS, minTS := int64(-1), recs[0].Timestamp
	for _, rec := range recs {
		maxTS, minTS = max(maxTS, rec.Timestamp), min(minTS, rec.Timestamp)
	}
	next, lastTS, err := r.Verify()
	if err != nil || next != 1011 || lastTS != maxTS {
		t.Fatalf("Verify = %d, %d, %v; want 1011, %d", next, lastTS, err, maxTS)
	}
	for ts := minTS - 1; ts <= maxTS+1; ts++ {
		off, at, ok, err := r.OffsetForTime(ts)
		want := -1 // brute force: the first record at or after ts
		for i, rec := range recs {
			if rec.Timestamp >= ts {
				want = i
				break
			}
		}
		if err != nil || ok != (want >= 0) || ok && (off != recs[want].Offset || at != recs[want].Timestamp) {
			t.Fatalf("OffsetForTime(%d) = %d, %d, %v, %v; want index %d", ts, off, at, ok, err, want)
		}
	}
	sum, err := Summarize(f, goldenID, size, opts.IndexIntervalBytes)
	if err != nil || sum.Header != wantHdr || sum.FirstTS != minTS || sum.LastTS != maxTS || sum.NextOffset != 1011 {
		t.Fatalf("Summarize = %+v, %v", sum, err)
	}
	files := readFiles(t, dir, goldenID)
	if !bytes.Equal(sum.Offsets, files.idx) || !bytes.Equal(sum.Times, files.tidx) {
		t.Fatal("Summarize rebuilds indexes other than the golden ones")
	}

	// Recovering a copy changes nothing, with or without a committed length.
	for _, committed := range []int64{size, Unknown} {
		cp := t.TempDir()
		copyDir(t, dir, cp)
		st, err := Recover(cp, goldenID, committed, opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := (State{Size: size, NextOffset: 1011, LastTS: lastTS}); st != want {
			t.Fatalf("Recover(%d) = %+v, want %+v", committed, st, want)
		}
		sameFiles(t, "recovered golden copy", readFiles(t, cp, goldenID), files)
		// A version 1 segment is read, never continued; a current one
		// takes appends.
		w, err := Open(cp, goldenID, st, opts)
		if wantHdr.Version == Version1 {
			if !errors.Is(err, ErrOldVersion) {
				t.Fatalf("Open of a version 1 segment: %v, want ErrOldVersion", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		more := Record{Offset: 1011, Timestamp: minTS - 7, Value: []byte("late"), Headers: []Header{{Key: "h", Value: []byte("v")}}}
		if err := w.Append([]Record{more}); err != nil {
			t.Fatalf("append an older timestamp to a create-time segment: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, "after one more append", readAllRecords(t, cp, goldenID, st.Size+int64(EncodedSize(&more))), append(append([]Record(nil), recs...), more))
	}
}

func TestGoldenFilesOnly(t *testing.T) {
	for _, dir := range []string{goldenDir, goldenV2Dir} {
		goldenFilesOnly(t, dir)
	}
}

func goldenFilesOnly(t *testing.T, goldenDir string) {
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
