package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/index"
)

// damagedSegment is a segment written by the writer, whose .log a test then
// damages.
type damagedSegment struct {
	recs        []Record
	pos         []int64 // position of each record, plus the end
	st          State
	log         []byte // the undamaged .log
	offs        index.Offsets
	times       index.Times
	entryAt     map[int]bool // records an index entry points at
	firstEntryK int          // a record with an index entry, well inside the segment
}

func newDamagedSegment(t *testing.T) *damagedSegment {
	t.Helper()
	dir := t.TempDir()
	s := &damagedSegment{recs: genRecords(testID.Base, 200, 1000)}
	s.pos = positions(s.recs)
	s.st = writeSegment(t, dir, testID, smallIndex, split(s.recs, 70, 70)...)
	s.log = readFiles(t, dir, testID).log
	s.offs, s.times = parsedIndexes(t, dir, testID)
	s.entryAt = map[int]bool{}
	for _, e := range s.offs {
		s.entryAt[int(e.Rel)] = true
	}
	for _, e := range s.offs {
		if e.Rel > 100 {
			s.firstEntryK = int(e.Rel)
			break
		}
	}
	if len(s.offs) < 20 || s.firstEntryK == 0 {
		t.Fatalf("only %d index entries", len(s.offs))
	}
	return s
}

func (s *damagedSegment) readers(log []byte) map[string]*Reader {
	return map[string]*Reader{
		"indexed": NewReader(bytes.NewReader(log), testID, s.st.Size, s.offs, s.times),
		"plain":   NewReader(bytes.NewReader(log), testID, s.st.Size, nil, nil),
	}
}

