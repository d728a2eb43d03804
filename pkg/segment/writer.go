package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/tierlog/tierlog/pkg/index"
)

// ErrClosed is returned by a Writer after Close, and wraps the first error
// that broke it (a failed write or fsync leaves the files in a state only
// Recover can judge, so the Writer refuses further use).
var ErrClosed = errors.New("segment: writer closed")

// ErrOldVersion is Open's answer for a segment of an older format version:
// it is read as it is but never continued (its records could not carry
// headers); the caller seals it and writes on in a new segment.
var ErrOldVersion = errors.New("segment: older format version")

// Options tune a Writer. The zero value is usable.
type Options struct {
	// IndexIntervalBytes is the spacing of sparse index entries.
	// Zero means index.DefaultIntervalBytes.
	IndexIntervalBytes int
	// FS opens files. Nil means OSFS.
	FS FS
	// CreateTime makes Create mark the segment as a create-time topic's
	// (FlagCreateTime): timestamps are the producers' and may decrease.
	// Without it Append refuses a timestamp below an earlier one (I6).
	// A reopened segment goes by its file header.
	CreateTime bool
}

func (o Options) withDefaults() Options {
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = index.DefaultIntervalBytes
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	return o
}

// Writer appends batches to one segment's files at explicit positions.
// It is not safe for concurrent use.
type Writer struct {
	id   ID
	dir  string
	opts Options

	log, idx, tidx File

	size     int64 // bytes of .log written (header included)
	next     int64 // offset of the next record
	lastTS   int64 // largest timestamp so far, or -1
	idxSize  int64
	tidxSize int64
	since    int64 // record bytes since the last index entry
	entries  int   // offset index entries written

	buf, ibuf, tbuf []byte
	err             error // sticky: set by the first failed write or sync
}

// Create makes a new segment: it creates the three files (failing if any
// exists: a name is used by one writer only), writes the .log header, and
// makes both durable before it returns: it fsyncs the .log and then the
// directory (opts.FS.SyncDir), so a commit may name the segment as soon as
// Create returns. If a write or fsync fails, Create fails and leaves the
// files it created as they are (Recover with an Unknown length makes an
// empty segment of them; a caller that retries under the same name removes
// them first); it never touches other files.
func Create(dir string, id ID, opts Options) (*Writer, error) {
	opts = opts.withDefaults()
	w := &Writer{id: id, dir: dir, opts: opts, next: id.Base, lastTS: -1}
	var err error
	flag := os.O_RDWR | os.O_CREATE | os.O_EXCL
	if w.log, err = opts.FS.OpenFile(id.Path(dir, KindLog), flag, 0o644); err != nil {
		return nil, fmt.Errorf("segment: create %s: %w", id.Name(KindLog), err)
	}
	if w.idx, err = opts.FS.OpenFile(id.Path(dir, KindIndex), flag, 0o644); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("segment: create %s: %w", id.Name(KindIndex), err)
	}
	if w.tidx, err = opts.FS.OpenFile(id.Path(dir, KindTimeIndex), flag, 0o644); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("segment: create %s: %w", id.Name(KindTimeIndex), err)
	}
	hdr := AppendFileHeader(nil, fileHeaderFor(id, opts))
	if _, err := w.log.WriteAt(hdr, 0); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("segment: write header of %s: %w", id, err)
	}
	if err := w.log.Sync(); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("segment: fsync %s: %w", id.Name(KindLog), err)
	}
	if err := opts.FS.SyncDir(dir); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("segment: fsync directory %s after creating %s: %w", dir, id, err)
	}
	w.size = FileHeaderSize
	return w, nil
}

// fileHeaderFor is the header Create writes for id.
func fileHeaderFor(id ID, opts Options) FileHeader {
	h := FileHeader{Version: Version, BaseOffset: id.Base, Epoch: id.Epoch}
	if opts.CreateTime {
		h.Flags |= FlagCreateTime
	}
	return h
}

// State is what a caller keeps about a segment to reopen it: the committed
// length of its .log, the next offset and the largest timestamp (the last
// one, where timestamps never decrease).
type State struct {
	Size       int64 // committed bytes of .log, header included
	NextOffset int64
	LastTS     int64 // largest timestamp; -1 when the segment has no records
}

