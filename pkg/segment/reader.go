package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tierlog/tierlog/pkg/index"
)

// scanChunk is how many bytes a scan reads at a time.
const scanChunk = 256 << 10

// maxGuess bounds the record slice a Read allocates up front (from the
// first record's size and the limits); more records grow it.
const maxGuess = 16384

// readSlack is what a Read reads beyond its byte limit in its first read:
// the scan starts at the index entry before the wanted offset (an index
// interval earlier at most), and the last record may end past the limit.
const readSlack = 64 << 10

// maxFirstRead bounds the first read of a Read with a large byte limit;
// later reads are as large again.
const maxFirstRead = 8 << 20

// scanBufs recycles scan buffers: a fetch would otherwise allocate (and
// zero) 256 KiB. Records handed to scan callbacks alias the buffer, so
// callers copy what they keep (Read does).
var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanChunk); return &b }}

// errStop ends a scan early without error.
var errStop = errors.New("stop")

// errStaleHint ends a scan that an index entry started at the wrong place.
var errStaleHint = errors.New("segment: index entry does not match its record")

// damageAt is how scan reports a record that fails its checks: the record
// with offset want was expected at position pos. Read errors are not damage
// and are returned as they are.
type damageAt struct {
	pos, want int64
	eof       bool  // the file ends there, before the limit
	err       error // wraps ErrCorrupt or ErrTruncated
}

func (d *damageAt) Error() string { return fmt.Sprintf("at position %d: %v", d.pos, d.err) }
func (d *damageAt) Unwrap() error { return d.err }

// scan decodes records in [pos, limit) of ra, checking CRCs and that offsets
// are dense from want. It calls fn with each record (Key, Value and the
// checked headers block, r.raw, alias a buffer reused after fn returns;
// Headers is not built) and the record's position. It returns the
// position after the last record it decoded and the offset after it. A
// record that fails its checks ends the scan with a *damageAt: a record
// that does not fit below limit, or bytes that end before it, are
// ErrTruncated; any other flaw is ErrCorrupt. fn returning errStop ends the
// scan cleanly; any other error of fn is returned as it is. fn must not keep
// the *Record: it is reused for the next record.
func scan(ra io.ReaderAt, pos, limit, want int64, fn func(r *Record, pos int64) error) (int64, int64, error) {
	return scanChunked(ra, pos, limit, want, scanChunk, false, nil, fn)
}

