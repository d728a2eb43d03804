package segment

import (
	"errors"
	"fmt"
	"io"
	"sort"
)

// DamageError reports committed records of a segment that fail their checks:
// a CRC mismatch, an impossible header, a broken offset sequence, a record
// that runs past the committed length, or a file that ends before it.
// Offsets [First, Next) cannot be served; reading can go on at Next.
// errors.Is(err, ErrCorrupt) or errors.Is(err, ErrTruncated) holds, as Err
// says.
type DamageError struct {
	ID    ID
	First int64 // first damaged offset: the record expected at Pos
	Next  int64 // offset of the first record after the damage that passes every check; -1 if none does below the limit
	Pos   int64 // byte position in the .log where the damage starts
	Err   error // what the check found; wraps ErrCorrupt or ErrTruncated
}

func (e *DamageError) Error() string {
	if e.Next < 0 {
		return fmt.Sprintf("segment %s: damaged from offset %d (byte %d), nothing readable after it: %v", e.ID, e.First, e.Pos, e.Err)
	}
	return fmt.Sprintf("segment %s: offsets %d to %d damaged (from byte %d), readable again from %d: %v", e.ID, e.First, e.Next-1, e.Pos, e.Next, e.Err)
}

// Unwrap returns Err, so errors.Is sees ErrCorrupt or ErrTruncated.
func (e *DamageError) Unwrap() error { return e.Err }

// Bounds on the work of one resync, which reads at most resyncWorkFactor
// times the bytes between the damage and the next checked boundary, plus
// resyncWorkSlack. Genuine data costs about one read of that stretch: the
// search reads it once, and each candidate it follows is a genuine record
// whose chain runs to the boundary or breaks at the next damage, where the
// search goes on. The bound is for bytes crafted to look like records (a
// value holding encoded records), which could otherwise make the search
// quadratic; past it the search gives up and the stretch counts as damaged.
// Index entries past the damage are tried up to maxResyncEntries.
const (
	resyncWorkFactor = 8
	resyncWorkSlack  = 8 * scanChunk
	maxResyncEntries = 64
	// chainChunk is the first read of a chain check: most candidates that
	// fail, fail within it.
	chainChunk = 4 << 10
)

// damage turns scan's report into a *DamageError, finding where reading can
// go on. It returns the error and the position of the record at Next.
func (r *Reader) damage(d *damageAt) (*DamageError, int64, error) {
	de := &DamageError{ID: r.id, First: d.want, Next: -1, Pos: d.pos, Err: d.err}
	if d.eof {
		return de, 0, nil // the file ends here: nothing after it
	}
	pos, next, err := r.resync(d.pos, d.want)
	if err != nil {
		return nil, 0, wrapID(r.id, err)
	}
	de.Next = next
	if next >= 0 && errors.Is(d.err, ErrTruncated) {
		// Not a torn tail: good records follow, so the size is damaged.
		de.Err = fmt.Errorf("%w: record at position %d runs past the limit %d, yet a good record follows at %d", ErrCorrupt, d.pos, r.limit, pos)
	}
	return de, pos, nil
}

// resync finds the first record boundary after damage at pos, where the
// record with offset want was expected, that can be trusted: the position
// and offset of a record that decodes, passes its CRC, carries an offset
// above want and is followed by records with dense offsets up to the next
// checked boundary (a verified index entry) or the limit. It returns offset
// -1 if there is none.
func (r *Reader) resync(pos, want int64) (int64, int64, error) {
	// The first index entry past the damage whose record is really there
	// is a checked boundary.
	bound, boundOff := r.limit, int64(-1)
	i := sort.Search(len(r.offs), func(i int) bool { return int64(r.offs[i].Pos) >= pos+RecordHeaderSize })
	for tried := 0; i < len(r.offs) && tried < maxResyncEntries; i++ {
		e := r.offs[i]
		off := r.id.Base + int64(e.Rel)
		if off <= want {
			continue
		}
		tried++
		ok, err := r.recordAt(int64(e.Pos), off)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			bound, boundOff = int64(e.Pos), off
			break
		}
	}
	// Records between the damage and that boundary may be intact.
	p, off, err := r.search(pos, want, bound, boundOff)
	if err != nil || off >= 0 {
		return p, off, err
	}
	if boundOff >= 0 {
		return bound, boundOff, nil
	}
	return 0, -1, nil
}

