package partition

import (
	"bytes"
	"testing"

	"github.com/tierlog/tierlog/pkg/segment"
)

func TestStagedRoundTrip(t *testing.T) {
	s := &staged{created: 1800000000123, expected: 7, hash: [16]byte{1, 2, 3}, origin: 0xfeed, key: "k:abc",
		recs: []Record{{Key: []byte("k"), Value: []byte("v")}, {Key: nil, Value: nil}, {Key: []byte{}, Value: []byte("x")}}}
	b := encodeStaged(s)
	got, err := decodeStaged(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.created != s.created || got.expected != s.expected || got.hash != s.hash || got.origin != s.origin || got.key != s.key || len(got.recs) != 3 {
		t.Fatalf("decoded %+v, want %+v", got, s)
	}
	for i, r := range got.recs {
		w := s.recs[i]
		if !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
			t.Fatalf("record %d: %q/%q, want %q/%q", i, r.Key, r.Value, w.Key, w.Value)
		}
	}
	if got.size != 3*segment.RecordHeaderSize+3 {
		t.Fatalf("size %d", got.size)
	}
	// Every cut and every flipped byte is refused.
	for n := 0; n < len(b); n++ {
		if _, err := decodeStaged(b[:n]); err == nil {
			t.Fatalf("a staged file cut at %d of %d decoded", n, len(b))
		}
		c := bytes.Clone(b)
		c[n] ^= 0x40
		if _, err := decodeStaged(c); err == nil {
			t.Fatalf("a staged file with byte %d flipped decoded", n)
		}
	}
	if c, ok := parseStageName(stageName(s.created, s.origin)); !ok || c != s.created {
		t.Fatalf("parseStageName: %d %v", c, ok)
	}
}

func TestBatchEntryRoundTrip(t *testing.T) {
	e := batchEntry{Base: 41, Count: 3, TS: 99, Hash: [16]byte{9}, Origin: 5, Key: "k:key"}
	b := appendBatchEntry(nil, e)
	got, n, ok := decodeBatchEntry(b)
	if !ok || n != len(b) || got != e {
		t.Fatalf("decoded %+v %d %v, want %+v %d", got, n, ok, e, len(b))
	}
	for i := range b {
		if _, _, ok := decodeBatchEntry(b[:i]); ok {
			t.Fatalf("an entry cut at %d decoded", i)
		}
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, _, ok := decodeBatchEntry(c); ok {
			t.Fatalf("an entry with byte %d flipped decoded", i)
		}
	}
}

// TestStagedV2RoundTrip: a batch with headers or timestamps is staged as
// TLS2 and read back whole; one without stays TLS1, the format earlier code
// reads; every cut and flipped byte is refused.
func TestStagedV2RoundTrip(t *testing.T) {
	s := &staged{created: 1800000000123, expected: -1, hash: [16]byte{4}, origin: 9, key: "k:x",
		recs: []Record{
			{Key: []byte("k"), Value: []byte("v"), Headers: []segment.Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: nil}, {Key: "b", Value: []byte{}}}},
			{Value: nil, Timestamp: 0, HasTimestamp: true},
			{Key: []byte{}, Value: []byte("x"), Timestamp: 1700000000000, HasTimestamp: true, Headers: []segment.Header{{Key: "c", Value: []byte("2")}}},
			{Value: []byte("plain")},
		}}
	b := encodeStaged(s)
	if string(b[:4]) != "TLS2" {
		t.Fatalf("magic %q, want TLS2", b[:4])
	}
	got, err := decodeStaged(b)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for i, r := range got.recs {
		w := s.recs[i]
		if !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) ||
			r.Timestamp != w.Timestamp || r.HasTimestamp != w.HasTimestamp || !sameHeaders(r.Headers, w.Headers) {
			t.Fatalf("record %d: %+v, want %+v", i, r, w)
		}
		size += recordSize(w)
	}
	if got.size != size {
		t.Fatalf("size %d, want %d", got.size, size)
	}
	for n := 0; n < len(b); n++ {
		if _, err := decodeStaged(b[:n]); err == nil {
			t.Fatalf("a staged file cut at %d of %d decoded", n, len(b))
		}
		c := bytes.Clone(b)
		c[n] ^= 0x40
		if _, err := decodeStaged(c); err == nil {
			t.Fatalf("a staged file with byte %d flipped decoded", n)
		}
	}
	plain := &staged{created: 1, expected: -1, key: "k:y", recs: []Record{{Value: []byte("v")}}}
	if b := encodeStaged(plain); string(b[:4]) != "TLS1" {
		t.Fatalf("a batch without headers or timestamps staged as %q, want TLS1", b[:4])
	}
}

// FuzzDecodeStaged: decoding a staged file never panics, and a file that
// decodes re-encodes to the same bytes (a TLS2 file whose records need
// neither headers nor timestamps re-encodes as TLS1, which decodes to the
// same batch).
func FuzzDecodeStaged(f *testing.F) {
	f.Add(encodeStaged(&staged{created: 1, expected: -1, key: "k:y", recs: []Record{{Value: []byte("v")}}}))
	f.Add(encodeStaged(&staged{created: 2, expected: 3, key: "k:z", recs: []Record{
		{Key: []byte("k"), Headers: []segment.Header{{Key: "h", Value: []byte("1")}, {Key: "n"}}, Timestamp: 4, HasTimestamp: true},
		{Value: []byte{}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeStaged(b)
		if err != nil {
			return
		}
		re := encodeStaged(s)
		if string(b[:4]) == "TLS2" && string(re[:4]) == "TLS1" {
			s2, err := decodeStaged(re)
			if err != nil || !bytes.Equal(encodeStaged(s2), re) || len(s2.recs) != len(s.recs) {
				t.Fatalf("TLS1 re-encoding of a TLS2 file: %v", err)
			}
			return
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoded\n% x\ndecoded from\n% x", re, b)
		}
	})
}
