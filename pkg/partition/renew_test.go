package partition

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
)

// slowRoundFS makes a round run long: creating a segment file takes
// createTakes of the fake clock, and the first record write blocks until
// release is closed (reached is closed when it does).
type slowRoundFS struct {
	segment.OSFS
	clock       *clock
	createTakes time.Duration
	armed       atomic.Bool
	reached     chan struct{}
	release     chan struct{}
}

type slowRoundFile struct {
	*os.File
	fs *slowRoundFS
}

func (f *slowRoundFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	if flag&os.O_EXCL != 0 && strings.HasSuffix(name, ".log") {
		f.clock.advance(f.createTakes)
	}
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &slowRoundFile{File: file, fs: f}, nil
}

func (f *slowRoundFile) WriteAt(b []byte, off int64) (int, error) {
	if strings.HasSuffix(f.Name(), ".log") && len(b) > segment.FileHeaderSize && f.fs.armed.CompareAndSwap(true, false) {
		close(f.fs.reached)
		<-f.fs.release
	}
	return f.File.WriteAt(b, off)
}

// TestLongRoundRenewsItsLease: a round that has used more than half of its
// lease by the time it writes (a slow create here) renews it, so that
// another writer cannot take the partition over while the round's records
// are being written, and the round's commit is not fenced. Without the
// renewal the lease expires under the round: the other writer acquires it
// and the round's work is lost.
func TestLongRoundRenewsItsLease(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	fs := &slowRoundFS{clock: e.clock, createTakes: 7 * time.Second, reached: make(chan struct{}), release: make(chan struct{})}
	fs.armed.Store(true)
	s := e.openFS("s", false, fs) // Lambda mode: one lease per round
	done := make(chan error, 1)
	var got ack
	go func() {
		var err error
		got, err = e.append(s, batch("s0", 3))
		done <- err
	}()
	<-fs.reached // acquired at t0, created its file by t0+7s, now writing
	e.clock.advance(5 * time.Second)
	// t0+12s: past the lease the round acquired (t0+10s).
	_, err := e.store.Acquire(ctx, e.key, "w", e.clock.now(), 10*time.Second)
	if !errors.Is(err, meta.ErrLeaseHeld) {
		t.Errorf("another writer's acquire 12 s into a round that renewed at 7 s: %v, want lease held", err)
	}
	close(fs.release)
	if err := <-done; err != nil {
		t.Fatalf("the long round's append: %v", err)
	}
	checkAcks(t, readAll(t, s), []ack{got})
	p, err := e.store.Partition(ctx, e.key)
	if err != nil {
		t.Fatal(err)
	}
	if p.Owner != "" || p.NextOffset != 3 {
		t.Errorf("item after the round: owner %q next %d, want released at 3", p.Owner, p.NextOffset)
	}
}
