package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tierlog/tierlog/pkg/index"
)

// fuzzSeeds are the committed seed corpora under testdata/fuzz, by target
// and file name. TestFuzzSeeds checks the files hold exactly these and
// TIERLOG_UPDATE_GOLDEN=1 rewrites them. Fuzzing may add crashers beside
// them; those stay.
func fuzzSeeds(t testing.TB) map[string]map[string][]byte {
	valid := encodeAll(t, []Record{{Offset: 5000, Timestamp: 1700000000000, Key: []byte("key"), Value: []byte("value")}})
	absent := encodeAll(t, []Record{{Offset: 0, Timestamp: -1}})
	withHeaders := encodeAll(t, []Record{{Offset: 5000, Timestamp: 1700000000000, Key: []byte("key"), Value: []byte("value"),
		Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: nil}, {Key: "", Value: []byte{}}}}})
	maxHeader := make([]byte, RecordHeaderSize)
	binary.LittleEndian.PutUint64(maxHeader[0:], 5000)
	binary.LittleEndian.PutUint32(maxHeader[8:], MaxBodySize)
	binary.LittleEndian.PutUint32(maxHeader[24:], MaxBodySize) // all key
	overHeader := bytes.Clone(maxHeader)
	binary.LittleEndian.PutUint32(overHeader[8:], MaxBodySize+1)

	recs := genRecords(testID.Base, 12, 1700000000000)
	many := encodeAll(t, recs)
	older := recs[11]
	older.Offset, older.Timestamp = testID.Base+12, recs[11].Timestamp-1
	fz := fuzzDamageSegment(t)
	damage := func(at int64, cut int64, indexed bool, mask ...byte) []byte {
		return encodeDamage(fuzzDamage{at: uint16(at), cut: uint16(cut), indexed: indexed, mask: mask})
	}
	ctDamage := func(at int64, cut int64, indexed bool, mask ...byte) []byte {
		return encodeDamage(fuzzDamage{at: uint16(at), cut: uint16(cut), indexed: indexed, createTime: true, mask: mask})
	}
	k := int64(len(fz.pos) / 2)
	return map[string]map[string][]byte{
		"FuzzReadDamaged": {
			"empty":                  nil,
			"untouched":              damage(0, 0, true),
			"value-byte":             damage(fz.pos[k+1]-1, 0, true, 0x01),
			"value-byte-plain":       damage(fz.pos[k+1]-1, 0, false, 0x01),
			"size-byte":              damage(fz.pos[k]+8, 0, true, 0x01),
			"offset-byte":            damage(fz.pos[k], 0, false, 0x04),
			"header-magic":           damage(0, 0, true, 0x01),
			"cut-mid-record":         damage(0, fz.pos[k]+9, true),
			"zeroed-stretch":         damage(fz.pos[k]+3, 0, true, bytes.Repeat([]byte{0xff}, 700)...),
			"scattered":              damage(fz.pos[3], 0, false, append(append([]byte{0x10}, make([]byte, 900)...), 0x20)...),
			"stretch-and-cut":        damage(fz.pos[5]+20, fz.pos[k], true, 0x80, 0x80, 0x80),
			"first-record-size-max":  damage(FileHeaderSize+11, 0, false, 0x80),
			"create-time-untouched":  ctDamage(0, 0, true),
			"create-time-value-byte": ctDamage(fz.pos[k+1]-1, 0, true, 0x01),
			"create-time-timestamp":  ctDamage(fz.pos[k]+17, 0, true, 0x10),
			"create-time-cut":        ctDamage(0, fz.pos[k]+9, false),
		},
		"FuzzDecodeRecord": {
			"empty":              nil,
			"max-length-header":  maxHeader,
			"over-max-header":    overHeader,
			"valid":              valid,
			"valid-absent-key":   absent,
			"valid-plus-garbage": append(bytes.Clone(valid), "\x00\xffgarbage"...),
			"valid-headers":      withHeaders,
			"headers-cut":        withHeaders[:RecordHeaderSize+5],
		},
		"FuzzRecover": {
			"empty":                    nil,
			"one-valid":                valid,
			"many-valid":               many,
			"many-valid-torn":          many[:len(many)-3],
			"valid-plus-garbage":       append(bytes.Clone(many), "\x00\xffgarbage"...),
			"valid-plus-zeros":         append(bytes.Clone(many), make([]byte, 64)...),
			"timestamp-goes-back":      encodeAll(t, append(append([]Record{}, recs...), older)),
			"max-length-header":        append(bytes.Clone(many), maxHeader...),
			"valid-then-repeat-offset": append(bytes.Clone(valid), many...),
		},
	}
}

