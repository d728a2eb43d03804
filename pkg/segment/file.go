package segment

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File is the part of *os.File a segment uses. Tests swap in files that fail
// on demand (see FS).
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
}

// FS is the file system the hot tier lives on: segment files and the
// directories that hold them. OSFS is the real one; tests inject faults and
// the simulation (internal/sim) models NFS behind it. Errors follow package
// os: errors.Is(err, fs.ErrNotExist) and fs.ErrExist work on them.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file (or an empty directory).
	Remove(name string) error
	// RemoveAll removes a directory tree; a missing one is not an error.
	RemoveAll(name string) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]os.DirEntry, error)
	// Stat describes a file.
	Stat(name string) (os.FileInfo, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string, perm os.FileMode) error
	// SyncDir makes the directory's entries (files created or removed in
	// it) durable.
	SyncDir(name string) error
}

// OSFS is the operating system's file system.
type OSFS struct{}

var _ FS = OSFS{}

// OpenFile opens a file with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// Remove calls os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// RemoveAll calls os.RemoveAll.
func (OSFS) RemoveAll(name string) error { return os.RemoveAll(name) }

// ReadDir calls os.ReadDir.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// Stat calls os.Stat.
func (OSFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// MkdirAll calls os.MkdirAll.
func (OSFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }

// SyncDir opens the directory and fsyncs it.
func (OSFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Kind names one of a segment's three files.
type Kind string

// The three files of a segment.
const (
	KindLog       Kind = ".log"
	KindIndex     Kind = ".index"
	KindTimeIndex Kind = ".timeindex"
)

// ID names a segment: its base offset and the epoch of the writer that
// created it.
type ID struct {
	Base  int64
	Epoch uint64
}

// Name is the file name of kind k of segment id: %020d-%016x plus extension.
// Names sort by base offset.
func (id ID) Name(k Kind) string {
	return fmt.Sprintf("%020d-%016x%s", id.Base, id.Epoch, k)
}

// Path joins dir and the name of kind k.
func (id ID) Path(dir string, k Kind) string { return filepath.Join(dir, id.Name(k)) }

func (id ID) String() string { return fmt.Sprintf("%020d-%016x", id.Base, id.Epoch) }

// ParseName parses a segment file name. It reports false for any name that
// is not exactly one of ours.
func ParseName(name string) (ID, Kind, bool) {
	full := name
	var k Kind
	for _, c := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		if strings.HasSuffix(name, string(c)) {
			k = c
			name = strings.TrimSuffix(name, string(c))
			break
		}
	}
	if k == "" || len(name) != 20+1+16 || name[20] != '-' {
		return ID{}, "", false
	}
	base, err1 := strconv.ParseInt(name[:20], 10, 64)
	epoch, err2 := strconv.ParseUint(name[21:], 16, 64)
	if err1 != nil || err2 != nil || base < 0 {
		return ID{}, "", false
	}
	id := ID{Base: base, Epoch: epoch}
	if id.Name(k) != full {
		// strconv also takes a sign ("+0…", "-0…") and upper-case hex:
		// such a name is not one we wrote and must not alias one that is.
		return ID{}, "", false
	}
	return id, k, true
}
