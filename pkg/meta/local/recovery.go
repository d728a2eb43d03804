package local

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Recovery is what Open found wrong with the journal and what it did about
// it; Store.Recovery returns it, and Open logs it at ERROR level. The zero
// Recovery means the journal was intact. See the package doc, "Damage".
type Recovery struct {
	// Journal is the base name of the journal concerned ("" when intact).
	Journal string
	// Offset is where the journal ends now: the end of its last whole
	// frame, where the dropped bytes began.
	Offset int64
	// DroppedBytes is how many bytes Open truncated away at Offset.
	DroppedBytes int64
	// DroppedFrames counts the intact frames among the dropped bytes, after
	// the damaged one (WithTruncateDamaged only): mutations that had been
	// committed.
	DroppedFrames int
	// MissingBytes is how much shorter the journal file was, when Open
	// found it, than at the last clean Close (the CLOSED record): committed
	// frames gone without a trace in the file. Bytes Open dropped itself
	// are in DroppedBytes.
	MissingBytes int64
	// LostCommitted is true when Open has evidence that committed
	// mutations are gone: damage it truncated (WithTruncateDamaged), a
	// dropped tail longer than the one frame an interrupted append can
	// leave, or MissingBytes. False for a plain torn tail: the one mutation
	// being appended when the process died, which nobody was told about.
	LostCommitted bool
	// Cause says what Open found, for logs.
	Cause string
	// Saved is the base name of the file, next to the journal, holding the
	// bytes WithTruncateDamaged cut off ("" when none were saved).
	Saved string
}

// replay is what replayJournal found in one journal.
type replay struct {
	b     []byte // the file
	valid int    // its valid prefix: the end of the last whole frame (0: even the header is torn)
	// damage (last journal only) is the ErrCorrupt at valid when the
	// bytes there are not a torn tail.
	damage error
	// intact counts the whole, decodable frames after valid: committed
	// after the frame at valid, so that frame was committed too.
	intact int
	// maxTorn is the longest tail one interrupted append can leave at
	// valid: the frame it was writing, or the file header.
	maxTorn int
	torn    string // what the torn tail looked like
}

// intactFrames looks for whole frames in b after from (exclusive) and
// returns how many decode back to back from the first one found, and where
// that one starts. JSON has no 0x00 byte and an entry's payload starts with
// {"op":, so inside a frame's payload no such frame can start: one found
// was written as a frame, after the one at from. A frame is appended only
// once the one before it is durable, so finding one means the bytes at
// from were committed and then damaged, not torn.
func intactFrames(b []byte, from int) (n, at int) {
	lead := []byte(`{"op":`)
	for p := from + 1; p+FrameHeaderSize+len(lead) <= len(b); p++ {
		if b[p+3] != 0 || !bytes.HasPrefix(b[p+FrameHeaderSize:], lead) {
			continue
		}
		if l := int(binary.LittleEndian.Uint32(b[p:])); l == 0 || p+FrameHeaderSize+l > len(b) {
			continue
		}
		for q := p; ; n++ {
			payload, next, err := readFrame(b, q)
			if err != nil {
				break
			}
			if _, err := decodeEntry(payload, q); err != nil {
				break
			}
			q = next
		}
		if n > 0 {
			return n, p
		}
	}
	return 0, -1
}

// maxTornAt is the longest tail an interrupted append of one frame can
// leave at pos: that frame, whose length its header gives when the header
// reached the disk (the largest frame there can be when it did not).
func maxTornAt(b []byte, pos int) int {
	if len(b)-pos >= FrameHeaderSize {
		if n := int(binary.LittleEndian.Uint32(b[pos:])); n > 0 && n <= MaxEntrySize {
			return FrameHeaderSize + n
		}
	}
	return FrameHeaderSize + MaxEntrySize
}

// saveTail writes the bytes WithTruncateDamaged is about to cut off to a
// file next to the journal, durably, and returns its base name. The name
// does not parse as a journal, so Open ignores it.
func saveTail(dir string, seq uint64, valid int, tail []byte) (string, error) {
	name := fmt.Sprintf("%s.dropped-at-%d", journalName(seq), valid)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(tail)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	return name, err
}

// The close record: CLOSED holds the journal's seq and length as of the
// last clean Close,
//
//	file header (magic "TLMC", seq = the journal's) | frame {"op":"closed","size":N}
//
// A journal only grows until a rotation replaces it, so the record stays a
// lower bound on that journal's valid length until then: Open finding the
// journal shorter (or missing) has lost committed frames that left no bytes
// to find (a file truncated or emptied while the store was closed).
const (
	closedName    = "CLOSED"
	closedTmpName = "CLOSED.tmp"
	closedMagic   = "TLMC"
)

// writeClosed records journal seq's length size in CLOSED: written to a
// temporary file, synced, renamed into place, directory synced.
func writeClosed(dir string, seq uint64, size int64) error {
	b := appendFileHeader(nil, closedMagic, seq)
	b, err := appendFrame(b, fmt.Appendf(nil, `{"op":%q,"size":%d}`, opClosed, size))
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, closedTmpName)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, closedName))
	}
	if err == nil {
		err = syncDir(dir)
	}
	return err
}

// readClosed reads CLOSED. ok is false when there is none; an error means
// it does not decode (Open then ignores it: it is evidence, not state).
func readClosed(dir string) (seq uint64, size int64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, closedName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	if seq, err = decodeFileHeader(b, closedMagic); err != nil {
		return 0, 0, false, err
	}
	payload, next, err := readFrame(b, FileHeaderSize)
	if err == io.EOF || (err == nil && next != len(b)) {
		err = fmt.Errorf("%w: close record is %d bytes", ErrCorrupt, len(b))
	}
	if err != nil {
		return 0, 0, false, err
	}
	e, err := decodeEntry(payload, FileHeaderSize)
	if err != nil {
		return 0, 0, false, err
	}
	if e.Op != opClosed || e.Size < FileHeaderSize {
		return 0, 0, false, fmt.Errorf("%w: close record %q size %d", ErrCorrupt, e.Op, e.Size)
	}
	return seq, e.Size, true, nil
}

// addCause appends one finding to r.Cause.
func (r *Recovery) addCause(format string, args ...any) {
	c := fmt.Sprintf(format, args...)
	if r.Cause == "" {
		r.Cause = c
	} else {
		r.Cause = strings.Join([]string{r.Cause, c}, "; ")
	}
}

// report logs r at ERROR level; nothing when the journal was intact.
func (s *Store) report(r Recovery) {
	if r == (Recovery{}) {
		return
	}
	msg := "meta/local: journal torn tail dropped"
	if r.LostCommitted {
		msg = "meta/local: journal lost committed data"
	}
	s.opts.logger.Error(msg,
		"file", filepath.Join(s.dir, r.Journal), "offset", r.Offset,
		"dropped_bytes", r.DroppedBytes, "dropped_frames", r.DroppedFrames,
		"missing_bytes", r.MissingBytes, "saved", r.Saved, "cause", r.Cause)
}
