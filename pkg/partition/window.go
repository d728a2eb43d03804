package partition

import (
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
)

// DefaultIdempotencyWindow is how long a committed batch key is remembered
// at least (docs/api.md: at least 10 minutes).
const DefaultIdempotencyWindow = 10 * time.Minute

// window is a Log's view of the idempotency window: the keys committed in
// the partition's recent segments, read from their batch files.
//
// The active segment and the hot sealed ones are named by the committed
// state; older ones are found through each batch file's link to the segment
// sealed before it (the metadata item forgets segments once they are cold).
// Walking stops at a segment whose newest entry is older than the window,
// at a segment without a batch file (written before batch files existed,
// or removed: the compactor keeps them for the window after their last
// write), or at the first segment.
//
// Entries are trusted only below a committed limit (batchfile.go), and a
// file is re-opened for every refresh (close-to-open), so what the window
// holds is what some commit published: never an aborted attempt's.
type window struct {
	mu    sync.Mutex
	keys  map[string]batchEntry
	files map[segment.ID]*batchFileState
	// expired is when keys older than the window were last dropped.
	expired time.Time
	// floor: segments with a lower base are older than the window (their
	// states were dropped); refresh reads none of them again.
	floor int64
}

type batchFileState struct {
	pos    int64 // after the last entry accepted
	limit  int64 // entries are trusted below this offset
	final  bool  // sealed, read to its final limit: never read again
	prev   *segment.ID
	newest int64 // newest entry's timestamp
	linked bool  // prev was read from the header
	// finalAt is when this process first found the file final: its
	// segment was sealed before then, and so were all segments before it.
	finalAt time.Time
}

func newWindow() *window {
	return &window{keys: map[string]batchEntry{}, files: map[segment.ID]*batchFileState{}}
}

// lookup returns the committed entry of key, if the window has it.
func (w *window) lookup(key string) (batchEntry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.keys[key]
	return e, ok
}

// add records entries this Log has just committed.
func (w *window) add(ents []batchEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range ents {
		if _, ok := w.keys[e.Key]; !ok {
			w.keys[e.Key] = e
		}
	}
}

// refresh reads what st, a committed state, adds to the window. It reads
// only what is new since the last refresh: new entries of the active
// segment, and the files of segments not read before.
func (w *window) refresh(fsys segment.FS, dir string, st *meta.Partition, now time.Time, span time.Duration) error {
	type seg struct {
		id    segment.ID
		limit int64
		final bool
	}
	var segs []seg
	for _, s := range st.Sealed {
		segs = append(segs, seg{segment.ID{Base: s.Base, Epoch: s.Epoch}, s.NextOffset, true})
	}
	if a := st.Active; a != nil {
		segs = append(segs, seg{segment.ID{Base: a.Base, Epoch: a.Epoch}, a.NextOffset, false})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.expired) > span/10 {
		w.expireLocked(now, span)
		w.expired = now
	}
	for len(segs) > 0 && segs[0].id.Base < w.floor {
		segs = segs[1:]
	}
	cutoff := now.Add(-span).UnixMilli()
	var oldest *segment.ID
	var oldestBase int64
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		err := w.read(fsys, dir, s.id, s.limit, s.final, now)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errBatchHeader) {
			return err
		}
		id := s.id
		oldest, oldestBase = &id, s.id.Base
	}
	// Walk back past the segments the item names.
	for oldest != nil {
		fst := w.files[*oldest]
		if fst == nil || fst.prev == nil || fst.newest < cutoff && fst.newest != 0 || fst.prev.Base < w.floor {
			break
		}
		prev := *fst.prev
		err := w.read(fsys, dir, prev, oldestBase, true, now)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errBatchHeader) {
			break
		}
		if err != nil {
			return err
		}
		oldest, oldestBase = &prev, prev.Base
	}
	return nil
}

// read reads segment id's batch file up to limit, unless it was read to a
// final limit already.
func (w *window) read(fsys segment.FS, dir string, id segment.ID, limit int64, final bool, now time.Time) error {
	fst := w.files[id]
	if fst != nil && fst.final {
		return nil
	}
	if fst == nil {
		fst = &batchFileState{}
	} else if fst.limit == limit && fst.linked {
		// Nothing committed past what was read: entries below a limit
		// are all there once a commit has named it.
		fst.markFinal(final, now)
		return nil
	}
	prev, ents, end, err := readBatchFile(fsys, batchesPath(dir, id), fst.pos, limit)
	if err != nil {
		if final && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errBatchHeader)) {
			// No batch file (older than batch files, removed, or its
			// header damaged): nothing to learn here, and no link.
			w.files[id] = &batchFileState{final: true, limit: limit, finalAt: now}
		}
		return err
	}
	if fst.pos < batchHeaderSize {
		fst.prev, fst.linked = prev, true
	}
	for _, e := range ents {
		if _, ok := w.keys[e.Key]; !ok {
			w.keys[e.Key] = e
		}
		fst.newest = max(fst.newest, e.TS)
	}
	fst.pos, fst.limit = end, limit
	fst.markFinal(final, now)
	w.files[id] = fst
	return nil
}

func (f *batchFileState) markFinal(final bool, now time.Time) {
	if final && !f.final {
		f.finalAt = now
	}
	f.final = final
}

// expireLocked forgets keys older than the window span (twice over, so a
// key is never forgotten early for clock skew between writers), and the
// states of sealed segments that can hold no key younger than that: whose
// newest entry is older, or that were sealed before then (those without
// keyed batches). The segments before a dropped one are older still:
// floor keeps refresh from reading any of them again.
func (w *window) expireLocked(now time.Time, span time.Duration) {
	cutoff := now.Add(-2 * span)
	for k, e := range w.keys {
		if e.TS < cutoff.UnixMilli() {
			delete(w.keys, k)
		}
	}
	for id, f := range w.files {
		if f.final && (f.newest != 0 && f.newest < cutoff.UnixMilli() || f.finalAt.Before(cutoff)) {
			delete(w.files, id)
			w.floor = max(w.floor, id.Base+1)
		}
	}
}

// seed records what a continuing writer read of its segment's batch file.
func (w *window) seed(id segment.ID, prev *segment.ID, ents []batchEntry, end, limit int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fst := &batchFileState{pos: end, limit: limit, prev: prev, linked: true}
	for _, e := range ents {
		if _, ok := w.keys[e.Key]; !ok {
			w.keys[e.Key] = e
		}
		fst.newest = max(fst.newest, e.TS)
	}
	w.files[id] = fst
}