func seedPath(target, name string) string {
	return filepath.Join("testdata", "fuzz", target, name)
}

func marshalSeed(b []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
}

func TestFuzzSeeds(t *testing.T) {
	for target, seeds := range fuzzSeeds(t) {
		names := make([]string, 0, len(seeds))
		for name := range seeds {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			path := seedPath(target, name)
			want := marshalSeed(seeds[name])
			if os.Getenv("TIERLOG_UPDATE_GOLDEN") == "1" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				mustWriteFile(t, path, want)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not the seed the test makes (TIERLOG_UPDATE_GOLDEN=1 rewrites it)", path)
			}
		}
	}
}

// goldenBody is the records of a golden .log, for seeding.
func goldenBody(f *testing.F, dir string) []byte {
	b, err := os.ReadFile(goldenID.Path(dir, KindLog))
	if err != nil {
		f.Fatal(err)
	}
	return b[FileHeaderSize:]
}

// FuzzDecodeRecord: decoding never panics, fails only with ErrTruncated or
// ErrCorrupt, and a record that decodes re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(goldenBody(f, goldenDir))
	f.Add(goldenBody(f, goldenV2Dir))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := DecodeRecord(b)
		h, herr := DecodeRecordHeader(b)
		if err != nil {
			if errors.Is(err, ErrTruncated) == errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v: want exactly one of ErrTruncated and ErrCorrupt", err)
			}
			if n != 0 {
				t.Fatalf("failed decode returned length %d", n)
			}
			if herr == nil && errors.Is(err, ErrTruncated) && h.Len() <= len(b) {
				t.Fatalf("ErrTruncated but the record's %d bytes are all there", h.Len())
			}
			return
		}
		if herr != nil || h.Len() != n || h.Offset != r.Offset || h.Timestamp != r.Timestamp {
			t.Fatalf("header %+v, %v disagrees with the record (%d bytes)", h, herr, n)
		}
		if n < RecordHeaderSize || n > len(b) || n != EncodedSize(&r) {
			t.Fatalf("decoded length %d of %d bytes, EncodedSize %d", n, len(b), EncodedSize(&r))
		}
		re, err := AppendRecord(nil, &r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(re, b[:n]) {
			t.Fatalf("re-encoded\n% x\ndecoded from\n% x", re, b[:n])
		}
		// The record alone decodes the same way.
		r2, n2, err := DecodeRecord(b[:n])
		if err != nil || n2 != n || !sameRecord(r, r2) {
			t.Fatalf("record alone: %s, %d, %v", fmtRecord(r2), n2, err)
		}
	})
}

// FuzzRecover writes arbitrary bytes after a valid file header (of an
// append-time and of a create-time segment) and recovers the segment with
// an unknown committed length. Recover must not panic or fail, must keep a
// prefix of the bytes, and what it keeps must verify, re-encode to the same
// bytes, recover again unchanged and take appends.
func FuzzRecover(f *testing.F) {
	f.Add(goldenBody(f, goldenDir))
	f.Add(goldenBody(f, goldenV2Dir))
	fs := newFaultFS()
	fs.noSync = true // durability is not under test here; fsyncs would make it crawl
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, createTime := range []bool{false, true} {
			fuzzRecover(t, data, Options{IndexIntervalBytes: 100, FS: fs, CreateTime: createTime})
		}
	})
}

