package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

var errInjected = errors.New("injected fault")

// faultFS is the real file system with switches that make the next WriteAt,
// Sync or Truncate of one kind of file fail. Each switch fires once.
type faultFS struct {
	OSFS
	mu               sync.Mutex
	failNextWrite    map[Kind]bool // WriteAt writes nothing and fails
	shortNextWrite   map[Kind]bool // WriteAt writes half and reports it with a nil error
	tornNextWrite    map[Kind]bool // WriteAt writes half and fails
	failNextSync     map[Kind]bool // Sync fails (the bytes stay written: the page cache may still hold them)
	failNextTruncate map[Kind]bool
	syncs            map[Kind]int // successful Syncs
	failNextSyncDir  bool         // SyncDir fails
	dirSyncs         []string     // directories synced, in order
	noSync           bool         // Sync and SyncDir succeed without fsync (fast fuzzing)
}

func (fs *faultFS) SyncDir(name string) error {
	fs.mu.Lock()
	fail := fs.failNextSyncDir
	fs.failNextSyncDir = false
	fs.mu.Unlock()
	if fail {
		return fmt.Errorf("fsync directory %s: %w", name, errInjected)
	}
	if !fs.noSync {
		if err := fs.OSFS.SyncDir(name); err != nil {
			return err
		}
	}
	fs.mu.Lock()
	fs.dirSyncs = append(fs.dirSyncs, name)
	fs.mu.Unlock()
	return nil
}

func newFaultFS() *faultFS {
	return &faultFS{
		failNextWrite:    map[Kind]bool{},
		shortNextWrite:   map[Kind]bool{},
		tornNextWrite:    map[Kind]bool{},
		failNextSync:     map[Kind]bool{},
		failNextTruncate: map[Kind]bool{},
		syncs:            map[Kind]int{},
	}
}

func (fs *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, fs: fs, kind: Kind(filepath.Ext(name))}, nil
}

// take reports whether switch m is on for k and turns it off.
func (fs *faultFS) take(m map[Kind]bool, k Kind) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	on := m[k]
	delete(m, k)
	return on
}

func (fs *faultFS) arm(m map[Kind]bool, k Kind) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	m[k] = true
}

