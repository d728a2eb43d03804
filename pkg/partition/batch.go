package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Errors of idempotent and conditional appends.
var (
	// ErrKeyInUse means a batch with the same key is being appended by
	// this Log right now.
	ErrKeyInUse = errors.New("partition: batch key in use")
	// ErrKeyReused means the key was committed before with other contents
	// (another Hash): nothing was appended.
	ErrKeyReused = errors.New("partition: batch key reused with other contents")
	// ErrWaitedOut means a batch waited its turn on a lease other writers
	// held until its deadline: it may still be appended by a holder that
	// read it (the outcome is unknown). It comes wrapped in ErrUnavailable.
	ErrWaitedOut = errors.New("partition: busy until the deadline")
)

// MismatchError is a conditional append refused: the high watermark was
// not the batch's Expected offset. Nothing was appended.
type MismatchError struct {
	Expected, HighWatermark int64
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("partition: expected offset %d, high watermark %d", e.Expected, e.HighWatermark)
}

// Batch is one request's records for this partition, with its conditions.
type Batch struct {
	Records []Record
	// Key, if not "", names the batch for at-most-once commits: a batch
	// whose Key was committed within the idempotency window is not
	// appended again; the earlier commit's offsets are returned with
	// Appended.Replayed set (or ErrKeyReused if Hash differs). At most
	// 300 bytes.
	Key string
	// Hash identifies the batch's contents for Key.
	Hash [16]byte
	// Expected, if >= 0, makes the append conditional: the batch lands
	// only at exactly this offset, else *MismatchError.
	Expected int64
}

// errBusy marks the error of a round that found the lease held by another
// writer: the batches wait their turn (waitTurn) instead of failing.
var errBusy = errors.New("partition: lease held by another writer")

// pollMin and pollMax bound how often a waiting batch reads the partition
// item: the interval starts at pollMin and grows by half up to pollMax,
// and starts again whenever the item moves.
const (
	pollMin = 2 * time.Millisecond
	pollMax = 5 * time.Millisecond
)

// AppendBatch appends b as one contiguous batch, once it is durable and
// committed, honouring its key and condition. A partition whose lease
// another writer holds is waited for (the batch is staged in the write
// buffer for that writer to include) for up to BusyWait or ctx's deadline;
// then, or when a commit's outcome is unknown, the error is ErrUnavailable
// and the outcome unknown: a retry with the same Key is safe.
func (l *Log) AppendBatch(ctx context.Context, b Batch) (Appended, error) {
	if len(b.Records) == 0 {
		return Appended{}, fmt.Errorf("partition: empty batch")
	}
	if len(b.Key) > maxBatchKey-2 {
		return Appended{}, fmt.Errorf("partition: batch key of %d bytes, at most %d", len(b.Key), maxBatchKey-2)
	}
	for i := range b.Records {
		r := &b.Records[i]
		switch {
		case r.HasTimestamp && !l.cfg.CreateTime:
			return Appended{}, fmt.Errorf("partition: record %d carries a timestamp, and %v takes append time", i, l.cfg.Key)
		case r.HasTimestamp && r.Timestamp < 0:
			return Appended{}, fmt.Errorf("partition: record %d has timestamp %d, below 0", i, r.Timestamp)
		}
	}
	p := &pending{recs: b.Records, key: b.Key, hash: b.Hash, expected: b.Expected, origin: l.cfg.Rand(), done: make(chan result, 1)}
	if b.Key != "" {
		p.key = "k:" + b.Key
	}
	for i := range b.Records {
		p.size += recordSize(b.Records[i])
	}
	p.deadline = l.cfg.Now().Add(l.cfg.BusyWait)
	if d, ok := ctx.Deadline(); ok && d.Before(p.deadline) {
		p.deadline = d
	}
	l.qmu.Lock()
	if l.closed {
		l.qmu.Unlock()
		return Appended{}, ErrClosed
	}
	if p.key != "" {
		if l.inUse[p.key] {
			l.qmu.Unlock()
			return Appended{}, fmt.Errorf("%w: key %q", ErrKeyInUse, b.Key)
		}
		l.inUse[p.key] = true
		defer func() {
			l.qmu.Lock()
			delete(l.inUse, p.key)
			l.qmu.Unlock()
		}()
	}
	l.queue = append(l.queue, p)
	lead := !l.flushing
	l.flushing = true
	l.qmu.Unlock()
	switch {
	case lead && l.cfg.Detach != nil && l.parkedHint.Load():
		// A writer alone: answered once its commit applied; what follows
		// its answers goes to Detach (flush). Where others write, the
		// leader's answer still waits for what follows its round (the
		// checkpoint, the rounds chained for staged batches, the
		// release): answered sooner, it comes back ahead of the writers
		// its next round would take, and they miss it
		// (docs/benchmarks.md, "The checkpoint after the answer").
		l.lead(context.WithValue(ctx, leadKey{}, mayDetach))
	case lead:
		l.lead(ctx)
	}
	// The batch may already be on disk: wait for its outcome whatever ctx
	// says, so a caller never gets an error for an acknowledged batch.
	r := <-p.done
	if r.err == nil {
		l.sawAck(r.app.BaseOffset + int64(len(b.Records)))
	}
	return r.app, r.err
}

