package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/tierlog/tierlog/pkg/index"
)

// scanChunk is how many bytes a scan reads at a time.
const scanChunk = 256 << 10

// scanBufs recycles scan buffers: a fetch would otherwise allocate (and
// zero) 256 KiB. Records handed to scan callbacks alias the buffer, so
// callers copy what they keep (Read does).
var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanChunk); return &b }}

// errStop ends a scan early without error.
var errStop = errors.New("stop")

// errStaleHint ends a scan that an index entry started at the wrong place.
var errStaleHint = errors.New("segment: index entry does not match its record")

// scan decodes records in [pos, limit) of ra, checking CRCs and that offsets
// are dense from want (want < 0: take the first record's offset). It calls fn
// with each record (Key and Value alias a buffer reused after fn returns) and
// the record's position. It returns the position after the last record it
// decoded and the offset after it. A record that does not fit below limit is
// ErrTruncated; fn returning errStop ends the scan cleanly. fn must not keep
// the *Record: it is reused for the next record.
func scan(ra io.ReaderAt, pos, limit, want int64, fn func(r *Record, pos int64) error) (int64, int64, error) {
	var buf []byte
	var pooled *[]byte // returned to scanBufs when the scan ends
	defer func() {
		if pooled != nil {
			scanBufs.Put(pooled)
		}
	}()
	bufPos := pos // file position of buf[0]
	fill := func(need int) error {
		if int64(need) > limit-pos {
			return fmt.Errorf("%w: record at position %d needs %d bytes, %d left below %d", ErrTruncated, pos, need, limit-pos, limit)
		}
		n := int(min(int64(max(need, scanChunk)), limit-pos))
		if cap(buf) < n {
			if n <= scanChunk && pooled == nil {
				pooled = scanBufs.Get().(*[]byte)
				buf = (*pooled)[:0]
			} else {
				buf = make([]byte, n)
			}
		}
		m, err := ra.ReadAt(buf[:n], pos)
		buf, bufPos = buf[:m], pos
		if m < need {
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("segment: read at %d: %w", pos, err)
			}
			return fmt.Errorf("%w: file ends at %d, before limit %d", ErrTruncated, pos+int64(m), limit)
		}
		return nil
	}
	// One Record for the whole scan: fn gets a pointer to it, which makes
	// it escape, and a Record per iteration would be an allocation per
	// record.
	var r Record
	for pos < limit {
		off := int(pos - bufPos)
		if len(buf)-off < RecordHeaderSize {
			if err := fill(RecordHeaderSize); err != nil {
				return pos, want, err
			}
			continue
		}
		h, err := DecodeRecordHeader(buf[off:])
		if err != nil {
			return pos, want, fmt.Errorf("at position %d: %w", pos, err)
		}
		if len(buf)-off < h.Len() {
			if err := fill(h.Len()); err != nil {
				return pos, want, err
			}
			continue
		}
		var n int
		r, n, err = DecodeRecord(buf[off:])
		if err != nil {
			return pos, want, fmt.Errorf("at position %d: %w", pos, err)
		}
		if want >= 0 && r.Offset != want {
			return pos, want, fmt.Errorf("%w: offset %d at position %d, want %d", ErrCorrupt, r.Offset, pos, want)
		}
		if err := fn(&r, pos); err != nil {
			if errors.Is(err, errStop) {
				return pos, r.Offset, nil
			}
			return pos, want, err
		}
		pos += int64(n)
		want = r.Offset + 1
	}
	return pos, want, nil
}

// Reader reads the committed records of one segment through an io.ReaderAt
// and the segment's sparse indexes. It is safe for concurrent use.
type Reader struct {
	ra    io.ReaderAt
	id    ID
	limit int64
	offs  index.Offsets
	times index.Times
}

// NewReader reads segment id from ra, below limit (the committed length),
// using the given index entries (entries at or past limit are ignored).
func NewReader(ra io.ReaderAt, id ID, limit int64, offs index.Offsets, times index.Times) *Reader {
	offs = sanitize(offs, limit)
	return &Reader{ra: ra, id: id, limit: limit, offs: offs, times: matchTimes(times, offs)}
}

