package segment

import (
	"os"
	"sync/atomic"
)

// FSOp is one kind of hot-tier file-system operation CountingFS counts.
// On EFS each is (at least) one NFS round trip: an open is a LOOKUP and
// GETATTR (close-to-open), a close flushes, a sync is a COMMIT.
type FSOp int

// The operations CountingFS counts: the FS methods, and the File methods
// of the files it opens.
const (
	FSOpen      FSOp = iota // FS.OpenFile
	FSRead                  // File.ReadAt
	FSWrite                 // File.WriteAt
	FSSync                  // File.Sync
	FSTruncate              // File.Truncate
	FSFstat                 // File.Stat
	FSClose                 // File.Close
	FSRemove                // FS.Remove
	FSRemoveAll             // FS.RemoveAll
	FSReadDir               // FS.ReadDir
	FSStat                  // FS.Stat
	FSMkdirAll              // FS.MkdirAll
	FSSyncDir               // FS.SyncDir
	numFSOps
)

// FSOps lists every FSOp, in order.
var FSOps = func() []FSOp {
	ops := make([]FSOp, numFSOps)
	for i := range ops {
		ops[i] = FSOp(i)
	}
	return ops
}()

var fsOpNames = [numFSOps]string{
	FSOpen: "open", FSRead: "read", FSWrite: "write", FSSync: "sync", FSTruncate: "truncate",
	FSFstat: "fstat", FSClose: "close", FSRemove: "remove", FSRemoveAll: "removeall",
	FSReadDir: "readdir", FSStat: "stat", FSMkdirAll: "mkdirall", FSSyncDir: "syncdir",
}

// String is the op's metric label: open, read, write, sync, truncate,
// fstat, close, remove, removeall, readdir, stat, mkdirall, syncdir.
func (o FSOp) String() string {
	if o < 0 || o >= numFSOps {
		return "unknown"
	}
	return fsOpNames[o]
}

// FSCounters counts calls by FSOp, failed ones included, and the bytes
// that reads and writes moved. The zero value is ready; it is safe for
// concurrent use and costs one atomic add per call (two for a read or a
// write).
type FSCounters struct {
	n                     [numFSOps]atomic.Int64
	readBytes, writeBytes atomic.Int64
}

// Calls is how many calls of op were made.
func (c *FSCounters) Calls(op FSOp) int64 {
	if op < 0 || op >= numFSOps {
		return 0
	}
	return c.n[op].Load()
}

// Bytes is the number of bytes moved by calls of op: FSRead (bytes
// returned by ReadAt) or FSWrite (bytes written by WriteAt); 0 for any
// other op.
func (c *FSCounters) Bytes(op FSOp) int64 {
	switch op {
	case FSRead:
		return c.readBytes.Load()
	case FSWrite:
		return c.writeBytes.Load()
	}
	return 0
}

// Total is the number of calls of every op.
func (c *FSCounters) Total() int64 {
	var t int64
	for i := range c.n {
		t += c.n[i].Load()
	}
	return t
}

func (c *FSCounters) add(op FSOp) { c.n[op].Add(1) }

// CountingFS wraps inner so that every call, on it and on the files it
// opens, is counted in c.
func CountingFS(inner FS, c *FSCounters) FS {
	return countingFS{inner: inner, c: c}
}

type countingFS struct {
	inner FS
	c     *FSCounters
}

func (f countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f.c.add(FSOpen)
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{File: file, c: f.c}, nil
}

func (f countingFS) Remove(name string) error {
	f.c.add(FSRemove)
	return f.inner.Remove(name)
}

func (f countingFS) RemoveAll(name string) error {
	f.c.add(FSRemoveAll)
	return f.inner.RemoveAll(name)
}

func (f countingFS) ReadDir(name string) ([]os.DirEntry, error) {
	f.c.add(FSReadDir)
	return f.inner.ReadDir(name)
}

func (f countingFS) Stat(name string) (os.FileInfo, error) {
	f.c.add(FSStat)
	return f.inner.Stat(name)
}

func (f countingFS) MkdirAll(name string, perm os.FileMode) error {
	f.c.add(FSMkdirAll)
	return f.inner.MkdirAll(name, perm)
}

func (f countingFS) SyncDir(name string) error {
	f.c.add(FSSyncDir)
	return f.inner.SyncDir(name)
}

type countingFile struct {
	File
	c *FSCounters
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.add(FSRead)
	n, err := f.File.ReadAt(p, off)
	f.c.readBytes.Add(int64(n))
	return n, err
}

func (f countingFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.add(FSWrite)
	n, err := f.File.WriteAt(p, off)
	f.c.writeBytes.Add(int64(n))
	return n, err
}

func (f countingFile) Sync() error {
	f.c.add(FSSync)
	return f.File.Sync()
}

func (f countingFile) Truncate(size int64) error {
	f.c.add(FSTruncate)
	return f.File.Truncate(size)
}

func (f countingFile) Stat() (os.FileInfo, error) {
	f.c.add(FSFstat)
	return f.File.Stat()
}

func (f countingFile) Close() error {
	f.c.add(FSClose)
	return f.File.Close()
}