// waitTurn is what a group of batches does when another writer holds the
// lease: stage each in the write buffer, then watch the partition item
// until a commit names it (the holder took it), or the lease is free (lead
// a round: ours and whatever else is staged), or its deadline passes.
//
// Staged or not, a batch's outcome is decided by commits only: a waiter
// looks its key up in the window of the committed state, so it answers the
// offsets some commit gave it, or, at its deadline, ErrUnavailable (a
// leader may still hold a copy it read: the outcome is unknown).
func (l *Log) waitTurn(ctx context.Context, batch []*pending) {
	l.sawOther()
	p0, conditional, ok := l.readConditions(ctx, batch)
	if !ok {
		return
	}
	left, over := l.stageBesideAcquire(ctx, batch, conditional, &p0)
	if over {
		return
	}
	l.waitForCommit(ctx, left, p0.Version)
}

// finish answers a batch.
func finish(p *pending, r result) { p.done <- r }

// readConditions reads the committed state before a group with a
// conditional batch is staged: a waiter that answered a mismatch for a
// batch some leader could still take would lie. Other batches are staged
// at once; a key committed before is found by the first poll (and the
// leader skips its staged copy). ok is false when the group is answered:
// the topic is being deleted, or the state cannot be read.
func (l *Log) readConditions(ctx context.Context, batch []*pending) (p0 meta.Partition, conditional, ok bool) {
	for _, p := range batch {
		conditional = conditional || p.expected >= 0
	}
	if !conditional {
		return p0, false, true
	}
	p0, err := l.cfg.Meta.Partition(ctx, l.cfg.Key)
	if err == nil && p0.Deleted {
		// The incarnation is being deleted: its high watermark is no
		// answer to a condition on the topic (which may be created
		// again); the caller looks the topic up again.
		for _, p := range batch {
			finish(p, result{err: fmt.Errorf("%w: %v", ErrDeleted, l.cfg.Key)})
		}
		return p0, true, false
	}
	if err == nil {
		err = l.win.refresh(l.cfg.FS, l.cfg.Dir, &p0, l.cfg.Now(), l.cfg.IdempotencyWindow)
	}
	if err != nil {
		for _, p := range batch {
			finish(p, result{err: fmt.Errorf("%w: lease held and state unreadable: %w", ErrUnavailable, err)})
		}
		return p0, true, false
	}
	return p0, true, true
}

// stageBesideAcquire stages the group's batches (those a condition does
// not decide) and returns them as left. Beside the staging go the removal
// of our staged files answered before (each a durable round trip on a
// network file system, and independent) and, for a warm writer, its
// acquire. over is true when nothing is left to wait for: every batch is
// answered, or a round this Log led settled them.
func (l *Log) stageBesideAcquire(ctx context.Context, batch []*pending, conditional bool, p0 *meta.Partition) (left []*pending, over bool) {
	done := l.answeredStaged
	l.answeredStaged = nil
	// The writer that led the last round it knows of (it released the
	// lease with its files open: warm) tries the lease at once, beside
	// its staging. The writers that round answered come back together,
	// it first (it learnt of the commit first), and it continues the
	// active segment without reading it back.
	tryLease := l.warm
	var leaseErr error
	n := 1 + min(len(done), 1) // staging, and the removal if any
	tasks := n
	if tryLease {
		tasks++
	}
	l.cfg.Parallel(tasks, func(i int) {
		switch {
		case i == 0:
			left = l.stage(batch, conditional, p0)
		case i == n:
			l.waiting = true
			leaseErr = l.ensureWriter(ctx)
			l.waiting = false
			l.acquiredAhead = leaseErr == nil
		default:
			l.removeStaged(done)
		}
	})
	if !tryLease {
		return left, len(left) == 0
	}
	// The round starts once both are done: it lists the write buffer
	// (ours are in it), and an acquire that failed leaves our batches
	// staged for the holder, as they would be had we tried after.
	switch {
	case leaseErr == nil && len(left) == 0:
		// Nothing of ours is left to write: the lease goes back.
		l.acquiredAhead = false
		l.releaseLease(ctx)
		return nil, true
	case leaseErr == nil:
		return left, l.leadWaiting(ctx, left)
	case !errors.Is(leaseErr, errBusy):
		for _, p := range left {
			finish(p, result{err: leaseErr})
		}
		return nil, true
	}
	return left, false
}

