package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"testing"
)

// TestRecordLayout pins the wire layout with bytes computed by hand, not by
// AppendRecord, so a change to the encoder cannot pass unnoticed.
func TestRecordLayout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rec     Record
		keyinfo uint32
	}{
		{"key and value", Record{Offset: 0x0102030405060708, Timestamp: 1700000000123, Key: []byte("k1"), Value: []byte("vvv")}, 2},
		{"absent key", Record{Offset: 9, Timestamp: -5, Value: []byte("v")}, 1 << 31},
		{"tombstone", Record{Offset: 9, Timestamp: 5, Key: []byte("abc")}, 1<<30 | 3},
		{"absent key tombstone", Record{Offset: 0, Timestamp: 0}, 1<<31 | 1<<30},
		{"empty key empty value", Record{Offset: 1, Timestamp: 1, Key: []byte{}, Value: []byte{}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rec
			body := append(append([]byte{}, r.Key...), r.Value...)
			want := make([]byte, 28, 28+len(body))
			binary.LittleEndian.PutUint64(want[0:], uint64(r.Offset))
			binary.LittleEndian.PutUint32(want[8:], uint32(len(body)))
			binary.LittleEndian.PutUint64(want[16:], uint64(r.Timestamp))
			binary.LittleEndian.PutUint32(want[24:], tc.keyinfo)
			want = append(want, body...)
			crc := crc32.Checksum(want[16:], crc32.MakeTable(crc32.Castagnoli))
			binary.LittleEndian.PutUint32(want[12:], crc)

			got, err := AppendRecord([]byte("prefix"), &r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], want) {
				t.Fatalf("AppendRecord =\n% x\nwant\n% x", got[6:], want)
			}
			if n := EncodedSize(&r); n != len(want) {
				t.Fatalf("EncodedSize = %d, want %d", n, len(want))
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{"nil key nil value", Record{Offset: 0, Timestamp: 0}},
		{"nil key empty value", Record{Offset: 1, Timestamp: 1, Value: []byte{}}},
		{"empty key nil value", Record{Offset: 2, Timestamp: 2, Key: []byte{}}},
		{"empty key empty value", Record{Offset: 3, Timestamp: 3, Key: []byte{}, Value: []byte{}}},
		{"key and value", Record{Offset: 4, Timestamp: 1700000000000, Key: []byte("user-42"), Value: []byte(`{"a":1}`)}},
		{"tombstone", Record{Offset: 5, Timestamp: 5, Key: []byte("user-42")}},
		{"nil key value", Record{Offset: 6, Timestamp: 6, Value: []byte("v")}},
		{"negative timestamp", Record{Offset: 7, Timestamp: -1, Key: []byte("k"), Value: []byte("v")}},
		{"max offset and timestamp", Record{Offset: math.MaxInt64, Timestamp: math.MaxInt64, Key: []byte("k")}},
		{"1 MiB value", Record{Offset: 8, Timestamp: 8, Key: []byte("big"), Value: big}},
		{"1 MiB key", Record{Offset: 9, Timestamp: 9, Key: big, Value: []byte("v")}},
		{"max body value", Record{Offset: 10, Timestamp: 10, Value: bytes.Repeat([]byte{7}, MaxBodySize)}},
		{"max body key", Record{Offset: 11, Timestamp: 11, Key: bytes.Repeat([]byte{7}, MaxBodySize)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("junk before")
			b, err := AppendRecord(prefix[:len(prefix):len(prefix)], &tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			enc := b[len(prefix):]
			if len(enc) != EncodedSize(&tc.rec) {
				t.Fatalf("encoded %d bytes, EncodedSize says %d", len(enc), EncodedSize(&tc.rec))
			}
			// Trailing bytes belong to the next record and must be left alone.
			withNext := append(enc[:len(enc):len(enc)], "next record"...)
			got, n, err := DecodeRecord(withNext)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(enc) {
				t.Fatalf("decoded length %d, want %d", n, len(enc))
			}
			if !sameRecord(got, tc.rec) {
				t.Fatalf("decoded %s, want %s", fmtRecord(got), fmtRecord(tc.rec))
			}
			// Key and Value alias the input but cannot grow into each other.
			if cap(got.Key) != len(got.Key) || cap(got.Value) != len(got.Value) {
				t.Fatalf("key cap %d len %d, value cap %d len %d: appending would overwrite", cap(got.Key), len(got.Key), cap(got.Value), len(got.Value))
			}
			h, err := DecodeRecordHeader(enc)
			if err != nil {
				t.Fatal(err)
			}
			if h.Offset != tc.rec.Offset || h.Timestamp != tc.rec.Timestamp || h.Len() != len(enc) {
				t.Fatalf("header %+v does not match record %s", h, fmtRecord(tc.rec))
			}
		})
	}
}

func TestAppendRecordTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{"value", Record{Value: make([]byte, MaxBodySize+1)}},
		{"key", Record{Key: make([]byte, MaxBodySize+1)}},
		{"key plus value", Record{Key: make([]byte, MaxBodySize/2+1), Value: make([]byte, MaxBodySize/2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendRecord(dst, &tc.rec)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err %v, want ErrTooLarge", err)
			}
			if string(got) != "keep" {
				t.Fatalf("dst changed to %d bytes", len(got))
			}
		})
	}
}

