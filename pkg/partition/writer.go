package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/trace"
)

// The writer: the lease, and the active segment it continues, seals or
// rolls (docs/internals.md, "The write protocol").

// contendedFor is how long a Log that found the lease held, or led a round
// that took others' batches, stages its batches first (ensureWriter).
const contendedFor = time.Second

// ensureWriter acquires the lease unless this Log holds it with a writer,
// and decides what happens to the active segment. l.lease becomes the
// acquired state, adjusted so that it is always safe to release: it never
// names a file this epoch created but no commit has named yet, and never
// hands the next owner a file that must not be continued.
//
//   - Released cleanly: recover the active segment to its committed length
//     and continue it (l.w is set).
//   - Taken over (the old owner may be a zombie), or the active segment
//     cannot be continued (damaged, short, unreadable): seal it at its
//     committed length in l.lease and leave l.w nil; write rolls a new file.
//     Sealing is always safe: it only stops anyone from writing that file
//     again. Were a failed roll to release the unsealed state, the next
//     owner would see a clean release and continue the zombie's file.
func (l *Log) ensureWriter(ctx context.Context) error {
	if l.holding && l.parked {
		ok, err := l.resumeParked(ctx)
		if err != nil {
			return err
		}
		if ok {
			l.alone = true
			return nil
		}
	}
	if l.holding {
		// Held since an earlier round (HoldLease, a chain), unless
		// acquired for this one beside its staging (waitTurn).
		l.alone = l.alone && l.acquiredAhead
		l.acquiredAhead = false
		return nil
	}
	if l.cfg.Now().Before(l.contended) && !l.waiting {
		// Other writers were here moments ago: stage first, and wait
		// a turn (waitTurn), rather than try the lease at once. The
		// writers answered by one round come back together; had the
		// first of them taken the lease for its batch alone, the others
		// would stage behind it and need a round of their own (with a
		// failed acquire each, a write on the item every writer
		// shares). Staged first, they are taken by one round, led by
		// the writer that led the last (waitTurn).
		l.sawOther()
		return fmt.Errorf("%w: %w: %v is contended", ErrUnavailable, errBusy, l.cfg.Key)
	}
	a, err := l.acquire(ctx)
	if err != nil {
		return err
	}
	st := a.Partition
	st.Sealed = append([]meta.SegmentInfo(nil), st.Sealed...)
	trimSealed(&st)
	// Nobody acquired or committed since this Log released (the acquire's
	// own bump is the only one): the files are as this Log left them,
	// its writer and window are the committed state.
	warm := l.warm && !a.TakenOver && st.Version == l.warmVersion+1 && st.Active != nil && *st.Active == l.warmActive
	l.warm = false
	if !warm && (l.w != nil || l.bw != nil) {
		l.closeWriter(false)
	}
	l.holding, l.lease, l.lastSealed = true, st, nil
	l.acquiredAt = l.cfg.Now()
	l.itemAt = l.acquiredAt
	l.alone = warm
	if a.TakenOver {
		l.sawOther() // or ourselves, restarted: either way, not alone
	}
	l.ensureCheckpoint()
	l.winStale = !warm
	if warm {
		return nil
	}
	if fresh(&st) && l.cfg.Verify != nil {
		if err := l.cfg.Verify(ctx); err != nil {
			l.releaseLease(ctx)
			return err
		}
	}
	l.decideActive(ctx, &st, a.TakenOver)
	l.lease = st
	return nil
}

// acquire makes the one conditional write that takes the lease. A lease
// held elsewhere is errBusy (the partition is contended from then on for
// contendedFor); a deleted topic, ErrDeleted.
func (l *Log) acquire(ctx context.Context) (a meta.Acquired, err error) {
	err = trace.Capture(ctx, trace.SpanAcquire, func(ctx context.Context) (err error) {
		a, err = l.cfg.Meta.Acquire(ctx, l.cfg.Key, l.cfg.Owner, l.cfg.Now(), l.cfg.LeaseTTL)
		return err
	})
	switch {
	case err == nil:
		return a, nil
	case errors.Is(err, meta.ErrLeaseHeld):
		l.cfg.Metrics.Conflict()
		l.sawOther()
		l.contended = l.cfg.Now().Add(contendedFor)
		return a, fmt.Errorf("%w: %w: %v: %w", ErrUnavailable, errBusy, l.cfg.Key, err)
	case errors.Is(err, meta.ErrNotFound):
		return a, fmt.Errorf("%w: %v: %w", ErrDeleted, l.cfg.Key, err)
	}
	return a, fmt.Errorf("%w: acquire: %w", ErrUnavailable, err)
}

