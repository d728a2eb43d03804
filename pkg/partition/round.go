package partition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/trace"
)

// A round is one turn of the write protocol (docs/internals.md, "The write
// protocol"), under wmu, in five phases, each a method below:
//
//  1. lease: hold the lease (ensureWriter: acquire, continue a warm or
//     parked writer) and the window of batch keys the committed state has;
//  2. decide: which of our batches are answered without a write (replays,
//     conditions that cannot hold) and which staged batches of other
//     writers join ours;
//  3. place: roll if due, and give every record its offset and timestamp,
//     every keyed batch its batch-file entry;
//  4. persist: write the records and the entries, and fsync both: the
//     durability point, before the commit names the bytes;
//  5. commit: one conditional write of the new state, releasing, keeping
//     or parking the lease; then publish it in this process (view, window).
//     Its checkpoint for other processes, and the removal of staged files
//     too old for any waiter, follow the round's answers (l.tail,
//     afterAnswers).
//
// A failure before the commit drops the writer and releases the lease with
// the state last committed; a failed commit forgets the writer (fenced or
// unknown: nothing was acknowledged).
type round struct {
	st     meta.Partition // the state to commit: l.lease as the round changes it
	now    time.Time
	ts     int64 // the batch timestamp (append time)
	own    []*pending
	others []*staged
	remove []string // others' staged files to remove after the commit
	done   []string // others' staged files committed before: their waiters'
	mine   []string // our own staged files
	more   bool     // batches were staged after the listing (persist)
	total  int      // bytes of the records written

	recs         []segment.Record
	ents         []batchEntry
	entBytes     []byte
	minTS, maxTS int64
	apps         []Appended // where each batch of ours landed
}

// write runs one round for the grouped batches: it returns where each batch
// of batch landed (or sets its res), or an error for all that are left;
// errBusy (in the chain) when another writer holds the lease, and
// errParkedFenced when another took a parked lease over (flush runs the
// round again).
func (l *Log) write(ctx context.Context, batch []*pending) ([]Appended, error) {
	l.sealed = false
	start := time.Now()
	r, err := l.takeLease(ctx)
	if err != nil {
		return nil, err
	}
	l.decide(ctx, r, batch)
	if len(r.own) == 0 && len(r.others) == 0 {
		if !l.cfg.HoldLease && !l.parked {
			l.releaseLease(ctx)
		}
		l.removeStaged(r.remove)
		return nil, nil
	}
	if err := l.renewIfDue(ctx, r); err != nil {
		return nil, err
	}
	if err := l.place(r, batch); err != nil {
		l.dropWriter(ctx)
		return nil, err
	}
	defer l.keepRecBuf(r.recs)
	if err := l.renewIfDue(ctx, r); err != nil {
		return nil, err
	}
	if err := l.persist(ctx, r); err != nil {
		l.dropWriter(ctx)
		return nil, err
	}
	if err := l.commit(ctx, r); err != nil {
		return nil, err
	}
	l.cfg.Metrics.ObserveFlush(time.Since(start), len(r.recs), r.total)
	return r.apps, nil
}

// takeLease is phase 1: the lease, and the window as of the committed state.
func (l *Log) takeLease(ctx context.Context) (*round, error) {
	if err := l.ensureWriter(ctx); err != nil {
		return nil, err
	}
	now := l.cfg.Now()
	if l.winStale {
		if err := l.win.refresh(l.cfg.FS, l.cfg.Dir, &l.lease, now, l.cfg.IdempotencyWindow); err != nil {
			l.dropWriter(ctx)
			return nil, fmt.Errorf("%w: read batch keys: %w", ErrUnavailable, err)
		}
		l.winStale = false
	}
	r := &round{st: l.lease, now: now}
	r.st.Sealed = append([]meta.SegmentInfo(nil), r.st.Sealed...)
	r.ts = max(now.UnixMilli(), r.st.LastTS) // I6
	if l.cfg.CreateTime {
		r.ts = now.UnixMilli() // the clock, for records without a timestamp
	}
	return r, nil
}

// decide is phase 2: ours first (a key the window has is a replay, a
// condition that cannot hold a mismatch), then the staged batches that
// fit (none in a parked round: nobody stages; park.go).
func (l *Log) decide(ctx context.Context, r *round, batch []*pending) {
	next := r.st.NextOffset
	seen := map[string]bool{}
	for _, p := range batch {
		if p.staged != nil {
			r.mine = append(r.mine, p.staged.name)
		}
	}
	for _, p := range batch {
		if p.key != "" {
			if e, ok := l.win.lookup(p.key); ok {
				res := replay(e, p)
				p.res = &res
				continue
			}
			seen[p.key] = true
		}
		if p.expected >= 0 && p.expected != next {
			p.res = &result{err: &MismatchError{Expected: p.expected, HighWatermark: next}}
			continue
		}
		r.own = append(r.own, p)
		next += int64(len(p.recs))
		r.total += p.size
	}
	if !l.parked {
		// A warm leader (nobody committed since its last round) expects
		// as many as that round took: they were answered together and
		// are staging again now (lingerFor).
		expect := 0
		if l.alone {
			expect = l.lastTook
		}
		r.others, r.remove, r.done = l.collectStaged(ctx, r.now, seen, &next, &r.total, expect, r.mine)
		l.lastTook = len(r.others)
	}
	if len(r.others) > 0 {
		l.sawOther()
		l.contended = r.now.Add(contendedFor)
	}
	r.apps = make([]Appended, len(batch))
}