func flip(at int) func([]byte) []byte {
	return func(b []byte) []byte { b[at] ^= 0x01; return b }
}

func put32(at int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[at:], v); return b }
}

func TestDecodeRecordCorrupt(t *testing.T) {
	// 28-byte header, key "key" at 28..30, value "value!" at 31..36.
	rec := Record{Offset: 77, Timestamp: 1700000000000, Key: []byte("key"), Value: []byte("value!")}
	valid, err := AppendRecord(nil, &rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		corrupt func([]byte) []byte
		want    error // nil: decodes
	}{
		{"untouched", func(b []byte) []byte { return b }, nil},
		{"crc byte 0", flip(12), ErrCorrupt},
		{"crc byte 3", flip(15), ErrCorrupt},
		{"timestamp low byte", flip(16), ErrCorrupt},
		{"timestamp high byte", flip(23), ErrCorrupt},
		{"key byte", flip(29), ErrCorrupt},
		{"value first byte", flip(31), ErrCorrupt},
		{"value last byte", flip(36), ErrCorrupt},
		{"keyinfo length still consistent", put32(24, 2), ErrCorrupt},
		{"size one smaller", put32(8, 8), ErrCorrupt},
		{"size one larger with a byte after", func(b []byte) []byte {
			return append(put32(8, 10)(b), 'x')
		}, ErrCorrupt},
		{"size over MaxBodySize", put32(8, MaxBodySize+1), ErrCorrupt},
		{"size all ones", put32(8, math.MaxUint32), ErrCorrupt},
		{"size over MaxBodySize with body present", func(b []byte) []byte {
			return append(put32(8, MaxBodySize+1)(b), make([]byte, MaxBodySize+1)...)
		}, ErrCorrupt},
		{"key length over size", put32(24, 10), ErrCorrupt},
		{"key length max", put32(24, 1<<30-1), ErrCorrupt},
		{"absent key with a length", put32(24, 1<<31|3), ErrCorrupt},
		{"null value with value bytes", put32(24, 1<<30|3), ErrCorrupt},
		{"absent key and null value with bytes", put32(24, 1<<31|1<<30), ErrCorrupt},
		{"negative offset", func(b []byte) []byte { b[7] |= 0x80; return b }, ErrCorrupt},
		// The CRC does not cover the offset; scans catch it by density.
		{"offset flipped", flip(0), nil},
		{"body cut by one", func(b []byte) []byte { return b[:len(b)-1] }, ErrTruncated},
		{"size one larger, nothing after", put32(8, 10), ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.corrupt(bytes.Clone(valid))
			got, n, err := DecodeRecord(b)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("err %v, want nil", err)
				}
				if n != len(valid) || !bytes.Equal(got.Value, rec.Value) {
					t.Fatalf("decoded %s (%d bytes)", fmtRecord(got), n)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			other := ErrTruncated
			if tc.want == ErrTruncated {
				other = ErrCorrupt
			}
			if errors.Is(err, other) {
				t.Fatalf("err %v is both ErrCorrupt and ErrTruncated", err)
			}
			if n != 0 || got.Key != nil || got.Value != nil {
				t.Fatalf("failed decode returned n=%d, %s", n, fmtRecord(got))
			}
		})
	}
}

