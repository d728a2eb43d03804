package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// DefaultSnapshotBytes is the journal size past which the store writes a
// snapshot and starts a new journal.
const DefaultSnapshotBytes = 4 << 20

// Option configures Open.
type Option func(*options)

type options struct {
	snapshotBytes   int64
	logger          *slog.Logger
	truncateDamaged bool
}

// WithSnapshotBytes sets the journal size past which a snapshot is written
// (DefaultSnapshotBytes when n <= 0). Tests use a small value to exercise
// rotation.
func WithSnapshotBytes(n int64) Option {
	return func(o *options) { o.snapshotBytes = n }
}

// WithLogger sets where Open reports what it repaired or found missing in
// the journal (always at ERROR level: see Recovery), and Close a failed
// close record. The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithTruncateDamaged is the explicit recovery option for a damaged last
// journal (a frame that fails its checksum or does not decode with data
// after it, or a torn-looking frame followed by intact ones). Without it
// Open fails with ErrCorrupt; with it Open saves the bytes from the damage
// to the end of the file next to the journal (Recovery.Saved), truncates
// the journal there and opens the store without them: every mutation from
// the damaged frame on is lost, and Open reports it (Recovery.LostCommitted).
// Damage to a file header, to the snapshot or to an older journal still
// fails Open.
func WithTruncateDamaged() Option {
	return func(o *options) { o.truncateDamaged = true }
}

// applyOptions is the one place defaults are set.
func applyOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.snapshotBytes <= 0 {
		o.snapshotBytes = DefaultSnapshotBytes
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// file is what the store needs of its journal; *os.File via osFile, or a
// fault-injecting wrapper in tests.
type file interface {
	WriteAt(b []byte, off int64) (int, error)
	Truncate(size int64) error
	Sync() error // durable data and size: fdatasync
	Close() error
}

// Store is the embedded meta.Store. It is safe for concurrent use; see the
// package doc for the locking.
type Store struct {
	dir      string
	opts     options
	lock     *os.File // holds the flock
	recovery Recovery // what Open repaired; immutable after Open

	// w serializes decisions: a mutation's condition is checked against
	// st, the durable state plus every entry staged after it, and its entry
	// is staged (applied to st, queued for the journal) under w. Nobody
	// holds w across a disk write.
	w struct {
		sync.Mutex
		st     state      // durable state plus queue
		queue  []*pending // staged, not yet written, oldest first
		staged uint64     // entries staged since Open; the last one's ticket
		err    error      // sticky: set by the committer when a write or sync failed
	}

	// c serializes commits (group commit): its holder takes every staged
	// entry, writes them as one frame, syncs, applies them to the durable
	// state and rotates the journal when due. Lock order: c, then w, then mu.
	c struct {
		sync.Mutex
		j        file          // current journal
		seq      uint64        // current journal's seq
		size     int64         // bytes in j, all durable
		rotateAt int64         // rotate when size reaches this
		err      error         // sticky: a write or fsync failed, state on disk unknown
		buf      []byte        // frame buffer, reused
		durable  atomic.Uint64 // tickets up to this one are durable and applied; read without c

		wakeMu sync.Mutex
		wake   chan struct{} // closed and replaced whenever c is released (releaseCommit)
	}

	// mu guards the durable state, the one readers see. It is written only
	// by a holder of c, so a holder of c may read st without mu.
	mu struct {
		sync.RWMutex
		st     state
		closed bool
	}

	// stagedHook, when set (tests only), runs after each decision under w.
	stagedHook func()
}

// pending is a staged mutation: its entry, encoded, and its ticket.
type pending struct {
	e       *entry
	payload []byte
	ticket  uint64
}

var _ meta.Store = (*Store)(nil)

// Open opens the store in dir, creating dir and an empty store if needed.
// It takes an exclusive lock on dir (ErrLocked if another Store has it),
// loads the snapshot, replays the journals, truncates a torn tail, and
// returns ErrCorrupt for damage it cannot attribute to a crash (unless
// WithTruncateDamaged). What it dropped or found missing is in Recovery
// and logged at ERROR level (see the package doc, "Damage").
func Open(dir string, opts ...Option) (*Store, error) {
	s := &Store{dir: dir, opts: applyOptions(opts)}
	s.c.wake = make(chan struct{})
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("meta/local: open %s: %w", dir, err)
		}
		// Make the new directory's own entry durable.
		if err := syncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
			return nil, fmt.Errorf("meta/local: open %s: %w", dir, err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if err := s.load(); err != nil {
		if s.c.j != nil {
			s.c.j.Close()
		}
		lock.Close()
		return nil, err
	}
	return s, nil
}

// Close commits what is staged, closes the journal, records its length in
// CLOSED (see the package doc) and releases the directory lock. Closing
// again is a no-op. Every acknowledged mutation is already durable.
func (s *Store) Close() error {
	s.c.Lock()
	defer s.releaseCommit()
	s.w.Lock()
	s.mu.Lock()
	closed := s.mu.closed
	s.mu.closed = true
	s.mu.Unlock()
	s.w.Unlock()
	if closed {
		return nil
	}
	// Mutations staged before the close are waiting for c: commit them,
	// so that each is answered by what happened to it.
	for s.c.err == nil && s.c.durable.Load() < s.w.staged {
		s.commit()
	}
	s.mu.Lock()
	s.mu.st = state{}
	s.mu.Unlock()
	if s.c.err == nil {
		// Only evidence for the next Open: a failure loses nothing.
		if err := writeClosed(s.dir, s.c.seq, s.c.size); err != nil {
			s.opts.logger.Warn("meta/local: could not record the journal length at close", "dir", s.dir, "err", err)
		}
	}
	return errors.Join(s.c.j.Close(), s.lock.Close())
}

// Recovery reports what Open dropped from the journal or found missing
// from it. The zero Recovery means the journal was intact.
func (s *Store) Recovery() Recovery { return s.recovery }

// read runs f on the state under the read lock.
func (s *Store) read(ctx context.Context, f func(st *state) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: meta/local: %w", meta.ErrUnavailable, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return ErrClosed
	}
	return f(&s.mu.st)
}