// TestReadDamage is robustness.md F2, F3, F4, F11, F13 at the segment level:
// one damaged record, or a cut file, makes only itself unreadable. For each
// kind of damage it checks what Read before, at and after the damage
// returns, with and without index entries, and what Verify, Summarize and
// OffsetForTime say.
func TestReadDamage(t *testing.T) {
	s := newDamagedSegment(t)
	k := 50 // the damaged record: one no index entry points at, nor at the next
	for s.entryAt[k] || s.entryAt[k+1] {
		k++
	}
	n := len(s.recs)
	type tc struct {
		name        string
		corrupt     func([]byte) []byte
		first, next int   // damaged records [first, next); next -1: none readable after first
		want        error // what DamageError wraps
	}
	flip := func(at int64, mask byte) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= mask; return b }
	}
	setSize := func(k int, size uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[s.pos[k]+8:], size); return b }
	}
	cases := []tc{
		{"value byte (F4, F11)", flip(s.pos[k+1]-1, 0x10), k, k + 1, ErrCorrupt},
		{"crc byte", flip(s.pos[k]+13, 0x01), k, k + 1, ErrCorrupt},
		{"timestamp byte", flip(s.pos[k]+16, 0x01), k, k + 1, ErrCorrupt},
		{"size one larger (F3)", flip(s.pos[k]+8, 0x01), k, k + 1, ErrCorrupt},
		{"size over MaxBodySize", flip(s.pos[k]+11, 0xf0), k, k + 1, ErrCorrupt},
		{"size past the limit", setSize(k, MaxBodySize), k, k + 1, ErrCorrupt},
		{"size of the last record past the limit", setSize(n-1, MaxBodySize), n - 1, -1, ErrTruncated},
		{"size smaller", setSize(k, 3), k, k + 1, ErrCorrupt},
		{"offset field (F13)", flip(s.pos[k], 0x04), k, k + 1, ErrCorrupt},
		{"offset of the next record", func(b []byte) []byte {
			// Offset k+1 written as k: a good CRC, a broken sequence.
			binary.LittleEndian.PutUint64(b[s.pos[k+1]:], uint64(s.recs[k].Offset))
			return b
		}, k + 1, k + 2, ErrCorrupt},
		{"first record", flip(s.pos[1]-1, 0x01), 0, 1, ErrCorrupt},
		{"last record", flip(s.pos[n]-1, 0x01), n - 1, -1, ErrCorrupt},
		{"record at an index entry", flip(s.pos[s.firstEntryK]+RecordHeaderSize, 0x01), s.firstEntryK, s.firstEntryK + 1, ErrCorrupt},
		{"zeroed stretch over index entries", func(b []byte) []byte {
			clear(b[s.pos[k]+5 : s.pos[k+20]-3])
			return b
		}, k, k + 20, ErrCorrupt},
		{"garbage stretch", func(b []byte) []byte {
			for i := s.pos[k] + 1; i < s.pos[k+3]; i++ {
				b[i] = byte(i * 7)
			}
			return b
		}, k, k + 3, ErrCorrupt},
		{"cut inside a record (F1, F2)", func(b []byte) []byte { return b[:s.pos[k]+40] }, k, -1, ErrTruncated},
		{"cut inside a record header", func(b []byte) []byte { return b[:s.pos[k]+10] }, k, -1, ErrTruncated},
		{"cut at a record boundary", func(b []byte) []byte { return b[:s.pos[k]] }, k, -1, ErrTruncated},
		{"cut after the file header", func(b []byte) []byte { return b[:FileHeaderSize] }, 0, -1, ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := c.corrupt(bytes.Clone(s.log))
			first := testID.Base + int64(c.first)
			next := int64(-1)
			if c.next >= 0 {
				next = testID.Base + int64(c.next)
			}
			var good []Record // what must stay readable
			for i, r := range s.recs {
				if i < c.first || (c.next >= 0 && i >= c.next) {
					good = append(good, r)
				}
			}
			checkDamage := func(what string, err error) {
				t.Helper()
				var de *DamageError
				if !errors.As(err, &de) {
					t.Fatalf("%s: err %v, want a *DamageError", what, err)
				}
				if de.ID != testID || de.First != first || de.Next != next || de.Pos != s.pos[c.first] {
					t.Fatalf("%s: %+v, want first %d next %d pos %d", what, de, first, next, s.pos[c.first])
				}
				if !errors.Is(err, c.want) || errors.Is(err, ErrCorrupt) == errors.Is(err, ErrTruncated) {
					t.Fatalf("%s: err %v, want exactly %v", what, err, c.want)
				}
			}
			for name, r := range s.readers(log) {
				t.Run(name, func(t *testing.T) {
					// Before the damage: the good records, a nil error.
					got, err := r.Read(testID.Base, 1<<20, 1<<30)
					if err != nil && c.first > 0 {
						t.Fatalf("Read from the start: %v", err)
					}
					checkRecords(t, "Read from the start", got, s.recs[:c.first])
					if c.first >= 3 {
						got, err = r.Read(first-3, 1<<20, 1<<30)
						if err != nil {
							t.Fatal(err)
						}
						checkRecords(t, "Read just before the damage", got, s.recs[c.first-3:c.first])
					}
					// At the damage and up to the next good record: the error.
					end := next
					if end < 0 {
						end = s.st.NextOffset + 1
					}
					for from := first; from < end; from++ {
						if from > first+3 && from < end-2 && from%17 != 0 {
							continue // a sample of a long stretch
						}
						got, err := r.Read(from, 1<<20, 1<<30)
						if len(got) > 0 {
							t.Fatalf("Read(%d) in the damage returned %d records", from, len(got))
						}
						checkDamage(fmt.Sprintf("Read(%d)", from), err)
					}
					// After it: the records there.
					if next >= 0 {
						for _, from := range []int64{next, next + 1, next + 7} {
							got, err := r.Read(from, 1<<20, 1<<30)
							if err != nil {
								t.Fatalf("Read(%d) after the damage: %v", from, err)
							}
							checkRecords(t, fmt.Sprintf("Read(%d) after the damage", from), got, expectRead(s.recs, from, 1<<20, 1<<30))
						}
					}
					// Following DamageError.Next reads every good record.
					checkRecords(t, "everything readable", readAround(t, r), good)

					checkDamageOffsetForTime(t, r, s.recs, c.first, c.next)

					nextOff, lastTS, err := r.Verify()
					checkDamage("Verify", err)
					if nextOff != first || (c.first > 0 && lastTS != s.recs[c.first-1].Timestamp) {
						t.Fatalf("Verify = %d, %d", nextOff, lastTS)
					}
				})
			}
			_, err := Summarize(bytes.NewReader(log), testID, s.st.Size, smallIndex.IndexIntervalBytes)
			checkDamage("Summarize", err)
		})
	}
}