// waitForCommit watches for the commit that names left's staged batches:
// the checkpoint between item reads (a commit shows there as a newer
// version), the item at least every waitItemEvery. It answers each batch
// a commit names, leads a round when the lease is free (ours and whatever
// else is staged), and answers ErrUnavailable at a batch's deadline.
// version is the item version already read for the window (0: none).
func (l *Log) waitForCommit(ctx context.Context, left []*pending, version uint64) {
	interval := pollMin
	freePolls := 0
	lookItem, itemAt := true, time.Time{}
	var stamp ckptStamp // the checkpoint's, at the last look
	for len(left) > 0 {
		if err := l.cfg.Sleep(ctx, interval); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			break
		}
		interval = min(interval*3/2, pollMax)
		now := l.cfg.Now()
		if l.cfg.Checkpoint && !lookItem && now.Sub(itemAt) < waitItemEvery {
			var lead bool
			left, lead, lookItem = l.waitCheckpoint(left, &version, &stamp)
			if lead && l.leadWaiting(ctx, left) {
				return
			}
			interval = ckptPoll
			left = l.waitedOut(left, now)
			continue
		}
		lookItem, itemAt = false, now
		cur, err := l.cfg.Meta.Partition(ctx, l.cfg.Key)
		if err == nil && cur.Deleted {
			for _, p := range left {
				l.removeStaged([]string{p.staged.name})
				finish(p, result{err: fmt.Errorf("%w: %v", ErrDeleted, l.cfg.Key)})
			}
			return
		}
		if err == nil && cur.Owner != "" && cur.LeaseUntil > now.UnixMilli() {
			l.contended = now.Add(contendedFor)
		}
		moved := false
		if err == nil && cur.Version != version {
			// A commit (or an acquire): read what it added. An item that
			// has not moved has nothing new for the window.
			version, interval, moved = cur.Version, pollMin, true
			l.sawVersion(version)
			err = l.win.refresh(l.cfg.FS, l.cfg.Dir, &cur, now, l.cfg.IdempotencyWindow)
		}
		if err == nil {
			rest := left[:0:0]
			for _, p := range left {
				if r, ok := l.decided(p, &cur); moved && ok {
					finish(p, r)
					l.answeredStaged = append(l.answeredStaged, p.staged.name)
				} else {
					rest = append(rest, p)
				}
			}
			left = rest
			free := cur.Owner == "" || cur.LeaseUntil <= now.UnixMilli()
			if free {
				freePolls++
			} else {
				freePolls = 0
			}
			// The writer of the oldest staged batch leads first; the
			// others give it a few polls, so a free lease is not raced
			// for by every waiter (a failed acquire costs a write).
			if len(left) > 0 && free && (freePolls > 2 || l.oldestStaged(left)) && l.leadWaiting(ctx, left) {
				return
			}
		}
		left = l.waitedOut(left, now)
	}
}

// stage writes each batch of batch to the write buffer, unless the state
// p0 read for conditional ones decides it, and returns those staged.
func (l *Log) stage(batch []*pending, conditional bool, p0 *meta.Partition) (left []*pending) {
	for _, p := range batch {
		if r, ok := l.decided(p, p0); conditional && ok {
			finish(p, r)
			continue
		}
		if p.key == "" {
			p.key = fmt.Sprintf("b:%016x", p.origin)
		}
		s := &staged{created: l.cfg.Now().UnixMilli(), expected: p.expected, hash: p.hash,
			origin: p.origin, key: p.key, recs: p.recs, size: p.size}
		if err := l.writeStaged(s); err != nil {
			finish(p, result{err: fmt.Errorf("%w: lease held, and staging the batch failed: %w", ErrUnavailable, err)})
			continue
		}
		p.staged = s
		left = append(left, p)
	}
	return left
}

