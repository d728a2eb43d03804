package segment

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// A LatencyProfile is what each hot-tier operation costs on a network file
// system: LatencyFS charges it, so that the write and read paths can be
// measured at EFS's latencies on a local disk. Two classes, as NFS has
// them: a round trip that reads (LOOKUP, GETATTR, READ, READDIR, a clean
// CLOSE) and one that must be durable at the server before it answers
// (COMMIT, SETATTR, CREATE, REMOVE, a close that flushes). A pwrite costs
// nothing: it stays in the client's page cache until a sync or a close.
//
// Figures (docs/benchmarks.md, "Cloud latency"): the Amazon EFS User Guide,
// "Amazon EFS performance" (2026): about 1 ms per read operation and 2.7 ms
// per write on Regional file systems, 250 µs and 1.6 ms on One Zone ones.
type LatencyProfile struct {
	Name          string
	Read, Durable time.Duration
}

// The profiles LatencyProfileByName knows.
var latencyProfiles = map[string]LatencyProfile{
	"none":         {Name: "none"},
	"efs-regional": {Name: "efs-regional", Read: time.Millisecond, Durable: 2700 * time.Microsecond},
	"efs-onezone":  {Name: "efs-onezone", Read: 250 * time.Microsecond, Durable: 1600 * time.Microsecond},
}

// LatencyProfileByName returns the profile called name: none,
// efs-regional or efs-onezone.
func LatencyProfileByName(name string) (LatencyProfile, error) {
	p, ok := latencyProfiles[name]
	if !ok {
		names := make([]string, 0, len(latencyProfiles))
		for n := range latencyProfiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return LatencyProfile{}, fmt.Errorf("segment: unknown latency profile %q: want one of %s", name, strings.Join(names, ", "))
	}
	return p, nil
}

// LatencyFS wraps inner so that every call, on it and on the files it
// opens, first waits what p charges its class. sleep waits (nil:
// time.Sleep); a test passes its own to count the charges.
func LatencyFS(inner FS, p LatencyProfile, sleep func(time.Duration)) FS {
	if sleep == nil {
		sleep = time.Sleep
	}
	return latencyFS{inner: inner, p: p, sleep: sleep}
}

type latencyFS struct {
	inner FS
	p     LatencyProfile
	sleep func(time.Duration)
}

func (f latencyFS) charge(d time.Duration) {
	if d > 0 {
		f.sleep(d)
	}
}

// OpenFile: a lookup and the attributes close-to-open revalidates; an
// exclusive create or a truncating open is a durable change.
func (f latencyFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		f.charge(f.p.Durable)
	} else {
		f.charge(f.p.Read)
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &latencyFile{File: file, fs: f}, nil
}

func (f latencyFS) Remove(name string) error {
	f.charge(f.p.Durable)
	return f.inner.Remove(name)
}

func (f latencyFS) RemoveAll(name string) error {
	f.charge(f.p.Durable)
	return f.inner.RemoveAll(name)
}

func (f latencyFS) ReadDir(name string) ([]os.DirEntry, error) {
	f.charge(f.p.Read)
	return f.inner.ReadDir(name)
}

func (f latencyFS) Stat(name string) (os.FileInfo, error) {
	f.charge(f.p.Read)
	return f.inner.Stat(name)
}

func (f latencyFS) MkdirAll(name string, perm os.FileMode) error {
	f.charge(f.p.Durable)
	return f.inner.MkdirAll(name, perm)
}

func (f latencyFS) SyncDir(name string) error {
	f.charge(f.p.Durable)
	return f.inner.SyncDir(name)
}

// latencyFile charges a file's calls; dirty says it has writes no sync or
// close has sent yet.
type latencyFile struct {
	File
	fs    latencyFS
	dirty atomic.Bool
}

func (f *latencyFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.charge(f.fs.p.Read)
	return f.File.ReadAt(p, off)
}

func (f *latencyFile) WriteAt(p []byte, off int64) (int, error) {
	f.dirty.Store(true) // the page cache takes it; the network, later
	return f.File.WriteAt(p, off)
}

func (f *latencyFile) Sync() error {
	f.dirty.Store(false)
	f.fs.charge(f.fs.p.Durable)
	return f.File.Sync()
}

func (f *latencyFile) Truncate(size int64) error {
	f.fs.charge(f.fs.p.Durable)
	return f.File.Truncate(size)
}

// Stat answers from the attributes the open fetched.
func (f *latencyFile) Stat() (os.FileInfo, error) { return f.File.Stat() }

// Close flushes unsent writes (durable), else is one round trip (NFSv4's
// CLOSE).
func (f *latencyFile) Close() error {
	if f.dirty.Swap(false) {
		f.fs.charge(f.fs.p.Durable)
	} else {
		f.fs.charge(f.fs.p.Read)
	}
	return f.File.Close()
}
