package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestSummarizeMatchesWriter: Summarize rebuilds exactly the index files the
// writer wrote, whatever the batching, and reports the segment's extent.
func TestSummarizeMatchesWriter(t *testing.T) {
	recs := genRecords(testID.Base, 200, 1000)
	for _, interval := range []int{1, 97, 512, 4096, 1 << 30} {
		t.Run(fmt.Sprint(interval), func(t *testing.T) {
			dir := t.TempDir()
			st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: interval}, split(recs, 1, 60, 7)...)
			files := readFiles(t, dir, testID)
			s, err := Summarize(bytes.NewReader(files.log), testID, st.Size, interval)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(s.Offsets, files.idx) || !bytes.Equal(s.Times, files.tidx) {
				t.Fatalf("Summarize indexes: %d and %d bytes, writer wrote %d and %d", len(s.Offsets), len(s.Times), len(files.idx), len(files.tidx))
			}
			if s.NextOffset != st.NextOffset || s.FirstTS != recs[0].Timestamp || s.LastTS != st.LastTS {
				t.Fatalf("Summarize = next %d first %d last %d, want %d %d %d", s.NextOffset, s.FirstTS, s.LastTS, st.NextOffset, recs[0].Timestamp, st.LastTS)
			}
		})
	}
	// The golden segment, written by an earlier writer.
	log, err := os.ReadFile(goldenID.Path(goldenDir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	g := readFiles(t, goldenDir, goldenID)
	s, err := Summarize(bytes.NewReader(log), goldenID, int64(len(log)), goldenOpts.IndexIntervalBytes)
	if err != nil || !bytes.Equal(s.Offsets, g.idx) || !bytes.Equal(s.Times, g.tidx) || s.NextOffset != 1011 {
		t.Fatalf("Summarize(golden) = next %d, %v; indexes equal: %v %v", s.NextOffset, err, bytes.Equal(s.Offsets, g.idx), bytes.Equal(s.Times, g.tidx))
	}
}

func TestSummarizeEmptyAndBad(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 40, 1000)
	empty := writeSegment(t, dir, testID, Options{})
	s, err := Summarize(bytes.NewReader(readFiles(t, dir, testID).log), testID, empty.Size, 0)
	if err != nil || s.NextOffset != testID.Base || s.FirstTS != -1 || s.LastTS != -1 || len(s.Offsets) != 0 || len(s.Times) != 0 {
		t.Fatalf("Summarize(empty) = %+v, %v", s, err)
	}

	dir = t.TempDir()
	st := writeSegment(t, dir, testID, smallIndex, recs)
	log := readFiles(t, dir, testID).log
	pos := positions(recs)
	for _, tc := range []struct {
		name  string
		b     func([]byte) []byte
		id    ID
		limit int64
		want  error // nil: any error
	}{
		{"flipped value byte", func(b []byte) []byte { b[pos[20]+30] ^= 1; return b }, testID, st.Size, ErrCorrupt},
		{"flipped header byte", func(b []byte) []byte { b[3] ^= 1; return b }, testID, st.Size, ErrCorrupt},
		{"other epoch", func(b []byte) []byte { return b }, ID{Base: testID.Base, Epoch: 9}, st.Size, ErrCorrupt},
		{"limit inside a record", func(b []byte) []byte { return b }, testID, pos[20] + 5, nil},
		{"limit past the end", func(b []byte) []byte { return b }, testID, st.Size + 10, nil},
		{"torn header", func(b []byte) []byte { return b[:10] }, testID, st.Size, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Summarize(bytes.NewReader(tc.b(bytes.Clone(log))), tc.id, tc.limit, smallIndex.IndexIntervalBytes)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDecodeRecords decodes windows of a .log starting at every record
// boundary and ending at every byte of the next few records.
func TestDecodeRecords(t *testing.T) {
	recs := genRecords(testID.Base, 30, 1000)
	body := encodeAll(t, recs)
	pos := positions(recs)
	at := func(i int) int { return int(pos[i] - FileHeaderSize) }
	for i := range recs {
		for end := at(i); end <= min(len(body), at(min(i+4, len(recs)))); end++ {
			whole := i
			for whole < len(recs) && at(whole+1) <= end {
				whole++
			}
			for _, l := range []struct {
				from                 int64
				maxRecords, maxBytes int
			}{
				{0, 1 << 20, 1 << 30},
				{recs[i].Offset + 1, 1 << 20, 1 << 30},
				{0, 2, 1 << 30},
				{0, 1 << 20, 0},
				{0, 1 << 20, 300},
				{0, 0, 1 << 30},
			} {
				got, cut, err := DecodeRecords(body[at(i):end], l.from, l.maxRecords, l.maxBytes)
				if err != nil {
					t.Fatalf("window %d..%d: %v", at(i), end, err)
				}
				want := expectRead(recs[i:whole], l.from, l.maxRecords, l.maxBytes)
				checkRecords(t, fmt.Sprintf("window %d..%d %+v", at(i), end, l), got, want)
				// With no limit in the way, the decode stops at a cut-off
				// record exactly when the window ends inside one.
				if l.maxRecords == 1<<20 && l.maxBytes == 1<<30 {
					if wantCut := end != at(whole); cut != wantCut {
						t.Fatalf("window %d..%d %+v: cut %v, want %v", at(i), end, l, cut, wantCut)
					}
				}
			}
		}
	}
	bad := bytes.Clone(body)
	bad[at(3)+RecordHeaderSize] ^= 1
	got, _, err := DecodeRecords(bad, 0, 1<<20, 1<<30)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged record: err %v, want ErrCorrupt", err)
	}
	checkRecords(t, "records before the damage", got, recs[:3])
}

func TestPeekRecordLen(t *testing.T) {
	rec := Record{Offset: 1, Timestamp: 2, Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 1000)}
	enc, _ := AppendRecord(nil, &rec)
	for n := RecordHeaderSize; n <= len(enc); n += 100 {
		if got, err := PeekRecordLen(enc[:n]); err != nil || got != len(enc) {
			t.Fatalf("PeekRecordLen(%d bytes) = %d, %v; want %d", n, got, err, len(enc))
		}
	}
	if _, err := PeekRecordLen(enc[:RecordHeaderSize-1]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short header: %v, want ErrTruncated", err)
	}
	bad := bytes.Clone(enc)
	bad[11] = 0xff // size over MaxBodySize
	if _, err := PeekRecordLen(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("huge size: %v, want ErrCorrupt", err)
	}
}

// TestRelease: Release closes without the index fsyncs of Close; the synced
// records stay, and the writer refuses further use.
func TestRelease(t *testing.T) {
	dir := t.TempDir()
	fs := newFaultFS()
	recs := genRecords(testID.Base, 50, 1000)
	w, err := Create(dir, testID, Options{IndexIntervalBytes: 512, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	st := w.State()
	if err := w.Release(); err != nil {
		t.Fatal(err)
	}
	if fs.syncs[KindIndex] != 0 || fs.syncs[KindTimeIndex] != 0 {
		t.Fatalf("Release synced the indexes: %v", fs.syncs)
	}
	if err := w.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Release: %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close after Release: %v", err)
	}
	got, err := Recover(dir, testID, st.Size, smallIndex)
	if err != nil || got != st {
		t.Fatalf("Recover = %+v, %v; want %+v", got, err, st)
	}
	checkRecords(t, "after Release", readAllRecords(t, dir, testID, st.Size), recs)
}
