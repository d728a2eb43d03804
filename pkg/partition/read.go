package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tierlog/tierlog/pkg/index"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
)

// The read path: views of the committed state, reads below them, long-polls
// and offset-for-time lookups (docs/internals.md, "Reads").

// view is the committed state readers use.
type view struct {
	hw       int64
	logStart int64
	coldEnd  int64
	segs     []meta.SegmentInfo // sealed then active, by base offset
	version  uint64             // the item version of the commit it is of
	free     leaseFree          // whether the commit left the lease free (checkpoint slots say)
}

// leaseFree is what a checkpoint slot says of the lease after its commit.
type leaseFree uint8

const (
	freeUnknown leaseFree = iota // a view of the item, or a slot that does not say
	freeNo                       // held on (HoldLease, or a chained round)
	freeYes                      // released, or parked: any writer may acquire it
)

func viewOf(p *meta.Partition) *view {
	v := &view{hw: p.NextOffset, logStart: p.LogStartOffset, coldEnd: p.ColdEnd, version: p.Version}
	v.segs = append(v.segs, p.Sealed...)
	if p.Active != nil {
		v.segs = append(v.segs, *p.Active)
	}
	return v
}

// partition is the committed state v is of, as far as a view has it: the
// last segment is taken for the active one (a window reading it again
// later costs a read, never an answer).
func (v *view) partition(k meta.PartitionKey) meta.Partition {
	p := meta.Partition{Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition,
		NextOffset: v.hw, LogStartOffset: v.logStart, ColdEnd: v.coldEnd, Version: v.version}
	if n := len(v.segs); n > 0 {
		p.Sealed = append([]meta.SegmentInfo(nil), v.segs[:n-1]...)
		a := v.segs[n-1]
		p.Active = &a
	}
	return p
}

// hotStart is the first offset the hot tier serves: the base of the first
// segment not yet in the cold tier.
func (v *view) hotStart() int64 {
	for _, s := range v.segs {
		if s.NextOffset > v.coldEnd && s.NextOffset > s.Base {
			return max(s.Base, v.logStart)
		}
	}
	return v.hw
}

// view returns the committed state. The metadata store has it all: the
// lease holder's commits and the compactor's log start and cold end. With
// the embedded store this is a map read; on DynamoDB one consistent read.
// fromItem is false for a view taken from the checkpoint (or published
// before), which may lag the item: see checkpoint.go for what a reader
// does about it.
//
// A view is never older than one this Log published, nor than a batch it
// acknowledged (read your writes): a checkpoint behind either is not used.
func (l *Log) view(ctx context.Context) (v *view, fromItem bool, err error) {
	acked := l.ackedEnd.Load()
	if l.cfg.Checkpoint {
		if v, ok := l.readCheckpoint(false); ok {
			v = l.newerOf(v)
			if v.hw >= acked {
				return v, false, nil
			}
			v, err := l.freshView(ctx)
			return v, true, err
		}
		// No checkpoint: a partition never written (or not since the
		// checkpoint was removed). An empty view read from the item in
		// the last ckptFresh serves nothing, so reusing it cannot serve a
		// deleted incarnation: many readers of a new partition cost one
		// item read per ckptFresh, not one each.
		l.ckpt.Lock()
		recent := l.cfg.Now().Sub(l.ckpt.emptyAt) < ckptFresh
		l.ckpt.Unlock()
		if v := l.committed.Load(); recent && v != nil && v.hw == 0 && acked == 0 {
			return v, false, nil
		}
	}
	v, err = l.freshView(ctx)
	return v, true, err
}

// newerOf returns v, a view read from the checkpoint, unless the Log
// published a newer one; the compactor's fields (log start, cold end) are
// never lower than published ones. A newer v is published (another process
// committed: wake waiters).
func (l *Log) newerOf(v *view) *view {
	cur := l.committed.Load()
	switch {
	case cur == nil:
		l.publishView(v)
		return v
	case cur.hw > v.hw:
		return cur
	}
	if cur.logStart > v.logStart || cur.coldEnd > v.coldEnd {
		c := *v
		c.logStart, c.coldEnd = max(c.logStart, cur.logStart), max(c.coldEnd, cur.coldEnd)
		v = &c
	}
	if v.hw > cur.hw {
		l.publishView(v)
	}
	return v
}