// place is phase 3: a new segment if there is no writer (the first, or the
// active one was sealed at the acquire: a takeover, or damage) or the
// active one is full or old; then the records at their offsets. The new
// file goes into r.st only: until a commit names it, a release commits
// l.lease, which does not.
func (l *Log) place(r *round, batch []*pending) error {
	var err error
	if l.w == nil {
		err = l.roll(&r.st, r.now)
	} else {
		err = l.maybeRoll(&r.st, r.now, int64(r.total))
	}
	if err != nil {
		return err
	}
	nrec := 0
	for _, p := range r.own {
		nrec += len(p.recs)
	}
	for _, s := range r.others {
		nrec += len(s.recs)
	}
	if cap(l.recBuf) < nrec {
		l.recBuf = make([]segment.Record, 0, nrec)
	}
	r.recs = l.recBuf[:0]
	next := r.st.NextOffset
	r.minTS, r.maxTS = int64(math.MaxInt64), int64(-1)
	add := func(rs []Record, key string, hash [16]byte, origin uint64) int64 {
		base := next
		for _, rec := range rs {
			t := r.ts
			if rec.HasTimestamp && l.cfg.CreateTime {
				t = rec.Timestamp
			}
			r.minTS, r.maxTS = min(r.minTS, t), max(r.maxTS, t)
			r.recs = append(r.recs, segment.Record{Offset: next, Timestamp: t, Key: rec.Key, Value: rec.Value, Headers: rec.Headers})
			next++
		}
		if key != "" {
			e := batchEntry{Base: base, Count: len(rs), TS: r.ts, Hash: hash, Origin: origin, Key: key}
			r.ents = append(r.ents, e)
			r.entBytes = appendBatchEntry(r.entBytes, e)
		}
		return base
	}
	for i, p := range batch {
		if p.res == nil {
			r.apps[i] = Appended{BaseOffset: add(p.recs, p.key, p.hash, p.origin), Timestamp: r.ts}
		}
	}
	for _, s := range r.others {
		add(s.recs, s.key, s.hash, s.origin)
	}
	r.st.NextOffset = next
	return nil
}

// keepRecBuf keeps recs' array for the next round, holding no caller's
// memory, unless it grew past maxRecBuf.
func (l *Log) keepRecBuf(recs []segment.Record) {
	clear(recs)
	l.recBuf = nil
	if cap(recs) <= maxRecBuf {
		l.recBuf = recs[:0]
	}
}

