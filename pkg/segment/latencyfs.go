package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlog/tierlog/internal/hrsleep"
)

// RoundTrip is what one hot-tier call costs on a network file system such
// as EFS (NFSv4.1): nothing (the client answers from its caches), one
// read-class round trip, or one durable round trip (the server makes the
// change durable before it answers).
type RoundTrip int

// The classes LatencyFS charges.
const (
	RoundTripNone    RoundTrip = iota // answered by the client: page cache, attribute cache
	RoundTripRead                     // LOOKUP/OPEN+GETATTR, READ, READDIR, GETATTR
	RoundTripDurable                  // COMMIT, WRITE+COMMIT at close, SETATTR, CREATE, REMOVE, MKDIR
	numRoundTrips
)

// RoundTrips lists the classes that cost a round trip: read, durable.
var RoundTrips = []RoundTrip{RoundTripRead, RoundTripDurable}

// String is the class's metric label: none, read, durable.
func (r RoundTrip) String() string {
	switch r {
	case RoundTripNone:
		return "none"
	case RoundTripRead:
		return "read"
	case RoundTripDurable:
		return "durable"
	}
	return "unknown"
}

// LatencyProfile is the latency LatencyFS charges per round trip of each
// class. The zero value charges nothing (profile "none").
type LatencyProfile struct {
	Name    string
	Read    time.Duration
	Durable time.Duration
}

// The named profiles. docs/benchmarks.md gives the figures' sources.
var latencyProfiles = []LatencyProfile{
	{Name: "none"},
	// EFS General Purpose, Regional: about 1 ms per read operation,
	// 2.7 ms per write operation.
	{Name: "efs-regional", Read: time.Millisecond, Durable: 2700 * time.Microsecond},
	// EFS General Purpose, One Zone: 250 µs and 1.6 ms.
	{Name: "efs-onezone", Read: 250 * time.Microsecond, Durable: 1600 * time.Microsecond},
}

// LatencyProfileNames lists the names ParseLatencyProfile takes.
func LatencyProfileNames() []string {
	names := make([]string, len(latencyProfiles))
	for i, p := range latencyProfiles {
		names[i] = p.Name
	}
	return names
}