// leadWaiting has waiting batches lead a round themselves (ours first,
// then whatever else is staged), and answers them; false if the lease was
// taken meanwhile (they go on waiting).
func (l *Log) leadWaiting(ctx context.Context, left []*pending) bool {
	l.waiting = true
	apps, err := l.write(ctx, left)
	l.waiting = false
	if errors.Is(err, errBusy) {
		return false
	}
	for i, p := range left {
		switch {
		case p.res != nil:
			finish(p, *p.res)
		case err != nil:
			finish(p, result{err: err})
		default:
			finish(p, result{app: apps[i]})
		}
	}
	if err == nil {
		// Removed with the next batch's staging, off the answer's path.
		// (A round that failed leaves them: a leader may take them
		// still, which is why their outcome is unknown.)
		for _, p := range left {
			l.answeredStaged = append(l.answeredStaged, p.staged.name)
		}
	}
	l.afterAnswers(ctx)
	return true
}

// waitItemEvery is how often a waiting batch reads the partition item when
// the checkpoint has not sent it there (Config.Checkpoint): a lease freed
// without a commit (a holder that crashed, or released with nothing to
// commit) or a checkpoint not written is seen this late at worst.
const waitItemEvery = 250 * time.Millisecond

// ckptPoll is how often a waiting batch looks at the checkpoint: a round
// of the holder's (acquire, write, fsync, commit) takes longer on EFS and
// DynamoDB, and a look is one read round trip. The writers a round
// answered come back for the next together, and the last of them to look
// bounds how soon that round can take them all: 5 ms rather than 10 took
// 8 writers on one partition from about 140 to 165 acknowledged requests a
// second under the efs-regional profile, and 2 rather than 5, with the
// warm writer's acquire beside its staging, their p50 by about a seventh
// (docs/benchmarks.md). Either change alone moved it less than runs swing:
// the leader's path to its listing and the last waiter's are about as
// long, and a round is as early as the later of the two.
const ckptPoll = 2 * time.Millisecond

// waitCheckpoint is a waiting batch's look at the checkpoint: when it
// shows a commit newer than version, the window is read to it and the
// batches it decides are answered (the slot holds committed state only).
// It reads the file only when its attributes changed since the last look
// (an open revalidates them on NFS; a change missed because two writes
// share a modification time is seen at the next, or at the next read of
// the item). For the batches the commit left undecided it says whether to
// lead now (the commit freed the lease and ours is the oldest staged
// batch), and whether the item is to be read next: a commit whose slot
// does not say whether it freed the lease (one written by an older
// version) may have, and a checkpoint that cannot be read says nothing.
// A freed lease that another waiter's batch is older than is theirs to
// take: the next commit shows.
func (l *Log) waitCheckpoint(left []*pending, version *uint64, last *ckptStamp) (_ []*pending, lead, lookItem bool) {
	v, changed, ok := l.checkpointIfChanged(last)
	if !ok {
		return left, false, true
	}
	if !changed || v.version <= *version {
		return left, false, false
	}
	cur := v.partition(l.cfg.Key)
	if err := l.win.refresh(l.cfg.FS, l.cfg.Dir, &cur, l.cfg.Now(), l.cfg.IdempotencyWindow); err != nil {
		return left, false, true
	}
	*version = v.version
	l.sawVersion(v.version)
	rest := left[:0:0]
	for _, p := range left {
		if r, ok := l.decided(p, &cur); ok {
			finish(p, r)
			l.answeredStaged = append(l.answeredStaged, p.staged.name)
		} else {
			rest = append(rest, p)
		}
	}
	switch {
	case len(rest) == 0:
		return rest, false, false
	case v.free == freeUnknown:
		return rest, false, true
	case v.free == freeYes:
		return rest, l.oldestStaged(rest), false
	}
	return rest, false, false
}