// mutate is every write. Under w, check decides against the durable state
// plus what is staged and returns the entry to write (nil: nothing to do);
// mutate stages it. Then it waits until its entry, and every entry staged
// before its decision, is durable: committing them itself (with whatever
// else is staged by then, one frame and one sync for all) unless another
// caller's commit covers them. So a mutation is answered only after
// everything its answer depends on is durable, a decision or error
// included; a failed commit fails every mutation waiting on it.
func (s *Store) mutate(ctx context.Context, check func(st *state) (*entry, error)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: meta/local: %w", meta.ErrUnavailable, err)
	}
	s.w.Lock()
	ticket, err := s.decide(ctx, check)
	if s.stagedHook != nil {
		s.stagedHook()
	}
	s.w.Unlock()
	if ticket == 0 {
		return err
	}
	if werr := s.await(ticket); werr != nil {
		return werr
	}
	return err
}

// decide runs check under w and stages its entry. It returns the ticket
// mutate must wait for (0: nothing, the store refused before deciding)
// and check's error.
func (s *Store) decide(ctx context.Context, check func(st *state) (*entry, error)) (uint64, error) {
	if s.mu.closed {
		return 0, ErrClosed
	}
	if s.w.err != nil {
		return 0, fmt.Errorf("%w: meta/local: an earlier journal write failed, reopen the store: %w", meta.ErrUnavailable, s.pathless(s.w.err))
	}
	if err := ctx.Err(); err != nil { // waited for the lock; nothing decided
		return 0, fmt.Errorf("%w: meta/local: %w", meta.ErrUnavailable, err)
	}
	e, err := check(&s.w.st)
	if err != nil || e == nil {
		return s.w.staged, err
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return s.w.staged, fmt.Errorf("meta/local: encode %s: %w", e.Op, err)
	}
	if len(payload) > MaxEntrySize {
		return s.w.staged, fmt.Errorf("%w: %d bytes, limit %d (%s)", ErrTooLarge, len(payload), MaxEntrySize, e.Op)
	}
	if err := s.w.st.apply(e); err != nil {
		panic(err) // only mutate's own entries get here
	}
	s.w.staged++
	s.w.queue = append(s.w.queue, &pending{e: e, payload: payload, ticket: s.w.staged})
	return s.w.staged, nil
}