// freshView reads the committed state from the metadata store: what a read
// does when the checkpoint may be behind (a file it names is gone).
func (l *Log) freshView(ctx context.Context) (*view, error) {
	p, err := l.cfg.Meta.Partition(ctx, l.cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: read state: %w", ErrUnavailable, err)
	}
	if p.Deleted {
		return nil, fmt.Errorf("%w: %v", ErrDeleted, l.cfg.Key)
	}
	if p.Epoch == 0 && l.cfg.Verify != nil {
		if err := l.cfg.Verify(ctx); err != nil {
			return nil, err
		}
	}
	v := viewOf(&p)
	if cur := l.committed.Load(); cur == nil || v.hw > cur.hw || v.hw == cur.hw && (v.logStart > cur.logStart || v.coldEnd > cur.coldEnd) {
		l.publishView(v) // another process committed, or the compactor moved on
	}
	if l.cfg.Checkpoint && v.hw == 0 {
		l.ckpt.Lock()
		l.ckpt.emptyAt = l.cfg.Now()
		l.ckpt.Unlock()
	}
	return v, nil
}

// sawAck notes that a batch ending at end was acknowledged.
func (l *Log) sawAck(end int64) {
	for {
		cur := l.ackedEnd.Load()
		if end <= cur || l.ackedEnd.CompareAndSwap(cur, end) {
			return
		}
	}
}

// LastBounds returns the bounds of the last view this Log published (its
// own commits, or another process's seen by a read), without I/O: what a
// metrics scrape may report. Fresh bounds need Bounds.
func (l *Log) LastBounds() Bounds { return l.committed.Load().bounds() }

// Bounds returns the log start offset, the high watermark and where the hot
// tier starts.
func (l *Log) Bounds(ctx context.Context) (Bounds, error) {
	v, _, err := l.view(ctx)
	if err != nil {
		return Bounds{}, err
	}
	return v.bounds(), nil
}

// Read returns committed records from offset on. An offset equal to the high
// watermark yields no records; one outside [log start, high watermark] is an
// *OutOfRangeError. Damaged records are never returned: a read that starts
// before damage returns the good records up to it, and one that starts at
// damage answers a *DamagedError naming the damaged offsets and where good
// records resume.
func (l *Log) Read(ctx context.Context, offset int64, maxRecords, maxBytes int) ([]segment.Record, Bounds, error) {
	recs, b, _, err := l.ReadUnless(ctx, offset, maxRecords, maxBytes, nil, nil)
	return recs, b, err
}

// ReadUnless is Read for a caller that may have the answer already (an
// encoded answer kept for given bounds): it takes the committed state as
// Read does and, when have (if not nil) is true for its bounds, returns
// those bounds and had true without reading a record. One look at the
// committed state serves both the check and the read. Records are read
// into memory from sc, as segment.Reader.ReadWith does (nil: make).
//
// A view from the checkpoint may lag the item: a read past its high
// watermark takes the item's before it answers out of range, and a read
// at it takes the item's when the Log has not looked in ckptVerify, so a
// committed offset is never answered out of range and a reader at the end
// of the log learns of a commit whose checkpoint was lost.
func (l *Log) ReadUnless(ctx context.Context, offset int64, maxRecords, maxBytes int, have func(Bounds) bool, sc *segment.Scratch) (_ []segment.Record, _ Bounds, had bool, _ error) {
	v, fromItem, err := l.view(ctx)
	if err == nil && !fromItem && (offset > v.hw || offset == v.hw && l.verifyDue()) {
		v, err = l.freshView(ctx)
	}
	if err != nil {
		return nil, Bounds{}, false, err
	}
	if have != nil && have(v.bounds()) {
		return nil, v.bounds(), true, nil
	}
	out, err := l.read(v, offset, maxRecords, maxBytes, false, sc)
	if gone(err) {
		// The compactor removed a file after our view was taken (retention,
		// or a tiered segment past its grace): look again, at the item.
		if v, err = l.freshView(ctx); err != nil {
			return nil, Bounds{}, false, err
		}
		out, err = l.read(v, offset, maxRecords, maxBytes, true, sc)
	}
	return out, v.bounds(), false, err
}

func (v *view) bounds() Bounds {
	return Bounds{LogStartOffset: v.logStart, HighWatermark: v.hw, HotStart: v.hotStart()}
}

// Bounds are a partition's committed offsets.
type Bounds struct {
	LogStartOffset int64
	HighWatermark  int64
	HotStart       int64 // offsets below it are in the cold tier
}

