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
)

// fuzzSeeds are the committed seed corpora under testdata/fuzz, by target
// and file name. TestFuzzSeeds checks the files hold exactly these and
// TIERLOG_UPDATE_GOLDEN=1 rewrites them. Fuzzing may add crashers beside
// them; those stay.
func fuzzSeeds(t testing.TB) map[string]map[string][]byte {
	valid := encodeAll(t, []Record{{Offset: 5000, Timestamp: 1700000000000, Key: []byte("key"), Value: []byte("value")}})
	absent := encodeAll(t, []Record{{Offset: 0, Timestamp: -1}})
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
	return map[string]map[string][]byte{
		"FuzzDecodeRecord": {
			"empty":              nil,
			"max-length-header":  maxHeader,
			"over-max-header":    overHeader,
			"valid":              valid,
			"valid-absent-key":   absent,
			"valid-plus-garbage": append(bytes.Clone(valid), "\x00\xffgarbage"...),
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

// goldenBody is the records of the golden .log, for seeding.
func goldenBody(f *testing.F) []byte {
	b, err := os.ReadFile(goldenID.Path(goldenDir, KindLog))
	if err != nil {
		f.Fatal(err)
	}
	return b[FileHeaderSize:]
}

// FuzzDecodeRecord: decoding never panics, fails only with ErrTruncated or
// ErrCorrupt, and a record that decodes re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(goldenBody(f))
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

// FuzzRecover writes arbitrary bytes after a valid file header and recovers
// the segment with an unknown committed length. Recover must not panic or
// fail, must keep a prefix of the bytes, and what it keeps must verify,
// re-encode to the same bytes, recover again unchanged and take appends.
func FuzzRecover(f *testing.F) {
	f.Add(goldenBody(f))
	fs := newFaultFS()
	fs.noSync = true // durability is not under test here; fsyncs would make it crawl
	opts := Options{IndexIntervalBytes: 100, FS: fs}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		log := AppendFileHeader(nil, FileHeader{Version: Version, BaseOffset: testID.Base, Epoch: testID.Epoch})
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
	})
}
