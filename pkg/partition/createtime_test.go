package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

func sameHeaders(a, b []segment.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || (a[i].Value == nil) != (b[i].Value == nil) || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// TestCreateTimePartition appends records with headers and shuffled
// producer timestamps (some without: the clock) over several segments, from
// a holder and from a waiter whose batches go through the write buffer,
// and checks what is read back, the segments' FirstTS and LastTS, and
// OffsetForTime against a linear search.
func TestCreateTimePartition(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ct := func(c *Config) { c.CreateTime = true }
	holder := e.openWith("holder", true, ct)
	rng := rand.New(rand.NewPCG(1, 2))
	now := e.clock.now().UnixMilli()
	var want []Record
	wantTS := []int64{}
	mk := func(tag string, n int) []Record {
		out := make([]Record, n)
		for i := range out {
			r := Record{Key: []byte(tag), Value: fmt.Appendf(nil, "%s-%d-%s", tag, i, bytes.Repeat([]byte("x"), 30))}
			if i%4 != 3 {
				r.Timestamp, r.HasTimestamp = now-int64(rng.IntN(100000)), true
			}
			if i%3 == 0 {
				r.Headers = []segment.Header{{Key: "trace", Value: fmt.Appendf(nil, "%s/%d", tag, i)}, {Key: "null"}}
			}
			out[i] = r
		}
		return out
	}
	add := func(recs []Record, app Appended) {
		for _, r := range recs {
			want = append(want, r)
			if r.HasTimestamp {
				wantTS = append(wantTS, r.Timestamp)
			} else {
				wantTS = append(wantTS, app.Timestamp)
			}
		}
	}
	for i := 0; i < 80; i++ {
		recs := mk(fmt.Sprintf("h%d", i), 1+i%5)
		app, err := holder.Append(ctx, recs)
		if err != nil {
			t.Fatal(err)
		}
		add(recs, app)
		e.clock.advance(time.Millisecond)
	}
	// A waiter's batch, staged in the write buffer (TLS2) and appended by
	// the holder's next round.
	polling := make(chan struct{}, 1)
	waiter := e.openWith("waiter", false, func(c *Config) {
		c.CreateTime = true
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case polling <- struct{}{}:
			default:
			}
			return sleep(ctx, time.Millisecond)
		}
	})
	wrecs := mk("w", 4)
	done := make(chan Appended, 1)
	go func() {
		app, err := waiter.AppendBatch(ctx, Batch{Records: wrecs, Key: "wk", Expected: -1})
		if err != nil {
			t.Error(err)
		}
		done <- app
	}()
	<-polling
	hrecs := mk("last", 2)
	app, err := holder.Append(ctx, hrecs)
	if err != nil {
		t.Fatal(err)
	}
	add(hrecs, app)
	wapp := <-done
	if wapp.BaseOffset != int64(len(want)) {
		t.Fatalf("the waiter's batch at %d, want %d", wapp.BaseOffset, len(want))
	}
	add(wrecs, wapp)

	got := readAll(t, holder)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, want[i].Value) || !sameHeaders(r.Headers, want[i].Headers) || r.Timestamp != wantTS[i] {
			t.Fatalf("offset %d: %q %+v ts %d, want %q %+v ts %d", i, r.Value, r.Headers, r.Timestamp, want[i].Value, want[i].Headers, wantTS[i])
		}
	}
	p, err := e.store.Partition(ctx, e.key)
	if err != nil {
		t.Fatal(err)
	}
	segs := append(p.Sealed, *p.Active)
	if len(segs) < 3 {
		t.Fatalf("%d segments: the test should cross rolls", len(segs))
	}
	maxAll := int64(-1)
	for _, s := range segs {
		lo, hi := int64(1<<62), int64(-1)
		for off := s.Base; off < s.NextOffset; off++ {
			lo, hi = min(lo, wantTS[off]), max(hi, wantTS[off])
		}
		if s.FirstTS != lo || s.LastTS != hi {
			t.Fatalf("segment %d: FirstTS %d LastTS %d, want the smallest %d and the largest %d", s.Base, s.FirstTS, s.LastTS, lo, hi)
		}
		maxAll = max(maxAll, hi)
	}
	if p.LastTS != maxAll {
		t.Fatalf("partition LastTS %d, want the largest %d", p.LastTS, maxAll)
	}
	checkOffsetForTime(t, holder, wantTS)

	// A timestamp on an append-time partition is refused, not dropped.
	plain := newEnv(t).open("x", true)
	defer plain.Close(ctx)
	if _, err := plain.Append(ctx, []Record{{Value: []byte("v"), Timestamp: 5, HasTimestamp: true}}); err == nil {
		t.Fatal("an append-time partition took a producer timestamp")
	}
	holder.Close(ctx)
	waiter.Close(ctx)
}

// checkOffsetForTime compares OffsetForTime with a linear search over ts
// (the timestamps by offset from 0).
func checkOffsetForTime(t *testing.T, l *Log, ts []int64) {
	t.Helper()
	probe := map[int64]bool{}
	for _, v := range ts {
		probe[v-1], probe[v], probe[v+1] = true, true, true
	}
	for q := range probe {
		want := int64(-1)
		for off, v := range ts {
			if v >= q {
				want = int64(off)
				break
			}
		}
		off, at, found, err := l.OffsetForTime(context.Background(), q, 0)
		if err != nil {
			t.Fatalf("OffsetForTime(%d): %v", q, err)
		}
		if found != (want >= 0) || found && (off != want || at != ts[want]) || !found && off != int64(len(ts)) {
			t.Fatalf("OffsetForTime(%d) = %d, %d, %v; want offset %d", q, off, at, found, want)
		}
	}
}

// TestVersion1ActiveSegmentSealedOnUpgrade: an active segment written in
// format version 1 is never continued: the next writer seals it and rolls
// a version 2 segment; every record stays readable.
func TestVersion1ActiveSegmentSealedOnUpgrade(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := e.open("a", false)
	if _, err := l.Append(ctx, batch("old", 3)); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx)
	p, err := e.store.Partition(ctx, e.key)
	if err != nil || p.Active == nil {
		t.Fatalf("partition %+v, %v", p, err)
	}
	// Records without headers are the same bytes in both versions: a
	// version 1 header makes this the file the earlier code wrote.
	id := segment.ID{Base: p.Active.Base, Epoch: p.Active.Epoch}
	path := id.Path(e.dir, segment.KindLog)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[4] = segment.Version1
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	l = e.open("b", false)
	defer l.Close(ctx)
	recs := []Record{{Value: []byte("new"), Headers: []segment.Header{{Key: "k", Value: []byte("v")}}}}
	if _, err := l.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	p, _ = e.store.Partition(ctx, e.key)
	if len(p.Sealed) != 1 || p.Sealed[0].Base != id.Base || p.Active == nil || p.Active.Base != 3 {
		t.Fatalf("after the upgrade: sealed %+v, active %+v; want the version 1 segment sealed and a new one at 3", p.Sealed, p.Active)
	}
	f, err := os.Open(segment.ID{Base: p.Active.Base, Epoch: p.Active.Epoch}.Path(e.dir, segment.KindLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if h, err := segment.ReadFileHeader(f); err != nil || h.Version != segment.Version {
		t.Fatalf("new segment header %+v, %v", h, err)
	}
	got := readAll(t, l)
	if len(got) != 4 || string(got[3].Value) != "new" || !sameHeaders(got[3].Headers, recs[0].Headers) {
		t.Fatalf("records after the upgrade: %d, last %+v", len(got), got[len(got)-1])
	}
}
