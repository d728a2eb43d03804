package partition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
	"github.com/tierlog/tierlog/pkg/segment"
)

// clock is a settable fake clock.
type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// faultFS fails the next fsync or write of .log files on demand.
type faultFS struct {
	segment.OSFS
	failSync  atomic.Bool
	failWrite atomic.Bool
}

type faultFile struct {
	*os.File
	fs *faultFS
}

var errInjected = errors.New("injected fault")

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFile) Sync() error {
	if f.fs.failSync.CompareAndSwap(true, false) {
		return errInjected
	}
	return f.File.Sync()
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	if len(b) > segment.FileHeaderSize && f.fs.failWrite.CompareAndSwap(true, false) {
		// A short write: half the batch reaches the file.
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, errInjected
	}
	return f.File.WriteAt(b, off)
}

type env struct {
	t     *testing.T
	dir   string
	store meta.Store
	clock *clock
	fs    *faultFS
	key   meta.PartitionKey
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, dir: t.TempDir(), store: mem.New(), clock: &clock{}, fs: &faultFS{},
		key: meta.PartitionKey{Topic: "t", TopicID: "1", Partition: 0}}
	e.clock.ms.Store(1_700_000_000_000)
	return e
}

func (e *env) open(owner string, hold bool) *Log {
	e.t.Helper()
	l, err := Open(context.Background(), Config{
		Dir: e.dir, Key: e.key, Meta: e.store, Owner: owner, HoldLease: hold,
		LeaseTTL: 10 * time.Second, SegmentBytes: 4096, IndexIntervalBytes: 100,
		FS: e.fs, Now: e.clock.now,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func batch(tag string, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Key: []byte(tag), Value: []byte(fmt.Sprintf("%s-%d-%s", tag, i, bytes.Repeat([]byte("x"), 40)))}
	}
	return out
}

// readAll reads every committed record through l and checks I1 (dense) and,
// on an append-time partition, I6 (timestamps never decrease).
func readAll(t *testing.T, l *Log) []segment.Record {
	t.Helper()
	var out []segment.Record
	b, err := l.Bounds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for off := b.LogStartOffset; off < b.HighWatermark; {
		recs, _, err := l.Read(context.Background(), off, 1000, 1<<20)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(recs) == 0 {
			t.Fatalf("no records at %d below hw %d", off, b.HighWatermark)
		}
		for _, r := range recs {
			if r.Offset != off {
				t.Fatalf("I1: offset %d where %d expected", r.Offset, off)
			}
			if n := len(out); n > 0 && r.Timestamp < out[n-1].Timestamp && !l.cfg.CreateTime {
				t.Fatalf("I6: timestamp %d after %d at offset %d", r.Timestamp, out[n-1].Timestamp, off)
			}
			out = append(out, r)
			off++
		}
	}
	return out
}

type ack struct {
	base int64
	recs []Record
}

func checkAcks(t *testing.T, got []segment.Record, acks []ack) {
	t.Helper()
	for _, a := range acks {
		for i, r := range a.recs {
			o := a.base + int64(i)
			if o >= int64(len(got)) {
				t.Fatalf("I2: acknowledged offset %d missing (hw %d)", o, len(got))
			}
			if !bytes.Equal(got[o].Value, r.Value) || !bytes.Equal(got[o].Key, r.Key) {
				t.Fatalf("I2: offset %d holds %q, acknowledged %q", o, got[o].Value, r.Value)
			}
		}
	}
}

func (e *env) append(l *Log, recs []Record) (ack, error) {
	app, err := l.Append(context.Background(), recs)
	return ack{base: app.BaseOffset, recs: recs}, err
}

func TestFailedFsyncIsNotAcknowledged(t *testing.T) {
	for _, fault := range []string{"fsync", "short-write"} {
		t.Run(fault, func(t *testing.T) {
			e := newEnv(t)
			l := e.open("a", true)
			var acks []ack
			for i := 0; i < 30; i++ {
				if i%7 == 3 {
					if fault == "fsync" {
						e.fs.failSync.Store(true)
					} else {
						e.fs.failWrite.Store(true)
					}
					if _, err := e.append(l, batch(fmt.Sprintf("bad%d", i), 3)); !errors.Is(err, ErrUnavailable) {
						t.Fatalf("batch %d with failing %s: %v", i, fault, err)
					}
					continue
				}
				a, err := e.append(l, batch(fmt.Sprintf("b%d", i), 3))
				if err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				acks = append(acks, a)
			}
			got := readAll(t, l)
			if len(got) != 3*len(acks) {
				t.Fatalf("hw %d, want %d: a failed batch became visible", len(got), 3*len(acks))
			}
			checkAcks(t, got, acks)
			l.Close(context.Background())
			// A fresh process sees the same.
			l2 := e.open("b", true)
			checkAcks(t, readAll(t, l2), acks)
		})
	}
}

// A zombie: writer a holds the lease, is paused past its expiry, b takes
// over. a wakes and writes; its commit is fenced, its bytes land only past
// the committed length of a file b sealed (I4, I5), and b's data is intact.
func TestZombieIsFenced(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", true)
	var acks []ack
	ack0, err := e.append(a, batch("a0", 5))
	if err != nil {
		t.Fatal(err)
	}
	acks = append(acks, ack0)

	e.clock.advance(11 * time.Second) // a's lease expires while a is paused
	b := e.open("b", true)
	ack1, err := e.append(b, batch("b0", 5))
	if err != nil {
		t.Fatalf("takeover append: %v", err)
	}
	acks = append(acks, ack1)

	// The zombie wakes up believing it still owns the partition.
	if _, err := e.append(a, batch("zombie", 5)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("zombie append: %v, want fenced", err)
	}
	ack2, err := e.append(b, batch("b1", 5))
	if err != nil {
		t.Fatal(err)
	}
	acks = append(acks, ack2)
	got := readAll(t, b)
	if len(got) != 15 {
		t.Fatalf("hw %d, want 15", len(got))
	}
	checkAcks(t, got, acks)
	for _, r := range got {
		if bytes.HasPrefix(r.Value, []byte("zombie")) {
			t.Fatalf("I5: zombie record visible at %d", r.Offset)
		}
	}
	p, _ := e.store.Partition(context.Background(), e.key)
	if len(p.Sealed) != 1 || p.Sealed[0].Epoch != 1 || p.Active.Epoch == 1 {
		t.Fatalf("takeover should seal epoch 1's segment and roll: %+v", p)
	}
}

// Without HoldLease every batch acquires and releases: two writers in turn
// continue one segment, and a crash of one (lease never released) makes the
// next seal and roll.
func TestReleaseEachBatch(t *testing.T) {
	e := newEnv(t)
	a, b := e.open("a", false), e.open("b", false)
	var acks []ack
	for i := 0; i < 40; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		ak, err := e.append(l, batch(fmt.Sprintf("r%d", i), 2))
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		acks = append(acks, ak)
	}
	p, _ := e.store.Partition(context.Background(), e.key)
	if p.Owner != "" {
		t.Fatalf("lease not released: %+v", p)
	}
	if p.Epoch != 40 {
		t.Fatalf("epoch %d after 40 acquires", p.Epoch)
	}
	checkAcks(t, readAll(t, a), acks)
	checkAcks(t, readAll(t, b), acks)
}

