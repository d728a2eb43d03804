package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/index"
)

var testID = ID{Base: 5000, Epoch: 3}

// smallIndex makes index entries every few records so lookups use them.
var smallIndex = Options{IndexIntervalBytes: 512}

// expectRead is what Read(from, maxRecords, maxBytes) must return, computed
// from the full record list by the documented rule.
func expectRead(all []Record, from int64, maxRecords, maxBytes int) []Record {
	if maxRecords <= 0 {
		return nil
	}
	var out []Record
	total := 0
	for _, r := range all {
		if r.Offset < from {
			continue
		}
		n := EncodedSize(&r)
		if len(out) > 0 && total+n > maxBytes {
			break
		}
		total += n
		out = append(out, r)
		if len(out) >= maxRecords {
			break
		}
	}
	return out
}

func parsedIndexes(t *testing.T, dir string, id ID) (index.Offsets, index.Times) {
	t.Helper()
	f := readFiles(t, dir, id)
	offs, err := index.ParseOffsets(f.idx)
	if err != nil {
		t.Fatalf("offset index: %v", err)
	}
	times, err := index.ParseTimes(f.tidx)
	if err != nil {
		t.Fatalf("time index: %v", err)
	}
	return offs, times
}

// checkIndexes asserts the index files describe recs exactly: every entry
// names the record at its position with its timestamp, entries pair up, and
// entries are at least the interval apart.
func checkIndexes(t *testing.T, dir string, id ID, recs []Record, interval int) {
	t.Helper()
	offs, times := parsedIndexes(t, dir, id)
	if len(offs) != len(times) {
		t.Fatalf("%d offset entries, %d time entries", len(offs), len(times))
	}
	pos := positions(recs)
	last := int64(FileHeaderSize)
	for i, e := range offs {
		j := int(e.Rel)
		if j <= 0 || j >= len(recs) {
			t.Fatalf("entry %d: rel %d outside 1..%d", i, e.Rel, len(recs)-1)
		}
		if int64(e.Pos) != pos[j] {
			t.Fatalf("entry %d: rel %d at position %d, record is at %d", i, e.Rel, e.Pos, pos[j])
		}
		// A time entry holds the largest timestamp up to its record.
		maxTS := int64(-1)
		for _, r := range recs[:j+1] {
			maxTS = max(maxTS, r.Timestamp)
		}
		if times[i].Rel != e.Rel || times[i].Timestamp != maxTS {
			t.Fatalf("time entry %d = %+v, want rel %d ts %d", i, times[i], e.Rel, maxTS)
		}
		if int64(e.Pos)-last < int64(interval) {
			t.Fatalf("entry %d: %d bytes after the previous one, interval %d", i, int64(e.Pos)-last, interval)
		}
		last = int64(e.Pos)
	}
}