// read reads from offset in view v. A file missing from a fresh view
// (final) is damage: committed state names it.
func (l *Log) read(v *view, offset int64, maxRecords, maxBytes int, final bool, sc *segment.Scratch) ([]segment.Record, error) {
	if offset < v.logStart || offset > v.hw {
		return nil, &OutOfRangeError{Offset: offset, LogStartOffset: v.logStart, HighWatermark: v.hw}
	}
	if offset < v.hotStart() {
		return nil, ErrNotHot
	}
	var out []segment.Record
	bytes := 0
	for i := l.segmentFor(v, offset); i < len(v.segs) && offset < v.hw && len(out) < maxRecords; i++ {
		s := v.segs[i]
		if s.NextOffset <= offset {
			continue
		}
		id := segment.ID{Base: s.Base, Epoch: s.Epoch}
		r, c, err := l.openReader(id, s.Size)
		if err != nil {
			switch {
			case len(out) > 0:
				return out, nil // what we have; the next read reports the rest
			case gone(err) && final:
				return nil, l.damaged(offset, s.NextOffset, err)
			case gone(err):
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		// A segment's reader stops early at damage: read on within the
		// segment until it is done or the limits are reached.
		for offset < s.NextOffset && len(out) < maxRecords {
			budget := maxBytes - bytes
			if len(out) > 0 && budget <= 0 {
				c.Close()
				return out, nil
			}
			recs, err := r.ReadWith(offset, maxRecords-len(out), max(budget, 1), sc)
			if err == nil && len(recs) == 0 {
				err = fmt.Errorf("%w: %s holds no record at offset %d below its committed end %d", segment.ErrTruncated, id, offset, s.NextOffset)
			}
			if err != nil {
				c.Close()
				if len(out) > 0 {
					return out, nil
				}
				var de *segment.DamageError
				next := s.NextOffset // nothing readable after the damage in this segment
				if errors.As(err, &de) && de.Next > offset && de.Next < next {
					next = de.Next
				}
				if errors.Is(err, segment.ErrCorrupt) || errors.Is(err, segment.ErrTruncated) {
					return nil, l.damaged(offset, next, err)
				}
				return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, id, err)
			}
			k, full := 0, false
			for k < len(recs) {
				n := segment.EncodedSize(&recs[k])
				if (len(out) > 0 || k > 0) && bytes+n > maxBytes {
					full = true
					break
				}
				bytes += n
				k++
			}
			if out == nil {
				out = recs[:k] // the common case: one segment's read is the answer
			} else {
				out = append(out, recs[:k]...)
			}
			if k > 0 {
				offset = recs[k-1].Offset + 1
			}
			if full {
				c.Close()
				return out, nil
			}
		}
		c.Close()
	}
	return out, nil
}

// damaged reports offsets [first, next) as damaged, and logs it: damage is
// an operator's problem as much as the reader's.
func (l *Log) damaged(first, next int64, err error) error {
	l.cfg.Logger.Error("damaged records", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition,
		"first", first, "next", next, "err", err)
	l.cfg.Metrics.Damaged()
	return &DamagedError{Topic: l.cfg.Key.Topic, Partition: l.cfg.Key.Partition, First: first, Next: next, Err: err}
}

// segmentFor returns the index of the last segment with base <= offset.
func (l *Log) segmentFor(v *view, offset int64) int {
	i := 0
	for j, s := range v.segs {
		if s.Base <= offset {
			i = j
		}
	}
	return i
}

// Wait blocks until the high watermark passes offset, d passes, or ctx ends.
func (l *Log) Wait(ctx context.Context, offset int64, d time.Duration) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	// Another process may commit (no HoldLease): look every waitPoll. With
	// a checkpoint that costs a file read (shared by the Log's waiters for
	// ckptFresh), and the item is read once per ckptVerify per Log, in case
	// the checkpoint is behind; without, every look reads the item.
	interval := waitPollItem
	if l.cfg.Checkpoint {
		interval = waitPollCheckpoint
	}
	poll := time.NewTicker(interval)
	defer poll.Stop()
	for {
		l.notifyMu.Lock()
		ch := l.notify
		l.notifyMu.Unlock()
		v, err := l.waitView(ctx)
		if err != nil || v.hw > offset {
			return
		}
		select {
		case <-ch:
		case <-poll.C: // another process may have committed (no HoldLease)
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// How often a long-poll looks for other processes' commits.
const (
	waitPollItem       = 100 * time.Millisecond
	waitPollCheckpoint = 10 * time.Millisecond
)

// waitView is the view a long-poll looks at: without a checkpoint, the
// item; with one, the checkpoint, and the item once per ckptVerify (the
// checkpoint may be behind, or absent: a partition never written, or whose
// writer crashed before its first checkpoint), else the last view seen.
func (l *Log) waitView(ctx context.Context) (*view, error) {
	if !l.cfg.Checkpoint {
		return l.freshView(ctx)
	}
	if l.verifyDue() {
		return l.freshView(ctx)
	}
	if v, ok := l.readCheckpoint(true); ok {
		return l.newerOf(v), nil
	}
	if v := l.committed.Load(); v != nil {
		return v, nil
	}
	return l.freshView(ctx)
}

// verifyDue reports whether a waiting reader should read the item now (at
// most once per ckptVerify per Log).
func (l *Log) verifyDue() bool {
	now := l.cfg.Now()
	l.ckpt.Lock()
	defer l.ckpt.Unlock()
	if now.Sub(l.ckpt.verified) < ckptVerify {
		return false
	}
	l.ckpt.verified = now
	return true
}

// FreshBounds is Bounds from the metadata store, never the checkpoint: for
// a caller that found the bounds it had wrong (a cold read that failed).
func (l *Log) FreshBounds(ctx context.Context) (Bounds, error) {
	v, err := l.freshView(ctx)
	if err != nil {
		return Bounds{}, err
	}
	return v.bounds(), nil
}

// gone reports whether err says a file disappeared under a reader: removed
// by the compactor after the reader's view was taken (ENOENT locally,
// ESTALE from an NFS client whose handle outlived a remote delete).
func gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESTALE)
}

// OffsetForTime returns the first offset at or after from whose timestamp
// is >= ts, or found=false (and the high watermark) if there is none. The
// caller has searched the cold tier below from (its hot start; 0 without a
// cold tier): if the cold end has moved past from since, the hot tier no
// longer covers [from, ...) and OffsetForTime answers ErrNotHot, so the
// caller looks again with new bounds rather than skip the segments tiered in
// between.
func (l *Log) OffsetForTime(ctx context.Context, ts, from int64) (offset, timestamp int64, found bool, err error) {
	// The item, not the checkpoint: the split with the cold tier must be
	// the cold end as it is.
	v, err := l.freshView(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	offset, timestamp, found, err = l.offsetForTime(v, ts, from)
	if gone(err) {
		if v, err = l.freshView(ctx); err != nil {
			return 0, 0, false, err
		}
		offset, timestamp, found, err = l.offsetForTime(v, ts, from)
	}
	return offset, timestamp, found, err
}

func (l *Log) offsetForTime(v *view, ts, from int64) (offset, timestamp int64, found bool, err error) {
	if v.coldEnd > from {
		// Segments in (from, cold end] were tiered after the caller
		// searched the cold tier below from: neither tier would look.
		return 0, 0, false, ErrNotHot
	}
	for _, s := range v.segs {
		if s.NextOffset <= max(s.Base, v.logStart, v.coldEnd, from) || s.LastTS < ts {
			continue
		}
		id := segment.ID{Base: s.Base, Epoch: s.Epoch}
		r, c, err := l.openReader(id, s.Size)
		if err != nil {
			return 0, 0, false, err
		}
		off, t, ok, err := r.OffsetForTime(ts)
		c.Close()
		if err != nil {
			return 0, 0, false, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if ok && off >= max(v.logStart, from) {
			return off, t, true, nil
		}
	}
	return v.hw, 0, false, nil
}

type cachedIndex struct {
	limit int64
	offs  index.Offsets
	times index.Times
	// hdr is the segment's header verdict, once a reader checked it: a
	// header never changes, and a fetch should not read it again.
	hdr atomic.Pointer[segment.HeaderVerdict]
}

// indexStale is how far a segment may grow past its cached index before a
// read parses the index files again; meanwhile reads scan a little more.
const indexStale = 256 << 10

// openReader opens segment id for reading below limit, with its indexes
// and header verdict from the cache when they cover enough of it.
func (l *Log) openReader(id segment.ID, limit int64) (*segment.Reader, io.Closer, error) {
	f, err := l.cfg.FS.OpenFile(id.Path(l.cfg.Dir, segment.KindLog), os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("segment: open %s: %w", id.Name(segment.KindLog), err)
	}
	l.idx.Lock()
	c := l.idx.m[id]
	l.idx.Unlock()
	if c == nil || limit-c.limit > indexStale {
		// Only the entries of committed records (below limit) are kept:
		// an entry past it may be of a round that failed, whose bytes the
		// next recovery truncates and the next round writes over with
		// other records. The time entries pair with these (matchTimes).
		offs, times := segment.ReadIndexes(l.cfg.FS, l.cfg.Dir, id)
		fresh := &cachedIndex{limit: limit, offs: offs.Below(limit), times: times}
		l.idx.Lock()
		if l.idx.m == nil || len(l.idx.m) > 4096 {
			l.idx.m = map[segment.ID]*cachedIndex{}
		}
		if old := l.idx.m[id]; old == nil || old.limit < limit {
			if old != nil {
				fresh.hdr.Store(old.hdr.Load())
			}
			l.idx.m[id] = fresh
		}
		l.idx.Unlock()
		c = fresh
	}
	r := segment.NewReaderChecked(f, id, limit, c.offs, c.times, c.hdr.Load())
	return r, closer(func() error {
		if v := r.HeaderVerdict(); v != nil && c.hdr.Load() == nil {
			c.hdr.Store(v)
		}
		return f.Close()
	}), nil
}

// closer is a func as an io.Closer.
type closer func() error

func (f closer) Close() error { return f() }
