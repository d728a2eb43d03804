package tier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/segment"
)

// sealedLog writes a segment of n records and returns its .log bytes.
func sealedLog(t testing.TB, id segment.ID, n int) []byte {
	t.Helper()
	dir := t.TempDir()
	w, err := segment.Create(dir, id, segment.Options{IndexIntervalBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := segment.Record{Offset: id.Base + int64(i), Timestamp: 1000 + int64(i/3), Key: []byte(fmt.Sprint("k", i)), Value: bytes.Repeat([]byte{byte(i)}, 50+i%70)}
		if i%11 == 0 {
			r.Value = nil
		}
		if err := w.Append([]segment.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	size := w.Size()
	w.Close()
	b, err := os.ReadFile(id.Path(dir, segment.KindLog))
	if err != nil || int64(len(b)) != size {
		t.Fatalf("read back %d of %d bytes: %v", len(b), size, err)
	}
	return b
}

func TestBuildAndReadBack(t *testing.T) {
	id := segment.ID{Base: 500, Epoch: 7}
	log := sealedLog(t, id, 300)
	obj, f, err := Build(log, id, 200)
	if err != nil {
		t.Fatal(err)
	}
	if f.Base != 500 || f.NextOffset != 800 || f.Epoch != 7 || f.FirstTS != 1000 || f.LastTS != 1000+299/3 {
		t.Fatalf("footer %+v", f)
	}
	got, err := ReadFooter(bytes.NewReader(obj), int64(len(obj)))
	if err != nil || got != f {
		t.Fatalf("ReadFooter: %+v %v, built %+v", got, err, f)
	}
	if FooterOf(f.Entry("k", int64(len(obj)), 1)) != f {
		t.Fatal("catalog entry does not repeat the footer")
	}
	store := mem.New()
	key := ObjectKey(meta.PartitionKey{Topic: "t", TopicID: "1", Partition: 2}, id)
	if err := store.Put(context.Background(), key, bytes.NewReader(obj), int64(len(obj))); err != nil {
		t.Fatal(err)
	}
	e := f.Entry(key, int64(len(obj)), 1)
	for _, opts := range []Options{{}, {CacheEnabled: true}, {CacheEnabled: true, ReadAhead: []meta.CatalogEntry{e}}} {
		r := NewReader(store, NewCache(1<<20))
		for from := int64(500); from < 800; from += 13 {
			recs, err := r.Read(context.Background(), e, from, 7, 300, opts)
			if err != nil {
				t.Fatalf("%+v: read %d: %v", opts, from, err)
			}
			if len(recs) == 0 || recs[0].Offset != from {
				t.Fatalf("%+v: read %d: %d records", opts, from, len(recs))
			}
			i := int(from - 500)
			if (i%11 == 0) != (recs[0].Value == nil) || string(recs[0].Key) != fmt.Sprint("k", i) {
				t.Fatalf("read %d: record %+v", from, recs[0])
			}
		}
		for ts := int64(999); ts <= 1101; ts++ {
			off, at, ok, err := r.OffsetForTime(context.Background(), e, ts, opts)
			want := max(500, 500+(ts-1000)*3)
			if ts > 1099 {
				if ok || err != nil {
					t.Fatalf("ts %d past the end: %d %v %v", ts, off, ok, err)
				}
				continue
			}
			if err != nil || !ok || off != want || at != max(ts, 1000) {
				t.Fatalf("%+v: offset for %d: %d@%d %v %v, want %d", opts, ts, off, at, ok, err, want)
			}
		}
	}
}

// Every flipped byte of the footer is caught; so is a footer that does not
// fit the object.
func TestFooterCorruption(t *testing.T) {
	id := segment.ID{Base: 0, Epoch: 1}
	obj, _, err := Build(sealedLog(t, id, 40), id, 200)
	if err != nil {
		t.Fatal(err)
	}
	foot := obj[len(obj)-FooterSize:]
	for i := range foot {
		bad := bytes.Clone(foot)
		bad[i] ^= 0x40
		if _, err := DecodeFooter(bad, int64(len(obj))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}
	if _, err := DecodeFooter(foot, int64(len(obj))+1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong size: %v", err)
	}
	if _, err := ReadFooter(bytes.NewReader(obj[:10]), 10); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short object: %v", err)
	}
}

// A damaged artifact in the store never gives a panic or a wrong record:
// damaged log bytes answer a *DamageError (wrapping ErrCorrupt) whose Next
// is readable or the artifact's end, the records before them are served,
// and a damaged index is reported and read around, every record served.
// A truncated object is damage too.
func TestCorruptArtifactRead(t *testing.T) {
	id := segment.ID{Base: 0, Epoch: 1}
	obj, f, err := Build(sealedLog(t, id, 60), id, 200)
	if err != nil {
		t.Fatal(err)
	}
	type damage struct {
		name  string
		bad   []byte
		index bool // only an index is damaged: every record stays readable
	}
	var cases []damage
	for _, pos := range []int64{40, f.Log.Len / 2, f.Index.Off + 3, f.Time.Off + 1} {
		bad := bytes.Clone(obj)
		bad[pos] ^= 0xff
		cases = append(cases, damage{fmt.Sprintf("flip at %d", pos), bad, pos >= f.Index.Off})
	}
	cases = append(cases, damage{"truncated in the log", obj[:f.Log.Len/2], false})
	for _, c := range cases {
		store := mem.New()
		store.Put(context.Background(), "o", bytes.NewReader(c.bad), int64(len(c.bad)))
		e := f.Entry("o", int64(len(obj)), 1)
		for _, opts := range []Options{{}, {CacheEnabled: true, ReadAhead: []meta.CatalogEntry{e}}} {
			damaged, reported := 0, 0
			r := NewReader(store, NewCache(1<<20))
			r.OnDamage = func(string, error) { reported++ }
			for from := int64(0); from < 60; from++ {
				recs, err := r.Read(context.Background(), e, from, 100, 1<<20, opts)
				var de *DamageError
				if errors.As(err, &de) {
					if !errors.Is(err, ErrCorrupt) || de.First != from || de.Next <= from || de.Next > 60 {
						t.Fatalf("%s: from %d: %v (first %d, next %d)", c.name, from, err, de.First, de.Next)
					}
					damaged++
					continue
				}
				if err != nil {
					t.Fatalf("%s from %d: %v", c.name, from, err)
				}
				if len(recs) == 0 {
					t.Fatalf("%s from %d: no records", c.name, from)
				}
				for i, r := range recs {
					if r.Offset != from+int64(i) {
						t.Fatalf("%s: wrong offset %d", c.name, r.Offset)
					}
				}
			}
			switch {
			case c.index && (damaged > 0 || reported == 0):
				t.Errorf("%s (%+v): %d reads refused, damage reported %d times; want every record served and the damage reported", c.name, opts.CacheEnabled, damaged, reported)
			case !c.index && damaged == 0:
				t.Errorf("%s (%+v) never reported", c.name, opts.CacheEnabled)
			}
		}
	}
}

func FuzzDecodeFooter(f *testing.F) {
	id := segment.ID{Base: 3, Epoch: 1}
	obj, _, err := Build(sealedLog(f, id, 5), id, 100)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(obj[len(obj)-FooterSize:], int64(len(obj)))
	f.Add(make([]byte, FooterSize), int64(FooterSize))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		ft, err := DecodeFooter(b, size)
		if err == nil && !bytes.Equal(AppendFooter(nil, ft), b) {
			t.Fatalf("footer does not re-encode")
		}
	})
}
