// Package index encodes the sparse indexes that sit beside a segment's .log
// file: the offset index (.index) maps an offset to the byte position of its
// record, the time index (.timeindex) maps a timestamp to an offset. Both are
// sparse: the segment writer adds an entry when at least IntervalBytes of
// records were written since the last one, so a lookup lands at most that
// many bytes before the record it wants and the reader scans forward.
//
// # Layout
//
// Files are headerless arrays of fixed-size entries, little-endian. Offsets
// are relative to the segment's base offset; positions are byte positions in
// the .log file (the 32-byte file header included). Wire constants never
// change.
//
//	.index entry (8 bytes)          .timeindex entry (12 bytes)
//	+------------+------------+     +-------------+------------+
//	| rel offset |  position  |     |  timestamp  | rel offset |
//	|  uint32    |   uint32   |     |   int64     |   uint32   |
//	+------------+------------+     +-------------+------------+
//
// Entries are strictly increasing in offset and position, and timestamps are
// non-decreasing. A time index entry (t, o) says t is the largest timestamp
// of the records up to and including o (as in Kafka): on an append-time
// segment, whose timestamps never go backwards (invariant I6), that is
// record o's own; on a create-time one, whose timestamps may, it may be an
// earlier record's. Either way every record up to o is no newer than t, so
// the first record with timestamp >= T lies after the last entry with
// timestamp < T.
//
// Index bytes are hints, not the truth: the writer does not fsync them per
// batch, so after a crash a file may be short, end in a torn entry, or hold
// entries past the committed log length. Parse stops at the first entry that
// breaks the ordering or is torn, and callers drop entries at or past the
// committed length (Offsets.Below).
package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Wire constants: never change.
const (
	OffsetEntrySize = 8
	TimeEntrySize   = 12
	// DefaultIntervalBytes is the default spacing of index entries.
	DefaultIntervalBytes = 4096
)

var (
	// ErrCorrupt means an entry breaks the ordering of the entries before it.
	ErrCorrupt = errors.New("index: corrupt")
	// ErrTruncated means the bytes end inside an entry.
	ErrTruncated = errors.New("index: truncated")
)

// OffsetEntry maps the record at base+Rel to byte position Pos of the .log.
type OffsetEntry struct {
	Rel uint32
	Pos uint32
}

// TimeEntry says Timestamp is the largest timestamp of the records up to and
// including base+Rel.
type TimeEntry struct {
	Timestamp int64
	Rel       uint32
}

// AppendOffset appends the 8-byte encoding of e: | rel 4 | pos 4 |.
func AppendOffset(dst []byte, e OffsetEntry) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, e.Rel)
	return binary.LittleEndian.AppendUint32(dst, e.Pos)
}

// AppendTime appends the 12-byte encoding of e: | timestamp 8 | rel 4 |.
func AppendTime(dst []byte, e TimeEntry) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.Timestamp))
	return binary.LittleEndian.AppendUint32(dst, e.Rel)
}

// Offsets is a parsed offset index, sorted by Rel and Pos.
type Offsets []OffsetEntry

// Times is a parsed time index, sorted by Rel with non-decreasing Timestamp.
type Times []TimeEntry

// ParseOffsets decodes an offset index. It returns the longest valid prefix
// of entries and, if it stopped early, ErrTruncated (a torn last entry) or
// ErrCorrupt (an entry out of order). The prefix is usable either way.
func ParseOffsets(b []byte) (Offsets, error) {
	n := len(b) / OffsetEntrySize
	out := make(Offsets, 0, n)
	for i := 0; i < n; i++ {
		e := OffsetEntry{
			Rel: binary.LittleEndian.Uint32(b[i*OffsetEntrySize:]),
			Pos: binary.LittleEndian.Uint32(b[i*OffsetEntrySize+4:]),
		}
		if k := len(out); k > 0 && (e.Rel <= out[k-1].Rel || e.Pos <= out[k-1].Pos) {
			return out, fmt.Errorf("%w: offset entry %d (rel %d pos %d) after (rel %d pos %d)",
				ErrCorrupt, i, e.Rel, e.Pos, out[k-1].Rel, out[k-1].Pos)
		}
		out = append(out, e)
	}
	if len(b)%OffsetEntrySize != 0 {
		return out, fmt.Errorf("%w: %d stray bytes after %d offset entries", ErrTruncated, len(b)%OffsetEntrySize, n)
	}
	return out, nil
}

// ParseTimes decodes a time index, with the same contract as ParseOffsets.
func ParseTimes(b []byte) (Times, error) {
	n := len(b) / TimeEntrySize
	out := make(Times, 0, n)
	for i := 0; i < n; i++ {
		e := TimeEntry{
			Timestamp: int64(binary.LittleEndian.Uint64(b[i*TimeEntrySize:])),
			Rel:       binary.LittleEndian.Uint32(b[i*TimeEntrySize+8:]),
		}
		if k := len(out); k > 0 && (e.Rel <= out[k-1].Rel || e.Timestamp < out[k-1].Timestamp) {
			return out, fmt.Errorf("%w: time entry %d (ts %d rel %d) after (ts %d rel %d)",
				ErrCorrupt, i, e.Timestamp, e.Rel, out[k-1].Timestamp, out[k-1].Rel)
		}
		out = append(out, e)
	}
	if len(b)%TimeEntrySize != 0 {
		return out, fmt.Errorf("%w: %d stray bytes after %d time entries", ErrTruncated, len(b)%TimeEntrySize, n)
	}
	return out, nil
}

// Below returns the prefix of entries whose position is below limit: the
// ones that point into committed bytes.
func (o Offsets) Below(limit int64) Offsets {
	i := sort.Search(len(o), func(i int) bool { return int64(o[i].Pos) >= limit })
	return o[:i]
}

// Floor returns the last entry with Rel <= rel, or false if there is none.
func (o Offsets) Floor(rel uint32) (OffsetEntry, bool) {
	i := sort.Search(len(o), func(i int) bool { return o[i].Rel > rel })
	if i == 0 {
		return OffsetEntry{}, false
	}
	return o[i-1], true
}

// UpTo returns the prefix of entries with Rel < rel.
func (t Times) UpTo(rel uint32) Times {
	i := sort.Search(len(t), func(i int) bool { return t[i].Rel >= rel })
	return t[:i]
}

// Before returns the last entry with Timestamp < ts, or false if there is
// none. The first record with timestamp >= ts is after that entry's record.
func (t Times) Before(ts int64) (TimeEntry, bool) {
	i := sort.Search(len(t), func(i int) bool { return t[i].Timestamp >= ts })
	if i == 0 {
		return TimeEntry{}, false
	}
	return t[i-1], true
}