// sawVersion notes that a commit of version v applied: files kept open
// from an earlier release are no longer the committed state (ensureWriter
// closes them at the next acquire), and this Log is no longer the one to
// try the lease first (waitTurn).
func (l *Log) sawVersion(v uint64) {
	if l.warm && v > l.warmVersion {
		l.warm = false
	}
}

// waitedOut answers ErrWaitedOut for the batches whose deadline has passed
// and returns the others.
func (l *Log) waitedOut(left []*pending, now time.Time) []*pending {
	rest := left[:0:0]
	for _, p := range left {
		if !now.Before(p.deadline) {
			l.removeStaged([]string{p.staged.name})
			finish(p, result{err: fmt.Errorf("%w: %w: the batch waited its turn until its deadline; its outcome is unknown", ErrUnavailable, ErrWaitedOut)})
		} else {
			rest = append(rest, p)
		}
	}
	return rest
}

// decided reports a waiting batch's answer if the committed state cur (with
// the window refreshed to it) decides it: its key was committed (by the
// holder that took it, or by an earlier attempt with the key), or it is
// conditional and the high watermark has passed where it expected to land.
func (l *Log) decided(p *pending, cur *meta.Partition) (result, bool) {
	if p.key != "" {
		if e, ok := l.win.lookup(p.key); ok {
			return replay(e, p), true
		}
	}
	if p.expected >= 0 && cur.NextOffset != p.expected && (p.staged == nil || cur.NextOffset > p.expected) {
		return result{err: &MismatchError{Expected: p.expected, HighWatermark: cur.NextOffset}}, true
	}
	return result{}, false
}