// readAround reads the whole segment with reads of a few records, going on
// at DamageError.Next after damage.
func readAround(t *testing.T, r *Reader) []Record {
	t.Helper()
	var out []Record
	for from := r.ID().Base; ; {
		recs, err := r.Read(from, 7, 2000)
		var de *DamageError
		switch {
		case errors.As(err, &de):
			// A read in the damage reports it, and Next is past it.
			if len(recs) > 0 || de.First > from || (de.Next >= 0 && de.Next <= from) {
				t.Fatalf("Read(%d) = %d records, %v", from, len(recs), err)
			}
			if de.Next < 0 {
				return out
			}
			from = de.Next
		case err != nil:
			t.Fatalf("Read(%d): %v", from, err)
		case len(recs) == 0:
			return out
		default:
			out = append(out, recs...)
			from = recs[len(recs)-1].Offset + 1
		}
	}
}

// checkDamageOffsetForTime: OffsetForTime around damaged records [first,
// next) is never wrong. It answers right, or, exactly when the true answer
// is a damaged record or the first good one after them (a damaged record
// could be older), returns the DamageError.
func checkDamageOffsetForTime(t *testing.T, r *Reader, recs []Record, first, next int) {
	t.Helper()
	for i := range recs {
		near := i >= first-4 && (next < 0 || i <= next+4)
		if !near && i%9 != 0 {
			continue // every timestamp around the damage, a sample elsewhere
		}
		for _, ts := range []int64{recs[i].Timestamp - 1, recs[i].Timestamp, recs[i].Timestamp + 1} {
			want := len(recs)
			for j := range recs {
				if recs[j].Timestamp >= ts {
					want = j
					break
				}
			}
			off, _, ok, err := r.OffsetForTime(ts)
			ambiguous := want >= first && (next < 0 || want <= next)
			if ambiguous {
				var de *DamageError
				if !errors.As(err, &de) || de.First != recs[first].Offset {
					t.Fatalf("OffsetForTime(%d) = %d, %v, %v: the answer %d could be damaged, want the DamageError", ts, off, ok, err, want)
				}
				continue
			}
			if err != nil || ok != (want < len(recs)) || (ok && off != recs[want].Offset) {
				t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want record %d", ts, off, ok, err, want)
			}
		}
	}
}