func TestReadEveryOffset(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 150, 1700000000000)
	st := writeSegment(t, dir, testID, smallIndex, split(recs, 1, 5, 17, 40, 2)...)
	if want := (State{Size: FileHeaderSize + encodedLen(recs), NextOffset: testID.Base + 150, LastTS: recs[149].Timestamp}); st != want {
		t.Fatalf("state %+v, want %+v", st, want)
	}
	checkIndexes(t, dir, testID, recs, smallIndex.IndexIntervalBytes)
	if offs, _ := parsedIndexes(t, dir, testID); len(offs) < 10 {
		t.Fatalf("only %d index entries: the test would not exercise index lookups", len(offs))
	}

	indexed, c, err := OpenReader(dir, testID, st.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := os.Open(testID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plain := NewReader(f, testID, st.Size, nil, nil)

	limits := []struct{ maxRecords, maxBytes int }{
		{1 << 30, 1 << 30},
		{1, 1 << 30},
		{3, 1 << 30},
		{1 << 30, 0}, // always at least one record
		{1 << 30, 1},
		{1 << 30, 500},
		{7, 2000},
		{1 << 30, -1000},
		{0, 1 << 30},
		{-1, 1 << 30},
	}
	for _, r := range []*Reader{indexed, plain} {
		for from := testID.Base - 2; from <= st.NextOffset+2; from++ {
			for _, l := range limits {
				got, err := r.Read(from, l.maxRecords, l.maxBytes)
				if err != nil {
					t.Fatalf("Read(%d, %d, %d): %v", from, l.maxRecords, l.maxBytes, err)
				}
				checkRecords(t, fmt.Sprintf("Read(%d, %d, %d)", from, l.maxRecords, l.maxBytes), got, expectRead(recs, from, l.maxRecords, l.maxBytes))
			}
		}
	}
	// Records own their memory: the reader's buffers are reused.
	a, _ := indexed.Read(testID.Base, 1<<30, 1<<30)
	snapshot := make([]Record, len(a))
	for i, r := range a {
		snapshot[i] = Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
		for _, h := range r.Headers {
			snapshot[i].Headers = append(snapshot[i].Headers, Header{Key: h.Key, Value: bytes.Clone(h.Value)})
		}
	}
	_, _ = indexed.Read(testID.Base+10, 1<<30, 1<<30)
	checkRecords(t, "first read after a second one", a, snapshot)
}

func TestReadBigRecordOverMaxBytes(t *testing.T) {
	dir := t.TempDir()
	recs := []Record{
		{Offset: testID.Base, Timestamp: 1, Value: bytes.Repeat([]byte("a"), 1<<20)},
		{Offset: testID.Base + 1, Timestamp: 1, Value: bytes.Repeat([]byte("b"), 600<<10)},
		{Offset: testID.Base + 2, Timestamp: 2, Value: []byte("small")},
	}
	st := writeSegment(t, dir, testID, Options{}, recs)
	r, c, err := OpenReader(dir, testID, st.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for from := testID.Base; from < st.NextOffset; from++ {
		got, err := r.Read(from, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, fmt.Sprintf("Read(%d, 10, 1000)", from), got, recs[from-testID.Base:from-testID.Base+1])
	}
	got, err := r.Read(testID.Base, 10, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "Read(base, 10, 2 MiB)", got, recs)
}

func TestOffsetForTime(t *testing.T) {
	dir := t.TempDir()
	var recs []Record
	// Timestamps 100, 100, 100, 110, 110, 110, ... with gaps between groups.
	for i := range 120 {
		recs = append(recs, Record{Offset: testID.Base + int64(i), Timestamp: 100 + int64(i/3)*10, Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 50)})
	}
	st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: 200}, split(recs, 30, 30)...)
	if _, times := parsedIndexes(t, dir, testID); len(times) < 10 {
		t.Fatalf("only %d time index entries", len(times))
	}
	indexed, c, err := OpenReader(dir, testID, st.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := os.Open(testID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plain := NewReader(f, testID, st.Size, nil, nil)

	first, last := recs[0].Timestamp, recs[len(recs)-1].Timestamp
	for _, r := range []*Reader{indexed, plain} {
		// Before the first, equal to each, between each pair, after the last.
		for ts := first - 20; ts <= last+20; ts++ {
			off, gotTS, ok, err := r.OffsetForTime(ts)
			if err != nil {
				t.Fatalf("OffsetForTime(%d): %v", ts, err)
			}
			wantOK := false
			var want Record
			for _, rec := range recs {
				if rec.Timestamp >= ts {
					want, wantOK = rec, true
					break
				}
			}
			if ok != wantOK || (ok && (off != want.Offset || gotTS != want.Timestamp)) {
				t.Fatalf("OffsetForTime(%d) = %d, %d, %v; want %d, %d, %v", ts, off, gotTS, ok, want.Offset, want.Timestamp, wantOK)
			}
		}
	}
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 60, 10)
	st := writeSegment(t, dir, testID, smallIndex, recs)
	f, err := os.Open(testID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pos := positions(recs)

	next, lastTS, err := NewReader(f, testID, st.Size, nil, nil).Verify()
	if err != nil || next != st.NextOffset || lastTS != st.LastTS {
		t.Fatalf("Verify = %d, %d, %v; want %d, %d, nil", next, lastTS, err, st.NextOffset, st.LastTS)
	}
	// A limit on a record boundary verifies the prefix.
	next, lastTS, err = NewReader(f, testID, pos[10], nil, nil).Verify()
	if err != nil || next != testID.Base+10 || lastTS != recs[9].Timestamp {
		t.Fatalf("Verify(limit %d) = %d, %d, %v", pos[10], next, lastTS, err)
	}
	next, lastTS, err = NewReader(f, testID, FileHeaderSize, nil, nil).Verify()
	if err != nil || next != testID.Base || lastTS != -1 {
		t.Fatalf("Verify(empty) = %d, %d, %v", next, lastTS, err)
	}
	// A limit inside a record is not a committed length.
	for _, limit := range []int64{pos[10] + 1, pos[10] + RecordHeaderSize, pos[11] - 1} {
		if _, _, err := NewReader(f, testID, limit, nil, nil).Verify(); !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("Verify(limit %d): err %v, want ErrTruncated or ErrCorrupt", limit, err)
		}
	}
	// A limit past the end of the file.
	if _, _, err := NewReader(f, testID, st.Size+100, nil, nil).Verify(); !errors.Is(err, ErrTruncated) {
		t.Errorf("Verify past EOF: err %v, want ErrTruncated", err)
	}
	// A flipped byte anywhere in the records.
	data, err := os.ReadFile(testID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{pos[0] + 12, pos[5] + 20, pos[30] + RecordHeaderSize, pos[59] - 1} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x40
		if _, _, err := NewReader(bytes.NewReader(bad), testID, st.Size, nil, nil).Verify(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d flipped: err %v, want ErrCorrupt", at, err)
		}
	}
	// Offsets that are not dense: a record with offset+1 and a fresh CRC.
	bad := bytes.Clone(data)
	r := recs[20]
	r.Offset++
	enc, _ := AppendRecord(nil, &r)
	copy(bad[pos[20]:], enc)
	if _, _, err := NewReader(bytes.NewReader(bad), testID, st.Size, nil, nil).Verify(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("offset gap: err %v, want ErrCorrupt", err)
	}
	// A timestamp that goes backwards, with a fresh CRC.
	bad = bytes.Clone(data)
	r = recs[20]
	r.Timestamp = recs[19].Timestamp - 1
	enc, _ = AppendRecord(nil, &r)
	copy(bad[pos[20]:], enc)
	if _, _, err := NewReader(bytes.NewReader(bad), testID, st.Size, nil, nil).Verify(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("timestamp going back: err %v, want ErrCorrupt", err)
	}
}

