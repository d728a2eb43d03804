package partition

// Tests for takeovers that fail half-way.
//
// A takeover whose roll fails (segment.Create returns an error) must not
// release the lease with the state it acquired (the zombie's active segment
// still Active, the lease "released cleanly"): the next writer would then
// continue the zombie's file instead of sealing it, and the zombie's late
// pwrite would land inside committed bytes (I5), altering an acknowledged
// batch (I2) and what readers had seen (I3). A takeover seals the old
// active segment in the state it may release.
//
// A takeover whose first batch fails its fsync must not commit the rolled
// state on release: that would name a file whose header was never durable,
// every later writer would refuse it and the partition would never take
// another write. A release never names a file no commit named.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// createFailFS fails the next exclusive create (a new segment file), as an
// EIO / ENOSPC / EMFILE / ESTALE from NFS would.
type createFailFS struct {
	segment.OSFS
	fail atomic.Bool
}

func (f *createFailFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	if flag&os.O_EXCL != 0 && f.fail.CompareAndSwap(true, false) {
		return nil, errors.New("injected: create failed")
	}
	return os.OpenFile(name, flag, perm)
}

// blockFS blocks the first record write to a .log until release is closed:
// a writer paused (GC, freeze, slow NFS) just before its pwrite.
type blockFS struct {
	segment.OSFS
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
}

type blockFile struct {
	*os.File
	fs *blockFS
}

func (f *blockFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &blockFile{File: file, fs: f}, nil
}

func (f *blockFile) WriteAt(b []byte, off int64) (int, error) {
	if strings.HasSuffix(f.Name(), ".log") && len(b) > segment.FileHeaderSize && f.fs.armed.CompareAndSwap(true, false) {
		close(f.fs.reached)
		<-f.fs.release
	}
	return f.File.WriteAt(b, off)
}