// Open reopens an existing segment for appending, after Recover has brought
// its files to a committed state st (Recover returns st). The file header
// decides whether timestamps may decrease (opts.CreateTime is not used). A
// segment of an older format version is not continued: ErrOldVersion.
func Open(dir string, id ID, st State, opts Options) (*Writer, error) {
	opts = opts.withDefaults()
	w := &Writer{id: id, dir: dir, opts: opts, size: st.Size, next: st.NextOffset, lastTS: st.LastTS}
	var err error
	for _, f := range []struct {
		dst *File
		k   Kind
	}{{&w.log, KindLog}, {&w.idx, KindIndex}, {&w.tidx, KindTimeIndex}} {
		if *f.dst, err = opts.FS.OpenFile(id.Path(dir, f.k), os.O_RDWR, 0o644); err != nil {
			w.closeFiles()
			return nil, fmt.Errorf("segment: open %s: %w", id.Name(f.k), err)
		}
	}
	hb, err := readHeaderBytes(w.log)
	if err != nil {
		w.closeFiles()
		return nil, wrapID(id, err)
	}
	h, _, err := checkFileHeader(hb, id)
	if err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("segment: open %s: %w", id, err)
	}
	if h.Version != Version {
		w.closeFiles()
		return nil, fmt.Errorf("segment: open %s: %w %d (current %d)", id, ErrOldVersion, h.Version, Version)
	}
	w.opts.CreateTime = h.CreateTime()
	offs, err := readOffsets(w.idx)
	if err != nil {
		w.closeFiles()
		return nil, err
	}
	times, err := readTimes(w.tidx)
	if err != nil {
		w.closeFiles()
		return nil, err
	}
	w.entries = len(offs)
	w.idxSize = int64(len(offs)) * index.OffsetEntrySize
	w.tidxSize = int64(len(times)) * index.TimeEntrySize
	last := int64(FileHeaderSize)
	if len(offs) > 0 {
		last = int64(offs[len(offs)-1].Pos)
	}
	w.since = w.size - last
	return w, nil
}

// ID is the segment's name.
func (w *Writer) ID() ID { return w.id }

// Size is the number of .log bytes written so far, header included.
func (w *Writer) Size() int64 { return w.size }

// NextOffset is the offset the next appended record must carry.
func (w *Writer) NextOffset() int64 { return w.next }

// State is the writer's state after its last Append.
func (w *Writer) State() State { return State{Size: w.size, NextOffset: w.next, LastTS: w.lastTS} }

// Append writes recs, which must carry dense offsets from NextOffset and,
// unless the segment is a create-time one, non-decreasing timestamps, with
// one positioned write to .log and at most one to each index. A time index
// entry carries the largest timestamp up to its record (as Kafka's). Nothing is durable until Sync. On error the Writer is
// broken and must be closed; the files are then judged by Recover.
func (w *Writer) Append(recs []Record) error {
	if w.err != nil {
		return w.err
	}
	if len(recs) == 0 {
		return nil
	}
	need := 0
	for i := range recs {
		need += EncodedSize(&recs[i])
	}
	if w.buf == nil {
		w.buf = takeAppendBuf(need)
	}
	w.buf, w.ibuf, w.tbuf = slices.Grow(w.buf[:0], need), w.ibuf[:0], w.tbuf[:0]
	pos, next, lastTS, since := w.size, w.next, w.lastTS, w.since
	interval := int64(w.opts.IndexIntervalBytes)
	for i := range recs {
		r := &recs[i]
		if r.Offset != next {
			return fmt.Errorf("segment: append offset %d, want %d", r.Offset, next)
		}
		if r.Timestamp < lastTS && !w.opts.CreateTime {
			return fmt.Errorf("segment: append timestamp %d before %d at offset %d", r.Timestamp, lastTS, r.Offset)
		}
		lastTS = max(lastTS, r.Timestamp)
		if since >= interval {
			rel := uint32(r.Offset - w.id.Base)
			w.ibuf = index.AppendOffset(w.ibuf, index.OffsetEntry{Rel: rel, Pos: uint32(pos)})
			w.tbuf = index.AppendTime(w.tbuf, index.TimeEntry{Timestamp: lastTS, Rel: rel})
			since = 0
		}
		var err error
		before := len(w.buf)
		if w.buf, err = AppendRecord(w.buf, r); err != nil {
			return err
		}
		n := int64(len(w.buf) - before)
		pos += n
		since += n
		next++
	}
	if pos > maxSegmentSize {
		return fmt.Errorf("segment: %s would grow to %d bytes, over %d", w.id, pos, int64(maxSegmentSize))
	}
	if err := writeFull(w.log, w.buf, w.size); err != nil {
		return w.fail(fmt.Errorf("segment: write %s at %d: %w", w.id.Name(KindLog), w.size, err))
	}
	if len(w.ibuf) > 0 {
		if err := writeFull(w.idx, w.ibuf, w.idxSize); err != nil {
			return w.fail(fmt.Errorf("segment: write %s: %w", w.id.Name(KindIndex), err))
		}
		if err := writeFull(w.tidx, w.tbuf, w.tidxSize); err != nil {
			return w.fail(fmt.Errorf("segment: write %s: %w", w.id.Name(KindTimeIndex), err))
		}
		w.idxSize += int64(len(w.ibuf))
		w.tidxSize += int64(len(w.tbuf))
		w.entries += len(w.ibuf) / index.OffsetEntrySize
	}
	w.size, w.next, w.lastTS, w.since = pos, next, lastTS, since
	return nil
}