func TestWriterAppendChecks(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, testID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st := w.State(); st != (State{Size: FileHeaderSize, NextOffset: testID.Base, LastTS: -1}) || w.ID() != testID {
		t.Fatalf("new writer: state %+v id %v", st, w.ID())
	}
	ok := []Record{{Offset: testID.Base, Timestamp: 10, Value: []byte("a")}}
	if err := w.Append(nil); err != nil {
		t.Fatalf("empty Append: %v", err)
	}
	if err := w.Append(ok); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		recs []Record
		want error
	}{
		{"offset gap", []Record{{Offset: testID.Base + 2, Timestamp: 10}}, nil},
		{"offset repeat", []Record{{Offset: testID.Base, Timestamp: 10}}, nil},
		{"gap inside batch", []Record{{Offset: testID.Base + 1, Timestamp: 10}, {Offset: testID.Base + 3, Timestamp: 10}}, nil},
		{"timestamp back", []Record{{Offset: testID.Base + 1, Timestamp: 9}}, nil},
		{"timestamp back inside batch", []Record{{Offset: testID.Base + 1, Timestamp: 12}, {Offset: testID.Base + 2, Timestamp: 11}}, nil},
		{"too large", []Record{{Offset: testID.Base + 1, Timestamp: 10, Value: make([]byte, MaxBodySize+1)}}, ErrTooLarge},
	} {
		before := w.State()
		err := w.Append(tc.recs)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || errors.Is(err, ErrClosed) {
			t.Errorf("%s: err %v, want a refusal (%v) that does not break the writer", tc.name, err, tc.want)
		}
		if w.State() != before {
			t.Errorf("%s: state moved from %+v to %+v", tc.name, before, w.State())
		}
	}
	// The refusals wrote nothing: the writer goes on where it was.
	more := []Record{{Offset: testID.Base + 1, Timestamp: 10, Key: []byte("k")}}
	if err := w.Append(more); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	size := w.Size()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if err := w.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v, want ErrClosed", err)
	}
	checkRecords(t, "read back", readAllRecords(t, dir, testID, size), append(ok, more...))

	// A name is used by one writer only.
	if _, err := Create(dir, testID, Options{}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create over an existing segment: %v, want os.ErrExist", err)
	}
}