// scanChunked is scan with a first read of chunk bytes (at most scanChunk
// unless owned), doubling with each read after it: for scans that may stop
// early. With owned, every read goes into a fresh buffer that is never
// written again, so fn may keep the Key and Value slices it is handed: a
// read that returns records hands out slices of what it read instead of a
// copy of each record. Those buffers come from sc (make when nil).
func scanChunked(ra io.ReaderAt, pos, limit, want int64, chunk int, owned bool, sc *Scratch, fn func(r *Record, pos int64) error) (int64, int64, error) {
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
			return &damageAt{pos: pos, want: want, err: fmt.Errorf("%w: record at position %d needs %d bytes, %d left below %d", ErrTruncated, pos, need, limit-pos, limit)}
		}
		n := int(min(int64(max(need, chunk)), limit-pos))
		if owned {
			buf = sc.bytes(n) // records handed out may alias the last one
		} else {
			chunk = min(2*chunk, scanChunk)
		}
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
			return &damageAt{pos: pos, want: want, eof: true, err: fmt.Errorf("%w: file ends at %d, before limit %d", ErrTruncated, pos+int64(m), limit)}
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
			return pos, want, &damageAt{pos: pos, want: want, err: err}
		}
		if len(buf)-off < h.Len() {
			if err := fill(h.Len()); err != nil {
				return pos, want, err
			}
			continue
		}
		n, err := decodeBody(buf[off:], h, &r)
		if err != nil {
			return pos, want, &damageAt{pos: pos, want: want, err: err}
		}
		if r.Offset != want {
			return pos, want, &damageAt{pos: pos, want: want, err: fmt.Errorf("%w: offset %d at position %d, want %d", ErrCorrupt, r.Offset, pos, want)}
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
//
// Reads serve only records that pass every check (CRC, dense offsets, below
// the limit) and go around damage: see the package doc ("Damage").
type Reader struct {
	ra    io.ReaderAt
	id    ID
	limit int64
	offs  index.Offsets
	times index.Times
	hdr   atomic.Pointer[HeaderVerdict] // set by the first use
}

// HeaderVerdict is what the check of a file header found. A header never
// changes after Create, so a caller that re-opens a file per read may keep
// one reader's verdict (Reader.HeaderVerdict) and hand it to the next
// (NewReaderChecked) rather than read the header again.
type HeaderVerdict struct {
	err     error      // nil: intact and naming the reader's segment
	foreign bool       // intact but not this segment's: reads refuse
	hdr     FileHeader // the header, when err is nil
}

// orderedTimes reports whether the segment's timestamps are known never to
// decrease: an intact header without FlagCreateTime. A damaged header
// leaves it unknown, and the answer is no.
func (v *HeaderVerdict) orderedTimes() bool { return v.err == nil && !v.hdr.CreateTime() }

// NewReader reads segment id from ra, below limit (the committed length),
// using the given index entries (entries at or past limit are ignored).
func NewReader(ra io.ReaderAt, id ID, limit int64, offs index.Offsets, times index.Times) *Reader {
	offs = sanitize(offs, limit)
	return &Reader{ra: ra, id: id, limit: limit, offs: offs, times: matchTimes(times, offs)}
}

// NewReaderChecked is NewReader with the header verdict of an earlier
// reader of the same file (nil: check it on first use, as NewReader does).
func NewReaderChecked(ra io.ReaderAt, id ID, limit int64, offs index.Offsets, times index.Times, v *HeaderVerdict) *Reader {
	r := NewReader(ra, id, limit, offs, times)
	if v != nil {
		r.hdr.Store(v)
	}
	return r
}

// HeaderVerdict returns what the reader's header check found, or nil if it
// has not checked (or could not read) the header yet.
func (r *Reader) HeaderVerdict() *HeaderVerdict { return r.hdr.Load() }

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

// CheckHeader checks the file header against the reader's segment: magic,
// version, header CRC, base offset and epoch. It returns nil if all hold,
// otherwise an error wrapping ErrCorrupt (or ErrTruncated for a file too
// short to hold a header). The header is read once, on the reader's first
// use; a read error is returned and not remembered.
//
// Read and OffsetForTime refuse to serve a file whose header is intact but
// names another segment or an unknown version (it is not this segment's
// file), and serve the records of a file whose header bytes are damaged:
// records verify themselves. Verify fails on either.
func (r *Reader) CheckHeader() error {
	v, err := r.header()
	if err != nil {
		return err
	}
	return v.err
}

func (r *Reader) header() (*HeaderVerdict, error) {
	if v := r.hdr.Load(); v != nil {
		return v, nil
	}
	b, err := readHeaderBytes(r.ra)
	if err != nil {
		return nil, wrapID(r.id, err)
	}
	h, foreign, err := checkFileHeader(b, r.id)
	v := &HeaderVerdict{err: wrapID(r.id, err), foreign: foreign, hdr: h}
	r.hdr.Store(v)
	return v, nil
}

// readable is the header check reads make: only a foreign header (or a
// failed read) stops them. It returns the verdict.
func (r *Reader) readable() (*HeaderVerdict, error) {
	v, err := r.header()
	if err != nil {
		return nil, err
	}
	if v.foreign {
		return nil, v.err
	}
	return v, nil
}

// startFor returns where a scan for offset from starts: at the last of the
// first n index entries at or before from if that lies past floorPos, else
// at floorPos (where the record with offset floorOff starts). entry is the
// index of the entry used, or -1.
func (r *Reader) startFor(from int64, n int, floorPos, floorOff int64) (pos, off int64, entry int) {
	if from > r.id.Base {
		rel := uint32(min(from-r.id.Base, 1<<32-1))
		i := sort.Search(n, func(i int) bool { return r.offs[i].Rel > rel }) - 1
		if i >= 0 && int64(r.offs[i].Pos) > floorPos {
			return int64(r.offs[i].Pos), r.id.Base + int64(r.offs[i].Rel), i
		}
	}
	return floorPos, floorOff, -1
}

// Read returns up to maxRecords records with offsets from from on, stopping
// before the total encoded size passes maxBytes, but always returning at
// least one record if one exists at or after from. The records own their
// memory: their keys and values are slices of one buffer the read filled
// (and, past its end, of the next), which nothing writes again.
//
// Damage ends a read early: records before it are returned with a nil
// error, like a short read, and a Read from the first damaged offset (or any
// offset before the next good record) returns no records and a
// *DamageError, which says where reading can go on. A Read from past the
// damage returns the records there.
func (r *Reader) Read(from int64, maxRecords, maxBytes int) ([]Record, error) {
	return r.ReadWith(from, maxRecords, maxBytes, nil)
}

// Scratch supplies the memory a read returns its records in, for a
// caller that is done with them before it reads again (a server that
// encodes an answer and throws the records away): Bytes returns n bytes to
// read into, Records a slice of length 0 and capacity at least n. A nil
// Scratch, or a nil func, allocates with make.
type Scratch struct {
	Bytes   func(n int) []byte
	Records func(n int) []Record
}

func (sc *Scratch) bytes(n int) []byte {
	if sc == nil || sc.Bytes == nil {
		return make([]byte, n)
	}
	return sc.Bytes(n)
}

func (sc *Scratch) records(n int) []Record {
	if sc == nil || sc.Records == nil {
		return make([]Record, 0, n)
	}
	return sc.Records(n)[:0]
}

// ReadWith is Read with its records and the bytes they alias in memory
// from sc; the caller reuses that memory only once it is done with them.
func (r *Reader) ReadWith(from int64, maxRecords, maxBytes int, sc *Scratch) ([]Record, error) {
	if maxRecords <= 0 {
		return nil, nil
	}
	if _, err := r.readable(); err != nil {
		return nil, err
	}
	var out []Record
	total := 0
	collect := func(rec *Record, _ int64) error {
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
			out = sc.records(max(1, min(maxRecords, maxBytes/n+1, maxGuess)))
		}
		out = append(out, ownedRecord(rec))
		if len(out) >= maxRecords {
			return errStop
		}
		return nil
	}
	entries := len(r.offs) // index entries a scan may start at
	floorPos, floorOff := int64(FileHeaderSize), r.id.Base
	for {
		pos, want, entry := r.startFor(from, entries, floorPos, floorOff)
		// One read for what the limits allow.
		first := int(min(r.limit-pos, int64(min(maxBytes, maxFirstRead))+readSlack))
		_, _, err := scanChunked(r.ra, pos, r.limit, want, max(first, RecordHeaderSize), true, sc, collect)
		var d *damageAt
		switch {
		case err == nil:
			return out, nil
		case !errors.As(err, &d):
			return out, wrapID(r.id, err)
		case len(out) > 0:
			return out, nil // the next Read, from the damage, reports it
		case entry >= 0 && d.pos == pos:
			// The entry's record fails its checks: a stale hint, or
			// damage right there. Start from an earlier entry.
			entries = entry
			continue
		}
		de, nextPos, err := r.damage(d)
		if err != nil {
			return nil, err
		}
		if de.Next < 0 || from < de.Next {
			return nil, de
		}
		floorPos, floorOff = nextPos, de.Next
	}
}

