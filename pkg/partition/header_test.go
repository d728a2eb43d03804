package partition

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// headerReadFS counts reads of a .log file's header bytes.
type headerReadFS struct {
	segment.OSFS
	reads atomic.Int64
}

type headerReadFile struct {
	*os.File
	fs *headerReadFS
}

func (f *headerReadFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &headerReadFile{File: file, fs: f}, nil
}

func (f *headerReadFile) ReadAt(b []byte, off int64) (int, error) {
	if strings.HasSuffix(f.Name(), ".log") && off < segment.FileHeaderSize {
		f.fs.reads.Add(1)
	}
	return f.File.ReadAt(b, off)
}

// A fetch re-opens its segment file (close-to-open on NFS) but checks the
// file header once per segment, not once per fetch: on EFS every read of
// the header would be one more round trip.
func TestHeaderCheckedOncePerSegment(t *testing.T) {
	e := newEnv(t)
	fs := &headerReadFS{}
	l, err := Open(context.Background(), Config{
		Dir: e.dir, Key: e.key, Meta: e.store, Owner: "w", HoldLease: true,
		LeaseTTL: 10 * time.Second, SegmentBytes: 1 << 20, IndexIntervalBytes: 100,
		FS: fs, Now: e.clock.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.append(l, batch("h", 5)); err != nil {
			t.Fatal(err)
		}
	}
	fs.reads.Store(0)
	for off := int64(0); off < 15; off++ {
		if recs, _, err := l.Read(context.Background(), off, 1, 1<<20); err != nil || len(recs) != 1 {
			t.Fatalf("read %d: %v %v", off, recs, err)
		}
	}
	if n := fs.reads.Load(); n != 1 {
		t.Errorf("15 reads of one segment read its header %d times, want 1", n)
	}
}
