package segment

import (
	"errors"
	"fmt"
	"os"

	"github.com/tierlog/tierlog/pkg/index"
)

// Unknown is the committed length to pass to Recover when none is known: it
// then keeps the longest valid prefix and truncates the torn tail.
const Unknown = -1

// Recover brings segment id in dir to a consistent state and returns it.
//
// With committed >= 0 it trusts the caller's committed length: it checks the
// file header (magic, version, CRC, base offset and epoch), the records from
// the last usable index entry up to committed (CRC, dense offsets, a record
// boundary exactly at committed), completes the indexes, and truncates the
// three files to the committed state, dropping the bytes of aborted attempts
// past it. It never truncates below committed, and when the committed bytes
// are not whole it changes nothing and fails, so the caller seals the
// segment at its committed length and writes on in a new one:
//
//   - a file shorter than committed is an error wrapping ErrTruncated (and
//     not ErrCorrupt): a *DamageError whose First is the first offset not
//     wholly in the file, or a file header cut short;
//   - damaged bytes below committed are an error wrapping ErrCorrupt: a
//     *DamageError for damaged records, or a damaged or foreign file header
//     (even if every record is intact).
//
// With committed == Unknown it scans the whole .log, keeps the longest
// valid prefix, truncates the rest (a torn tail) and rebuilds the indexes.
func Recover(dir string, id ID, committed int64, opts Options) (State, error) {
	opts = opts.withDefaults()
	if committed < 0 && committed != Unknown {
		return State{}, fmt.Errorf("segment: recover %s: committed length %d", id, committed)
	}
	if committed >= 0 && committed < FileHeaderSize {
		return State{}, fmt.Errorf("segment: recover %s: committed length %d below header size", id, committed)
	}
	log, err := opts.FS.OpenFile(id.Path(dir, KindLog), os.O_RDWR, 0)
	if err != nil {
		return State{}, fmt.Errorf("segment: recover %s: %w", id, err)
	}
	defer log.Close()
	hb, err := readHeaderBytes(log)
	if err != nil {
		return State{}, fmt.Errorf("segment: recover %s: %w", id, err)
	}
	hdr, _, err := checkFileHeader(hb, id)
	if err != nil {
		switch {
		case committed < 0 && len(hb) < FileHeaderSize:
			// Created but the header never became durable: an empty segment.
			return recoverEmpty(log, dir, id, opts)
		case committed >= 0 && len(hb) < FileHeaderSize:
			return State{}, fmt.Errorf("segment: recover %s: file shorter than its committed length %d: %w", id, committed, err)
		}
		return State{}, fmt.Errorf("segment: recover %s: %w", id, err)
	}
	fi, err := log.Stat()
	if err != nil {
		return State{}, fmt.Errorf("segment: recover %s: %w", id, err)
	}
	size := fi.Size()

	ordered := !hdr.CreateTime()
	limit := committed
	var offs index.Offsets
	var times index.Times
	if committed >= 0 {
		offs, times = readIndexes(opts.FS, dir, id)
		offs = sanitize(offs, committed)
		times = matchTimes(times, offs)
		// Entry i of each file names the same record (the writer adds
		// them in pairs, readers rely on it): keep only whole pairs, and
		// rebuild both files from the last one.
		offs = offs[:len(times)]
		// The last pair is where the scan starts; make sure it is real.
		for len(offs) > 0 && !entryValid(log, id, offs[len(offs)-1], times[len(times)-1], committed, ordered) {
			offs, times = offs[:len(offs)-1], times[:len(times)-1]
		}
	} else {
		limit = size
	}

	start, want := int64(FileHeaderSize), id.Base
	if len(offs) > 0 {
		e := offs[len(offs)-1]
		start, want = int64(e.Pos), id.Base+int64(e.Rel)
	}
	st := State{Size: start, NextOffset: want, LastTS: -1}
	if len(times) > 0 {
		st.LastTS = times[len(times)-1].Timestamp
	}
	// Rebuild index entries past the last kept one with the writer's rule.
	var ibuf, tbuf []byte
	interval := int64(opts.IndexIntervalBytes)
	since := int64(0) // the record at start is indexed (or first): no entry for it
	end, next, scanErr := scan(log, start, limit, want, func(r *Record, pos int64) error {
		if r.Timestamp < st.LastTS && ordered {
			return fmt.Errorf("%w: timestamp %d before %d at offset %d", ErrCorrupt, r.Timestamp, st.LastTS, r.Offset)
		}
		st.LastTS = max(st.LastTS, r.Timestamp)
		if since >= interval {
			rel := uint32(r.Offset - id.Base)
			ibuf = index.AppendOffset(ibuf, index.OffsetEntry{Rel: rel, Pos: uint32(pos)})
			tbuf = index.AppendTime(tbuf, index.TimeEntry{Timestamp: st.LastTS, Rel: rel})
			since = 0
		}
		since += int64(EncodedSize(r))
		return nil
	})
	if committed >= 0 && (scanErr != nil || size < committed) {
		return State{}, refuseRecover(log, id, committed, size, offs, times, scanErr)
	}
	if scanErr != nil {
		if !errors.Is(scanErr, ErrTruncated) && !errors.Is(scanErr, ErrCorrupt) {
			return State{}, wrapID(id, scanErr)
		}
		// Torn or damaged tail with no committed length: keep the prefix.
	}
	st.Size, st.NextOffset = end, next

	// A truncate is a durable round trip on NFS: none to the length the
	// file has (the common case: a clean release left it there).
	if size != st.Size {
		if err := log.Truncate(st.Size); err != nil {
			return State{}, fmt.Errorf("segment: truncate %s to %d: %w", id.Name(KindLog), st.Size, err)
		}
	}
	if err := rewriteIndex(opts.FS, id.Path(dir, KindIndex), len(offs)*index.OffsetEntrySize, ibuf); err != nil {
		return State{}, err
	}
	if err := rewriteIndex(opts.FS, id.Path(dir, KindTimeIndex), len(times)*index.TimeEntrySize, tbuf); err != nil {
		return State{}, err
	}
	return st, nil
}