// await returns once every entry up to ticket is durable, committing
// them if no one else is committing, or the error that stopped them. A
// mutation whose entry another caller's commit made durable returns as
// soon as that commit releases c, without waiting for the commit after it.
func (s *Store) await(ticket uint64) error {
	for {
		if s.c.durable.Load() >= ticket {
			return nil
		}
		s.c.wakeMu.Lock()
		wake := s.c.wake
		s.c.wakeMu.Unlock()
		if s.c.durable.Load() >= ticket {
			return nil
		}
		if err := s.failed(); err != nil {
			return fmt.Errorf("%w: meta/local: journal %w", meta.ErrUnavailable, s.pathless(err))
		}
		if !s.c.TryLock() {
			<-wake // a commit is running: look again when it is done
			continue
		}
		if s.c.durable.Load() < ticket && s.c.err == nil {
			s.commit()
		}
		s.releaseCommit()
	}
}

// failed is the sticky error of a failed commit, if any.
func (s *Store) failed() error {
	s.w.Lock()
	defer s.w.Unlock()
	return s.w.err
}

// releaseCommit unlocks c and wakes every mutation waiting for it.
func (s *Store) releaseCommit() {
	s.c.Unlock()
	s.c.wakeMu.Lock()
	close(s.c.wake)
	s.c.wake = make(chan struct{})
	s.c.wakeMu.Unlock()
}

// commit writes the staged entries, as many as one frame holds, as one
// frame (a batch when there are several), syncs the journal, applies them
// to the durable state and rotates the journal if it is due. On a failed
// write or sync it sets the sticky error instead. Called with c held.
func (s *Store) commit() {
	s.w.Lock()
	n, size := 0, len(batchHead)+len(batchTail)
	for n < len(s.w.queue) && (n == 0 || size+len(s.w.queue[n].payload)+1 <= MaxEntrySize) {
		size += len(s.w.queue[n].payload) + 1
		n++
	}
	group := slices.Clone(s.w.queue[:n])
	s.w.queue = slices.Delete(s.w.queue, 0, n)
	s.w.Unlock()

	if err := s.appendFrame(group); err != nil {
		s.c.err = err
		s.w.Lock()
		s.w.err = err
		s.w.Unlock()
		return
	}
	s.mu.Lock()
	for _, p := range group {
		if err := s.mu.st.apply(p.e); err != nil {
			panic(err) // only mutate's own entries get here
		}
	}
	s.mu.Unlock()
	s.c.durable.Store(group[len(group)-1].ticket)
	if s.c.size >= s.c.rotateAt {
		if err := s.rotate(); err != nil {
			// The mutations are durable; only the snapshot failed. Try
			// again after another threshold of journal.
			s.c.rotateAt = s.c.size + s.opts.snapshotBytes
		}
	}
}

// appendFrame writes group as one frame at the journal's end and syncs
// it: the one entry's payload, or a batch of them. Called with c held.
func (s *Store) appendFrame(group []*pending) error {
	payload := group[0].payload
	if len(group) > 1 {
		payload = append([]byte(nil), batchHead...)
		for i, p := range group {
			if i > 0 {
				payload = append(payload, ',')
			}
			payload = append(payload, p.payload...)
		}
		payload = append(payload, batchTail...)
	}
	buf, err := appendFrame(s.c.buf[:0], payload)
	if err != nil {
		return err // cannot happen: decide and commit bound the payload
	}
	s.c.buf = buf
	if cap(s.c.buf) > 1<<20 {
		defer func() { s.c.buf = nil }() // do not pin one huge frame's buffer
	}
	if _, err := s.c.j.WriteAt(buf, s.c.size); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := s.c.j.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	s.c.size += int64(len(buf))
	return nil
}

// CreateTopic implements meta.Store.
func (s *Store) CreateTopic(ctx context.Context, t meta.TopicConfig) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if _, ok := st.topics[t.Name]; ok {
			return nil, fmt.Errorf("%w: %q", meta.ErrTopicExists, t.Name)
		}
		return &entry{Op: opPutTopic, Topic: &t}, nil
	})
}