func (e *env) openFS(owner string, hold bool, fs segment.FS) *Log {
	e.t.Helper()
	l, err := Open(context.Background(), Config{
		Dir: e.dir, Key: e.key, Meta: e.store, Owner: owner, HoldLease: hold,
		LeaseTTL: 10 * time.Second, SegmentBytes: 4096, IndexIntervalBytes: 100,
		FS: fs, Now: e.clock.now,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// HoldLease (the local server, or aws with ReleaseEachBatch=false).
func TestFailedTakeoverRollNeverContinuesZombieFile(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	z := e.open("z", true) // will become the zombie
	a0, err := e.append(z, batch("a0", 5))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.advance(11 * time.Second) // z is paused past its lease

	ffs := &createFailFS{}
	ffs.fail.Store(true)
	w := e.openFS("w", true, ffs)
	if _, err := e.append(w, batch("w0", 5)); err == nil {
		t.Fatal("w's takeover should fail (roll could not create its file)")
	} else {
		t.Logf("w: takeover append failed: %v", err)
	}
	p, _ := e.store.Partition(ctx, e.key)
	t.Logf("item after w's failed takeover: owner=%q epoch=%d active=%v sealed=%v", p.Owner, p.Epoch, p.Active, p.Sealed)

	e.clock.advance(11 * time.Second) // (matters only if w did not release)
	x := e.open("x", true)
	a1, err := e.append(x, batch("x1", 5))
	if err != nil {
		t.Fatal(err)
	}
	p, _ = e.store.Partition(ctx, e.key)
	t.Logf("x acked offsets %d..%d into segment (base %d epoch %d), committed size %d",
		a1.base, a1.base+4, p.Active.Base, p.Active.Epoch, p.Active.Size)
	before := readAll(t, x)
	t.Logf("reader sees offset 5 = %q", before[5].Value[:8])

	// The zombie wakes up and writes its batch where it believes the end is.
	_, zerr := e.append(z, batch("zz", 5))
	t.Logf("zombie append: %v", zerr)

	got := readAll(t, x)
	for _, r := range got {
		if bytes.HasPrefix(r.Value, []byte("zz")) {
			t.Errorf("I5/I3: zombie record visible at committed offset %d: %q (was %q)", r.Offset, r.Value[:8], before[r.Offset].Value[:8])
		}
	}
	checkAcks(t, got, []ack{a0, a1})
}

// ReleaseEachBatch (Lambda): the zombie acquired and opened the segment,
// then froze just before its pwrite.
func TestFailedTakeoverRollNeverContinuesZombieFileLambda(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	first := e.open("first", false)
	a0, err := e.append(first, batch("a0", 5))
	if err != nil {
		t.Fatal(err)
	}

	bfs := &blockFS{reached: make(chan struct{}), release: make(chan struct{})}
	bfs.armed.Store(true)
	z := e.openFS("z", false, bfs)
	zdone := make(chan error, 1)
	go func() { _, err := z.Append(ctx, batch("zz", 5)); zdone <- err }()
	<-bfs.reached // z acquired (epoch 2), recovered and opened the segment, and is frozen before pwrite

	e.clock.advance(11 * time.Second)
	ffs := &createFailFS{}
	ffs.fail.Store(true)
	w := e.openFS("w", false, ffs)
	if _, err := e.append(w, batch("w0", 5)); err == nil {
		t.Fatal("w's takeover should fail")
	}
	e.clock.advance(11 * time.Second) // (matters only if w did not release)
	x := e.open("x", false)
	a1, err := e.append(x, batch("x1", 5))
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, x)

	close(bfs.release) // z thaws
	t.Logf("zombie append: %v", <-zdone)

	got := readAll(t, x)
	for _, r := range got {
		if bytes.HasPrefix(r.Value, []byte("zz")) {
			t.Errorf("I5/I3: zombie record visible at committed offset %d: %q (was %q)", r.Offset, r.Value[:8], before[r.Offset].Value[:8])
		}
	}
	checkAcks(t, got, []ack{a0, a1})
}

// lossyFS fails the next fsync of a .log holding records and, as a failed NFS writeback (or
// Linux after a failed fsync) may, drops everything written since the last
// successful fsync of that file.
type lossyFS struct {
	segment.OSFS
	failSync atomic.Bool
}

type lossyFile struct {
	*os.File
	fs     *lossyFS
	synced int64
}

func (f *lossyFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	return &lossyFile{File: file, fs: f, synced: fi.Size()}, nil
}

func (f *lossyFile) Sync() error {
	fi, _ := f.Stat()
	if strings.HasSuffix(f.Name(), ".log") && fi != nil && fi.Size() > segment.FileHeaderSize && f.fs.failSync.CompareAndSwap(true, false) {
		f.File.Truncate(f.synced)
		return errInjected
	}
	err := f.File.Sync()
	if err == nil {
		if fi, serr := f.Stat(); serr == nil {
			f.synced = fi.Size()
		}
	}
	return err
}

// A takeover's first batch fails its fsync, and the failed writeback drops
// what was written since the last good fsync. The release must not name the
// new file, and later writers must be able to write.
func TestFailedFirstFsyncAfterTakeoverDoesNotWedge(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	z := e.open("z", true)
	a0, err := e.append(z, batch("a0", 5))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.advance(11 * time.Second) // z died holding its lease

	lfs := &lossyFS{}
	lfs.failSync.Store(true)
	w := e.openFS("w", true, lfs)
	_, err = e.append(w, batch("w0", 5))
	t.Logf("w's first batch after the takeover: %v", err)
	p, _ := e.store.Partition(ctx, e.key)
	if p.Active != nil {
		// Whatever the item names must be on disk at its committed length.
		id := segment.ID{Base: p.Active.Base, Epoch: p.Active.Epoch}
		fi, serr := os.Stat(id.Path(e.dir, segment.KindLog))
		t.Logf("item: owner=%q active=%s committed size %d; file: %v %v", p.Owner, id, p.Active.Size, sizeOf(fi), serr)
		if fi == nil || fi.Size() < p.Active.Size {
			t.Errorf("the item names %s at committed size %d, but the file holds %v", id, p.Active.Size, sizeOf(fi))
		}
	}

	x := e.open("x", true)
	var lastErr error
	for i := 0; i < 5; i++ {
		e.clock.advance(11 * time.Second)
		if _, lastErr = e.append(x, batch("x1", 5)); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Errorf("partition wedged: 5 appends in a row failed; last: %v", lastErr)
	}
	checkAcks(t, readAll(t, x), []ack{a0})
}

func sizeOf(fi os.FileInfo) any {
	if fi == nil {
		return "missing"
	}
	return fi.Size()
}
