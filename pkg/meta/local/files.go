package local

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const (
	lockName        = "LOCK"
	snapshotName    = "SNAPSHOT"
	snapshotTmpName = "SNAPSHOT.tmp"
	journalPrefix   = "journal-"
	journalSuffix   = ".log"
)

func journalName(seq uint64) string {
	return fmt.Sprintf("%s%016x%s", journalPrefix, seq, journalSuffix)
}

// parseJournalName returns the seq of a journal file name.
func parseJournalName(name string) (uint64, bool) {
	hex, ok := strings.CutPrefix(name, journalPrefix)
	if !ok {
		return 0, false
	}
	hex, ok = strings.CutSuffix(hex, journalSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil
}

// lockDir takes the exclusive flock on dir/LOCK. The lock lives as long as
// the returned file is open.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("meta/local: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is open in another Store (this process or another)", ErrLocked, dir)
		}
		return nil, fmt.Errorf("meta/local: lock %s: %w", dir, err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// osFile is a journal on disk; Sync is fdatasync where there is one.
type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// journals lists the journal seqs in dir, ascending.
func journals(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, de := range des {
		if seq, ok := parseJournalName(de.Name()); ok && de.Type().IsRegular() {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// load rebuilds the state from dir and opens the journal to append to,
// filling s.recovery with what it dropped or found missing.
func (s *Store) load() error {
	dir := s.dir
	for _, tmp := range []string{snapshotTmpName, closedTmpName} {
		if err := os.Remove(filepath.Join(dir, tmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("meta/local: remove stale %s: %w", tmp, err)
		}
	}
	st := newState()
	first := uint64(1) // first journal to replay
	b, err := os.ReadFile(filepath.Join(dir, snapshotName))
	switch {
	case err == nil:
		if first, err = loadSnapshot(b, &st); err != nil {
			return fmt.Errorf("meta/local: %s: %w", snapshotName, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("meta/local: read snapshot: %w", err)
	}

	seqs, err := journals(dir)
	if err != nil {
		return fmt.Errorf("meta/local: list %s: %w", dir, err)
	}
	var live []uint64
	for _, seq := range seqs {
		if seq < first {
			// Left over from a rotation that crashed before deleting it.
			if err := os.Remove(filepath.Join(dir, journalName(seq))); err != nil {
				return fmt.Errorf("meta/local: remove old journal: %w", err)
			}
			continue
		}
		live = append(live, seq)
	}
	for i, seq := range live {
		if seq != first+uint64(i) {
			return fmt.Errorf("%w: journal %016x missing (have %x from %x)", ErrCorrupt, first+uint64(i), live, first)
		}
	}

	var rec Recovery
	lengths := map[uint64]journalLength{}
	if len(live) == 0 {
		if first != 1 {
			return fmt.Errorf("%w: snapshot names journal %016x, which is missing", ErrCorrupt, first)
		}
		j, err := createJournal(dir, first)
		if err != nil {
			return err
		}
		s.setJournal(j, first)
	}
	for i, seq := range live {
		name := journalName(seq)
		last := i == len(live)-1
		r, err := replayJournal(dir, seq, last, &st)
		if err != nil {
			return fmt.Errorf("meta/local: %s: %w", name, err)
		}
		lengths[seq] = journalLength{valid: int64(max(r.valid, FileHeaderSize)), file: int64(len(r.b))}
		if !last {
			continue
		}
		if r.damage != nil && !s.opts.truncateDamaged {
			return fmt.Errorf("meta/local: %s: %w; %d intact frames follow it (a repair, WithTruncateDamaged, opens the store without them)", name, r.damage, r.intact)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("meta/local: open journal: %w", err)
		}
		j := osFile{f}
		if tail := len(r.b) - r.valid; tail > 0 {
			rec.Journal, rec.Offset, rec.DroppedBytes = name, int64(r.valid), int64(tail)
			switch {
			case r.damage != nil:
				saved, err := saveTail(dir, seq, r.valid, r.b[r.valid:])
				if err != nil {
					f.Close()
					return fmt.Errorf("meta/local: %s: save the damaged tail before truncating it: %w", name, err)
				}
				rec.Saved, rec.DroppedFrames, rec.LostCommitted = saved, r.intact, true
				rec.addCause("damaged at %d, truncated by WithTruncateDamaged: %v", r.valid, r.damage)
			case tail > r.maxTorn:
				rec.LostCommitted = true
				rec.addCause("%d bytes past the last whole frame, more than the %d an interrupted append can leave (%s)", tail, r.maxTorn, r.torn)
			default:
				rec.addCause("torn tail: %s", r.torn)
			}
		}
		if r.valid != len(r.b) || r.valid == 0 {
			if err := repairTail(j, seq, int64(r.valid)); err != nil {
				f.Close()
				return err
			}
		}
		s.setJournal(j, seq)
		s.c.size = lengths[seq].valid
	}
	if len(live) == 0 {
		lengths[first] = journalLength{valid: FileHeaderSize, file: 0}
	}
	s.checkClosed(&rec, first, s.c.seq, lengths)
	s.mu.st = st
	s.w.st = st.clone()
	s.recovery = rec
	s.report(rec)
	return nil
}

// journalLength is a journal's valid prefix (whole frames, the header at
// least) and its length on disk as Open found it (0: missing).
type journalLength struct{ valid, file int64 }

// checkClosed compares the journals Open found with the CLOSED record of
// the last clean Close (see writeClosed) and adds to rec what was
// committed then and is not now: bytes missing from the file, or bytes
// still there that Open could not keep (then a torn-looking tail was
// committed data). Journals below first were replaced by the snapshot: the
// record says nothing about them.
func (s *Store) checkClosed(rec *Recovery, first, lastSeq uint64, lengths map[uint64]journalLength) {
	seq, size, ok, err := readClosed(s.dir)
	if err != nil {
		s.opts.logger.Warn("meta/local: ignoring an unreadable close record", "file", filepath.Join(s.dir, closedName), "err", err)
		return
	}
	if !ok || seq < first {
		return
	}
	have, found := lengths[seq]
	switch {
	case seq > lastSeq || !found:
		rec.MissingBytes += size
		rec.addCause("%s, %d bytes at the last clean close, is missing", journalName(seq), size)
	case have.valid < size:
		rec.MissingBytes += max(0, size-have.file)
		rec.addCause("%s holds %d bytes of whole frames in %d, %d at the last clean close", journalName(seq), have.valid, have.file, size)
	default:
		return
	}
	rec.LostCommitted = true
	if rec.Journal == "" {
		rec.Journal, rec.Offset = journalName(seq), have.valid
	}
}

func (s *Store) setJournal(j file, seq uint64) {
	s.c.j, s.c.seq, s.c.size = j, seq, FileHeaderSize
	s.c.rotateAt = FileHeaderSize + s.opts.snapshotBytes
}

// repairTail makes the last journal end at valid, its last whole frame:
// it rewrites a torn header (valid 0) and truncates a torn tail.
func repairTail(j file, seq uint64, valid int64) error {
	if valid == 0 {
		if err := j.Truncate(0); err != nil {
			return fmt.Errorf("meta/local: truncate torn journal: %w", err)
		}
		if _, err := j.WriteAt(appendFileHeader(nil, journalMagic, seq), 0); err != nil {
			return fmt.Errorf("meta/local: rewrite journal header: %w", err)
		}
	} else if err := j.Truncate(valid); err != nil {
		return fmt.Errorf("meta/local: truncate torn journal tail: %w", err)
	}
	if err := j.Sync(); err != nil {
		return fmt.Errorf("meta/local: sync journal: %w", err)
	}
	return nil
}

// replayJournal applies journal seq to st up to its valid prefix. A torn
// tail or header is allowed only in the last journal; anywhere else it is
// ErrCorrupt. In the last journal, bytes that are not a torn tail (see the
// package doc) are reported in replay.damage rather than as an error, so
// the caller can apply WithTruncateDamaged.
func replayJournal(dir string, seq uint64, last bool, st *state) (replay, error) {
	b, err := os.ReadFile(filepath.Join(dir, journalName(seq)))
	if err != nil {
		return replay{}, err
	}
	r := replay{b: b}
	hseq, err := decodeFileHeader(b, journalMagic)
	if err != nil {
		if last && errors.Is(err, errTorn) && (len(b) < FileHeaderSize || allZero(b)) {
			// Created, header never durable, nothing else written: a
			// header's worth of bytes at most.
			r.maxTorn, r.torn = FileHeaderSize, err.Error()
			return r, nil
		}
		return replay{}, torn(err)
	}
	if hseq != seq {
		return replay{}, fmt.Errorf("%w: header seq %016x", ErrCorrupt, hseq)
	}
	pos := FileHeaderSize
	for {
		payload, next, err := readFrame(b, pos)
		if err == io.EOF {
			r.valid = pos
			return r, nil
		}
		var e *entry
		if err == nil {
			e, err = decodeEntry(payload, pos)
		}
		if err == nil {
			if err = st.apply(e); err != nil {
				err = fmt.Errorf("entry at %d: %w", pos, err)
			}
		}
		if err == nil {
			pos = next
			continue
		}
		if !last {
			return replay{}, torn(err)
		}
		r.valid = pos
		r.intact, _ = intactFrames(b, pos)
		switch {
		case errors.Is(err, errTorn) && r.intact > 0:
			r.damage = fmt.Errorf("%w: %v, but whole frames follow: committed, then damaged", ErrCorrupt, err)
		case errors.Is(err, errTorn):
			r.maxTorn, r.torn = maxTornAt(b, pos), err.Error()
		default:
			r.damage = err
		}
		return r, nil
	}
}

// torn turns errTorn into ErrCorrupt where a torn write cannot happen.
func torn(err error) error {
	if errors.Is(err, errTorn) {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return err
}

// loadSnapshot applies snapshot bytes b to st and returns the seq of the
// first journal to replay after it. Every flaw is ErrCorrupt: a snapshot is
// renamed into place only once complete and synced.
func loadSnapshot(b []byte, st *state) (uint64, error) {
	seq, err := decodeFileHeader(b, snapshotMagic)
	if err != nil {
		return 0, torn(err)
	}
	pos := FileHeaderSize
	for n := int64(0); ; n++ {
		payload, next, err := readFrame(b, pos)
		if err == io.EOF {
			return 0, fmt.Errorf("%w: snapshot ends without its end entry after %d entries", ErrCorrupt, n)
		}
		if err != nil {
			return 0, torn(err)
		}
		e, err := decodeEntry(payload, pos)
		if err != nil {
			return 0, err
		}
		if e.Op == opEnd {
			if e.Count != n || next != len(b) {
				return 0, fmt.Errorf("%w: snapshot end entry counts %d, read %d, %d bytes after it", ErrCorrupt, e.Count, n, len(b)-next)
			}
			return seq, nil
		}
		if err := st.apply(e); err != nil {
			return 0, fmt.Errorf("entry at %d: %w", pos, err)
		}
		pos = next
	}
}

// createJournal creates journal seq holding only its header, durable with
// its directory entry. On failure it removes what it created.
func createJournal(dir string, seq uint64) (file, error) {
	path := filepath.Join(dir, journalName(seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("meta/local: create journal: %w", err)
	}
	j := osFile{f}
	_, err = j.WriteAt(appendFileHeader(nil, journalMagic, seq), 0)
	if err == nil {
		err = j.Sync()
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return nil, &stuckJournalError{fmt.Errorf("meta/local: create journal: %w; remove it: %w", err, rerr)}
		}
		return nil, fmt.Errorf("meta/local: create journal: %w", err)
	}
	return j, nil
}

// stuckJournalError means a new journal could not be completed nor removed:
// appending to the older one would leave frames Open treats strictly.
type stuckJournalError struct{ error }

func (e *stuckJournalError) Unwrap() error { return e.error }

// rotate starts journal seq+1 and writes a snapshot of the state up to it,
// then deletes older journals. Called with c held. See the package doc for
// why every crash point is safe.
func (s *Store) rotate() error {
	seq := s.c.seq + 1
	j, err := createJournal(s.dir, seq)
	if err != nil {
		var stuck *stuckJournalError
		if errors.As(err, &stuck) {
			s.c.err = err
			s.w.Lock()
			s.w.err = err
			s.w.Unlock()
		}
		return err
	}
	prev := s.c.j
	s.setJournal(j, seq)
	prev.Close() // fully synced; a close error loses nothing

	if err := writeSnapshot(s.dir, seq, &s.mu.st); err != nil {
		return err
	}
	seqs, err := journals(s.dir)
	if err != nil {
		return nil // the snapshot is in place; Open removes leftovers
	}
	for _, o := range seqs {
		if o < seq {
			os.Remove(filepath.Join(s.dir, journalName(o)))
		}
	}
	syncDir(s.dir)
	return nil
}

// writeSnapshot writes st as SNAPSHOT naming journal seq: to a temporary
// file, synced, renamed into place, directory synced.
func writeSnapshot(dir string, seq uint64, st *state) error {
	tmp := filepath.Join(dir, snapshotTmpName)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("meta/local: snapshot: %w", err)
	}
	err = writeSnapshotTo(f, seq, st)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, snapshotName))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("meta/local: snapshot: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("meta/local: snapshot: %w", err)
	}
	return nil
}

// writeSnapshotTo writes the snapshot bytes: header, one frame per item,
// the end frame.
func writeSnapshotTo(f io.Writer, seq uint64, st *state) error {
	w := bufio.NewWriterSize(f, 1<<16)
	if _, err := w.Write(appendFileHeader(nil, snapshotMagic, seq)); err != nil {
		return err
	}
	entries := st.entries()
	entries = append(entries, &entry{Op: opEnd, Count: int64(len(entries))})
	var buf []byte
	for _, e := range entries {
		payload, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if buf, err = appendFrame(buf[:0], payload); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return w.Flush()
}
