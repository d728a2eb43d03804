package partition

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// ckptGateFS, once armed, holds every write to the checkpoint file until
// gate is closed, and says on written when one is held.
type ckptGateFS struct {
	segment.OSFS
	armed   atomic.Bool
	gate    chan struct{}
	written chan struct{} // one value per write held
}

type ckptGateFile struct {
	*os.File
	fs *ckptGateFS
}

func (f *ckptGateFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if filepath.Base(name) != ckptName {
		return file, nil
	}
	return &ckptGateFile{File: file, fs: f}, nil
}

func (f *ckptGateFile) WriteAt(b []byte, off int64) (int, error) {
	if f.fs.armed.Load() {
		f.fs.written <- struct{}{}
		<-f.fs.gate
	}
	return f.File.WriteAt(b, off)
}

// With Config.Detach, the Append that leads a round of a writer alone (its
// lease parked) is answered once its commit applied: its checkpoint is
// written after the answer, on Detach's goroutine, and readers of other
// processes find the commit there then.
func TestDetachedLeaderAnswersBeforeItsCheckpoint(t *testing.T) {
	e := newEnv(t)
	gfs := &ckptGateFS{gate: make(chan struct{}), written: make(chan struct{}, 16)}
	e.fs = nil
	var handed sync.WaitGroup // Config.Detach's goroutines
	open := func(owner string, detach bool) *Log {
		cfg := Config{
			Dir: e.dir, Key: e.key, Meta: e.store, Owner: owner,
			LeaseTTL: 10 * time.Second, SegmentBytes: 4096, IndexIntervalBytes: 100,
			FS: gfs, Now: e.clock.now, Checkpoint: true,
		}
		if detach {
			cfg.Detach = handed.Go
		}
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	w := open("w", true)
	for i := range 3 { // alone: the lease is parked after these
		if _, err := w.Append(context.Background(), []Record{{Value: []byte{'w', byte('0' + i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	handed.Wait()
	if !w.parkedHint.Load() {
		t.Fatal("three rounds alone: the lease is not parked")
	}
	gfs.armed.Store(true)
	appended := make(chan error, 1)
	go func() {
		_, err := w.Append(context.Background(), []Record{{Value: []byte("v3")}})
		appended <- err
	}()
	// Answered while the gate holds the checkpoint's write: before it.
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leading Append waited for its checkpoint's write: not answered first")
	}
	<-gfs.written // the work after the answer reached the write
	// Until the write lands, a reader of another process finds the commit
	// in the item (an offset past the checkpoint is never out of range).
	r := open("r", false)
	if recs, _, err := r.Read(context.Background(), 3, 10, 1<<20); err != nil || len(recs) != 1 {
		t.Fatalf("read of the acknowledged offset before the checkpoint: %d records, %v", len(recs), err)
	}
	close(gfs.gate)
	handed.Wait()
	v, ok := r.readCheckpointView(t)
	if !ok || v.hw != 4 {
		t.Fatalf("checkpoint after the detached work: %+v, %v; want high watermark 4", v, ok)
	}
}

// readCheckpointView is the checkpoint's newest slot, as a reader takes it.
func (l *Log) readCheckpointView(t *testing.T) (*view, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.cfg.Dir, ckptName))
	if err != nil {
		t.Fatal(err)
	}
	_, v := newestSlot(b)
	return v, v != nil
}

// A writer that is not alone (its lease not parked) is answered after the
// work that follows its round, Detach or not: answered sooner, it would
// come back ahead of the writers its next round takes.
func TestUnparkedLeaderAnswersAfterItsCheckpoint(t *testing.T) {
	e := newEnv(t)
	gfs := &ckptGateFS{gate: make(chan struct{}), written: make(chan struct{}, 16)}
	gfs.armed.Store(true)
	var handed sync.WaitGroup // Config.Detach's goroutines
	w, err := Open(context.Background(), Config{
		Dir: e.dir, Key: e.key, Meta: e.store, Owner: "w",
		LeaseTTL: 10 * time.Second, SegmentBytes: 4096, IndexIntervalBytes: 100,
		FS: gfs, Now: e.clock.now, Checkpoint: true, Detach: handed.Go,
	})
	if err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() {
		_, err := w.Append(context.Background(), []Record{{Value: []byte("v0")}})
		appended <- err
	}()
	<-gfs.written
	select {
	case err := <-appended:
		t.Fatalf("a first round (lease not parked) answered (%v) before its checkpoint was written", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(gfs.gate)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	handed.Wait()
}