func TestOpenAppend(t *testing.T) {
	// Closing and reopening between batches gives the same files as one
	// writer that never stopped.
	recs := genRecords(testID.Base, 200, 1000)
	want := reference(t, testID, smallIndex, recs)
	dir := t.TempDir()
	batches := split(recs, 3, 50, 1, 70)
	st := writeSegment(t, dir, testID, smallIndex, batches[0])
	for _, b := range batches[1:] {
		w, err := Open(dir, testID, st, smallIndex)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(b); err != nil {
			t.Fatal(err)
		}
		st = w.State()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sameFiles(t, "reopened between batches", readFiles(t, dir, testID), want)
	checkRecords(t, "read back", readAllRecords(t, dir, testID, st.Size), recs)
}

// TestRecoverAbortedBatch: bytes past the committed length, an aborted batch
// with index entries of its own, are dropped, and appending afterwards gives
// the files a writer that never saw the aborted batch would have written.
func TestRecoverAbortedBatch(t *testing.T) {
	recs := genRecords(testID.Base, 160, 1000)
	a, c := recs[:70], recs[70:]
	aborted := genRecords(testID.Base+70, 40, 5000) // different bytes, same offsets
	for i := range aborted {
		aborted[i].Value = append(aborted[i].Value, "aborted"...)
	}
	for _, opts := range []Options{smallIndex, {IndexIntervalBytes: 97}, {}} {
		t.Run(fmt.Sprint(opts.IndexIntervalBytes), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create(dir, testID, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range split(a, 20, 20) {
				if err := w.Append(b); err != nil {
					t.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			committed := w.State()
			if err := w.Append(aborted); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(testID.Path(dir, KindLog)); fi.Size() <= committed.Size {
				t.Fatal("the aborted batch left no bytes past the committed length")
			}

			st, err := Recover(dir, testID, committed.Size, opts)
			if err != nil {
				t.Fatal(err)
			}
			if st != committed {
				t.Fatalf("Recover = %+v, want %+v", st, committed)
			}
			sameFiles(t, "after Recover", readFiles(t, dir, testID), reference(t, testID, opts, a))

			w, err = Open(dir, testID, st, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range split(c, 1, 33) {
				if err := w.Append(b); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			end := w.State()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, "after Recover and more appends", readFiles(t, dir, testID), reference(t, testID, opts, recs))
			checkIndexes(t, dir, testID, recs, opts.withDefaults().IndexIntervalBytes)
			checkRecords(t, "read back", readAllRecords(t, dir, testID, end.Size), recs)
		})
	}
}

// TestRecoverCommittedRefuses covers the committed lengths Recover must
// refuse, leaving every file as it was.
func TestRecoverCommittedRefuses(t *testing.T) {
	recs := genRecords(testID.Base, 80, 1000)
	pos := positions(recs)
	last := len(recs)
	src := t.TempDir()
	st := writeSegment(t, src, testID, smallIndex, recs)
	offs, _ := parsedIndexes(t, src, testID)
	lastEntry := int64(offs[len(offs)-1].Pos)

	type tc struct {
		name      string
		committed int64
		damage    func(dir string)
		want      error // nil: any error
	}
	flipAt := func(at int64) func(string) {
		return func(dir string) {
			b := readFiles(t, dir, testID).log
			b[at] ^= 0x08
			mustWriteFile(t, testID.Path(dir, KindLog), b)
		}
	}
	cases := []tc{
		// A short file is ErrTruncated and damaged bytes ErrCorrupt, never
		// both: the caller seals at the committed length either way, but
		// an operator wants to know which.
		{"file shorter than committed", st.Size + 1, nil, ErrTruncated},
		{"file much shorter than committed", st.Size + 1<<20, nil, ErrTruncated},
		{"file cut inside the last record", st.Size, func(dir string) { truncateFile(t, testID.Path(dir, KindLog), pos[last]-5) }, ErrTruncated},
		{"file cut at a record boundary", st.Size, func(dir string) { truncateFile(t, testID.Path(dir, KindLog), pos[last-1]) }, ErrTruncated},
		{"file cut inside the header", st.Size, func(dir string) { truncateFile(t, testID.Path(dir, KindLog), 20) }, ErrTruncated},
		{"flipped magic", st.Size, flipAt(0), ErrCorrupt},
		{"flipped header epoch", st.Size, flipAt(20), ErrCorrupt},
		{"flipped crc of the last record", st.Size, flipAt(pos[last-1] + 12), ErrCorrupt},
		{"flipped value byte of the last record", st.Size, flipAt(pos[last] - 1), ErrCorrupt},
		{"flipped timestamp after the last index entry", st.Size, flipAt(lastEntry + RecordHeaderSize + 16), ErrCorrupt},
		{"flipped size of the indexed record", st.Size, flipAt(lastEntry + 8), ErrCorrupt},
		{"committed below the header", 10, nil, nil},
		{"committed negative", -7, nil, nil},
	}
	// A committed length inside either of the last two records, in the
	// header or the body, is not a record boundary.
	for _, p := range []int64{pos[last-2] + 1, pos[last-2] + RecordHeaderSize - 1, pos[last-2] + RecordHeaderSize, pos[last-1] - 1,
		pos[last-1] + 1, pos[last-1] + 27, pos[last-1] + 29, pos[last] - 1} {
		cases = append(cases, tc{fmt.Sprintf("committed %d not at a record boundary", p), p, nil, ErrCorrupt})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			if c.damage != nil {
				c.damage(dir)
			}
			before := readFiles(t, dir, testID)
			_, err := Recover(dir, testID, c.committed, smallIndex)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("Recover(%d): err %v, want %v", c.committed, err, c.want)
			}
			if c.want != nil && errors.Is(err, ErrCorrupt) && errors.Is(err, ErrTruncated) {
				t.Fatalf("Recover(%d): err %v is both ErrCorrupt and ErrTruncated", c.committed, err)
			}
			sameFiles(t, "after a refused Recover", readFiles(t, dir, testID), before)
		})
	}
}

// TestRecoverNoIndexCorruptFirstRecord: with no index entry every record up
// to the committed length is checked, the first one included.
func TestRecoverNoIndexCorruptFirstRecord(t *testing.T) {
	recs := genRecords(testID.Base, 20, 1000)
	dir := t.TempDir()
	st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: 1 << 30}, recs)
	b := readFiles(t, dir, testID).log
	b[FileHeaderSize+RecordHeaderSize] ^= 1
	mustWriteFile(t, testID.Path(dir, KindLog), b)
	if _, err := Recover(dir, testID, st.Size, Options{IndexIntervalBytes: 1 << 30}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
	if got := readFiles(t, dir, testID).log; !bytes.Equal(got, b) {
		t.Fatal("log changed")
	}
}