// TestReadDamagedHeader: a damaged file header with intact records. Reads
// serve the records (they verify themselves); Verify, Summarize and Recover
// fail, so the compactor quarantines the segment and a writer seals and
// rolls. A header that is intact but names another segment is not this
// segment's file: reads refuse it too.
func TestReadDamagedHeader(t *testing.T) {
	s := newDamagedSegment(t)
	otherEpoch := AppendFileHeader(nil, FileHeader{Version: Version, BaseOffset: testID.Base, Epoch: testID.Epoch + 1})
	otherVersion := AppendFileHeader(nil, FileHeader{Version: Version, BaseOffset: testID.Base, Epoch: testID.Epoch})
	otherVersion[4] = 3
	binary.LittleEndian.PutUint32(otherVersion[28:], crc32.Checksum(otherVersion[:28], castagnoli))
	for _, tc := range []struct {
		name    string
		corrupt func([]byte) []byte
		serves  bool // reads go on
	}{
		{"flipped magic (F10)", func(b []byte) []byte { b[0] ^= 0x01; return b }, true},
		{"flipped version", func(b []byte) []byte { b[4] ^= 0x01; return b }, true},
		{"flipped reserved byte", func(b []byte) []byte { b[7] ^= 0x80; return b }, true},
		{"flipped base offset", func(b []byte) []byte { b[12] ^= 0x01; return b }, true},
		{"flipped epoch", func(b []byte) []byte { b[20] ^= 0x01; return b }, true},
		{"flipped header crc", func(b []byte) []byte { b[29] ^= 0x01; return b }, true},
		{"zeroed header", func(b []byte) []byte { clear(b[:FileHeaderSize]); return b }, true},
		{"another epoch's header", func(b []byte) []byte { copy(b, otherEpoch); return b }, false},
		{"unknown version, good crc", func(b []byte) []byte { copy(b, otherVersion); return b }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.corrupt(bytes.Clone(s.log))
			for name, r := range s.readers(log) {
				if err := r.CheckHeader(); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: CheckHeader = %v, want ErrCorrupt", name, err)
				}
				got, err := r.Read(testID.Base+10, 1<<20, 1<<30)
				off, _, ok, terr := r.OffsetForTime(s.recs[60].Timestamp)
				if tc.serves {
					if err != nil || terr != nil {
						t.Fatalf("%s: Read: %v; OffsetForTime: %v", name, err, terr)
					}
					checkRecords(t, name+": Read", got, s.recs[10:])
					checkRecords(t, name+": everything", readAround(t, r), s.recs)
					if !ok || off != s.recs[60].Offset-int64(60%3) {
						t.Fatalf("%s: OffsetForTime = %d, %v", name, off, ok)
					}
				} else {
					var de *DamageError
					if len(got) > 0 || !errors.Is(err, ErrCorrupt) || errors.As(err, &de) || !errors.Is(terr, ErrCorrupt) {
						t.Fatalf("%s: Read = %d records, %v; OffsetForTime: %v; want ErrCorrupt, no records", name, len(got), err, terr)
					}
				}
				// Verify checks the records first, so next says they are
				// all there, then fails on the header.
				next, _, err := r.Verify()
				var de *DamageError
				if !errors.Is(err, ErrCorrupt) || errors.As(err, &de) || next != s.st.NextOffset {
					t.Fatalf("%s: Verify = %d, %v; want %d and a header error", name, next, err, s.st.NextOffset)
				}
			}
			if _, err := Summarize(bytes.NewReader(log), testID, s.st.Size, smallIndex.IndexIntervalBytes); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Summarize = %v, want ErrCorrupt", err)
			}
			dir := t.TempDir()
			mustWriteFile(t, testID.Path(dir, KindLog), log)
			for _, committed := range []int64{s.st.Size, Unknown} {
				if _, err := Recover(dir, testID, committed, smallIndex); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated) {
					t.Fatalf("Recover(%d) = %v, want ErrCorrupt", committed, err)
				}
				if got := readFiles(t, dir, testID).log; !bytes.Equal(got, log) {
					t.Fatalf("Recover(%d) changed the log", committed)
				}
			}
		})
	}
}

// TestReadTwoDamages: damage in two places. Without index entries the
// records between them cannot be checked against a boundary and count as
// damaged; with entries, what lies between two checked boundaries is
// readable. Either way every record after the second damage is.
func TestReadTwoDamages(t *testing.T) {
	s := newDamagedSegment(t)
	// k1 and k2 with an index entry strictly between them, none on them.
	k1, k2 := -1, -1
	for _, e := range s.offs {
		j := int(e.Rel)
		if j > 40 && !s.entryAt[j-2] && !s.entryAt[j-1] && !s.entryAt[j+1] && !s.entryAt[j+2] {
			k1, k2 = j-2, j+2
			break
		}
	}
	if k1 < 0 {
		t.Fatal("no index entry with room around it")
	}
	log := bytes.Clone(s.log)
	log[s.pos[k1+1]-1] ^= 1
	log[s.pos[k2+1]-1] ^= 1
	skip := func(first, next int) []Record {
		var out []Record
		for i, r := range s.recs {
			if i < first || i >= next {
				out = append(out, r)
			}
		}
		return out
	}
	rs := s.readers(log)
	want := skip(k1, k1+1)
	want = append(want[:k2-1:k2-1], s.recs[k2+1:]...)
	checkRecords(t, "indexed", readAround(t, rs["indexed"]), want)
	checkRecords(t, "plain", readAround(t, rs["plain"]), skip(k1, k2+1))
}