// Topic implements meta.Store.
func (s *Store) Topic(ctx context.Context, name string) (meta.TopicConfig, error) {
	var t meta.TopicConfig
	err := s.read(ctx, func(st *state) error {
		var ok bool
		if t, ok = st.topics[name]; !ok {
			return fmt.Errorf("%w: topic %q", meta.ErrNotFound, name)
		}
		return nil
	})
	return t, err
}

// Topics implements meta.Store.
func (s *Store) Topics(ctx context.Context) ([]meta.TopicConfig, error) {
	var out []meta.TopicConfig
	err := s.read(ctx, func(st *state) error {
		out = make([]meta.TopicConfig, 0, len(st.topics))
		for _, t := range st.topics {
			out = append(out, t)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b meta.TopicConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// DeleteTopic implements meta.Store.
func (s *Store) DeleteTopic(ctx context.Context, name, id string) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if t, ok := st.topics[name]; !ok || t.ID != id {
			return nil, fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, name, id)
		}
		return &entry{Op: opDelTopic, Name: name}, nil
	})
}

// Partition implements meta.Store.
func (s *Store) Partition(ctx context.Context, k meta.PartitionKey) (meta.Partition, error) {
	var p meta.Partition
	err := s.read(ctx, func(st *state) error {
		if cur, ok := st.parts[k]; ok {
			p = clonePartition(cur)
		} else {
			p = zeroPartition(k)
		}
		return nil
	})
	return p, err
}

// Acquire implements meta.Store. A lease is live while Owner != "" and
// now < LeaseUntil; the holder itself may re-acquire a live lease.
func (s *Store) Acquire(ctx context.Context, k meta.PartitionKey, owner string, now time.Time, ttl time.Duration) (meta.Acquired, error) {
	if owner == "" {
		return meta.Acquired{}, errors.New("meta/local: acquire with empty owner")
	}
	var out meta.Acquired
	err := s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.parts[k]
		if !ok {
			cur = zeroPartition(k)
		}
		if cur.Deleted {
			return nil, fmt.Errorf("%w: partition %s/%s/%d is deleted", meta.ErrNotFound, k.Topic, k.TopicID, k.Partition)
		}
		if cur.Owner != "" && cur.Owner != owner && now.UnixMilli() < cur.LeaseUntil {
			return nil, fmt.Errorf("%w: %s/%s/%d by %q until %d", meta.ErrLeaseHeld, k.Topic, k.TopicID, k.Partition, cur.Owner, cur.LeaseUntil)
		}
		next := clonePartition(cur)
		next.Epoch++
		next.Version++
		next.Owner = owner
		next.LeaseUntil = now.Add(ttl).UnixMilli()
		out = meta.Acquired{Partition: clonePartition(next), TakenOver: cur.Owner != ""}
		return &entry{Op: opPutPart, Part: &next}, nil
	})
	if err != nil {
		return meta.Acquired{}, err
	}
	return out, nil
}

// Commit implements meta.Store.
func (s *Store) Commit(ctx context.Context, p meta.Partition, release bool, now time.Time, ttl time.Duration) error {
	k := keyOf(p)
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.parts[k]
		if !ok || p.Owner == "" || cur.Deleted || cur.Epoch != p.Epoch || cur.Owner != p.Owner || cur.Version != p.Version {
			return nil, fmt.Errorf("%w: %s/%s/%d epoch %d owner %q version %d, item has epoch %d owner %q version %d deleted %v",
				meta.ErrFenced, k.Topic, k.TopicID, k.Partition, p.Epoch, p.Owner, p.Version, cur.Epoch, cur.Owner, cur.Version, cur.Deleted)
		}
		next := cur
		next.Version = cur.Version + 1
		next.NextOffset = p.NextOffset
		next.LastTS = p.LastTS
		next.Active = p.Active
		next.Sealed = p.Sealed
		if release {
			next.Owner = ""
			next.LeaseUntil = 0
		} else {
			next.LeaseUntil = now.Add(ttl).UnixMilli()
		}
		next = clonePartition(next) // the caller keeps p
		return &entry{Op: opPutPart, Part: &next}, nil
	})
}