func fuzzRecover(t *testing.T, data []byte, opts Options) {
	{
		dir := t.TempDir()
		log := AppendFileHeader(nil, fileHeaderFor(testID, opts))
		log = append(log, data...)
		mustWriteFile(t, testID.Path(dir, KindLog), log)

		st, err := Recover(dir, testID, Unknown, opts)
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if st.Size < FileHeaderSize || st.Size > int64(len(log)) || st.NextOffset < testID.Base {
			t.Fatalf("Recover = %+v of %d bytes", st, len(log))
		}
		files := readFiles(t, dir, testID)
		if !bytes.Equal(files.log, log[:st.Size]) {
			t.Fatalf("recovered log is not the first %d bytes of the input", st.Size)
		}

		r := NewReader(bytes.NewReader(files.log), testID, st.Size, nil, nil)
		next, lastTS, err := r.Verify()
		if err != nil || next != st.NextOffset || lastTS != st.LastTS {
			t.Fatalf("Verify = %d, %d, %v; Recover said %+v", next, lastTS, err, st)
		}
		recs := readAllRecords(t, dir, testID, st.Size)
		if int64(len(recs)) != st.NextOffset-testID.Base {
			t.Fatalf("read %d records, Recover said next offset %d", len(recs), st.NextOffset)
		}
		if !bytes.Equal(encodeAll(t, recs), log[FileHeaderSize:st.Size]) {
			t.Fatal("kept records do not re-encode to the kept bytes")
		}
		checkIndexes(t, dir, testID, recs, opts.IndexIntervalBytes)

		again, err := Recover(dir, testID, st.Size, opts)
		if err != nil || again != st {
			t.Fatalf("Recover(committed %d) = %+v, %v; want %+v", st.Size, again, err, st)
		}
		sameFiles(t, "recovered twice", readFiles(t, dir, testID), files)

		w, err := Open(dir, testID, st, opts)
		if err != nil {
			t.Fatal(err)
		}
		more := Record{Offset: st.NextOffset, Timestamp: max(st.LastTS, 0), Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 150)}
		if err := w.Append([]Record{more}); err != nil {
			t.Fatal(err)
		}
		end := w.State()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		all := readAllRecords(t, dir, testID, end.Size)
		if len(all) != len(recs)+1 || !sameRecord(all[len(all)-1], more) {
			t.Fatalf("after one more append: %d records, want %d", len(all), len(recs)+1)
		}
		checkIndexes(t, dir, testID, all, opts.IndexIntervalBytes)
	}
}

// fuzzSegment is the segment FuzzReadDamaged damages.
type fuzzSegment struct {
	recs  []Record
	pos   []int64
	log   []byte
	offs  index.Offsets
	times index.Times
}

func fuzzDamageSegment(t testing.TB) *fuzzSegment { return fuzzSegmentOf(t, false) }

// fuzzSegmentOf is the segment FuzzReadDamaged damages: an append-time one,
// or a create-time one with the same records and shuffled timestamps.
func fuzzSegmentOf(t testing.TB, createTime bool) *fuzzSegment {
	t.Helper()
	dir := t.TempDir()
	s := &fuzzSegment{recs: genRecords(testID.Base, 60, 1000)}
	if createTime {
		shuffleTimestamps(s.recs, 7)
	}
	s.pos = positions(s.recs)
	writeSegment(t, dir, testID, Options{IndexIntervalBytes: 300, CreateTime: createTime}, split(s.recs, 25)...)
	f := readFiles(t, dir, testID)
	s.log = f.log
	s.offs, _ = index.ParseOffsets(f.idx)
	s.times, _ = index.ParseTimes(f.tidx)
	return s
}

// fuzzDamage is what one FuzzReadDamaged input does to the segment: XOR mask
// into the .log at byte at (modulo its length), then cut it at cut (modulo
// its length plus one; 0 leaves it whole), read with or without the index,
// of the append-time or the create-time segment.
//
//	| at 2 | cut 2 | flags 1 (bit 0: indexed, bit 1: create time) | mask ... |
type fuzzDamage struct {
	at, cut    uint16
	indexed    bool
	createTime bool
	mask       []byte
}

func encodeDamage(d fuzzDamage) []byte {
	b := binary.LittleEndian.AppendUint16(nil, d.at)
	b = binary.LittleEndian.AppendUint16(b, d.cut)
	flags := byte(0)
	if d.indexed {
		flags |= 1
	}
	if d.createTime {
		flags |= 2
	}
	return append(append(b, flags), d.mask...)
}

func decodeDamage(b []byte) fuzzDamage {
	var d fuzzDamage
	if len(b) < 5 {
		return d
	}
	d.at, d.cut = binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:])
	d.indexed = b[4]&1 != 0
	d.createTime = b[4]&2 != 0
	d.mask = b[5:]
	return d
}

