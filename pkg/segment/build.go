package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/tierlog/tierlog/pkg/index"
)

// Summary describes a whole, verified segment: what the cold tier's
// artifact needs besides the bytes.
type Summary struct {
	Header     FileHeader // the segment's file header (version, flags)
	NextOffset int64
	FirstTS    int64  // smallest timestamp; -1 when empty
	LastTS     int64  // largest timestamp; -1 when empty
	Offsets    []byte // encoded offset index, rebuilt by the writer's rule
	Times      []byte // encoded time index
}

// Summarize scans segment id in ra below limit, checking the file header
// (magic, version, CRC, base offset and epoch), every CRC, dense offsets
// from id.Base and, in an append-time segment, non-decreasing timestamps,
// and rebuilds both sparse
// indexes exactly as a Writer with the given interval would have written
// them. It is how the compactor turns a sealed hot segment into an artifact
// without trusting the hot index files. Damaged records are a *DamageError;
// a damaged header is an error wrapping ErrCorrupt, even when every record
// is intact: a segment that fails Summarize is not tiered.
func Summarize(ra io.ReaderAt, id ID, limit int64, interval int) (Summary, error) {
	if interval <= 0 {
		interval = index.DefaultIntervalBytes
	}
	b, err := readHeaderBytes(io.NewSectionReader(ra, 0, max(limit, 0)))
	if err != nil {
		return Summary{}, wrapID(id, err)
	}
	h, _, err := checkFileHeader(b, id)
	if err != nil {
		return Summary{}, wrapID(id, err)
	}
	s := Summary{Header: h, FirstTS: -1, LastTS: -1}
	ordered := !h.CreateTime()
	since := int64(0)
	end, next, err := scan(ra, FileHeaderSize, limit, id.Base, func(r *Record, pos int64) error {
		if r.Timestamp < s.LastTS && ordered {
			return fmt.Errorf("%w: timestamp %d before %d at offset %d", ErrCorrupt, r.Timestamp, s.LastTS, r.Offset)
		}
		if s.FirstTS < 0 || r.Timestamp < s.FirstTS {
			s.FirstTS = r.Timestamp
		}
		s.LastTS = max(s.LastTS, r.Timestamp)
		if since >= int64(interval) {
			rel := uint32(r.Offset - id.Base)
			s.Offsets = index.AppendOffset(s.Offsets, index.OffsetEntry{Rel: rel, Pos: uint32(pos)})
			s.Times = index.AppendTime(s.Times, index.TimeEntry{Timestamp: s.LastTS, Rel: rel})
			since = 0
		}
		since += int64(EncodedSize(r))
		return nil
	})
	var d *damageAt
	if errors.As(err, &d) {
		de, _, derr := NewReader(ra, id, limit, nil, nil).damage(d)
		if derr != nil {
			return Summary{}, derr
		}
		return Summary{}, de
	}
	if err != nil {
		return Summary{}, wrapID(id, err)
	}
	if end != limit {
		return Summary{}, fmt.Errorf("%w: %s records end at %d, limit %d", ErrCorrupt, id, end, limit)
	}
	s.NextOffset = next
	return s, nil
}

// DecodeRecords decodes the records at the start of b, a window of a .log
// starting at a record boundary, skipping offsets below from. It stops at
// maxRecords, before the total encoded size passes maxBytes (but returns at
// least one record if one is complete in b), or at a record cut off by the
// end of b. It returns the records (owning their memory) and whether it
// stopped at a cut-off record (more bytes would give more records). A damaged
// record is ErrCorrupt.
func DecodeRecords(b []byte, from int64, maxRecords, maxBytes int) ([]Record, bool, error) {
	var out []Record
	var slab []byte
	total := 0
	for len(b) > 0 && len(out) < maxRecords {
		r, n, err := decodeRecord(b)
		if errors.Is(err, ErrTruncated) {
			return out, true, nil
		}
		if err != nil {
			return out, false, err
		}
		b = b[n:]
		if r.Offset < from {
			continue
		}
		if len(out) > 0 && total+n > maxBytes {
			break
		}
		total += n
		out = append(out, copyRecord(&slab, &r))
	}
	return out, false, nil
}

// PeekRecordLen returns the encoded length of the record whose header is at
// the start of b, so a reader of a window knows how much more to fetch.
func PeekRecordLen(b []byte) (int, error) {
	h, err := DecodeRecordHeader(b)
	if err != nil {
		return 0, err
	}
	return h.Len(), nil
}

// copyRecord copies rec's key, value and headers into a shared slab so one
// allocation serves many small records (header keys become strings).
func copyRecord(slab *[]byte, rec *Record) Record {
	out := Record{Offset: rec.Offset, Timestamp: rec.Timestamp}
	n := len(rec.Key) + len(rec.Value) + headersSize(rec)
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
	switch {
	case rec.raw != nil:
		_, count, _ := headersBlockLen(rec.raw)
		out.Headers = parseHeaders(rec.raw, count, slab)
	case len(rec.Headers) > 0:
		out.Headers = make([]Header, len(rec.Headers))
		for i, h := range rec.Headers {
			out.Headers[i].Key = h.Key
			if h.Value != nil {
				s := append(*slab, h.Value...)
				out.Headers[i].Value = s[len(s)-len(h.Value) : len(s) : len(s)]
				*slab = s
			}
		}
	}
	return out
}