// TestDecodeRecordTruncated cuts records at every prefix length: inside the
// 28-byte header and inside the body both are a torn tail, never corruption.
func TestDecodeRecordTruncated(t *testing.T) {
	for _, rec := range []Record{
		{Offset: 1, Timestamp: 2, Key: []byte("key"), Value: []byte("value")},
		{Offset: 1, Timestamp: 2},
		{Offset: 1, Timestamp: 2, Key: []byte{}, Value: bytes.Repeat([]byte("z"), 300)},
		{Offset: 1, Timestamp: 2, Key: []byte("tombstone")},
	} {
		enc, err := AppendRecord(nil, &rec)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(enc); n++ {
			_, m, err := DecodeRecord(enc[:n])
			if !errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt) || m != 0 {
				t.Errorf("%s cut to %d of %d bytes: n=%d err %v, want ErrTruncated", fmtRecord(rec), n, len(enc), m, err)
			}
			_, err = DecodeRecordHeader(enc[:n])
			if n < RecordHeaderSize && !errors.Is(err, ErrTruncated) {
				t.Errorf("header cut to %d bytes: err %v, want ErrTruncated", n, err)
			}
			if n >= RecordHeaderSize && err != nil {
				t.Errorf("header with %d bytes: %v", n, err)
			}
		}
		if _, _, err := DecodeRecord(enc); err != nil {
			t.Errorf("whole record: %v", err)
		}
	}
}

func TestFileHeaderLayout(t *testing.T) {
	for _, tc := range []struct {
		h        FileHeader
		verFlags []byte // bytes 4..11
	}{
		{FileHeader{Version: Version1}, []byte{1, 0, 0, 0, 0, 0, 0, 0}},
		{FileHeader{Version: Version}, []byte{2, 0, 0, 0, 0, 0, 0, 0}},
		{FileHeader{Version: Version, Flags: FlagCreateTime}, []byte{2, 0, 1, 0, 0, 0, 0, 0}},
	} {
		tc.h.BaseOffset, tc.h.Epoch = 0x0102030405060708, 0xA0B0C0D0E0F01020
		got := AppendFileHeader([]byte("x"), tc.h)
		if len(got) != 1+FileHeaderSize {
			t.Fatalf("header is %d bytes, want %d", len(got)-1, FileHeaderSize)
		}
		h := got[1:]
		want := []byte("TLSG")
		want = append(want, tc.verFlags...)
		want = append(want, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01)
		want = append(want, 0x20, 0x10, 0xF0, 0xE0, 0xD0, 0xC0, 0xB0, 0xA0)
		want = binary.LittleEndian.AppendUint32(want, crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli)))
		if !bytes.Equal(h, want) {
			t.Fatalf("file header %+v\n% x\nwant\n% x", tc.h, h, want)
		}
	}
}

func TestFileHeaderRoundTrip(t *testing.T) {
	for _, fh := range []FileHeader{
		{Version: Version},
		{Version: Version, BaseOffset: 1234567, Epoch: 42},
		{Version: Version, BaseOffset: math.MaxInt64, Epoch: math.MaxUint64},
		{Version: Version, Flags: FlagCreateTime, BaseOffset: 7, Epoch: 9},
		{Version: Version1, BaseOffset: 7, Epoch: 9},
	} {
		b := AppendFileHeader(nil, fh)
		got, err := DecodeFileHeader(append(b, "records follow"...))
		if err != nil || got != fh {
			t.Errorf("DecodeFileHeader = %+v, %v; want %+v", got, err, fh)
		}
		got, err = ReadFileHeader(bytes.NewReader(b))
		if err != nil || got != fh {
			t.Errorf("ReadFileHeader = %+v, %v; want %+v", got, err, fh)
		}
	}
}

