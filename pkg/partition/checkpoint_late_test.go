package partition

// A checkpoint writer can be late (paused between its look at the slots
// and its write, its write failed, or it crashed after its commit). These
// tests pin what readers get then: never an out-of-range answer for a
// committed offset, never a high watermark below one the Log published,
// and a checkpoint that a late writer does not move back unless commits
// wrapped around every slot during its pause.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"

	"github.com/tierlog/tierlog/pkg/segment"
)

// ckptHookFS pauses (once) a writer between reading the checkpoint slots
// and writing its own, or fails its checkpoint opens for writing.
type ckptHookFS struct {
	segment.OSFS
	mu      sync.Mutex
	pauseAt chan struct{} // closed when paused
	resume  chan struct{}
	armed   bool
	failRW  bool
}

type ckptHookFile struct {
	*os.File
	fs *ckptHookFS
}

func (f *ckptHookFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	if filepath.Base(name) == ckptName && flag == os.O_RDWR {
		f.mu.Lock()
		fail := f.failRW
		f.mu.Unlock()
		if fail {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
		}
		file, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &ckptHookFile{File: file, fs: f}, nil
	}
	return os.OpenFile(name, flag, perm)
}

func (f *ckptHookFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.fs.mu.Lock()
	armed := f.fs.armed
	f.fs.armed = false
	f.fs.mu.Unlock()
	if armed {
		close(f.fs.pauseAt)
		<-f.fs.resume // paused after the version check, before the write
	}
	return n, err
}