// recordAt reports whether the record at pos decodes below the limit, passes
// its CRC and carries offset off.
func (r *Reader) recordAt(pos, off int64) (bool, error) {
	_, _, err := scanChunked(r.ra, pos, r.limit, off, chainChunk, false, nil, stopAtFirst)
	var d *damageAt
	if errors.As(err, &d) {
		return false, nil
	}
	return err == nil, err
}

func stopAtFirst(*Record, int64) error { return errStop }
func acceptAll(*Record, int64) error   { return nil }

// search tries every byte position p after the damaged record at dpos and
// before bound for a record that can follow it: its offset is above want
// and no more than the records that fit in [dpos, p) allow, it passes its
// CRC, and chain accepts what follows. With a known boundOff the offset
// must also leave room for the records up to it. The per-position checks
// read from one window and allocate nothing.
func (r *Reader) search(dpos, want, bound, boundOff int64) (int64, int64, error) {
	pooled := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(pooled)
	buf, bufPos := (*pooled)[:0], dpos
	fill := func(p int64) (bool, error) {
		n := int(min(int64(len(*pooled)), bound-p))
		m, err := r.ra.ReadAt((*pooled)[:n], p)
		buf, bufPos = (*pooled)[:m], p
		if m >= RecordHeaderSize {
			return true, nil
		}
		if err == nil || errors.Is(err, io.EOF) {
			return false, nil // the file ends: no record starts here or later
		}
		return false, fmt.Errorf("segment: read at %d: %w", p, err)
	}
	// A chain already followed to damage: its record boundaries would fail
	// the same way, so they are stepped over, not followed again.
	skipNext, skipEnd := int64(-1), int64(-1)
	budget := resyncWorkFactor*(bound-dpos) + resyncWorkSlack // bytes read beyond the window
	for p := dpos + RecordHeaderSize; p+RecordHeaderSize <= bound; p++ {
		if p+RecordHeaderSize > bufPos+int64(len(buf)) {
			if ok, err := fill(p); !ok {
				return 0, -1, err
			}
		}
		b := buf[p-bufPos:]
		h := readRecordHeader(b)
		if p == skipNext && p < skipEnd {
			skipNext = p + int64(h.Len())
			continue
		}
		if h.Offset <= want || h.Offset > want+(p-dpos)/RecordHeaderSize {
			continue
		}
		if boundOff >= 0 && (h.Offset >= boundOff || boundOff-h.Offset > (bound-p)/RecordHeaderSize) {
			continue
		}
		if headerFlaw(h) != flawNone || p+int64(h.Len()) > bound {
			continue
		}
		if h.Len() > len(b) && bufPos != p && h.Len() <= len(*pooled) {
			// Bring the whole record into the window to check its CRC.
			if budget -= int64(h.Len()); budget < 0 {
				return 0, -1, nil
			}
			if ok, err := fill(p); !ok {
				return 0, -1, err
			}
			b = buf
		}
		if h.Len() <= len(b) && !crcOK(b, h) {
			continue
		}
		ok, failedAt, err := r.chain(p, h.Offset, bound, boundOff)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			return p, h.Offset, nil
		}
		// What the chain check read: its first read, and at most twice
		// what it walked (its reads double).
		if budget -= chainChunk + 2*(failedAt-p); budget < 0 {
			return 0, -1, nil
		}
		if p >= skipEnd {
			// Every boundary on this chain, followed from there, is the
			// same chain and fails the same way.
			skipNext, skipEnd = p+int64(h.Len()), failedAt
		}
	}
	return 0, -1, nil
}

// chain reports whether the records from p, starting with offset off, are
// whole, pass their CRCs and carry dense offsets up to bound, and reach it
// with boundOff when that is known (>= 0). Where the file ends before the
// limit, dense records up to its end are enough. Otherwise it returns the
// position where the chain broke.
func (r *Reader) chain(p, off, bound, boundOff int64) (bool, int64, error) {
	end, next, err := scanChunked(r.ra, p, bound, off, chainChunk, false, nil, acceptAll)
	if err == nil {
		return boundOff < 0 || next == boundOff, end, nil
	}
	var d *damageAt
	if !errors.As(err, &d) {
		return false, 0, err
	}
	return d.eof && d.pos > p, d.pos, nil
}