// FuzzReadDamaged damages a valid segment and reads it back with the
// committed length known. Whatever the damage, the reader never panics,
// returns only records that decode with a good CRC from the damaged bytes,
// returns them dense from where the Read asked, never returns different
// data for an offset whose record is untouched, and lets every untouched
// record outside the damaged span be read by some Read (following
// DamageError.Next). Verify fails exactly when a byte changed, and
// OffsetForTime is right or an error, on append-time and create-time
// segments alike.
func FuzzReadDamaged(f *testing.F) {
	segs := [2]*fuzzSegment{fuzzSegmentOf(f, false), fuzzSegmentOf(f, true)}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := decodeDamage(in)
		s := segs[0]
		if d.createTime {
			s = segs[1]
		}
		limit := int64(len(s.log))
		log := bytes.Clone(s.log)
		at := int(d.at) % len(log)
		for i, m := range d.mask[:min(len(d.mask), len(log)-at)] {
			log[at+i] ^= m
		}
		if c := int(d.cut) % (len(log) + 1); c > 0 {
			log = log[:c]
		}
		// The damaged span: from the first changed byte to the last, or to
		// the end of a cut file.
		lo, hi := len(s.log), 0
		for i := range log {
			if log[i] != s.log[i] {
				lo, hi = min(lo, i), i+1
			}
		}
		if len(log) < len(s.log) {
			lo, hi = min(lo, len(log)), len(s.log)
		}
		touched := func(i int) bool { return s.pos[i] < int64(hi) && s.pos[i+1] > int64(lo) }

		var offs index.Offsets
		var times index.Times
		if d.indexed {
			offs, times = s.offs, s.times
		}
		r := NewReader(bytes.NewReader(log), testID, limit, offs, times)
		hdr := r.CheckHeader()
		var foreign bool
		if v, err := r.header(); err == nil {
			foreign = v.foreign
		}
		check := func(what string, from int64, got []Record) {
			for i, rec := range got {
				if want := max(from, testID.Base) + int64(i); rec.Offset != want {
					t.Fatalf("%s: record %d has offset %d, want %d", what, i, rec.Offset, want)
				}
				j := int(rec.Offset - testID.Base)
				if j < 0 || j >= len(s.recs) {
					t.Fatalf("%s: offset %d outside the segment", what, rec.Offset)
				}
				if !touched(j) {
					if !sameRecord(rec, s.recs[j]) {
						t.Fatalf("%s: untouched record %d read as %s", what, j, fmtRecord(rec))
					}
					continue
				}
				// A touched record may only come back as bytes that are
				// in the file and pass their CRC.
				enc, err := AppendRecord(nil, &rec)
				if err != nil || !bytes.Contains(log, enc) {
					t.Fatalf("%s: record %s is not in the damaged file", what, fmtRecord(rec))
				}
			}
		}
		readable := map[int64]bool{}
		for from := testID.Base - 1; from <= testID.Base+int64(len(s.recs))+1; from++ {
			for _, l := range []struct{ n, bytes int }{{1 << 20, 1 << 30}, {3, 500}} {
				got, err := r.Read(from, l.n, l.bytes)
				what := fmt.Sprintf("Read(%d, %d, %d)", from, l.n, l.bytes)
				check(what, from, got)
				var de *DamageError
				switch {
				case foreign:
					if err == nil || len(got) > 0 {
						t.Fatalf("%s of a foreign file: %d records, %v", what, len(got), err)
					}
				case errors.As(err, &de):
					if len(got) > 0 || de.First > max(from, testID.Base) || (de.Next >= 0 && de.Next <= from) || de.ID != testID ||
						errors.Is(err, ErrCorrupt) == errors.Is(err, ErrTruncated) {
						t.Fatalf("%s = %d records, %+v", what, len(got), de)
					}
				case err != nil:
					t.Fatalf("%s: %v", what, err)
				}
				for _, rec := range got {
					readable[rec.Offset] = true
				}
			}
		}
		if !foreign {
			for i := range s.recs {
				if !touched(i) && (s.pos[i+1] <= int64(lo) || s.pos[i] >= int64(hi)) && !readable[s.recs[i].Offset] {
					t.Fatalf("untouched record %d outside the damage [%d, %d) is not readable", i, lo, hi)
				}
			}
		}

		changed := !bytes.Equal(log, s.log)
		next, _, err := r.Verify()
		if changed != (err != nil) || (err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated)) {
			t.Fatalf("Verify = %d, %v (header %v) after changing bytes [%d, %d)", next, err, hdr, lo, hi)
		}
		if _, err := Summarize(bytes.NewReader(log), testID, limit, 300); changed != (err != nil) {
			t.Fatalf("Summarize: %v after changing bytes [%d, %d)", err, lo, hi)
		}

		for _, ts := range []int64{999, 1000, 1010, 1055, 1100, 1101, 1150, 1190, 1200} {
			want := -1
			for j := range s.recs {
				if s.recs[j].Timestamp >= ts {
					want = j
					break
				}
			}
			off, _, ok, err := r.OffsetForTime(ts)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
					t.Fatalf("OffsetForTime(%d): %v", ts, err)
				}
				continue
			}
			if ok != (want >= 0) || (ok && off != s.recs[want].Offset) {
				t.Fatalf("OffsetForTime(%d) = %d, %v; want record %d", ts, off, ok, want)
			}
		}
	})
}