// OpenReader opens segment id in dir for reading below limit, and returns the
// Reader and the file to close when done.
func OpenReader(dir string, id ID, limit int64, fsys FS) (*Reader, io.Closer, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	log, err := fsys.OpenFile(id.Path(dir, KindLog), os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("segment: open %s: %w", id.Name(KindLog), err)
	}
	offs, times := readIndexes(fsys, dir, id)
	return NewReader(log, id, limit, offs, times), log, nil
}

// ReadIndexes reads both index files of segment id in dir: the valid
// prefix of each, empty if a file is missing or unreadable. Callers keep
// them to build Readers with NewReader without reading them again.
func ReadIndexes(fsys FS, dir string, id ID) (index.Offsets, index.Times) {
	if fsys == nil {
		fsys = OSFS{}
	}
	return readIndexes(fsys, dir, id)
}

// readIndexes reads both index files of id. Index files are hints: a missing
// or damaged one costs a longer scan, never a wrong answer.
func readIndexes(fsys FS, dir string, id ID) (index.Offsets, index.Times) {
	var offs index.Offsets
	var times index.Times
	if f, err := fsys.OpenFile(id.Path(dir, KindIndex), os.O_RDONLY, 0); err == nil {
		offs, _ = readOffsets(f)
		f.Close()
	}
	if f, err := fsys.OpenFile(id.Path(dir, KindTimeIndex), os.O_RDONLY, 0); err == nil {
		times, _ = readTimes(f)
		f.Close()
	}
	return offs, times
}