// decideActive decides, for a lease just acquired (not warm), what happens
// to st's active segment: continued (l.w set) after a clean release, or
// sealed in st when taken over or when it cannot be continued.
func (l *Log) decideActive(ctx context.Context, st *meta.Partition, takenOver bool) {
	switch {
	case st.Active == nil:
		// Nothing to continue: the first write rolls.
	case takenOver:
		l.cfg.Logger.Info("lease taken over; sealing active segment",
			"topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "epoch", st.Epoch,
			"base", st.Active.Base, "committed", st.Active.Size)
		l.seal(st)
	default:
		w, err := l.continueActive(st)
		if err != nil {
			level := slog.LevelWarn
			switch {
			case errors.Is(err, ErrCorrupt):
				level = slog.LevelError
			case errors.Is(err, segment.ErrOldVersion):
				// Written by an older version: sealed once, on upgrade.
				level = slog.LevelInfo
			}
			l.cfg.Logger.Log(ctx, level, "active segment cannot be continued; sealing it at its committed length",
				"topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "epoch", st.Epoch,
				"base", st.Active.Base, "committed", st.Active.Size, "err", err)
			l.seal(st)
		}
		l.w = w
	}
}

// seal moves st's active segment, at its committed length, to the sealed
// list (dropping it if it holds no records); the next write rolls.
func (l *Log) seal(st *meta.Partition) {
	l.lastSealed = &segment.ID{Base: st.Active.Base, Epoch: st.Active.Epoch}
	if st.Active.NextOffset > st.Active.Base {
		st.Sealed = append(st.Sealed, *st.Active)
		l.sealed = true
	}
	st.Active = nil
}