// ParseLatencyProfile returns the named profile: none, efs-regional or
// efs-onezone (any case). An empty name is none.
func ParseLatencyProfile(name string) (LatencyProfile, error) {
	if name == "" {
		return latencyProfiles[0], nil
	}
	for _, p := range latencyProfiles {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	return LatencyProfile{}, fmt.Errorf("unknown hot-tier latency profile %q (want %s)", name, strings.Join(LatencyProfileNames(), ", "))
}

// String is the profile's name ("none" for the zero value).
func (p LatencyProfile) String() string {
	if p.Name == "" {
		return latencyProfiles[0].Name
	}
	return p.Name
}

// Charges reports whether the profile charges any latency.
func (p LatencyProfile) Charges() bool { return p.Read > 0 || p.Durable > 0 }

// Latency is what one round trip of class r costs.
func (p LatencyProfile) Latency(r RoundTrip) time.Duration {
	switch r {
	case RoundTripRead:
		return p.Read
	case RoundTripDurable:
		return p.Durable
	}
	return 0
}

// RoundTripCounters counts the round trips LatencyFS charged, by class,
// the latency charged, and the time the charged calls took. The zero
// value is ready; it is safe for concurrent use.
type RoundTripCounters struct {
	n              [numRoundTrips]atomic.Int64
	charged, taken atomic.Int64 // nanoseconds
}

// Calls is the number of round trips of class r charged.
func (c *RoundTripCounters) Calls(r RoundTrip) int64 {
	if r < 0 || r >= numRoundTrips {
		return 0
	}
	return c.n[r].Load()
}

// Charged is the total latency charged.
func (c *RoundTripCounters) Charged() time.Duration { return time.Duration(c.charged.Load()) }

// Taken is the time the calls that were charged took, from their start to
// the end of their wait: the charge, or more (the local call took longer,
// or the wait overshot).
func (c *RoundTripCounters) Taken() time.Duration { return time.Duration(c.taken.Load()) }

// Clock is the time LatencyFS reads and waits on.
type Clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { hrsleep.Sleep(d) } // the runtime's timers wake up to 1 ms late

// LatencyFS wraps inner so that each call, on it and on the files it
// opens, takes at least the latency its round-trip class costs under p:
// after the inner call, it waits on clk (the real clock if nil) for what
// is left of that latency, so the local disk's own time is not added to
// the network's. Each round trip is counted in c (which may be nil), with
// its full latency as charged.
//
// The classes, for an NFSv4.1 client with close-to-open consistency:
//
//   - OpenFile of an existing file: read (OPEN with GETATTR, one compound);
//     with O_TRUNC, durable. One that creates the file: durable (CREATE).
//     A failed open: read.
//   - ReadAt: read, every call but one of 0 bytes (the client's page
//     cache is not modelled: the data was usually written by another
//     client, and close-to-open revalidates the cache at every open).
//   - WriteAt: none; the bytes wait in the client's page cache and the
//     file is dirty.
//   - Sync: durable (COMMIT) if the file is dirty, else none.
//   - Close: durable if the file is dirty (the flush WRITE+COMMIT that
//     close-to-open requires), else none (NFSv4 CLOSE is sent without
//     waiting).
//   - Truncate: durable (SETATTR).
//   - Stat of an open file: none (attributes cached since the open).
//   - Stat by name, ReadDir: read (LOOKUP+GETATTR, READDIR).
//   - Remove, RemoveAll: durable, once per call (RemoveAll of a tree costs
//     more on a real server).
//   - MkdirAll: read if the directory exists, else read and durable
//     (once, however many levels it creates).
//   - SyncDir: read (the directory's LOOKUP; directory changes are already
//     durable on the server, so its fsync sends nothing).
//
// A large ReadAt or WriteAt costs one round trip here whatever its size:
// the profile charges latency, not throughput.
//
// What other clients see, and when. A call reaches the server half a read
// round trip after it starts (the way there; the rest of its latency is the
// server's work, durable or not, and the way back): LatencyFS waits that,
// makes the inner call, then waits what is left, so a file created,
// removed or truncated shows to other processes (and a read samples the
// file) then, not at the call's start. Written bytes wait in the client's
// page cache: WriteAt keeps them, and the Sync or Close that flushes them
// writes them to the inner file when it reaches the server (a ReadAt or
// Stat through the same file writes them first, uncharged: a client reads
// its own writes). So another process reads what a writer wrote only once
// its flush has reached the server, as on NFS, where close-to-open promises
// no sooner; a write's error is reported by that Sync or Close.
//
// The inner call's own time counts toward the latency: a call waits
// max(latency, half a read round trip plus the call's time). On a memory
// file system that is the latency alone.
//
// To learn whether an O_CREATE open creates the file, LatencyFS first
// opens without O_CREATE (uncharged) and, if the file is absent, again
// with it; MkdirAll stats the directory first. So the inner file system
// sees one more call when a file is created.
func LatencyFS(inner FS, p LatencyProfile, c *RoundTripCounters, clk Clock) FS {
	if clk == nil {
		clk = realClock{}
	}
	if c == nil {
		c = &RoundTripCounters{}
	}
	return &latencyFS{inner: inner, p: p, c: c, clk: clk}
}

type latencyFS struct {
	inner FS
	p     LatencyProfile
	c     *RoundTripCounters
	clk   Clock
}

// depart waits the way to the server, half a read round trip, before a
// call of class r acts (nothing is counted: charge counts the call once it
// is done, and waits the rest: the server's work, durable or not, and the
// way back).
func (f *latencyFS) depart(r RoundTrip) {
	if r == RoundTripNone {
		return
	}
	if d := f.p.Read / 2; d > 0 {
		f.clk.Sleep(d)
	}
}

// charge counts round trips of class r (one, or none for RoundTripNone)
// made by a call that started at start, and waits what is left of their
// latency.
func (f *latencyFS) charge(start time.Time, r ...RoundTrip) {
	var d time.Duration
	for _, x := range r {
		if x == RoundTripNone {
			continue
		}
		f.c.n[x].Add(1)
		d += f.p.Latency(x)
	}
	if d <= 0 {
		return
	}
	f.c.charged.Add(int64(d))
	if left := d - f.clk.Now().Sub(start); left > 0 {
		f.clk.Sleep(left)
	}
	f.c.taken.Add(int64(f.clk.Now().Sub(start)))
}

func (f *latencyFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	start := f.clk.Now()
	class := RoundTripRead
	if flag&os.O_TRUNC != 0 {
		class = RoundTripDurable
	}
	var file File
	var err error
	switch {
	case flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		f.depart(RoundTripDurable)
		file, err = f.inner.OpenFile(name, flag, perm)
		if err == nil {
			class = RoundTripDurable
		}
	case flag&os.O_CREATE != 0:
		file, err = f.inner.OpenFile(name, flag&^os.O_CREATE, perm)
		if errors.Is(err, fs.ErrNotExist) {
			f.depart(RoundTripDurable)
			file, err = f.inner.OpenFile(name, flag, perm)
			if err == nil {
				class = RoundTripDurable
			}
		} else {
			f.depart(class)
		}
	default:
		f.depart(class)
		file, err = f.inner.OpenFile(name, flag, perm)
	}
	if err != nil {
		f.charge(start, RoundTripRead)
		return nil, err
	}
	f.charge(start, class)
	return &latencyFile{File: file, fs: f}, nil
}

func (f *latencyFS) Remove(name string) error {
	defer f.charge(f.clk.Now(), RoundTripDurable)
	f.depart(RoundTripDurable)
	return f.inner.Remove(name)
}

func (f *latencyFS) RemoveAll(name string) error {
	defer f.charge(f.clk.Now(), RoundTripDurable)
	f.depart(RoundTripDurable)
	return f.inner.RemoveAll(name)
}

func (f *latencyFS) ReadDir(name string) ([]os.DirEntry, error) {
	defer f.charge(f.clk.Now(), RoundTripRead)
	f.depart(RoundTripRead)
	return f.inner.ReadDir(name)
}

func (f *latencyFS) Stat(name string) (os.FileInfo, error) {
	defer f.charge(f.clk.Now(), RoundTripRead)
	f.depart(RoundTripRead)
	return f.inner.Stat(name)
}

func (f *latencyFS) MkdirAll(name string, perm os.FileMode) error {
	start := f.clk.Now()
	if fi, err := f.inner.Stat(name); err == nil && fi.IsDir() {
		f.charge(start, RoundTripRead)
		return nil
	}
	defer f.charge(start, RoundTripRead, RoundTripDurable)
	f.clk.Sleep(f.p.Read) // the LOOKUP's round trip, then the MKDIR's
	f.depart(RoundTripDurable)
	return f.inner.MkdirAll(name, perm)
}

func (f *latencyFS) SyncDir(name string) error {
	defer f.charge(f.clk.Now(), RoundTripRead)
	f.depart(RoundTripRead)
	return f.inner.SyncDir(name)
}

// latencyFile is a file LatencyFS opened. WriteAt keeps the bytes in
// pending (the client's page cache) and sets dirty; a Sync or Close that
// flushes writes them to the inner file half way through its durable
// round trip, and clears dirty.
type latencyFile struct {
	File
	fs      *latencyFS
	mu      sync.Mutex
	pending []pendingWrite
	dirty   bool
}

type pendingWrite struct {
	off int64
	b   []byte
}

// apply writes the pending bytes to the inner file, in the order written.
// Under f.mu.
func (f *latencyFile) apply() error {
	var err error
	for _, w := range f.pending {
		if _, werr := f.File.WriteAt(w.b, w.off); werr != nil && err == nil {
			err = werr
		}
	}
	f.pending = nil
	return err
}

func (f *latencyFile) ReadAt(p []byte, off int64) (int, error) {
	class := RoundTripRead
	if len(p) == 0 {
		class = RoundTripNone // no system call, let alone a READ
	}
	defer f.fs.charge(f.fs.clk.Now(), class)
	f.mu.Lock()
	err := f.apply()
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	f.fs.depart(class)
	return f.File.ReadAt(p, off)
}

func (f *latencyFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, pendingWrite{off: off, b: bytes.Clone(p)})
	f.dirty = true
	return len(p), nil
}

func (f *latencyFile) Stat() (os.FileInfo, error) {
	f.mu.Lock()
	err := f.apply()
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.File.Stat()
}

// flush is a Sync or Close: with unflushed writes, a durable round trip
// whose middle writes them to the inner file before op; else op alone.
func (f *latencyFile) flush(op func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirty { // nothing pending either: WriteAt sets dirty
		return op()
	}
	f.dirty = false
	defer f.fs.charge(f.fs.clk.Now(), RoundTripDurable)
	f.fs.depart(RoundTripDurable)
	return errors.Join(f.apply(), op())
}

func (f *latencyFile) Sync() error { return f.flush(f.File.Sync) }

func (f *latencyFile) Close() error { return f.flush(f.File.Close) }

// Truncate is a SETATTR, after the client writes its dirty pages back
// (one durable round trip here).
func (f *latencyFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirty = false
	defer f.fs.charge(f.fs.clk.Now(), RoundTripDurable)
	f.fs.depart(RoundTripDurable)
	return errors.Join(f.apply(), f.File.Truncate(size))
}