// persist is phase 4: the batch entries and the records, written and
// fsynced; then r.st takes the active segment's new length.
func (l *Log) persist(ctx context.Context, r *round) error {
	err := trace.Capture(ctx, trace.SpanAppendFsync, func(context.Context) error {
		if err := l.bw.write(r.entBytes); err != nil {
			return fmt.Errorf("%w: append batch keys: %w", ErrUnavailable, err)
		}
		if err := l.w.Append(r.recs); err != nil {
			return fmt.Errorf("%w: append: %w", ErrUnavailable, err)
		}
		// The two fsyncs at once (independent files; each a durable round
		// trip on a network file system): both before the commit. Beside
		// them, the listing that decides whether the commit keeps the
		// lease for another round (mayChain).
		var errs [2]error
		tasks := []func(){func() {
			if err := l.w.Sync(); err != nil {
				errs[0] = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
		}}
		if len(r.entBytes) > 0 {
			tasks = append(tasks, func() {
				if err := l.bw.f.Sync(); err != nil {
					errs[1] = fmt.Errorf("%w: sync batch keys: %w", ErrUnavailable, err)
				}
			})
		}
		if l.mayChain(r) {
			tasks = append(tasks, func() { r.more = l.moreStaged(r) })
		}
		l.cfg.Parallel(len(tasks), func(i int) { tasks[i]() })
		return errors.Join(errs[0], errs[1])
	})
	if err != nil {
		return err
	}
	ws := l.w.State()
	act := *r.st.Active
	act.Size, act.NextOffset, act.LastTS = ws.Size, ws.NextOffset, ws.LastTS
	if act.FirstTS < 0 || r.minTS < act.FirstTS {
		act.FirstTS = r.minTS // the smallest timestamp (the first, on an append-time topic)
	}
	r.st.Active = &act
	r.st.LastTS = max(r.st.LastTS, r.maxTS) // the largest so far
	return nil
}

// mayChain reports whether a commit may keep the lease for another round
// (afterAnswers): Lambda mode, a round that took staged batches (others are
// writing), within the chain's bounds. It does if batches were staged
// since the round's listing (r.more, listed while the round's fsyncs ran).
func (l *Log) mayChain(r *round) bool {
	return !l.cfg.HoldLease && len(r.others) > 0 && l.chained < maxChain && l.cfg.Now().Sub(l.acquiredAt) < l.cfg.LeaseTTL/10
}

// renewIfDue extends the lease between phases when less than half of it is
// left, so that a round that runs long (a slow file system, many staged
// batches to read) is not taken over before its commit: Meta.Commit of the
// state last committed, unchanged (l.lease: always safe to commit, as a
// release is), keeping the lease to now+LeaseTTL and moving the version
// on. Fenced or unknown: the round ends as a failed commit does, with
// nothing written that a commit names. A parked lease is not renewed:
// anyone may take it at once, whatever its time.
func (l *Log) renewIfDue(ctx context.Context, r *round) error {
	if l.parked {
		return nil
	}
	now := l.cfg.Now()
	if now.UnixMilli() < l.lease.LeaseUntil-l.cfg.LeaseTTL.Milliseconds()/2 {
		return nil
	}
	err := trace.Capture(ctx, trace.SpanCommit, func(ctx context.Context) error {
		return l.cfg.Meta.Commit(ctx, l.lease, false, now, l.cfg.LeaseTTL)
	})
	if err != nil {
		if errors.Is(err, meta.ErrFenced) {
			l.cfg.Metrics.Conflict()
			l.sawOther()
		}
		l.closeWriter(false)
		l.holding = false
		return fmt.Errorf("%w: renew the lease: %w", ErrUnavailable, err)
	}
	l.lease.Version++
	l.lease.LeaseUntil = now.Add(l.cfg.LeaseTTL).UnixMilli()
	r.st.Version, r.st.LeaseUntil = l.lease.Version, l.lease.LeaseUntil
	return nil
}

// commit is phase 5: release, keep or park the lease with the new state,
// then publish it.
func (l *Log) commit(ctx context.Context, r *round) error {
	st := r.st
	release := !l.cfg.HoldLease || l.othersWaiting()
	if r.more && l.mayChain(r) {
		// Lambda mode, a round that took staged batches (others are
		// writing), with more staged since the listing: keep the lease
		// for one more round (afterAnswers) rather than release it to a
		// crowd of waiters that would all try to acquire it.
		release = false
		l.again = true
	}
	wasParked := l.parked
	park := release && l.mayPark(len(r.others) > 0)
	err := trace.Capture(ctx, trace.SpanCommit, func(ctx context.Context) error {
		if park {
			return l.cfg.Meta.Commit(ctx, st, false, parkedUntil, 0)
		}
		return l.cfg.Meta.Commit(ctx, st, release, l.cfg.Now(), l.cfg.LeaseTTL)
	})
	if err != nil {
		fenced := errors.Is(err, meta.ErrFenced)
		if fenced {
			l.cfg.Metrics.Conflict()
			l.sawOther()
		}
		// Fenced or unknown: not acknowledged. Forget the writer; the next
		// batch re-acquires and recovers from whatever was committed. (An
		// unknown outcome that did apply leaves our own live lease behind:
		// re-taking it counts as a takeover, so the next batch seals and
		// rolls rather than continuing a file in an unknown state.)
		l.closeWriter(false)
		l.holding, l.parked = false, false
		if wasParked && fenced {
			return fmt.Errorf("%w: %w: commit: %w", ErrUnavailable, errParkedFenced, err)
		}
		return fmt.Errorf("%w: commit: %w", ErrUnavailable, err)
	}
	committedAt := l.cfg.Now()
	st.Version++ // the commit moved the item's version on
	l.win.add(r.ents)
	if l.alone && len(r.others) == 0 {
		l.solo++
	} else {
		l.solo = 0
	}
	l.parked = park
	if park {
		st.LeaseUntil = parkedUntil.UnixMilli()
	} else if release {
		l.chained = 0
		st.Owner = ""
		l.holding = false
		if !l.cfg.HoldLease && l.w != nil && st.Active != nil {
			l.warm, l.warmVersion, l.warmActive = true, st.Version, *st.Active
		} else {
			l.closeWriter(false)
		}
	}
	l.lease = st
	l.publish(&st)
	if l.sealed && l.cfg.OnRoll != nil {
		l.cfg.OnRoll(l.cfg.Key)
	}
	l.sealed = false
	// The rest goes after the round's answers (afterAnswers): what it
	// publishes to other processes, the checkpoint, is a cache they do not
	// rely on (checkpoint.go), and a batch they staged is answered from the
	// item as well. A parked or warm round (nobody committed between this
	// Log's last commit and this one) writes it through the file it kept
	// open, without a look at the other slots; a writer that keeps its
	// files open past this commit keeps the checkpoint's too.
	alone, keep := wasParked || l.alone, park || release && l.warm
	l.tail = func() {
		if l.cfg.Checkpoint {
			l.writeCheckpoint(&st, committedAt, alone, keep)
		}
		// Only files too old for any waiter go here. The ones taken, and
		// the ones committed before, are their waiters' to remove once
		// they have their answer: the leader's time is the partition's.
		// This Log will not read them again (committedStaged).
		l.removeStaged(r.remove)
		for _, s := range r.others {
			l.committedStaged[s.name] = true
		}
	}
	return nil
}
