package partition

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// ckptGateFS holds every write to the checkpoint file until gate is closed,
// and says on written when one is held.
type ckptGateFS struct {
	segment.OSFS
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
	f.fs.written <- struct{}{}
	<-f.fs.gate
	return f.File.WriteAt(b, off)
}

// With Config.Detach, the Append that leads a round is answered once its
// commit applied: its checkpoint is written after the answer, on Detach's
// goroutine, and readers of other processes find the commit there then.
func TestDetachedLeaderAnswersBeforeItsCheckpoint(t *testing.T) {
	e := newEnv(t)
	gfs := &ckptGateFS{gate: make(chan struct{}), written: make(chan struct{}, 16)}
	e.fs = nil
	var detached sync.WaitGroup
	open := func(owner string, detach bool) *Log {
		cfg := Config{
			Dir: e.dir, Key: e.key, Meta: e.store, Owner: owner,
			LeaseTTL: 10 * time.Second, SegmentBytes: 4096, IndexIntervalBytes: 100,
			FS: gfs, Now: e.clock.now, Checkpoint: true,
		}
		if detach {
			cfg.Detach = detached.Go
		}
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	w := open("w", true)
	appended := make(chan error, 1)
	go func() {
		_, err := w.Append(context.Background(), []Record{{Value: []byte("v0")}})
		appended <- err
	}()
	select {
	case <-gfs.written: // the checkpoint's write, held
	case err := <-appended:
		t.Fatalf("Append returned (%v) before its round wrote the checkpoint", err)
	}
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leading Append waited for its checkpoint's write: not answered first")
	}
	// Until the write lands, a reader of another process finds the commit
	// in the item (an offset past the checkpoint is never out of range).
	r := open("r", false)
	if recs, _, err := r.Read(context.Background(), 0, 10, 1<<20); err != nil || len(recs) != 1 {
		t.Fatalf("read of the acknowledged offset before the checkpoint: %d records, %v", len(recs), err)
	}
	close(gfs.gate)
	detached.Wait()
	v, ok := r.readCheckpointView(t)
	if !ok || v.hw != 1 {
		t.Fatalf("checkpoint after the detached work: %+v, %v; want high watermark 1", v, ok)
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