// maxSegmentSize keeps positions within the uint32 of an index entry.
const maxSegmentSize = 1<<32 - 1

// Sync makes everything appended so far durable: it fsyncs the .log file.
// Index files are synced by Seal and Close.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if err := w.log.Sync(); err != nil {
		return w.fail(fmt.Errorf("segment: fsync %s: %w", w.id.Name(KindLog), err))
	}
	return nil
}

// Close fsyncs all three files (a clean close leaves complete indexes) and
// closes them. A broken Writer closes without syncing and returns nil: its
// error was already reported.
func (w *Writer) Close() error {
	if w.log == nil {
		return nil
	}
	var err error
	if w.err == nil {
		for _, f := range []File{w.log, w.idx, w.tidx} {
			if e := f.Sync(); e != nil && err == nil {
				err = fmt.Errorf("segment: fsync %s on close: %w", w.id, e)
			}
		}
	}
	if e := w.closeFiles(); e != nil && err == nil {
		err = e
	}
	w.err = ErrClosed
	return err
}

// Release closes the files without syncing the indexes: for a writer whose
// appends are already synced and committed, and whose indexes, being hints,
// may be completed by the next Recover.
func (w *Writer) Release() error {
	err := w.closeFiles()
	w.err = ErrClosed
	return err
}

// appendBufs hands the encoding buffer of a closed Writer to the next
// one: a partition rolls a segment every few hundred batches, and each
// new Writer would otherwise grow its own buffer to the batch size again.
var appendBufs sync.Pool // *[]byte

// maxAppendBuf bounds the buffers appendBufs keeps.
const maxAppendBuf = 8 << 20

func takeAppendBuf(need int) []byte {
	if p, _ := appendBufs.Get().(*[]byte); p != nil && cap(*p) >= need {
		return (*p)[:0]
	}
	return nil
}

func (w *Writer) giveBackBuf() {
	if b := w.buf; cap(b) > 0 && cap(b) <= maxAppendBuf {
		appendBufs.Put(&b)
	}
	w.buf = nil
}

func (w *Writer) fail(err error) error {
	w.err = fmt.Errorf("%w: %w", ErrClosed, err)
	return err
}

func (w *Writer) closeFiles() error {
	w.giveBackBuf()
	var err error
	for _, f := range []*File{&w.log, &w.idx, &w.tidx} {
		if *f != nil {
			if e := (*f).Close(); e != nil && err == nil {
				err = fmt.Errorf("segment: close %s: %w", w.id, e)
			}
			*f = nil
		}
	}
	return err
}

// writeFull writes all of b at off, turning a short write into an error.
func writeFull(f io.WriterAt, b []byte, off int64) error {
	n, err := f.WriteAt(b, off)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}