// ownedRecord is rec, decoded by a scan into a buffer nothing writes
// again, as a Read returns it: its headers built, their values slices of
// that buffer too.
func ownedRecord(rec *Record) Record {
	out := *rec
	if out.raw != nil {
		_, count, _ := headersBlockLen(out.raw)
		out.Headers = parseHeaders(out.raw, count, nil)
		out.raw = nil
	}
	return out
}

// OffsetForTime returns the first record with timestamp >= ts, and false if
// every record in the segment is older.
//
// The time index keeps, per entry, the largest timestamp up to its record,
// so every record up to the last entry older than ts is older too: the
// search starts there. It goes around damage, never through it. In a
// segment whose timestamps never decrease (append time), damaged records
// lie between the timestamps of the good records around them: if the
// first good record after the damage is older than ts, so were the damaged
// ones and the search goes on; if it is not, a damaged record could be the
// answer, and OffsetForTime returns the *DamageError rather than an offset
// that may be wrong (the answer lies in [First, Next] of the error). In a
// create-time segment (or one whose header is damaged, so its kind is not
// known) a damaged record's timestamp could be anything: damage met before
// the answer is returned the same way. Damage with no good record after it
// is returned the same way.
func (r *Reader) OffsetForTime(ts int64) (offset, timestamp int64, ok bool, err error) {
	v, err := r.readable()
	if err != nil {
		return 0, 0, false, err
	}
	ordered := v.orderedTimes()
	pos, want, hinted := int64(FileHeaderSize), r.id.Base, false
	if e, found := r.times.Before(ts); found {
		if oe, f := r.offs.Floor(e.Rel); f && oe.Rel == e.Rel {
			pos, want, hinted = int64(oe.Pos), r.id.Base+int64(oe.Rel), true
		}
	}
	var skipped *DamageError // damage just gone around
	for {
		start := want
		_, _, err := scan(r.ra, pos, r.limit, want, func(rec *Record, _ int64) error {
			if rec.Timestamp < ts {
				return nil
			}
			if rec.Offset == start {
				if hinted {
					// The time index said this record (and every
					// one before it) is older than ts and it is not:
					// the hint lies, and an earlier record may be
					// the answer.
					return errStaleHint
				}
				if skipped != nil {
					// A damaged record before this one may be the answer.
					return skipped
				}
			}
			offset, timestamp, ok = rec.Offset, rec.Timestamp, true
			return errStop
		})
		var d *damageAt
		switch {
		case err == nil:
			return offset, timestamp, ok, nil
		case errors.Is(err, errStaleHint) || (hinted && errors.As(err, &d) && d.pos == pos):
			// A lying hint, or its record fails its checks: start over
			// from the top of the file.
			pos, want, hinted = FileHeaderSize, r.id.Base, false
			continue
		case skipped != nil && err == error(skipped):
			return 0, 0, false, skipped
		case !errors.As(err, &d):
			return 0, 0, false, wrapID(r.id, err)
		}
		de, nextPos, err := r.damage(d)
		if err != nil {
			return 0, 0, false, err
		}
		if de.Next < 0 || !ordered {
			return 0, 0, false, de
		}
		pos, want, hinted, skipped = nextPos, de.Next, false, de
	}
}