type faultFile struct {
	*os.File
	fs   *faultFS
	kind Kind
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	switch {
	case f.fs.take(f.fs.failNextWrite, f.kind):
		return 0, fmt.Errorf("write %s: %w", f.Name(), errInjected)
	case f.fs.take(f.fs.shortNextWrite, f.kind):
		return f.File.WriteAt(p[:len(p)/2], off)
	case f.fs.take(f.fs.tornNextWrite, f.kind):
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, fmt.Errorf("write %s: %w", f.Name(), errInjected)
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if f.fs.take(f.fs.failNextSync, f.kind) {
		return fmt.Errorf("fsync %s: %w", f.Name(), errInjected)
	}
	if f.fs.noSync {
		return nil
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.mu.Lock()
	f.fs.syncs[f.kind]++
	f.fs.mu.Unlock()
	return nil
}

func (f *faultFile) Truncate(size int64) error {
	if f.fs.take(f.fs.failNextTruncate, f.kind) {
		return fmt.Errorf("truncate %s: %w", f.Name(), errInjected)
	}
	return f.File.Truncate(size)
}

// TestFaultBreaksWriter: after a failed or short write or a failed fsync the
// Writer refuses further use, and Recover with the last committed length
// (the Size after the last successful Sync) gives back every synced record
// byte for byte, with nothing of the failed batch below it.
func TestFaultBreaksWriter(t *testing.T) {
	recs := genRecords(testID.Base, 150, 1000)
	synced, failing, later := recs[:90], recs[90:120], recs[120:]
	for _, tc := range []struct {
		name string
		arm  func(fs *faultFS)
	}{
		{"log write fails", func(fs *faultFS) { fs.arm(fs.failNextWrite, KindLog) }},
		{"log write short", func(fs *faultFS) { fs.arm(fs.shortNextWrite, KindLog) }},
		{"log write torn", func(fs *faultFS) { fs.arm(fs.tornNextWrite, KindLog) }},
		{"log fsync fails", func(fs *faultFS) { fs.arm(fs.failNextSync, KindLog) }},
		{"index write fails", func(fs *faultFS) { fs.arm(fs.failNextWrite, KindIndex) }},
		{"index write short", func(fs *faultFS) { fs.arm(fs.shortNextWrite, KindIndex) }},
		{"time index write fails", func(fs *faultFS) { fs.arm(fs.failNextWrite, KindTimeIndex) }},
		{"time index write torn", func(fs *faultFS) { fs.arm(fs.tornNextWrite, KindTimeIndex) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := newFaultFS()
			opts := Options{IndexIntervalBytes: 512, FS: fs}
			w, err := Create(dir, testID, opts)
			if err != nil {
				t.Fatal(err)
			}
			var committed State
			for _, b := range split(synced, 30, 30, 30) {
				if err := w.Append(b); err != nil {
					t.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
				committed = w.State()
			}

			tc.arm(fs)
			err = w.Append(failing)
			if err == nil {
				err = w.Sync()
			}
			if err == nil {
				t.Fatal("the failing batch was appended and synced")
			}
			if !errors.Is(err, errInjected) && !errors.Is(err, io.ErrShortWrite) {
				t.Fatalf("err %v, want the injected fault or io.ErrShortWrite", err)
			}
			// The writer is broken for good.
			for i, op := range []func() error{
				func() error { return w.Append(failing) },
				w.Sync,
				func() error { return w.Append(nil) },
			} {
				if err := op(); !errors.Is(err, ErrClosed) {
					t.Fatalf("op %d after the fault: %v, want ErrClosed", i, err)
				}
			}
			syncsBefore := fs.syncs[KindIndex]
			if err := w.Close(); err != nil {
				t.Fatalf("Close of a broken writer: %v", err)
			}
			if fs.syncs[KindIndex] != syncsBefore {
				t.Fatal("Close of a broken writer synced its files")
			}
			// The failed batch may have left bytes in the files: garbage
			// past the committed length, or index entries pointing there.
			if fi, _ := os.Stat(testID.Path(dir, KindLog)); fi.Size() < committed.Size {
				t.Fatalf("log is %d bytes, committed %d", fi.Size(), committed.Size)
			}

			st, err := Recover(dir, testID, committed.Size, opts)
			if err != nil {
				t.Fatal(err)
			}
			if st != committed {
				t.Fatalf("Recover = %+v, want %+v", st, committed)
			}
			sameFiles(t, "after Recover", readFiles(t, dir, testID), reference(t, testID, opts, synced))
			checkRecords(t, "synced records", readAllRecords(t, dir, testID, st.Size), synced)

			// A new writer takes over where the synced records end.
			w, err = Open(dir, testID, st, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range [][]Record{failing, later} {
				if err := w.Append(b); err != nil {
					t.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			end := w.State()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, "after the retry", readFiles(t, dir, testID), reference(t, testID, opts, recs))
			checkRecords(t, "all records", readAllRecords(t, dir, testID, end.Size), recs)
		})
	}
}

// TestFaultTornTailPastCommitted: whatever a crash leaves past the committed
// length (half a batch, zeros, the bytes of another batch), Recover with the
// committed length drops it and keeps the synced records byte for byte.
func TestFaultTornTailPastCommitted(t *testing.T) {
	recs := genRecords(testID.Base, 60, 1000)
	other := genRecords(testID.Base+60, 20, 9000)
	otherEnc := encodeAll(t, other)
	for _, tail := range []struct {
		name string
		b    []byte
	}{
		{"half a batch", otherEnc[:len(otherEnc)/2]},
		{"a whole batch", otherEnc},
		{"zeros", make([]byte, 8192)},
		{"one byte", []byte{1}},
	} {
		t.Run(tail.name, func(t *testing.T) {
			dir := t.TempDir()
			st := writeSegment(t, dir, testID, smallIndex, recs)
			f, err := os.OpenFile(testID.Path(dir, KindLog), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(tail.b, st.Size); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, err := Recover(dir, testID, st.Size, smallIndex)
			if err != nil || got != st {
				t.Fatalf("Recover = %+v, %v; want %+v", got, err, st)
			}
			sameFiles(t, "after Recover", readFiles(t, dir, testID), reference(t, testID, smallIndex, recs))
		})
	}
}

func TestFaultCreate(t *testing.T) {
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		t.Run(string(k), func(t *testing.T) {
			dir := t.TempDir()
			fs := newFaultFS()
			if k == KindLog {
				fs.arm(fs.failNextWrite, KindLog) // the header write
			} else {
				// Make creating the index file fail: it exists already.
				mustWriteFile(t, testID.Path(dir, k), nil)
			}
			_, err := Create(dir, testID, Options{FS: fs})
			if err == nil {
				t.Fatal("Create succeeded")
			}
			if k == KindLog && !errors.Is(err, errInjected) {
				t.Fatalf("err %v, want the injected fault", err)
			}
			if k != KindLog {
				return
			}
			// The files exist without a header: an empty segment.
			st, err := Recover(dir, testID, Unknown, Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			w, err := Open(dir, testID, st, Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			recs := genRecords(testID.Base, 10, 1)
			if err := w.Append(recs); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, "after Recover and appends", readFiles(t, dir, testID), reference(t, testID, Options{}, recs))
		})
	}
}

// TestFaultCreateDurable: Create makes the new .log's header and the
// directory entries durable before it returns, because a commit may name
// the segment right after. A failed fsync of either fails Create and
// removes nothing.
func TestFaultCreateDurable(t *testing.T) {
	neighbour := ID{Base: testID.Base - 100, Epoch: testID.Epoch}
	for _, tc := range []struct {
		name string
		arm  func(fs *faultFS)
	}{
		{"no fault", func(*faultFS) {}},
		{"header fsync fails", func(fs *faultFS) { fs.arm(fs.failNextSync, KindLog) }},
		{"directory fsync fails", func(fs *faultFS) { fs.failNextSyncDir = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSegment(t, dir, neighbour, smallIndex, genRecords(neighbour.Base, 20, 1))
			before := readFiles(t, dir, neighbour)
			fs := newFaultFS()
			tc.arm(fs)
			w, err := Create(dir, testID, Options{FS: fs})
			if tc.name == "no fault" {
				if err != nil {
					t.Fatal(err)
				}
				// One fsync of the .log (the header) and one of the
				// directory, before Create returned: the cost of a roll.
				if fs.syncs[KindLog] != 1 || fs.syncs[KindIndex] != 0 || fs.syncs[KindTimeIndex] != 0 {
					t.Fatalf("Create synced %v, want the .log once", fs.syncs)
				}
				if len(fs.dirSyncs) != 1 || fs.dirSyncs[0] != dir {
					t.Fatalf("Create synced directories %q, want [%q]", fs.dirSyncs, dir)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, errInjected) {
				t.Fatalf("Create = %v, want the injected fault", err)
			}
			if w != nil {
				t.Fatal("a failed Create returned a writer")
			}
			// Nothing was removed: the new files stay for the caller to
			// judge, the neighbour is untouched.
			for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
				if _, err := os.Stat(testID.Path(dir, k)); err != nil {
					t.Errorf("%s after the failed Create: %v", k, err)
				}
			}
			sameFiles(t, "neighbour", readFiles(t, dir, neighbour), before)
			// The name stays taken; Recover makes an empty segment of it.
			if _, err := Create(dir, testID, Options{FS: fs}); !errors.Is(err, os.ErrExist) {
				t.Fatalf("second Create = %v, want os.ErrExist", err)
			}
			st, err := Recover(dir, testID, Unknown, Options{FS: fs})
			if want := (State{Size: FileHeaderSize, NextOffset: testID.Base, LastTS: -1}); err != nil || st != want {
				t.Fatalf("Recover = %+v, %v; want %+v", st, err, want)
			}
		})
	}
}

func TestFaultClose(t *testing.T) {
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		dir := t.TempDir()
		fs := newFaultFS()
		w, err := Create(dir, testID, Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(genRecords(testID.Base, 3, 1)); err != nil {
			t.Fatal(err)
		}
		fs.arm(fs.failNextSync, k)
		if err := w.Close(); !errors.Is(err, errInjected) {
			t.Errorf("%s: Close = %v, want the injected fsync error", k, err)
		}
		if err := w.Append(nil); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Append after Close = %v, want ErrClosed", k, err)
		}
	}
}

// TestFaultRecoverTruncate: a Recover that fails part way can be run again.
func TestFaultRecoverTruncate(t *testing.T) {
	recs := genRecords(testID.Base, 60, 1000)
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		t.Run(string(k), func(t *testing.T) {
			dir := t.TempDir()
			st := writeSegment(t, dir, testID, smallIndex, recs[:40])
			// Leave an aborted batch past the committed length.
			w, err := Open(dir, testID, st, smallIndex)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append(recs[40:]); err != nil {
				t.Fatal(err)
			}
			w.Close()
			fs := newFaultFS()
			fs.arm(fs.failNextTruncate, k)
			if _, err := Recover(dir, testID, st.Size, Options{IndexIntervalBytes: 512, FS: fs}); !errors.Is(err, errInjected) {
				t.Fatalf("Recover = %v, want the injected error", err)
			}
			got, err := Recover(dir, testID, st.Size, Options{IndexIntervalBytes: 512, FS: fs})
			if err != nil || got != st {
				t.Fatalf("second Recover = %+v, %v; want %+v", got, err, st)
			}
			sameFiles(t, "after the second Recover", readFiles(t, dir, testID), reference(t, testID, smallIndex, recs[:40]))
		})
	}
}

// The fakes below are io.ReaderAt variants in the spirit of testing/iotest,
// which only wraps io.Reader: readers must give the same answers through any
// ReaderAt that keeps the contract, and surface errors from one that fails.

// eofAtEndReaderAt returns full reads that reach the end of the data together
// with io.EOF, which the io.ReaderAt contract allows.
type eofAtEndReaderAt struct{ b []byte }

func (r eofAtEndReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.b)) {
		return 0, io.EOF
	}
	n := copy(p, r.b[off:])
	if off+int64(n) == int64(len(r.b)) {
		return n, io.EOF
	}
	return n, nil
}

// halfReaderAt returns half of what is asked (at least one byte), with an
// error as the contract requires for a short read: like iotest.HalfReader,
// but for ReadAt.
type halfReaderAt struct{ b []byte }

var errHalf = errors.New("half read")

func (r halfReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(r.b)) {
		return 0, io.EOF
	}
	want := min(len(p), len(r.b)-int(off))
	n := copy(p[:max(1, want/2)], r.b[off:])
	if n < len(p) {
		return n, errHalf
	}
	return n, nil
}

// dataErrReaderAt reads the data normally below at and fails from there on,
// returning what lies below at together with the error (iotest.DataErrReader
// style: data and error in the same call).
type dataErrReaderAt struct {
	b  []byte
	at int64
}

func (r dataErrReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.at {
		return 0, errInjected
	}
	end := min(off+int64(len(p)), r.at, int64(len(r.b)))
	n := copy(p, r.b[off:end])
	if n < len(p) {
		if end == r.at {
			return n, errInjected
		}
		return n, io.EOF
	}
	return n, nil
}

func TestReaderAtFakes(t *testing.T) {
	data := []byte(strings.Repeat("0123456789", 10))
	// iotest.TestReader checks Read, ReadAt and Seek of a SectionReader
	// over the fake against the data.
	if err := iotest.TestReader(io.NewSectionReader(eofAtEndReaderAt{data}, 0, int64(len(data))), data); err != nil {
		t.Errorf("eofAtEndReaderAt: %v", err)
	}
	// The others fail on purpose but keep the contract: the bytes they
	// return are right, and a short read comes with an error.
	for _, ra := range []io.ReaderAt{halfReaderAt{data}, dataErrReaderAt{data, 50}} {
		for off := int64(0); off <= int64(len(data))+1; off++ {
			for _, size := range []int{0, 1, 2, 7, 64, 200} {
				p := make([]byte, size)
				n, err := ra.ReadAt(p, off)
				if n < 0 || n > size || (n < size && err == nil) {
					t.Fatalf("%T.ReadAt(%d bytes at %d) = %d, %v", ra, size, off, n, err)
				}
				if n > 0 && !bytes.Equal(p[:n], data[off:off+int64(n)]) {
					t.Fatalf("%T.ReadAt(%d bytes at %d) returned wrong bytes", ra, size, off)
				}
			}
		}
	}
	r := dataErrReaderAt{data, 50}
	p := make([]byte, 60)
	if n, err := r.ReadAt(p, 0); n != 50 || !errors.Is(err, errInjected) || !bytes.Equal(p[:n], data[:50]) {
		t.Errorf("dataErrReaderAt.ReadAt = %d, %v", n, err)
	}
}

func TestReaderThroughFakes(t *testing.T) {
	dir := t.TempDir()
	recs := genRecords(testID.Base, 400, 1000)
	st := writeSegment(t, dir, testID, smallIndex, recs)
	files := readFiles(t, dir, testID)
	offs, times := parsedIndexes(t, dir, testID)
	pos := positions(recs)

	check := func(t *testing.T, r *Reader) {
		t.Helper()
		for _, from := range []int64{testID.Base, testID.Base + 1, testID.Base + 77, testID.Base + 399, testID.Base + 400} {
			for _, maxBytes := range []int{0, 1000, 1 << 20} {
				got, err := r.Read(from, 1<<20, maxBytes)
				if err != nil {
					t.Fatalf("Read(%d, %d): %v", from, maxBytes, err)
				}
				checkRecords(t, fmt.Sprintf("Read(%d, %d)", from, maxBytes), got, expectRead(recs, from, 1<<20, maxBytes))
			}
		}
		next, lastTS, err := r.Verify()
		if err != nil || next != st.NextOffset || lastTS != st.LastTS {
			t.Fatalf("Verify = %d, %d, %v", next, lastTS, err)
		}
		off, _, ok, err := r.OffsetForTime(recs[200].Timestamp)
		if err != nil || !ok || off > recs[200].Offset || recs[off-testID.Base].Timestamp != recs[200].Timestamp {
			t.Fatalf("OffsetForTime = %d, %v, %v", off, ok, err)
		}
		if hdr, err := ReadFileHeader(r.ra); err != nil || hdr.BaseOffset != testID.Base {
			t.Fatalf("ReadFileHeader = %+v, %v", hdr, err)
		}
	}
	t.Run("bytes.Reader", func(t *testing.T) {
		check(t, NewReader(bytes.NewReader(files.log), testID, st.Size, offs, times))
	})
	t.Run("io.EOF with full reads", func(t *testing.T) {
		check(t, NewReader(eofAtEndReaderAt{files.log}, testID, st.Size, offs, times))
	})
	t.Run("half reads", func(t *testing.T) {
		// Short reads come with an error: a reader either returns the right
		// records or that error, never wrong records.
		r := NewReader(halfReaderAt{files.log}, testID, st.Size, offs, times)
		for from := testID.Base; from <= st.NextOffset; from += 7 {
			got, err := r.Read(from, 1<<20, 1<<20)
			if err != nil {
				if !errors.Is(err, errHalf) {
					t.Fatalf("Read(%d): %v, want errHalf", from, err)
				}
				continue
			}
			checkRecords(t, fmt.Sprintf("Read(%d)", from), got, expectRead(recs, from, 1<<20, 1<<20))
		}
		if _, _, err := r.Verify(); err != nil && !errors.Is(err, errHalf) {
			t.Fatalf("Verify: %v", err)
		}
	})
	t.Run("error mid-file", func(t *testing.T) {
		at := pos[300] + 10 // inside record 300
		r := NewReader(dataErrReaderAt{files.log, at}, testID, st.Size, offs, times)
		// Below the failure point reads work.
		got, err := r.Read(testID.Base, 100, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, "below the failure", got, recs[:100])
		got, err = r.Read(testID.Base+250, 50, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, "just below the failure", got, recs[250:300])
		// Across it the error surfaces, through the index or not.
		for _, from := range []int64{testID.Base, testID.Base + 299, testID.Base + 300, testID.Base + 350} {
			if _, err := r.Read(from, 1<<20, 1<<30); !errors.Is(err, errInjected) {
				t.Errorf("Read(%d) across the failure: %v, want the injected error", from, err)
			}
		}
		if _, _, err := r.Verify(); !errors.Is(err, errInjected) {
			t.Errorf("Verify: %v, want the injected error", err)
		}
		if _, _, _, err := r.OffsetForTime(recs[399].Timestamp); !errors.Is(err, errInjected) {
			t.Errorf("OffsetForTime: %v, want the injected error", err)
		}
		// Recover must not mistake a read error for a torn tail.
		rdir := t.TempDir()
		copyDir(t, dir, rdir)
		ffs := &readErrFS{at: at, name: testID.Name(KindLog)}
		for _, committed := range []int64{st.Size, Unknown} {
			if _, err := Recover(rdir, testID, committed, Options{IndexIntervalBytes: 512, FS: ffs}); !errors.Is(err, errInjected) {
				t.Errorf("Recover(%d) with a read error: %v, want the injected error", committed, err)
			}
			sameFiles(t, "after Recover with a read error", readFiles(t, rdir, testID), files)
		}
	})
}

// readErrFS opens real files whose ReadAt fails at and past byte at of the
// file called name.
type readErrFS struct {
	OSFS
	at   int64
	name string
}

func (fs *readErrFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != fs.name {
		return f, err
	}
	return &readErrFile{File: f, at: fs.at}, nil
}

type readErrFile struct {
	*os.File
	at int64
}

func (f *readErrFile) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= f.at {
		return f.File.ReadAt(p, off)
	}
	if off >= f.at {
		return 0, errInjected
	}
	n, err := f.File.ReadAt(p[:f.at-off], off)
	if err != nil {
		return n, err
	}
	return n, errInjected
}