func TestRecoverWrongHeader(t *testing.T) {
	dir := t.TempDir()
	st := writeSegment(t, dir, testID, Options{}, genRecords(testID.Base, 5, 1))
	other := ID{Base: testID.Base, Epoch: testID.Epoch + 1}
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		if err := os.Rename(testID.Path(dir, k), other.Path(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, committed := range []int64{st.Size, Unknown} {
		if _, err := Recover(dir, other, committed, Options{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Recover(%d) of a file with another epoch's header: %v, want ErrCorrupt", committed, err)
		}
	}
	if _, err := Recover(dir, testID, Unknown, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Recover of a missing segment: %v, want os.ErrNotExist", err)
	}
}

// TestRecoverDamagedIndexes: index files are hints. Deleted, short, torn,
// zeroed or garbage index files never change what Recover keeps or what
// readers return, and Recover rebuilds them to what the writer writes.
func TestRecoverDamagedIndexes(t *testing.T) {
	recs := genRecords(testID.Base, 120, 1000)
	src := t.TempDir()
	st := writeSegment(t, src, testID, smallIndex, split(recs, 60)...)
	want := readFiles(t, src, testID)
	nIdx := len(want.idx) / index.OffsetEntrySize
	if nIdx < 6 {
		t.Fatalf("only %d index entries", nIdx)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	type damage struct {
		name      string
		idx, tidx func([]byte) []byte // nil result: delete the file
		exact     bool                // Recover must rebuild the writer's bytes
	}
	keep := func(b []byte) []byte { return b }
	del := func([]byte) []byte { return nil }
	cut := func(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }
	cases := []damage{
		{"both deleted", del, del, true},
		{"index deleted", del, keep, true},
		{"time index deleted", keep, del, true},
		{"both empty", cut(0), cut(0), true},
		{"index torn", cut(3*index.OffsetEntrySize + 5), keep, true},
		{"time index torn", keep, cut(2*index.TimeEntrySize + 11), true},
		{"time index shorter than index", keep, cut(2 * index.TimeEntrySize), true},
		{"index shorter than time index", cut(1 * index.OffsetEntrySize), keep, true},
		{"zeros", func(b []byte) []byte { return make([]byte, len(b)) }, func(b []byte) []byte { return make([]byte, len(b)) }, true},
		{"zeros past the entries", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, true},
		{"garbage", func(b []byte) []byte { return garbage(len(b)) }, func(b []byte) []byte { return garbage(len(b)) }, false},
		{"garbage after the entries", func(b []byte) []byte { return append(b, garbage(100)...) }, func(b []byte) []byte { return append(b, garbage(100)...) }, false},
		{"last entry points at the wrong record", func(b []byte) []byte {
			b = bytes.Clone(b)
			e := b[len(b)-index.OffsetEntrySize:]
			e[4]-- // position one byte early
			return b
		}, keep, true},
		{"time entry with a wrong timestamp", keep, func(b []byte) []byte {
			// Still ordered and paired with the offset index, but it
			// claims a later timestamp than its record has.
			b = bytes.Clone(b)
			e := b[len(b)-index.TimeEntrySize:]
			e[5]++
			return b
		}, true},
	}
	for i := 0; i < nIdx; i++ {
		cases = append(cases, damage{fmt.Sprintf("both cut to %d entries", i), cut(i * index.OffsetEntrySize), cut(i * index.TimeEntrySize), true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, committed := range []int64{st.Size, Unknown} {
				dir := t.TempDir()
				copyDir(t, src, dir)
				for _, x := range []struct {
					k  Kind
					fn func([]byte) []byte
					b  []byte
				}{{KindIndex, c.idx, want.idx}, {KindTimeIndex, c.tidx, want.tidx}} {
					if b := x.fn(bytes.Clone(x.b)); b == nil {
						if err := os.Remove(testID.Path(dir, x.k)); err != nil {
							t.Fatal(err)
						}
					} else {
						mustWriteFile(t, testID.Path(dir, x.k), b)
					}
				}
				// Readers are right before Recover too.
				checkRecords(t, "before Recover", readAllRecords(t, dir, testID, st.Size), recs)
				got, err := Recover(dir, testID, committed, smallIndex)
				if err != nil {
					t.Fatalf("Recover(%d): %v", committed, err)
				}
				if got != st {
					t.Fatalf("Recover(%d) = %+v, want %+v", committed, got, st)
				}
				if c.exact || committed == Unknown {
					sameFiles(t, fmt.Sprintf("after Recover(%d)", committed), readFiles(t, dir, testID), want)
				}
				checkRecords(t, "after Recover", readAllRecords(t, dir, testID, st.Size), recs)
				checkOffsetForTime(t, dir, testID, st.Size, recs)
				// And the writer continues from the recovered state.
				w, err := Open(dir, testID, got, smallIndex)
				if err != nil {
					t.Fatal(err)
				}
				more := genRecords(st.NextOffset, 30, st.LastTS)
				if err := w.Append(more); err != nil {
					t.Fatal(err)
				}
				end := w.State()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				all := append(append([]Record{}, recs...), more...)
				checkRecords(t, "after more appends", readAllRecords(t, dir, testID, end.Size), all)
				if c.exact || committed == Unknown {
					checkIndexes(t, dir, testID, all, smallIndex.IndexIntervalBytes)
				}
			}
		})
	}
}

// checkOffsetForTime compares OffsetForTime with a linear search at every
// record timestamp and just around it.
func checkOffsetForTime(t *testing.T, dir string, id ID, limit int64, recs []Record) {
	t.Helper()
	r, c, err := OpenReader(dir, id, limit, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, rec := range recs {
		for _, ts := range []int64{rec.Timestamp - 1, rec.Timestamp, rec.Timestamp + 1} {
			off, _, ok, err := r.OffsetForTime(ts)
			want := -1
			for i := range recs {
				if recs[i].Timestamp >= ts {
					want = i
					break
				}
			}
			if err != nil || ok != (want >= 0) || (ok && off != recs[want].Offset) {
				t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want index %d", ts, off, ok, err, want)
			}
		}
	}
}

// TestReaderLyingIndexes hands a Reader index entries that parse and pair up
// but lie; answers must still be right.
func TestReaderLyingIndexes(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 100, 1000)
	st := writeSegment(t, dir, testID, smallIndex, recs)
	offs, times := parsedIndexes(t, dir, testID)
	f, err := os.Open(testID.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pos := positions(recs)
	for _, tc := range []struct {
		name  string
		offs  index.Offsets
		times index.Times
	}{
		{"positions shifted", shiftOffsets(offs, 1), times},
		{"positions of other records", index.Offsets{{Rel: 10, Pos: uint32(pos[20])}, {Rel: 30, Pos: uint32(pos[25])}}, index.Times{{Timestamp: recs[10].Timestamp, Rel: 10}, {Timestamp: recs[30].Timestamp, Rel: 30}}},
		{"entries past the limit", index.Offsets{{Rel: 10, Pos: uint32(st.Size + 100)}}, nil},
		{"entry for the first record", index.Offsets{{Rel: 0, Pos: FileHeaderSize}}, index.Times{{Timestamp: recs[0].Timestamp, Rel: 0}}},
		{"timestamps too small", offs, lowerTimes(times, 1000)},
		{"timestamps too large", offs, lowerTimes(times, -1000)},
		{"unpaired time entries", offs, index.Times{{Timestamp: recs[50].Timestamp, Rel: 51}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(f, testID, st.Size, tc.offs, tc.times)
			for from := testID.Base; from <= st.NextOffset; from++ {
				got, err := r.Read(from, 5, 1<<20)
				if err != nil {
					t.Fatalf("Read(%d): %v", from, err)
				}
				checkRecords(t, fmt.Sprintf("Read(%d)", from), got, expectRead(recs, from, 5, 1<<20))
			}
			for _, rec := range recs {
				for _, ts := range []int64{rec.Timestamp - 1, rec.Timestamp} {
					off, _, ok, err := r.OffsetForTime(ts)
					want := 0
					for recs[want].Timestamp < ts {
						want++
					}
					if err != nil || !ok || off != recs[want].Offset {
						t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want %d", ts, off, ok, err, recs[want].Offset)
					}
				}
			}
			if _, _, ok, err := r.OffsetForTime(recs[len(recs)-1].Timestamp + 1); ok || err != nil {
				t.Fatalf("OffsetForTime after the last record: %v, %v", ok, err)
			}
		})
	}
}

func shiftOffsets(offs index.Offsets, by uint32) index.Offsets {
	out := make(index.Offsets, len(offs))
	for i, e := range offs {
		out[i] = index.OffsetEntry{Rel: e.Rel, Pos: e.Pos + by}
	}
	return out
}

func lowerTimes(times index.Times, by int64) index.Times {
	out := make(index.Times, len(times))
	for i, e := range times {
		out[i] = index.TimeEntry{Timestamp: e.Timestamp - by, Rel: e.Rel}
	}
	return out
}

// TestRecoverUnknownTornTail cuts the log at every byte of its last two
// records: Recover keeps exactly the records that are whole.
func TestRecoverUnknownTornTail(t *testing.T) {
	recs := genRecords(testID.Base, 40, 1000)
	pos := positions(recs)
	n := len(recs)
	src := t.TempDir()
	writeSegment(t, src, testID, Options{IndexIntervalBytes: 100}, split(recs, 10)...)
	refs := map[int]segFiles{}
	for cut := pos[n-2]; cut <= pos[n]; cut++ {
		whole := n - 2 // records wholly below cut
		for whole < n && pos[whole+1] <= cut {
			whole++
		}
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			truncateFile(t, testID.Path(dir, KindLog), cut)
			st, err := Recover(dir, testID, Unknown, Options{IndexIntervalBytes: 100})
			if err != nil {
				t.Fatal(err)
			}
			want := State{Size: pos[whole], NextOffset: testID.Base + int64(whole), LastTS: recs[whole-1].Timestamp}
			if st != want {
				t.Fatalf("Recover = %+v, want %+v", st, want)
			}
			if _, ok := refs[whole]; !ok {
				refs[whole] = reference(t, testID, Options{IndexIntervalBytes: 100}, recs[:whole])
			}
			sameFiles(t, "after Recover", readFiles(t, dir, testID), refs[whole])
			checkRecords(t, "read back", readAllRecords(t, dir, testID, st.Size), recs[:whole])
		})
	}
}

// TestRecoverUnknownTails: what follows the last whole record is dropped,
// whatever it is.
func TestRecoverUnknownTails(t *testing.T) {
	recs := genRecords(testID.Base, 30, 1000)
	next := genRecords(testID.Base+30, 1, recs[29].Timestamp)[0]
	encNext, _ := AppendRecord(nil, &next)
	stale := next
	stale.Offset += 5 // not the next offset
	encStale, _ := AppendRecord(nil, &stale)
	older := next
	older.Timestamp = recs[29].Timestamp - 1
	encOlder, _ := AppendRecord(nil, &older)
	for _, tc := range []struct {
		name string
		tail []byte
		keep int // records of the tail that are kept
	}{
		{"nothing", nil, 0},
		{"zeros", make([]byte, 4096), 0},
		{"one zero", []byte{0}, 0},
		{"ones", bytes.Repeat([]byte{0xff}, 100), 0},
		{"a whole next record", encNext, 1},
		{"a next record and zeros", append(bytes.Clone(encNext), make([]byte, 64)...), 1},
		{"a record with the wrong offset", encStale, 0},
		{"a record with an older timestamp", encOlder, 0},
		{"a record with a flipped value byte", func() []byte { b := bytes.Clone(encNext); b[len(b)-1] ^= 1; return b }(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := writeSegment(t, dir, testID, smallIndex, recs)
			f, err := os.OpenFile(testID.Path(dir, KindLog), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tc.tail); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, err := Recover(dir, testID, Unknown, smallIndex)
			if err != nil {
				t.Fatal(err)
			}
			want := st
			all := recs
			if tc.keep == 1 {
				all = append(append([]Record{}, recs...), next)
				want = State{Size: st.Size + int64(len(encNext)), NextOffset: st.NextOffset + 1, LastTS: next.Timestamp}
			}
			if got != want {
				t.Fatalf("Recover = %+v, want %+v", got, want)
			}
			sameFiles(t, "after Recover", readFiles(t, dir, testID), reference(t, testID, smallIndex, all))
		})
	}
}

// TestRecoverTornHeader: a segment whose header never became durable is an
// empty segment, whatever its index files hold, and takes appends again.
func TestRecoverTornHeader(t *testing.T) {
	recs := genRecords(testID.Base, 50, 1000)
	for _, tc := range []struct {
		name       string
		logLen     int64
		keepIndexs bool
	}{
		{"empty log, stale indexes", 0, true},
		{"torn header, stale indexes", 17, true},
		{"header minus one, indexes missing", FileHeaderSize - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSegment(t, dir, testID, smallIndex, recs)
			truncateFile(t, testID.Path(dir, KindLog), tc.logLen)
			if !tc.keepIndexs {
				os.Remove(testID.Path(dir, KindIndex))
				os.Remove(testID.Path(dir, KindTimeIndex))
			}
			// With a committed length the file is shorter than what a
			// commit named: the caller seals and rolls.
			before := readFiles(t, dir, testID)
			if _, err := Recover(dir, testID, FileHeaderSize, smallIndex); !errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt) {
				t.Fatalf("Recover with a committed length: %v, want ErrTruncated and not ErrCorrupt", err)
			}
			sameFiles(t, "after a refused Recover", readFiles(t, dir, testID), before)
			st, err := Recover(dir, testID, Unknown, smallIndex)
			if err != nil {
				t.Fatal(err)
			}
			if want := (State{Size: FileHeaderSize, NextOffset: testID.Base, LastTS: -1}); st != want {
				t.Fatalf("Recover = %+v, want %+v", st, want)
			}
			sameFiles(t, "after Recover", readFiles(t, dir, testID), reference(t, testID, smallIndex, nil))
			w, err := Open(dir, testID, st, smallIndex)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append(recs); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, "after appends", readFiles(t, dir, testID), reference(t, testID, smallIndex, recs))
		})
	}
}