// refuseRecover is Recover's error for committed bytes that are not whole:
// ErrTruncated if the file is shorter than committed, else what the check
// found below committed (ErrCorrupt for damage).
func refuseRecover(log File, id ID, committed, size int64, offs index.Offsets, times index.Times, scanErr error) error {
	var d *damageAt
	switch {
	case errors.As(scanErr, &d):
	case scanErr != nil && !errors.Is(scanErr, ErrCorrupt):
		return fmt.Errorf("segment: recover %s: %w", id, scanErr) // a read error: nothing is known
	case size < committed:
		return fmt.Errorf("segment: recover %s: %w: file is %d bytes, committed %d (%v)", id, ErrTruncated, size, committed, scanErr)
	default:
		return fmt.Errorf("segment: recover %s: below committed length %d: %w", id, committed, wrapID(id, scanErr))
	}
	de, _, err := NewReader(log, id, committed, offs, times).damage(d)
	if err != nil {
		return fmt.Errorf("segment: recover %s: %w", id, err)
	}
	if size < committed {
		// Short is what the caller must know; what the check met first
		// stays in the message.
		de.Err = fmt.Errorf("%w: file is %d bytes, committed %d (%v)", ErrTruncated, size, committed, d.err)
		de.Next = -1
	} else if errors.Is(de.Err, ErrTruncated) {
		// The file holds every committed byte: a record that runs past
		// committed is damage below it, not a torn tail.
		de.Err = fmt.Errorf("%w: %v, and the file holds %d bytes: a damaged size, or a committed length that is no record boundary", ErrCorrupt, d.err, size)
	}
	return fmt.Errorf("segment: recover %s: below committed length %d: %w", id, committed, de)
}

// entryValid reports whether index entries e and te point at the record they
// name, with the timestamp te claims: the record's own where timestamps
// never decrease (ordered), one no lower than it where they may (te holds
// the largest timestamp up to the record).
func entryValid(log File, id ID, e index.OffsetEntry, te index.TimeEntry, limit int64, ordered bool) bool {
	var b [RecordHeaderSize]byte
	if int64(e.Pos)+RecordHeaderSize > limit {
		return false
	}
	if _, err := log.ReadAt(b[:], int64(e.Pos)); err != nil {
		return false
	}
	h, err := DecodeRecordHeader(b[:])
	return err == nil && h.Offset == id.Base+int64(e.Rel) && te.Rel == e.Rel &&
		(h.Timestamp == te.Timestamp || !ordered && h.Timestamp < te.Timestamp)
}

// rewriteIndex truncates an index file to keep bytes and appends add,
// creating the file if it is missing.
func rewriteIndex(fsys FS, path string, keep int, add []byte) error {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("segment: open %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(keep) {
		if err := f.Truncate(int64(keep)); err != nil {
			return fmt.Errorf("segment: truncate %s: %w", path, err)
		}
	}
	if len(add) > 0 {
		if err := writeFull(f, add, int64(keep)); err != nil {
			return fmt.Errorf("segment: write %s: %w", path, err)
		}
	}
	return nil
}

func recoverEmpty(log File, dir string, id ID, opts Options) (State, error) {
	hdr := AppendFileHeader(nil, fileHeaderFor(id, opts))
	if err := log.Truncate(0); err != nil {
		return State{}, fmt.Errorf("segment: truncate %s: %w", id, err)
	}
	if err := writeFull(log, hdr, 0); err != nil {
		return State{}, fmt.Errorf("segment: write header of %s: %w", id, err)
	}
	// The index files may be missing (Create stopped early) or hold
	// entries for records that are gone: empty them, as Create would.
	for _, k := range []Kind{KindIndex, KindTimeIndex} {
		if err := rewriteIndex(opts.FS, id.Path(dir, k), 0, nil); err != nil {
			return State{}, err
		}
	}
	return State{Size: FileHeaderSize, NextOffset: id.Base, LastTS: -1}, nil
}