func TestRollOnSizeAndTime(t *testing.T) {
	e := newEnv(t)
	l, _ := Open(context.Background(), Config{
		Dir: e.dir, Key: e.key, Meta: e.store, Owner: "a", HoldLease: true,
		SegmentBytes: 1 << 20, SegmentMs: 1000, Now: e.clock.now,
	})
	e.append(l, batch("x", 1))
	e.append(l, batch("x", 1))
	e.clock.advance(1500 * time.Millisecond)
	e.append(l, batch("x", 1))
	p, _ := e.store.Partition(context.Background(), e.key)
	if len(p.Sealed) != 1 || p.Sealed[0].NextOffset != 2 || p.Active.Base != 2 {
		t.Fatalf("want a time roll at offset 2: %+v", p)
	}
	small := newEnv(t)
	l2 := small.open("a", true) // 4 KiB segments
	for i := 0; i < 150; i++ {
		small.append(l2, batch("y", 2))
	}
	p2, _ := small.store.Partition(context.Background(), small.key)
	if len(p2.Sealed) < 3 {
		t.Fatalf("want several size rolls: %d sealed", len(p2.Sealed))
	}
	for _, s := range p2.Sealed {
		if s.Size > 4096 {
			t.Errorf("segment %d is %d bytes, over 4096", s.Base, s.Size)
		}
	}
	if got := readAll(t, l2); len(got) != 300 {
		t.Fatalf("%d records", len(got))
	}
}

// Many goroutines append at once: group commit merges them, but each
// batch stays contiguous and every acknowledged batch is readable.
func TestGroupCommitKeepsBatches(t *testing.T) {
	e := newEnv(t)
	l := e.open("a", true)
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				ak, err := e.append(l, batch(fmt.Sprintf("w%d-%d", w, i), 1+i%4))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acks = append(acks, ak)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got := readAll(t, l)
	checkAcks(t, got, acks)
	n := 0
	for _, a := range acks {
		n += len(a.recs)
	}
	if len(got) != n {
		t.Fatalf("hw %d, acknowledged %d", len(got), n)
	}
}
