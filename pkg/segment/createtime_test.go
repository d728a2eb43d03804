package segment

import (
	"errors"
	"os"
	"testing"
)

// TestCreateTimeSegment: a create-time segment takes timestamps that go
// back, keeps the largest so far in its time index and state, and answers
// OffsetForTime as a linear search does, through Recover and reopening.
func TestCreateTimeSegment(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 400, 1700000000000)
	shuffleTimestamps(recs, 11)
	opts := Options{IndexIntervalBytes: 256, CreateTime: true}
	st := writeSegment(t, dir, testID, opts, split(recs, 1, 50, 149)...)
	maxTS := int64(-1)
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	if st.LastTS != maxTS || st.NextOffset != testID.Base+400 {
		t.Fatalf("state %+v, want LastTS %d (the largest)", st, maxTS)
	}
	checkIndexes(t, dir, testID, recs, opts.IndexIntervalBytes)
	if offs, _ := parsedIndexes(t, dir, testID); len(offs) < 20 {
		t.Fatalf("only %d index entries", len(offs))
	}
	checkOffsetForTime(t, dir, testID, st.Size, recs)
	checkRecords(t, "create-time records", readAllRecords(t, dir, testID, st.Size), recs)

	// The same records refused by an append-time writer.
	w, err := Create(t.TempDir(), testID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(recs[:2]); err == nil && recs[1].Timestamp < recs[0].Timestamp || err != nil && recs[1].Timestamp >= recs[0].Timestamp {
		t.Fatalf("append-time writer, timestamps %d then %d: %v", recs[0].Timestamp, recs[1].Timestamp, err)
	}

	// Recover keeps it as it is (a create-time segment's timestamps going
	// back are not damage), and a reopened writer takes older ones.
	for _, committed := range []int64{st.Size, Unknown} {
		got, err := Recover(dir, testID, committed, opts)
		if err != nil || got != st {
			t.Fatalf("Recover(%d) = %+v, %v; want %+v", committed, got, err, st)
		}
	}
	w2, err := Open(dir, testID, st, Options{IndexIntervalBytes: 256}) // the header says create time
	if err != nil {
		t.Fatal(err)
	}
	more := Record{Offset: st.NextOffset, Timestamp: 5, Value: []byte("old")}
	if err := w2.Append([]Record{more}); err != nil {
		t.Fatal(err)
	}
	if got := w2.State().LastTS; got != maxTS {
		t.Fatalf("LastTS after an older record %d, want %d", got, maxTS)
	}
	end := w2.State().Size
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	f := openLog(t, dir, testID)
	defer f.Close()
	sum, err := Summarize(f, testID, end, 256)
	if err != nil || sum.FirstTS != 5 || sum.LastTS != maxTS || !sum.Header.CreateTime() {
		t.Fatalf("Summarize = first %d last %d header %+v, %v", sum.FirstTS, sum.LastTS, sum.Header, err)
	}
	checkOffsetForTime(t, dir, testID, end, append(recs, more))
}

// TestCreateTimeOffsetForTimeAroundDamage: on a create-time segment a
// damaged record's timestamp could be anything, so OffsetForTime answers
// right when the answer lies before the damage, and otherwise the
// DamageError, or the right answer where a time index entry past the
// damage shows every record up to it (the damaged one too) older.
func TestCreateTimeOffsetForTimeAroundDamage(t *testing.T) {
	dir := t.TempDir()
	const bad = 120
	recs := genRecords(testID.Base, 200, 1000)
	for i := range recs {
		// Out of order; the damaged record is the newest, the records
		// after it are older, but one. Going around the damage as on an
		// append-time segment would answer that one.
		recs[i].Timestamp = 1000 + int64(i*7919%100)
	}
	recs[bad].Timestamp, recs[150].Timestamp = 3000, 2600
	st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: 256, CreateTime: true}, recs)
	pos := positions(recs)
	flipByte(t, testID.Path(dir, KindLog), pos[bad]+RecordHeaderSize-1) // in keyinfo: CRC fails
	r, c, err := OpenReader(dir, testID, st.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	damaged := 0
	for ts := int64(990); ts <= 3010; ts += 3 {
		want := -1
		for i := range recs {
			if recs[i].Timestamp >= ts {
				want = i
				break
			}
		}
		off, _, ok, err := r.OffsetForTime(ts)
		var de *DamageError
		switch {
		case err == nil:
			if ok != (want >= 0) || ok && off != recs[want].Offset {
				t.Fatalf("OffsetForTime(%d) = %d, %v; want record %d", ts, off, ok, want)
			}
		case want >= 0 && want < bad:
			t.Fatalf("OffsetForTime(%d): %v; want record %d, before the damage", ts, err, want)
		case !errors.As(err, &de) || de.First != testID.Base+bad:
			t.Fatalf("OffsetForTime(%d): %v; want the DamageError at %d", ts, err, bad)
		default:
			damaged++
		}
	}
	if damaged == 0 {
		t.Fatal("no lookup met the damage: the test tests nothing")
	}
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x40
	mustWriteFile(t, path, b)
}

func openLog(t *testing.T, dir string, id ID) *os.File {
	t.Helper()
	f, err := os.Open(id.Path(dir, KindLog))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