// TestReadDamageHiddenRecords: records hidden in a value, with good CRCs
// and offsets that could follow the damage, do not fool the resync: it
// wants a dense chain up to a checked boundary or the limit.
func TestReadDamageHiddenRecords(t *testing.T) {
	recs := genRecords(testID.Base, 60, 1000)
	const k = 20
	// Record k's value holds encodings of records k+1 and k+2 with other
	// values: what a producer could send.
	var fake []byte
	for j := int64(1); j <= 2; j++ {
		fr := Record{Offset: recs[k].Offset + j, Timestamp: recs[k].Timestamp, Value: []byte("fake")}
		fake, _ = AppendRecord(fake, &fr)
	}
	recs[k].Value = append(bytes.Repeat([]byte("v"), 5), fake...)
	dir := t.TempDir()
	st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: 1 << 30}, recs)
	log := readFiles(t, dir, testID).log
	pos := positions(recs)
	log[pos[k]+RecordHeaderSize] ^= 1 // damage record k in its key or value head
	r := NewReader(bytes.NewReader(log), testID, st.Size, nil, nil)
	_, err := r.Read(recs[k].Offset, 100, 1<<20)
	var de *DamageError
	if !errors.As(err, &de) || de.First != recs[k].Offset || de.Next != recs[k+1].Offset {
		t.Fatalf("Read at the damage: %v, want records %d..%d damaged", err, k, k)
	}
	got, err := r.Read(recs[k+1].Offset, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "after the damage", got, recs[k+1:])
}

// TestRecoverDamageDetail: Recover's refusals carry the DamageError, and a
// short file is ErrTruncated with First the first offset not wholly there.
func TestRecoverDamageDetail(t *testing.T) {
	s := newDamagedSegment(t)
	n := len(s.recs)
	// Recover checks from the last index entry on: damage there.
	last := int(s.offs[len(s.offs)-1].Rel)
	if last >= n-1 {
		t.Fatalf("the last index entry is at record %d of %d", last, n)
	}
	for _, tc := range []struct {
		name        string
		corrupt     func([]byte) []byte
		first, next int
		want        error
	}{
		{"value byte of the last record", func(b []byte) []byte { b[s.pos[n]-1] ^= 1; return b }, n - 1, -1, ErrCorrupt},
		{"value byte of the last indexed record", func(b []byte) []byte { b[s.pos[last+1]-1] ^= 1; return b }, last, last + 1, ErrCorrupt},
		{"cut inside the last record", func(b []byte) []byte { return b[:s.pos[n]-3] }, n - 1, -1, ErrTruncated},
		{"cut two records short", func(b []byte) []byte { return b[:s.pos[n-2]] }, n - 2, -1, ErrTruncated},
		{"cut before the last index entry", func(b []byte) []byte { return b[:s.pos[last]-1] }, last - 1, -1, ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := tc.corrupt(bytes.Clone(s.log))
			mustWriteFile(t, testID.Path(dir, KindLog), log)
			mustWriteFile(t, testID.Path(dir, KindIndex), encodeOffsetsForTest(s.offs))
			mustWriteFile(t, testID.Path(dir, KindTimeIndex), encodeTimesForTest(s.times))
			before := readFiles(t, dir, testID)
			_, err := Recover(dir, testID, s.st.Size, smallIndex)
			var de *DamageError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) || errors.Is(err, ErrCorrupt) == errors.Is(err, ErrTruncated) {
				t.Fatalf("Recover = %v, want a DamageError wrapping exactly %v", err, tc.want)
			}
			wantNext := int64(-1)
			if tc.next >= 0 {
				wantNext = s.recs[tc.next].Offset
			}
			if de.First != s.recs[tc.first].Offset || de.Next != wantNext || de.Pos != s.pos[tc.first] {
				t.Fatalf("Recover: %+v, want first %d next %d", de, s.recs[tc.first].Offset, wantNext)
			}
			sameFiles(t, "after the refused Recover", readFiles(t, dir, testID), before)
		})
	}
}