// collectStaged reads the write buffer for a round: the staged batches to
// append after ours (oldest first, while the round stays under
// MaxFlushBytes); the files to remove after the commit, those too old for
// any waiter to be waiting (their waiter answered ErrUnavailable); and the
// files whose key the window has (committed already), which their waiters
// remove once answered: the leader's time is the partition's. seen holds
// the keys the round writes; next and total advance with each batch taken.
func (l *Log) collectStaged(ctx context.Context, now time.Time, seen map[string]bool, next *int64, total *int, expect int, mine []string) (take []*staged, remove, done []string) {
	names, err := l.listStaged()
	for i := 0; err == nil && i < int(lingerFor/lingerStep) && l.unknownStaged(names, mine) < expect && l.cfg.Now().Before(now.Add(lingerFor)); i++ {
		if l.cfg.Sleep(ctx, lingerStep) != nil {
			break
		}
		names, err = l.listStaged()
	}
	if err != nil {
		l.cfg.Logger.Warn("list write buffer", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
		return nil, nil, nil
	}
	tooOld := now.Add(-2 * l.cfg.BusyWait).UnixMilli()
	// A round that collects for too long risks its lease: stop after a
	// quarter of it, and leave the rest to the next round.
	budget := l.acquiredAt.Add(l.cfg.LeaseTTL / 4)
	// The first few are read at once (each read is a round trip or two on
	// a network file system, and they are independent); the loop decides
	// in order, as if it had read each in turn.
	// Files this Log knows are committed (it took them, or found their
	// keys committed, in an earlier round) are their waiters' to remove:
	// not read again. The set keeps only names still listed.
	known := l.committedStaged
	l.committedStaged = make(map[string]bool, len(known))
	var ahead []string
	for _, name := range names {
		if known[name] {
			l.committedStaged[name] = true
			continue
		}
		if created, _ := parseStageName(name); created >= tooOld && len(ahead) < readAhead {
			ahead = append(ahead, name)
		}
	}
	read := make(map[string]stagedRead, len(ahead))
	got := make([]stagedRead, len(ahead))
	l.cfg.Parallel(len(ahead), func(i int) {
		got[i].s, got[i].err = l.readStaged(ahead[i])
	})
	for i, name := range ahead {
		read[name] = got[i]
	}
	for _, name := range names {
		if len(take) > 0 && l.cfg.Now().After(budget) {
			break
		}
		created, _ := parseStageName(name)
		if created < tooOld {
			remove = append(remove, name)
			continue
		}
		if known[name] {
			done = append(done, name)
			continue
		}
		if *total >= l.cfg.MaxFlushBytes {
			break
		}
		r, ok := read[name]
		if !ok {
			r.s, r.err = l.readStaged(name)
		}
		s, err := r.s, r.err
		if err != nil {
			// Torn (its writer may still be writing it), gone (taken
			// and removed), or unreadable: not ours to decide.
			continue
		}
		if seen[s.key] {
			continue
		}
		if _, ok := l.win.lookup(s.key); ok {
			done = append(done, name)
			l.committedStaged[name] = true
			continue
		}
		if s.expected >= 0 && s.expected != *next {
			continue // its waiter sees the high watermark pass it
		}
		if *total+s.size > l.cfg.MaxFlushBytes && len(take) > 0 {
			break
		}
		seen[s.key] = true
		take = append(take, s)
		*next += int64(len(s.recs))
		*total += s.size
	}
	return take, remove, done
}

// lingerFor bounds how long a warm leader waits, after its acquire, for
// the writers its last round answered to stage again: they learnt of that
// commit a poll after it did (ckptPoll), and a round that lists before they
// have staged leaves them to a round of their own. It lists the write
// buffer every lingerStep until as many as that round took are there.
const (
	lingerFor  = 3 * time.Millisecond
	lingerStep = time.Millisecond
)

// unknownStaged counts the listed staged files neither known to be
// committed nor in mine (ours).
func (l *Log) unknownStaged(names, mine []string) int {
	n := 0
	for _, name := range names {
		if !l.committedStaged[name] && !slices.Contains(mine, name) {
			n++
		}
	}
	return n
}

// readAhead is how many staged batches a round reads at once.
const readAhead = 16

type stagedRead struct {
	s   *staged
	err error
}

// othersWaiting reports, for a Log that keeps its lease between batches,
// whether to release it at this commit: when no batch of ours is queued
// and other writers have staged batches (they would otherwise wait for the
// lease to expire).
func (l *Log) othersWaiting() bool {
	l.qmu.Lock()
	queued := len(l.queue) > 0
	l.qmu.Unlock()
	if queued {
		return false
	}
	names, err := l.listStaged()
	if err != nil {
		return false
	}
	for _, n := range names {
		if !l.committedStaged[n] { // not one answered before, left to its waiter
			return true
		}
	}
	return false
}

// Committed reports whether b's key was committed: its answer (the earlier
// commit's offsets, Replayed) if it was with the same contents, ErrKeyReused
// if with others. It reads the committed state, and writes nothing.
func (l *Log) Committed(ctx context.Context, b Batch) (Appended, bool, error) {
	if b.Key == "" {
		return Appended{}, false, nil
	}
	cur, err := l.cfg.Meta.Partition(ctx, l.cfg.Key)
	if err != nil {
		return Appended{}, false, fmt.Errorf("%w: read state: %w", ErrUnavailable, err)
	}
	if cur.Deleted {
		return Appended{}, false, fmt.Errorf("%w: %v", ErrDeleted, l.cfg.Key)
	}
	if err := l.win.refresh(l.cfg.FS, l.cfg.Dir, &cur, l.cfg.Now(), l.cfg.IdempotencyWindow); err != nil {
		return Appended{}, false, fmt.Errorf("%w: read batch keys: %w", ErrUnavailable, err)
	}
	e, ok := l.win.lookup("k:" + b.Key)
	if !ok {
		return Appended{}, false, nil
	}
	r := replay(e, &pending{key: "k:" + b.Key, hash: b.Hash, recs: b.Records})
	return r.app, true, r.err
}

// moreStaged reports whether the write buffer holds batches a round has not
// seen: staged after its listing (taken and removed ones are the round's).
func (l *Log) moreStaged(r *round) bool {
	names, err := l.listStaged()
	if err != nil {
		return false
	}
	known := make(map[string]bool, len(r.others)+len(r.remove)+len(r.done)+len(r.mine))
	for _, s := range r.others {
		known[s.name] = true
	}
	for _, list := range [][]string{r.remove, r.done, r.mine} {
		for _, n := range list {
			known[n] = true
		}
	}
	for _, n := range names {
		if !known[n] {
			return true
		}
	}
	return false
}

// oldestStaged reports whether one of ours is the oldest batch in the write
// buffer.
func (l *Log) oldestStaged(ours []*pending) bool {
	names, err := l.listStaged()
	if err != nil || len(names) == 0 {
		return true
	}
	for _, p := range ours {
		if p.staged != nil && p.staged.name == names[0] {
			return true
		}
	}
	return false
}