// FencePartition implements meta.Store. It always writes (a fenced item is
// fenced again, bumping epoch and version once more), so a retry after an
// unknown outcome is safe.
func (s *Store) FencePartition(ctx context.Context, k meta.PartitionKey) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.parts[k]
		if !ok {
			cur = zeroPartition(k)
		}
		next := clonePartition(cur)
		next.Epoch++
		next.Version++
		next.Owner, next.LeaseUntil = "", 0
		next.Deleted = true
		return &entry{Op: opPutPart, Part: &next}, nil
	})
}

func (s *Store) advance(ctx context.Context, k meta.PartitionKey, field func(*meta.Partition) *int64, v int64) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.parts[k]
		if !ok {
			return nil, fmt.Errorf("%w: partition %s/%s/%d", meta.ErrNotFound, k.Topic, k.TopicID, k.Partition)
		}
		next := clonePartition(cur)
		if f := field(&next); v > *f {
			*f = v
			return &entry{Op: opPutPart, Part: &next}, nil
		}
		return nil, nil
	})
}

// AdvanceLogStart implements meta.Store.
func (s *Store) AdvanceLogStart(ctx context.Context, k meta.PartitionKey, v int64) error {
	return s.advance(ctx, k, func(p *meta.Partition) *int64 { return &p.LogStartOffset }, v)
}

// AdvanceColdEnd implements meta.Store.
func (s *Store) AdvanceColdEnd(ctx context.Context, k meta.PartitionKey, v int64) error {
	return s.advance(ctx, k, func(p *meta.Partition) *int64 { return &p.ColdEnd }, v)
}

// PutSegment implements meta.Store.
func (s *Store) PutSegment(ctx context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if cur, ok := st.segs[k][e.NextOffset]; ok {
			if cur.Base == e.Base && cur.Key == e.Key {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: segment ending at %d is %s, not %s", meta.ErrConflict, e.NextOffset, cur.Key, e.Key)
		}
		pk := partKey(k)
		return &entry{Op: opPutSeg, Key: &pk, Seg: &e}, nil
	})
}

// Segments implements meta.Store.
func (s *Store) Segments(ctx context.Context, k meta.PartitionKey, from int64, limit int) ([]meta.CatalogEntry, error) {
	var out []meta.CatalogEntry
	err := s.read(ctx, func(st *state) error {
		for end, e := range st.segs[k] {
			if end > from {
				out = append(out, e)
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b meta.CatalogEntry) int { return cmp.Compare(a.NextOffset, b.NextOffset) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// MarkSegmentCold implements meta.Store: one put_seg entry with the whole
// new entry, or nothing when the entry is already marked.
func (s *Store) MarkSegmentCold(ctx context.Context, k meta.PartitionKey, nextOffset, ms int64) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.segs[k][nextOffset]
		if !ok {
			return nil, fmt.Errorf("%w: segment ending at %d of %s/%s/%d", meta.ErrNotFound, nextOffset, k.Topic, k.TopicID, k.Partition)
		}
		if cur.ColdMs != 0 || ms == 0 {
			return nil, nil
		}
		cur.ColdMs = ms
		pk := partKey(k)
		return &entry{Op: opPutSeg, Key: &pk, Seg: &cur}, nil
	})
}

// DeleteSegment implements meta.Store.
func (s *Store) DeleteSegment(ctx context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if _, ok := st.segs[k][e.NextOffset]; !ok {
			return nil, nil
		}
		pk := partKey(k)
		return &entry{Op: opDelSeg, Key: &pk, Seg: &meta.CatalogEntry{NextOffset: e.NextOffset}}, nil
	})
}

// DeletePartition implements meta.Store. It is unconditional; a missing
// item is not an error.
func (s *Store) DeletePartition(ctx context.Context, k meta.PartitionKey) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if _, ok := st.parts[k]; !ok {
			return nil, nil
		}
		pk := partKey(k)
		return &entry{Op: opDelPart, Key: &pk}, nil
	})
}