func encodeOffsetsForTest(offs index.Offsets) []byte {
	var b []byte
	for _, e := range offs {
		b = index.AppendOffset(b, e)
	}
	return b
}

func encodeTimesForTest(times index.Times) []byte {
	var b []byte
	for _, e := range times {
		b = index.AppendTime(b, e)
	}
	return b
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	ra io.ReaderAt
	n  atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.ra.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestResyncWorkIsLinear: a resync across many damaged records with no
// index entry to lean on reads the segment a bounded number of times, not
// once per record: a chain already followed to damage is not followed again
// from each of its records.
func TestResyncWorkIsLinear(t *testing.T) {
	recs := genRecords(testID.Base, 600, 1000)
	dir := t.TempDir()
	st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: 1 << 30}, recs)
	log := readFiles(t, dir, testID).log
	pos := positions(recs)
	for i := 20; i < 560; i += 20 {
		log[pos[i+1]-1] ^= 1
	}
	c := &countingReaderAt{ra: bytes.NewReader(log)}
	r := NewReader(c, testID, st.Size, nil, nil)
	_, err := r.Read(recs[20].Offset, 10, 1<<20)
	var de *DamageError
	if !errors.As(err, &de) || de.First != recs[20].Offset || de.Next != recs[541].Offset {
		t.Fatalf("Read at the first damage: %v; want records 20 to 540 damaged", err)
	}
	// The scan to the damage, the search window, and one short chain
	// check per damaged stretch.
	t.Logf("read %d bytes of a %d-byte segment", c.n.Load(), st.Size)
	if n, max := c.n.Load(), 4*st.Size; n > max {
		t.Fatalf("the resync read %d bytes of a %d-byte segment, want at most %d", n, st.Size, max)
	}
	got, err := r.Read(recs[541].Offset, 1000, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "after the last damage", got, recs[541:])
}

// TestResyncAllocs: the byte-wise search allocates nothing per position: a
// read at damage costs as many allocations over a long damaged stretch as
// over a short one.
func TestResyncAllocs(t *testing.T) {
	recs := genRecords(testID.Base, 1500, 1000)
	dir := t.TempDir()
	st := writeSegment(t, dir, testID, Options{IndexIntervalBytes: 1 << 30}, recs)
	clean := readFiles(t, dir, testID).log
	pos := positions(recs)
	allocs := func(stretch int) float64 {
		log := bytes.Clone(clean)
		x := uint32(2463534242)
		for i := pos[10] + 3; i < pos[10+stretch]; i++ {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			log[i] = byte(x)
		}
		// And headers that look like the next record's until their size.
		for i := pos[10] + 40; i+RecordHeaderSize < pos[10+stretch]; i += 64 {
			binary.LittleEndian.PutUint64(log[i:], uint64(recs[11].Offset))
			binary.LittleEndian.PutUint32(log[i+8:], MaxBodySize+1)
		}
		r := NewReader(bytes.NewReader(log), testID, st.Size, nil, nil)
		var err error
		n := testing.AllocsPerRun(5, func() { _, err = r.Read(recs[10].Offset, 10, 1<<20) })
		var de *DamageError
		if !errors.As(err, &de) || de.Next != recs[10+stretch].Offset {
			t.Fatalf("stretch of %d records: %v", stretch, err)
		}
		return n
	}
	short, long := allocs(3), allocs(1200)
	t.Logf("allocations of a read at damage: %v over 3 records, %v over 1200 (%d bytes)", short, long, pos[1210]-pos[10])
	// sync.Pool drops items at random under -race, so counts vary by a
	// few either way; an allocation per position searched would add
	// about 200,000.
	if long > short+64 {
		t.Fatalf("a read at damage allocates %v times over a long stretch, %v over a short one", long, short)
	}
}