func TestRecoverEmptySegment(t *testing.T) {
	dir := t.TempDir()
	st := writeSegment(t, dir, testID, Options{})
	for _, committed := range []int64{FileHeaderSize, Unknown} {
		got, err := Recover(dir, testID, committed, Options{})
		if err != nil || got != st {
			t.Fatalf("Recover(%d) = %+v, %v; want %+v", committed, got, err, st)
		}
	}
}

// TestRecoverIdempotent: recovering a recovered segment changes nothing.
func TestRecoverIdempotent(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 90, 1000)
	st := writeSegment(t, dir, testID, smallIndex, recs)
	f, _ := os.OpenFile(testID.Path(dir, KindLog), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("torn"))
	f.Close()
	for i := range 3 {
		got, err := Recover(dir, testID, Unknown, smallIndex)
		if err != nil || got != st {
			t.Fatalf("round %d: Recover = %+v, %v; want %+v", i, got, err, st)
		}
		got, err = Recover(dir, testID, st.Size, smallIndex)
		if err != nil || got != st {
			t.Fatalf("round %d: Recover(committed) = %+v, %v; want %+v", i, got, err, st)
		}
	}
}

// TestConcurrentReaders reads committed prefixes from many goroutines while
// one goroutine appends (run with -race).
func TestConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 400, 1000)
	w, err := Create(dir, testID, smallIndex)
	if err != nil {
		t.Fatal(err)
	}
	var committed atomic.Int64
	committed.Store(FileHeaderSize)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				limit := committed.Load()
				r, c, err := OpenReader(dir, testID, limit, nil)
				if err != nil {
					errs <- err
					return
				}
				next, _, err := r.Verify()
				if err == nil {
					var got []Record
					got, err = r.Read(testID.Base, 1<<20, 1<<30)
					if err == nil && int64(len(got)) != next-testID.Base {
						err = fmt.Errorf("read %d records below %d, Verify says %d", len(got), limit, next-testID.Base)
					}
					for i := range got {
						if err == nil && !sameRecord(got[i], recs[i]) {
							err = fmt.Errorf("record %d differs", i)
						}
					}
				}
				c.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, b := range split(recs, 10, 10, 30, 50, 50, 100) {
		if err := w.Append(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		committed.Store(w.Size())
	}
	close(done)
	wg.Wait()
	w.Close()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