func readAll(f File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

func readOffsets(f File) (index.Offsets, error) {
	b, err := readAll(f)
	if err != nil {
		return nil, fmt.Errorf("segment: read offset index: %w", err)
	}
	offs, _ := index.ParseOffsets(b) // the valid prefix is what we use
	return offs, nil
}

func readTimes(f File) (index.Times, error) {
	b, err := readAll(f)
	if err != nil {
		return nil, fmt.Errorf("segment: read time index: %w", err)
	}
	times, _ := index.ParseTimes(b)
	return times, nil
}

// sanitize keeps the prefix of offset entries that can be real: each points
// past the first record and below limit.
func sanitize(offs index.Offsets, limit int64) index.Offsets {
	offs = offs.Below(limit)
	for i, e := range offs {
		if e.Rel == 0 || e.Pos < FileHeaderSize+RecordHeaderSize {
			return offs[:i]
		}
	}
	return offs
}

// matchTimes keeps the prefix of time entries that pair with offset entries:
// the writer adds both together, so entry i of each names the same record.
func matchTimes(times index.Times, offs index.Offsets) index.Times {
	n := min(len(times), len(offs))
	for i := 0; i < n; i++ {
		if times[i].Rel != offs[i].Rel {
			return times[:i]
		}
	}
	return times[:n]
}

// ID is the segment the reader reads.
func (r *Reader) ID() ID { return r.id }

// Limit is the committed length the reader stops at.
func (r *Reader) Limit() int64 { return r.limit }

// startFor returns a position at or before the record with offset off, and
// the offset of the record there.
func (r *Reader) startFor(off int64) (int64, int64) {
	if off > r.id.Base {
		if e, ok := r.offs.Floor(uint32(min(off-r.id.Base, 1<<32-1))); ok {
			return int64(e.Pos), r.id.Base + int64(e.Rel)
		}
	}
	return FileHeaderSize, r.id.Base
}

// Read returns up to maxRecords records with offsets from from on, stopping
// before the total encoded size passes maxBytes, but always returning at
// least one record if one exists at or after from. The records own their
// memory.
func (r *Reader) Read(from int64, maxRecords, maxBytes int) ([]Record, error) {
	if maxRecords <= 0 {
		return nil, nil
	}
	pos, want := r.startFor(from)
	var out []Record
	var slab []byte
	total := 0
	_, _, err := scan(r.ra, pos, r.limit, want, func(rec *Record, _ int64) error {
		if rec.Offset < from {
			return nil
		}
		n := EncodedSize(rec)
		if len(out) > 0 && total+n > maxBytes {
			return errStop
		}
		total += n
		if out == nil {
			// Guess the count from the first record, so a run of
			// similar records costs one allocation, not a doubling
			// series; the cap bounds the waste when the guess is off.
			out = make([]Record, 0, max(1, min(maxRecords, maxBytes/n+1, 4096)))
		}
		out = append(out, copyRecord(&slab, rec))
		if len(out) >= maxRecords {
			return errStop
		}
		return nil
	})
	if err != nil && r.indexed(pos) {
		// The index entry may be a stale hint: retry from the file header.
		return r.unindexed().Read(from, maxRecords, maxBytes)
	}
	return out, wrapID(r.id, err)
}

// indexed reports whether pos came from an index entry.
func (r *Reader) indexed(pos int64) bool { return pos != FileHeaderSize }

func (r *Reader) unindexed() *Reader {
	return &Reader{ra: r.ra, id: r.id, limit: r.limit}
}

// copyRecord copies rec's key and value into a shared slab so one
// allocation serves many small records.
func copyRecord(slab *[]byte, rec *Record) Record {
	out := Record{Offset: rec.Offset, Timestamp: rec.Timestamp}
	n := len(rec.Key) + len(rec.Value)
	// A nil slab would turn an empty key into an absent one and an empty
	// value into a tombstone: sub-slices of a non-nil slab are never nil.
	if *slab == nil || cap(*slab)-len(*slab) < n {
		*slab = make([]byte, 0, max(n, 64<<10))
	}
	s := *slab
	if rec.Key != nil {
		s = append(s, rec.Key...)
		out.Key = s[len(s)-len(rec.Key) : len(s) : len(s)]
	}
	if rec.Value != nil {
		s = append(s, rec.Value...)
		out.Value = s[len(s)-len(rec.Value) : len(s) : len(s)]
	}
	*slab = s
	return out
}

// OffsetForTime returns the first record with timestamp >= ts, and false if
// every record in the segment is older.
func (r *Reader) OffsetForTime(ts int64) (offset, timestamp int64, ok bool, err error) {
	pos, want := int64(FileHeaderSize), r.id.Base
	if e, found := r.times.Before(ts); found {
		if oe, f := r.offs.Floor(e.Rel); f && oe.Rel == e.Rel {
			pos, want = int64(oe.Pos), r.id.Base+int64(oe.Rel)
		}
	}
	start := want
	_, _, err = scan(r.ra, pos, r.limit, want, func(rec *Record, _ int64) error {
		if rec.Timestamp >= ts {
			if rec.Offset == start && pos != FileHeaderSize {
				// The time index said this record is older than ts and
				// it is not: the hint lies, and an earlier record may
				// be the answer.
				return errStaleHint
			}
			offset, timestamp, ok = rec.Offset, rec.Timestamp, true
			return errStop
		}
		return nil
	})
	if err != nil && pos != FileHeaderSize {
		return r.unindexed().OffsetForTime(ts)
	}
	return offset, timestamp, ok, wrapID(r.id, err)
}

// Verify scans every record below the limit, checking CRCs and dense
// offsets, and returns the offset after the last record.
func (r *Reader) Verify() (next int64, lastTS int64, err error) {
	lastTS = -1
	end, next, err := scan(r.ra, FileHeaderSize, r.limit, r.id.Base, func(rec *Record, _ int64) error {
		if rec.Timestamp < lastTS {
			return fmt.Errorf("%w: timestamp %d before %d at offset %d", ErrCorrupt, rec.Timestamp, lastTS, rec.Offset)
		}
		lastTS = rec.Timestamp
		return nil
	})
	if err == nil && end != r.limit {
		err = fmt.Errorf("%w: records end at %d, limit %d", ErrCorrupt, end, r.limit)
	}
	return next, lastTS, wrapID(r.id, err)
}

func wrapID(id ID, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("segment %s: %w", id, err)
}