// Verify scans every record below the limit, checking CRCs, dense offsets
// and, in an append-time segment, non-decreasing timestamps, then the file
// header, and returns the offset after the last good record and the
// largest timestamp. Damaged records are a *DamageError (wrapping
// ErrCorrupt or ErrTruncated); a damaged or foreign header is an error
// wrapping ErrCorrupt.
func (r *Reader) Verify() (next int64, lastTS int64, err error) {
	lastTS = -1
	ordered := false // a damaged header fails below, whatever the records say
	if v, err := r.header(); err == nil {
		ordered = v.orderedTimes()
	}
	end, next, err := scan(r.ra, FileHeaderSize, r.limit, r.id.Base, func(rec *Record, _ int64) error {
		if rec.Timestamp < lastTS && ordered {
			return fmt.Errorf("%w: timestamp %d before %d at offset %d", ErrCorrupt, rec.Timestamp, lastTS, rec.Offset)
		}
		lastTS = max(lastTS, rec.Timestamp)
		return nil
	})
	var d *damageAt
	if errors.As(err, &d) {
		de, _, derr := r.damage(d)
		if derr != nil {
			return next, lastTS, derr
		}
		return next, lastTS, de
	}
	if err == nil && end != r.limit {
		err = fmt.Errorf("%w: records end at %d, limit %d", ErrCorrupt, end, r.limit)
	}
	if err == nil {
		return next, lastTS, r.CheckHeader()
	}
	return next, lastTS, wrapID(r.id, err)
}

func wrapID(id ID, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("segment %s: %w", id, err)
}