// continueActive recovers st's active segment to its committed length and
// opens a writer on it. Any error means the file must not be continued.
func (l *Log) continueActive(st *meta.Partition) (*segment.Writer, error) {
	act := *st.Active
	id := segment.ID{Base: act.Base, Epoch: act.Epoch}
	opts := l.segmentOptions()
	rs, err := segment.Recover(l.cfg.Dir, id, act.Size, opts)
	if err != nil {
		if errors.Is(err, segment.ErrCorrupt) || errors.Is(err, segment.ErrTruncated) {
			return nil, fmt.Errorf("%w: recover %s: %w", ErrCorrupt, id, err)
		}
		return nil, fmt.Errorf("%w: recover %s: %w", ErrUnavailable, id, err)
	}
	if rs.NextOffset != act.NextOffset || rs.NextOffset != st.NextOffset {
		return nil, fmt.Errorf("%w: %s ends at offset %d, committed %d", ErrCorrupt, id, rs.NextOffset, st.NextOffset)
	}
	bw, prev, ents, err := openBatchFile(l.cfg.FS, l.cfg.Dir, id, act.NextOffset)
	if err == nil {
		l.win.seed(id, prev, ents, bw.size, act.NextOffset)
	}
	if err != nil {
		if errors.Is(err, errBatchHeader) {
			return nil, fmt.Errorf("%w: batch file of %s: %w", ErrCorrupt, id, err)
		}
		return nil, fmt.Errorf("%w: batch file of %s: %w", ErrUnavailable, id, err)
	}
	w, err := segment.Open(l.cfg.Dir, id, rs, opts)
	if err != nil {
		bw.close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	l.bw = bw
	return w, nil
}

// segmentOptions are the options segments are created and recovered with.
func (l *Log) segmentOptions() segment.Options {
	return segment.Options{IndexIntervalBytes: l.cfg.IndexIntervalBytes, FS: l.cfg.FS, CreateTime: l.cfg.CreateTime}
}

// roll seals the active segment in st (if it has records) and creates a new
// one at st.NextOffset under st.Epoch.
func (l *Log) roll(st *meta.Partition, now time.Time) error {
	// The new segment's batch file links to the segment before it: the
	// active one (sealed now, or when the lease was acquired), else the
	// last sealed one.
	prev := l.lastSealed
	if a := st.Active; a != nil {
		prev = &segment.ID{Base: a.Base, Epoch: a.Epoch}
	} else if n := len(st.Sealed); prev == nil && n > 0 {
		prev = &segment.ID{Base: st.Sealed[n-1].Base, Epoch: st.Sealed[n-1].Epoch}
	}
	if l.w != nil {
		// Seal: make the indexes durable too; the segment is immutable now.
		if err := l.w.Close(); err != nil {
			l.w = nil
			return fmt.Errorf("%w: seal: %w", ErrUnavailable, err)
		}
		l.w = nil
	}
	if st.Active != nil {
		l.seal(st)
	}
	// Drop sealed segments the compactor has moved to the cold tier, so
	// the list stays short. One read per roll.
	if cur, err := l.cfg.Meta.Partition(context.Background(), l.cfg.Key); err == nil {
		st.ColdEnd = max(st.ColdEnd, cur.ColdEnd)
	}
	trimSealed(st)
	id := segment.ID{Base: st.NextOffset, Epoch: st.Epoch}
	// The batch file first: segment.Create's directory sync makes both
	// names durable before any commit names the segment.
	bw, err := createBatchFile(l.cfg.FS, l.cfg.Dir, id, prev)
	if errors.Is(err, os.ErrExist) {
		l.cfg.Logger.Error("segment batch file already exists: the metadata is behind the data dir; refusing to write",
			"topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "segment", id.String())
		return fmt.Errorf("%w: %w: segment %s already exists: the metadata is behind the data dir", ErrUnavailable, ErrCorrupt, id)
	}
	if err != nil {
		return fmt.Errorf("%w: roll: %w", ErrUnavailable, err)
	}
	w, err := segment.Create(l.cfg.Dir, id, l.segmentOptions())
	if errors.Is(err, os.ErrExist) {
		// Every Acquire bumps the epoch and every roll of one epoch has a
		// new base, so the name can exist only if the metadata lost state
		// the files still show: that file may hold acknowledged records.
		// Never remove it; refuse, loudly.
		l.cfg.Logger.Error("segment file already exists: the metadata is behind the data dir; refusing to write",
			"topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "segment", id.String())
		return fmt.Errorf("%w: %w: segment %s already exists: the metadata is behind the data dir", ErrUnavailable, ErrCorrupt, id)
	}
	if err != nil {
		bw.close()
		return fmt.Errorf("%w: roll: %w", ErrUnavailable, err)
	}
	l.w, l.bw = w, bw
	st.Active = &meta.SegmentInfo{
		Base: id.Base, Epoch: id.Epoch, Size: w.Size(), NextOffset: id.Base,
		FirstTS: -1, LastTS: -1, CreatedMs: now.UnixMilli(),
	}
	return nil
}

// fresh reports whether an acquired item holds nothing: never written, or
// created afresh by an acquire of a partition whose item was deleted with
// its topic. Whatever its epoch (earlier acquires may have found it empty
// too, and been refused by Verify, or failed), the topic is checked before
// the first write.
func fresh(p *meta.Partition) bool {
	return p.Active == nil && p.NextOffset == 0 && len(p.Sealed) == 0 && p.LogStartOffset == 0
}

// trimSealed drops sealed segments wholly below the cold end, but the last
// one while there is no active segment: the newest segment stays named, as
// the head of the batch files' chain (window.go). Readers send offsets below
// the cold end to the cold tier whatever the list says.
func trimSealed(st *meta.Partition) {
	keep := 0
	if st.Active == nil {
		keep = 1
	}
	i := 0
	for i < len(st.Sealed)-keep && st.Sealed[i].NextOffset <= st.ColdEnd {
		i++
	}
	st.Sealed = st.Sealed[i:]
}

// SetRolling changes the log's rolling limits (Config.SegmentBytes and
// SegmentMs, with their defaults) from the next write on: a topic update
// reaches the partitions a process has open.
func (l *Log) SetRolling(segmentBytes, segmentMs int64) {
	c := Config{SegmentBytes: segmentBytes}
	c.applyRollDefaults()
	l.segBytes.Store(c.SegmentBytes)
	l.segMs.Store(segmentMs)
}

// maybeRoll rolls when the batch would push the active segment past
// SegmentBytes or the active segment is older than SegmentMs.
func (l *Log) maybeRoll(st *meta.Partition, now time.Time, batchBytes int64) error {
	act := st.Active
	if act.NextOffset == act.Base {
		return nil // empty: write here whatever the size
	}
	segBytes, segMs := l.segBytes.Load(), l.segMs.Load()
	full := act.Size+batchBytes > segBytes
	old := segMs > 0 && now.UnixMilli()-act.CreatedMs >= segMs
	if !full && !old {
		return nil
	}
	return l.roll(st, now)
}

func (l *Log) closeWriter(sync bool) {
	l.bw.close()
	l.bw = nil
	if l.ckptF != nil {
		l.ckptF.Close()
		l.ckptF = nil
	}
	if l.w == nil {
		return
	}
	if sync {
		l.w.Close()
	} else {
		l.w.Release()
	}
	l.w = nil
}

// dropWriter forgets a writer after a local failure and releases the lease
// with the last committed state, so the next batch re-acquires and recovers
// the files to what was committed.
func (l *Log) dropWriter(ctx context.Context) {
	l.closeWriter(false)
	l.releaseLease(ctx)
}

func (l *Log) releaseLease(ctx context.Context) {
	if !l.holding {
		return
	}
	l.holding, l.parked = false, false
	if l.w != nil {
		l.closeWriter(false)
	}
	// Release with the state as committed (lease has our epoch and owner).
	if err := l.cfg.Meta.Commit(ctx, l.lease, true, l.cfg.Now(), l.cfg.LeaseTTL); err != nil {
		l.cfg.Logger.Warn("release lease", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
	}
}