// lateCheckpoint runs a writer, w1, whose checkpoint write is paused after
// its look at the slots while another, w2 (Lambda mode: an acquire and a
// commit per batch, so commit versions step by 2), commits `others` times;
// before w1 resumes the clock moves by pause. It returns the reader (a
// warm fetch process opened before the writes) and the committed item.
func lateCheckpoint(t *testing.T, others int, pause time.Duration) (*env, *Log, meta.Partition) {
	t.Helper()
	e := newEnv(t)
	ctx := context.Background()
	reader := e.openWith("reader", false, func(c *Config) { c.Checkpoint = true })
	hook := &ckptHookFS{pauseAt: make(chan struct{}), resume: make(chan struct{})}
	w1 := e.openWith("w1", false, func(c *Config) { c.Checkpoint = true; c.FS = hook })
	w2 := e.openWith("w2", false, func(c *Config) { c.Checkpoint = true })
	if _, err := w1.Append(ctx, batch("a", 2)); err != nil { // creates the file
		t.Fatal(err)
	}
	// Another commit between w1's, so that w1's next round is not warm: a
	// warm round writes through the file it kept open, without a look.
	if _, err := w2.Append(ctx, batch("a2", 1)); err != nil {
		t.Fatal(err)
	}
	hook.mu.Lock()
	hook.armed = true
	hook.mu.Unlock()
	done := make(chan error, 1)
	go func() { _, err := w1.Append(ctx, batch("b", 2)); done <- err }()
	<-hook.pauseAt
	paused, err := e.store.Partition(ctx, e.key) // w1's version: the slot it writes
	if err != nil {
		t.Fatal(err)
	}
	var item meta.Partition
	for i := 0; ; i++ {
		if _, err := w2.Append(ctx, batch(fmt.Sprint("c", i), 2)); err != nil {
			t.Fatal(err)
		}
		if item, err = e.store.Partition(ctx, e.key); err != nil {
			t.Fatal(err)
		}
		// others commits; to wrap around the slots, until the newest
		// is the one w1 writes (w2 parks, so its versions step by 1 or 2).
		if i+1 >= others && (others < ckptSlots || item.Version%ckptSlots == paused.Version%ckptSlots) {
			break
		}
	}
	e.clock.advance(pause)
	close(hook.resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.clock.advance(10 * ckptFresh)
	return e, reader, item
}

// A writer late by fewer commits than wrap around the slots leaves the
// newer slots alone: the checkpoint and the readers on it stay at the
// committed high watermark.
func TestCheckpointLateWriterLeavesNewerSlots(t *testing.T) {
	_, reader, item := lateCheckpoint(t, 2, 0)
	v, ok := reader.readCheckpoint(false)
	if !ok {
		t.Fatal("no checkpoint")
	}
	if v.hw != item.NextOffset {
		t.Errorf("newest intact slot says hw %d, committed hw %d: the late write moved the checkpoint back", v.hw, item.NextOffset)
	}
	checkReaderAtHighWatermark(t, reader, item.NextOffset)
}

// A writer paused for longer than ckptLate leaves the file alone, however
// many commits wrapped around the slots meanwhile.
func TestCheckpointTooLateIsNotWritten(t *testing.T) {
	_, reader, item := lateCheckpoint(t, ckptSlots, 2*ckptLate)
	if v, ok := reader.readCheckpoint(false); !ok || v.hw != item.NextOffset {
		t.Errorf("checkpoint %+v (ok %v) after a write %v late, committed hw %d", v, ok, 2*ckptLate, item.NextOffset)
	}
	checkReaderAtHighWatermark(t, reader, item.NextOffset)
}

// When commits do wrap around every slot while a writer is paused between
// its look and its write, the checkpoint goes back; readers still never
// answer out of range for a committed offset, and a reader at the end of
// the log gets the item's high watermark.
func TestCheckpointMovedBackNeverAnswersOutOfRange(t *testing.T) {
	_, reader, item := lateCheckpoint(t, ckptSlots, 0)
	if v, ok := reader.readCheckpoint(false); !ok || v.hw >= item.NextOffset {
		t.Fatalf("checkpoint %+v (ok %v): the scenario did not move it back (committed hw %d)", v, ok, item.NextOffset)
	}
	checkReaderAtHighWatermark(t, reader, item.NextOffset)
}

// checkReaderAtHighWatermark fetches at the committed high watermark hw
// and one below it: no records and hw, then one record, never out of range.
func checkReaderAtHighWatermark(t *testing.T, reader *Log, hw int64) {
	t.Helper()
	ctx := context.Background()
	recs, b, err := reader.Read(ctx, hw, 100, 1<<20)
	if err != nil || len(recs) != 0 || b.HighWatermark != hw {
		t.Errorf("fetch at the committed high watermark %d: %d records, %+v, %v", hw, len(recs), b, err)
	}
	recs, b, err = reader.Read(ctx, hw-1, 100, 1<<20)
	if err != nil || len(recs) != 1 || b.HighWatermark != hw {
		t.Errorf("fetch at %d: %d records, %+v, %v; want 1 record, hw %d", hw-1, len(recs), b, err, hw)
	}
	if b, err := reader.Bounds(ctx); err != nil || b.HighWatermark != hw {
		t.Errorf("bounds after reading the item: %+v %v, want hw %d", b, err, hw)
	}
}

// A checkpoint that lags the item (the last writer's checkpoint write
// failed) never makes a reader answer out of range for a committed offset,
// however long the partition stays idle.
func TestCheckpointLagReadsItemBeforeOutOfRange(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	reader := e.openWith("reader", false, func(c *Config) { c.Checkpoint = true })
	w1 := e.openWith("w1", false, func(c *Config) { c.Checkpoint = true })
	if _, err := w1.Append(ctx, batch("a", 2)); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(10 * ckptFresh)
	if b, err := reader.Bounds(ctx); err != nil || b.HighWatermark != 2 {
		t.Fatalf("reader: %+v %v", b, err)
	}
	// w2's commit applies; its best-effort checkpoint write fails (EIO on
	// the open; or w2 crashed between commit and checkpoint).
	hook := &ckptHookFS{failRW: true}
	w2 := e.openWith("w2", false, func(c *Config) { c.Checkpoint = true; c.FS = hook })
	app, err := w2.Append(ctx, batch("b", 2))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("w2 acknowledged offsets %d..%d", app.BaseOffset, app.BaseOffset+1)
	// A consumer read up to hw 4 through a container opened now (its Open
	// reads the item) ...
	other := e.openWith("other", false, func(c *Config) { c.Checkpoint = true })
	recs, b, err := other.Read(ctx, 0, 100, 1<<20)
	if err != nil || len(recs) != 4 {
		t.Fatalf("other: %d records %+v %v", len(recs), b, err)
	}
	// ... and polls offset 4 through the warm container: forever, until the
	// next commit's checkpoint (no item read for a plain fetch).
	for i := 0; i < 3; i++ {
		e.clock.advance(2 * ckptVerify)
		_, b, err = reader.Read(ctx, 4, 100, 1<<20)
		var oor *OutOfRangeError
		if errors.As(err, &oor) {
			t.Errorf("poll %d: fetch at committed hw 4 answered %v (the consumer saw hw 4 elsewhere)", i, err)
		} else if b.HighWatermark < 4 {
			t.Errorf("poll %d: hw %d < committed 4", i, b.HighWatermark)
		}
	}
}

// ckptOpenFS counts the opens of the checkpoint for writing.
type ckptOpenFS struct {
	segment.OSFS
	writes atomic.Int64
}

func (f *ckptOpenFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	if filepath.Base(name) == ckptName && flag&(os.O_RDWR|os.O_WRONLY) != 0 {
		f.writes.Add(1)
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// A Lambda-mode writer that keeps its files open past its release (warm)
// keeps the checkpoint's too: its next warm round writes its slot through
// it, with no open and no look at the other slots; once another writer
// has committed, it opens the file again.
func TestWarmWriterKeepsItsCheckpointOpen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	fsys := &ckptOpenFS{}
	w := e.openWith("w", false, func(c *Config) { c.Checkpoint = true; c.FS = fsys })
	other := e.openWith("other", false, func(c *Config) { c.Checkpoint = true })
	reader := e.openWith("reader", false, func(c *Config) { c.Checkpoint = true })
	check := func(opens int64) {
		t.Helper()
		if n := fsys.writes.Load(); n != opens {
			t.Fatalf("%d opens of the checkpoint for writing, want %d", n, opens)
		}
		item, err := e.store.Partition(ctx, e.key)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := reader.readCheckpoint(false); !ok || v.version != item.Version || v.hw != item.NextOffset {
			t.Fatalf("checkpoint %+v (ok %v), committed version %d, hw %d", v, ok, item.Version, item.NextOffset)
		}
	}
	for i := range 3 {
		if _, err := w.Append(ctx, batch(fmt.Sprint("w", i), 1)); err != nil {
			t.Fatal(err)
		}
		check(2) // the first round's: it creates the file, then opens it to write, and keeps it
	}
	if _, err := other.Append(ctx, batch("o", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, batch("w3", 1)); err != nil {
		t.Fatal(err)
	}
	check(3)
}
