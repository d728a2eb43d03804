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