// CommitOffsets implements meta.Store. All offsets of one call go in one
// journal entry, so locally they land together.
func (s *Store) CommitOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error {
	if len(offsets) == 0 {
		return ctx.Err()
	}
	offsets = slices.Clone(offsets)
	return s.mutate(ctx, func(*state) (*entry, error) {
		return &entry{Op: opPutOffsets, Group: group, Offsets: offsets}, nil
	})
}

// GroupOffsets implements meta.Store. It never returns nil on success.
func (s *Store) GroupOffsets(ctx context.Context, group, topic string) ([]meta.GroupOffset, error) {
	var out []meta.GroupOffset
	err := s.read(ctx, func(st *state) error {
		out = sortedOffsets(st.groups[group][topic])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pathless is err with the store's directory cut from its message, so an
// error a client may see names no server path ("write journal-…log: no
// space left on device"). The chain is kept: errors.Is(err, syscall.ENOSPC)
// still holds.
func (s *Store) pathless(err error) error {
	prefix := filepath.Clean(s.dir) + string(filepath.Separator)
	msg := err.Error()
	if !strings.Contains(msg, prefix) {
		return err
	}
	return &pathlessError{msg: strings.ReplaceAll(msg, prefix, ""), err: err}
}

type pathlessError struct {
	msg string
	err error
}

func (e *pathlessError) Error() string { return e.msg }
func (e *pathlessError) Unwrap() error { return e.err }

// Group implements meta.Store.
func (s *Store) Group(ctx context.Context, group string) (meta.GroupState, error) {
	out := meta.GroupState{Group: group}
	err := s.read(ctx, func(st *state) error {
		if g, ok := st.gstate[group]; ok {
			out = g.Clone()
		}
		return nil
	})
	return out, err
}

// PutGroup implements meta.Store: one put_group entry with the whole item.
func (s *Store) PutGroup(ctx context.Context, g meta.GroupState) error {
	next := g.Clone()
	next.Version = g.Version + 1
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if cur := st.gstate[g.Group]; cur.Version != g.Version {
			return nil, fmt.Errorf("%w: group %q is at version %d, not %d", meta.ErrConflict, g.Group, cur.Version, g.Version)
		}
		return &entry{Op: opPutGroup, GState: &next}, nil
	})
}

// DeleteGroup implements meta.Store.
func (s *Store) DeleteGroup(ctx context.Context, group string, version uint64) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.gstate[group]
		if cur.Version != version {
			return nil, fmt.Errorf("%w: group %q is at version %d, not %d", meta.ErrConflict, group, cur.Version, version)
		}
		if !ok {
			return nil, nil
		}
		return &entry{Op: opDelGroup, Group: group}, nil
	})
}

// Groups implements meta.Store.
func (s *Store) Groups(ctx context.Context) ([]meta.GroupState, error) {
	var out []meta.GroupState
	err := s.read(ctx, func(st *state) error {
		out = make([]meta.GroupState, 0, len(st.gstate))
		for _, name := range sortedKeys(st.gstate) {
			out = append(out, st.gstate[name].Clone())
		}
		return nil
	})
	return out, err
}

// DeleteGroupOffsets implements meta.Store: one del_offsets entry, or
// nothing when the group has no offsets for topic.
func (s *Store) DeleteGroupOffsets(ctx context.Context, group, topic string) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if len(st.groups[group][topic]) == 0 {
			return nil, nil
		}
		return &entry{Op: opDelOffsets, Group: group, Name: topic}, nil
	})
}

// UpdateTopic implements meta.Store: one put_topic entry.
func (s *Store) UpdateTopic(ctx context.Context, old, t meta.TopicConfig) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.topics[t.Name]
		if !ok || cur.ID != t.ID || old.ID != t.ID {
			return nil, fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, t.Name, t.ID)
		}
		if cur.Partitions != old.Partitions {
			return nil, fmt.Errorf("%w: topic %q has %d partitions, not %d", meta.ErrConflict, t.Name, cur.Partitions, old.Partitions)
		}
		return &entry{Op: opPutTopic, Topic: &t}, nil
	})
}