func TestDecodeFileHeaderCorrupt(t *testing.T) {
	valid := AppendFileHeader(nil, FileHeader{Version: Version, BaseOffset: 100, Epoch: 3})
	for _, tc := range []struct {
		name    string
		corrupt func([]byte) []byte
		want    error
	}{
		{"bad magic", func(b []byte) []byte { copy(b, "TLSH"); return b }, ErrCorrupt},
		{"zeros", func(b []byte) []byte { return make([]byte, len(b)) }, ErrCorrupt},
		{"version byte", flip(4), ErrCorrupt},
		{"reserved byte", flip(9), ErrCorrupt},
		{"base offset", flip(12), ErrCorrupt},
		{"epoch", flip(27), ErrCorrupt},
		{"crc", flip(28), ErrCorrupt},
		{"unknown version with good crc", func(b []byte) []byte {
			b[4] = 3
			binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
			return b
		}, ErrCorrupt},
		{"unknown flag with good crc", func(b []byte) []byte {
			b[6] = 2
			binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
			return b
		}, ErrCorrupt},
		{"version 1 with a flag, good crc", func(b []byte) []byte {
			b[4], b[6] = 1, 1
			binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
			return b
		}, ErrCorrupt},
		{"cut by one", func(b []byte) []byte { return b[:31] }, ErrTruncated},
		{"empty", func(b []byte) []byte { return nil }, ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFileHeader(tc.corrupt(bytes.Clone(valid)))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	for n := 0; n < FileHeaderSize; n++ {
		if _, err := DecodeFileHeader(valid[:n]); !errors.Is(err, ErrTruncated) {
			t.Errorf("cut to %d bytes: err %v, want ErrTruncated", n, err)
		}
		if _, err := ReadFileHeader(bytes.NewReader(valid[:n])); !errors.Is(err, ErrTruncated) {
			t.Errorf("ReadFileHeader of %d bytes: err %v, want ErrTruncated", n, err)
		}
	}
}

type errReaderAt struct{ err error }

func (r errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, r.err }

func TestReadFileHeaderError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := ReadFileHeader(errReaderAt{boom})
	if !errors.Is(err, boom) || errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want the read error and neither ErrTruncated nor ErrCorrupt", err)
	}
	// A read error after a short read is still reported as the read error.
	_, err = ReadFileHeader(io.NewSectionReader(errReaderAt{io.ErrUnexpectedEOF}, 0, 10))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestNames(t *testing.T) {
	id := ID{Base: 1234, Epoch: 0xabc}
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		name := id.Name(k)
		if want := "00000000000000001234-0000000000000abc" + string(k); name != want {
			t.Errorf("Name(%s) = %q, want %q", k, name, want)
		}
		got, gk, ok := ParseName(name)
		if !ok || got != id || gk != k {
			t.Errorf("ParseName(%q) = %v, %q, %v", name, got, gk, ok)
		}
	}
	if id.String() != "00000000000000001234-0000000000000abc" {
		t.Errorf("String = %q", id.String())
	}
	for _, bad := range []string{
		"",
		".log",
		"00000000000000001234-0000000000000abc",
		"00000000000000001234-0000000000000abc.txt",
		"0000000000000001234-0000000000000abc.log",
		"00000000000000001234_0000000000000abc.log",
		"00000000000000001234-000000000000abc.log",
		"0000000000000000123x-0000000000000abc.log",
		"00000000000000001234-000000000000zabc.log",
		"-0000000000000001234-0000000000000abc.log",
		"+0000000000000001234-0000000000000abc.log",
		"99999999999999999999-0000000000000abc.log",
		"-0000000000000000000-0000000000000abc.log",
		"00000000000000001234-0000000000000ABC.log",
		"00000000000000001234-0000000000000abc.log.log",
	} {
		if id, k, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) = %v, %q, true; want false", bad, id, k)
		}
	}
	// Names sort by base offset.
	a, b := ID{Base: 9, Epoch: 99}.Name(KindLog), ID{Base: 10, Epoch: 1}.Name(KindLog)
	if strings.Compare(a, b) >= 0 {
		t.Errorf("%s sorts after %s", a, b)
	}
}
