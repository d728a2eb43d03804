// Package partition is one partition's log: it assigns dense offsets and
// timestamps (non-decreasing on an append-time topic, the producers' on a
// create-time one), writes batches into segment files under the
// offset lease of the metadata store, rolls segments, recovers after a crash,
// and serves reads below the committed length.
//
// # Write path (docs/design.md "The write path")
//
//  1. Acquire the lease (one conditional write). If the previous owner
//     released cleanly, recover the active segment to its committed length
//     and continue it. If the lease was taken over after expiry, the old
//     owner may be a zombie still writing: seal the active segment at its
//     committed length and start a new file named by the next offset and our
//     epoch. A zombie can only write into files it opened under its own
//     epoch, past their committed length, or into files no committed state
//     names: readers never look there (I5). An active segment that cannot be
//     continued (damaged or short below its committed length, unreadable) is
//     sealed the same way: sealing is always safe.
//  2. pwrite the batch at the committed length, fsync.
//  3. Commit (one conditional write IF epoch, owner and commit version are
//     mine): next offset, active segment length, segment list, and either
//     release the lease or extend it. Fenced or unknown outcome: the batch is
//     not acknowledged (a retryable error) and the writer is dropped.
//
// The state a Log may release the lease with (l.lease) is kept apart from
// the state a write builds: it is the acquired or last committed state, with
// a taken-over or damaged active segment already sealed, and it never names
// a file that no commit named. A failure anywhere before a commit releases
// l.lease, so the next owner never continues a zombie's file nor a file
// whose header may not be durable.
//
// With HoldLease (the local server) the lease is kept between batches and
// renewed by each commit, so a batch costs one metadata write; without it
// (Lambda, where a frozen container must not sit on a lease) every batch
// acquires and releases: two writes.
//
// Concurrent Appends to one Log are grouped: while one batch is being
// written and committed, the next ones queue, and the queue is written as one
// write, one fsync and one commit. Each request's records stay contiguous and
// in order.
//
// # Read path
//
// Readers see only committed state: every read takes a fresh view from the
// metadata store (one item read), then reads the offsets below its committed
// next offset, in the segments it lists, each below its committed length.
// Files are re-opened per read (close-to-open consistency on NFS). A file
// that disappears under a reader (ENOENT, or ESTALE on NFS: the compactor
// removed it) makes the read look again with a new view. Records that fail
// their checks are never returned: a read stops before them, and a read that
// starts at them answers a *DamagedError naming the offsets and where good
// records resume.
//
// # Tracing
//
// The lease acquire, the append with its fsync and the commit each run in a
// span of the context's tracer (package trace; none by default). A grouped
// flush runs under the context of the request that leads it.
//
// # Concurrency
//
// A Log is safe for concurrent use. Its locks:
//
//   - qmu guards the group-commit queue. It is held only to queue or dequeue
//     batches, never while taking another lock.
//   - wmu is held by the group-commit leader for one flush (write, fsync,
//     commit) and by Close; it guards the writer state (w, holding, lease,
//     sealed, warm). Under it, publish takes notifyMu.
//   - notifyMu guards the notify channel (closed on every new high
//     watermark); it nests inside wmu and takes nothing itself.
//   - idx guards the parsed index cache; readers take it alone.
//
// So the one nesting is wmu before notifyMu; qmu and wmu are never held
// together. The committed pointer holds the last view published (by our
// commits, or seen by a read of another process's commit); it only decides
// when waiters are woken: reads never use it in place of a fresh view.
package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tierlog/tierlog/pkg/index"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/trace"
)

var (
	// ErrUnavailable means the lease is held elsewhere, the commit was fenced,
	// or its outcome is unknown: nothing was acknowledged; retry.
	ErrUnavailable = errors.New("partition: unavailable")
	// ErrClosed means the Log is closed.
	ErrClosed = errors.New("partition: closed")
	// ErrNotHot means the offset asked for is committed but already in the
	// cold tier: the caller reads it from there.
	ErrNotHot = errors.New("partition: offset in the cold tier")
	// ErrCorrupt means committed bytes are missing or damaged.
	ErrCorrupt = errors.New("partition: corrupt")
	// ErrDeleted means the partition's topic is being deleted (its item is
	// fenced): nothing was written, and the topic should be looked up again.
	ErrDeleted = errors.New("partition: topic deleted")
)

// OutOfRangeError reports a read outside [LogStartOffset, HighWatermark].
type OutOfRangeError struct {
	Offset, LogStartOffset, HighWatermark int64
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("partition: offset %d out of range [%d, %d]", e.Offset, e.LogStartOffset, e.HighWatermark)
}

// Config configures a Log. Dir must exist.
type Config struct {
	Dir   string
	Key   meta.PartitionKey
	Meta  meta.Store
	Owner string // lease owner id; unique per process (or per Lambda container)

	LeaseTTL     time.Duration // default DefaultLeaseTTL
	HoldLease    bool
	SegmentBytes int64 // roll when the next batch would pass this; default DefaultSegmentBytes
	SegmentMs    int64 // roll when the active segment is older; 0: never

	IndexIntervalBytes int
	FS                 segment.FS
	Now                func() time.Time
	Logger             *slog.Logger
	// MaxFlushBytes bounds how many queued bytes one group commit writes.
	MaxFlushBytes int
	// OnRoll, if set, is called after a commit that sealed a segment (the
	// compactor's cue). It must not block.
	OnRoll func(meta.PartitionKey)
	// Metrics counts flushes and lease conflicts. Nil: none.
	Metrics *metrics.Set
	// Verify, if set, is asked whether the partition still belongs to a
	// live topic whenever its item looks never written (epoch 0 on read,
	// empty on acquire): a process whose topic was deleted,
	// or deleted and created again under a new id, would otherwise write
	// into (or read from) an incarnation nobody reads. An error is
	// returned as is, and nothing is written.
	Verify func(context.Context) error

	// IdempotencyWindow is how long committed batch keys are remembered at
	// least. Default DefaultIdempotencyWindow.
	IdempotencyWindow time.Duration
	// BusyWait bounds how long an append waits for a lease another writer
	// holds (its batch staged in the write buffer) before it answers
	// ErrUnavailable. The caller's context deadline, if earlier, wins.
	// Default DefaultBusyWait.
	BusyWait time.Duration
	// Sleep waits d or until ctx is done (the simulation's virtual time).
	// Default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns random numbers for batch origins (the simulation's
	// seeded source). Default math/rand/v2.
	Rand func() uint64
	// Checkpoint makes writers copy each committed state to the hot tier
	// and readers take their view from there (checkpoint.go): with a
	// metadata store where a read is a network request (DynamoDB).
	Checkpoint bool
	// CreateTime is set for a create-time topic: a record's timestamp is
	// its producer's (Record.Timestamp), or the writer's clock where it
	// has none, and timestamps may go back. Otherwise every record of a
	// batch gets the writer's clock, never below an earlier batch's (I6),
	// and a record carrying a timestamp is refused.
	CreateTime bool
	// Parallel runs fn(0), ..., fn(n-1), independent reads of files, and
	// returns when all have. Default: each on its own goroutine (on a
	// network file system each read is a round trip); the simulation runs
	// them in turn.
	Parallel func(n int, fn func(i int))
	// SoloFor is how long after it last saw another writer a Log without
	// HoldLease does not park its lease (park.go). Default DefaultSoloFor;
	// negative: it never parks.
	SoloFor time.Duration
}

// DefaultBusyWait is how long an append waits for a busy partition.
const DefaultBusyWait = 10 * time.Second

// DefaultLeaseTTL is how long a partition lease lives without a commit
// unless the Config says otherwise.
const DefaultLeaseTTL = 10 * time.Second

// DefaultSegmentBytes is the size a segment rolls at unless the Config
// says otherwise (a topic's segment_bytes default).
const DefaultSegmentBytes = 16 << 20

func (c *Config) applyRollDefaults() {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
}

func (c *Config) applyDefaults() {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	c.applyRollDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.FS == nil {
		c.FS = segment.OSFS{}
	}
	if c.MaxFlushBytes <= 0 {
		c.MaxFlushBytes = 8 << 20
	}
	if c.IdempotencyWindow <= 0 {
		c.IdempotencyWindow = DefaultIdempotencyWindow
	}
	if c.BusyWait <= 0 {
		c.BusyWait = DefaultBusyWait
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	if c.Rand == nil {
		c.Rand = rand.Uint64
	}
	if c.SoloFor == 0 {
		c.SoloFor = DefaultSoloFor
	}
	if c.Parallel == nil {
		c.Parallel = parallel
	}
}

func parallel(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Record is a record to append; its offset is assigned here. Nil Key: no
// key. Nil Value: tombstone. Headers are stored in order. Timestamp (ms,
// >= 0) is the producer's, used when HasTimestamp is set, on a create-time
// partition only (Config.CreateTime).
type Record struct {
	Key, Value   []byte
	Headers      []segment.Header
	Timestamp    int64
	HasTimestamp bool
}

// Appended is where a batch landed: its first offset and the writer's
// timestamp, which every record of the batch got, but on a create-time
// partition those with a timestamp of their own (they keep theirs).
type Appended struct {
	BaseOffset int64
	Timestamp  int64
	// Replayed is set when the batch's key was committed before: these are
	// that commit's offsets, and nothing was appended now.
	Replayed bool
}

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

// Log is one partition.
type Log struct {
	cfg Config

	// Rolling limits: cfg.SegmentBytes and cfg.SegmentMs, changed by
	// SetRolling while the log is open (a topic update).
	segBytes, segMs atomic.Int64

	// Group commit queue, under qmu.
	qmu      sync.Mutex
	queue    []*pending
	flushing bool // a leader is flushing the queue
	closed   bool

	// Writer state, under wmu (the flush leader, or Close).
	wmu     sync.Mutex
	recBuf  []segment.Record // write's records of a flush, reused (under wmu)
	w       *segment.Writer  // nil: the next write rolls a new file
	bw      *batchWriter     // the batch file of w's segment
	holding bool             // we hold the lease (acquired, not released)
	lease   meta.Partition   // the state we may release with, when holding (see the package doc)
	sealed  bool             // the state being written seals a segment (OnRoll after its commit)
	win     *window          // committed batch keys (window.go)
	// winStale: the lease was acquired since the window was last read
	// (while we hold it, our own commits are all there is).
	winStale    bool
	lastSealed  *segment.ID // the segment sealed (or dropped empty) by this acquire
	acquiredAt  time.Time   // when the lease was acquired
	ckptMissing bool        // the checkpoint file may not exist (ensureCheckpoint)
	again       bool        // the last commit kept the lease for another round (chainRounds)
	contended   time.Time   // until then, stage first (ensureWriter)
	// answeredStaged are the staged files of this Log's batches answered
	// since its last staging: removed with the next (waitTurn), at
	// Release, or by a leader once they are too old.
	answeredStaged []string
	// committedStaged are staged files whose batches this Log knows are
	// committed, as of its last listing (collectStaged): neither read
	// again nor counted as waiting.
	committedStaged map[string]bool
	// lastTook is how many staged batches of others the last round this
	// Log led took (collectStaged).
	lastTook int
	waiting  bool            // in waitTurn: our batches are staged
	chained  int             // rounds run for staged batches since the lease was acquired
	inUse    map[string]bool // keys of batches being appended here, under qmu
	// warm: without HoldLease, the writer (w, bw) is kept open after the
	// commit that released the lease, at item version warmVersion with
	// active segment warmActive. The next acquire continues it without
	// recovering the files when the item shows nobody acquired or
	// committed since (its version is warmVersion+1, the acquire's own).
	warm        bool
	warmVersion uint64
	warmActive  meta.SegmentInfo
	// parked: without HoldLease, the last commit kept the lease for this
	// Log, expired for every clock (park.go); holding is true too.
	parked bool
	alone  bool // this round found the partition as this Log left it (warm or parked)
	// acquiredAhead: the lease was acquired for the next round, beside
	// the staging of its batches (waitTurn).
	acquiredAhead bool
	solo          int          // rounds in a row that did
	otherAt       time.Time    // when another writer was last seen
	itemAt        time.Time    // when the item was last read (acquire, or a parked refresh)
	ckptF         segment.File // the checkpoint, kept open while parked or warm (nil otherwise)
	// stageMade: this Log made the write buffer's directory (or saw it).
	stageMade bool

	committed atomic.Pointer[view] // last view published: wakes waiters only
	// ackedEnd is the end of the highest batch this Log acknowledged: no
	// view it reads from then on has an older high watermark (a batch
	// another writer committed for it may be acknowledged before that
	// writer's checkpoint names the commit).
	ackedEnd atomic.Int64

	// Parsed indexes of segments, by the committed length they were read
	// for: entries below a committed length never change, so a fetch
	// re-reads a segment's index files only when its committed length has
	// grown well past what the cache covers.
	idx struct {
		sync.Mutex
		m map[segment.ID]*cachedIndex
	}
	notifyMu sync.Mutex
	notify   chan struct{} // closed and replaced on every commit

	// The checkpoint last read, and when the item was last read by a
	// waiting reader (checkpoint.go).
	ckpt struct {
		sync.Mutex
		v        *view
		at       time.Time
		verified time.Time
		emptyAt  time.Time // an item read found the partition empty
	}
}

type pending struct {
	recs     []Record
	size     int
	key      string // "" for an unkeyed batch (until it is staged)
	hash     [16]byte
	expected int64   // -1: unconditional
	origin   uint64  // this attempt, in batch-file entries
	staged   *staged // our staged copy, once staged
	res      *result // decided without a write (replay, mismatch)
	deadline time.Time
	done     chan result
}

type result struct {
	app Appended
	err error
}

// Open opens a partition. It reads the committed state but takes no lease:
// the first Append does.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg.applyDefaults()
	l := &Log{cfg: cfg, notify: make(chan struct{}), win: newWindow(), inUse: map[string]bool{}, ckptMissing: true}
	l.SetRolling(cfg.SegmentBytes, cfg.SegmentMs)
	p, err := cfg.Meta.Partition(ctx, cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("partition %v: read state: %w", cfg.Key, err)
	}
	l.publish(&p)
	return l, nil
}

func (l *Log) publish(p *meta.Partition) { l.publishView(viewOf(p)) }

func (l *Log) publishView(v *view) {
	l.committed.Store(v)
	l.notifyMu.Lock()
	close(l.notify)
	l.notify = make(chan struct{})
	l.notifyMu.Unlock()
}

// maxRecBuf bounds the records a Log keeps room for between flushes.
const maxRecBuf = 1 << 14

// Append writes recs as one contiguous batch and returns where it landed,
// once it is durable and committed.
func (l *Log) Append(ctx context.Context, recs []Record) (Appended, error) {
	return l.AppendBatch(ctx, Batch{Records: recs, Expected: -1})
}

// lead flushes the queue until it is empty.
func (l *Log) lead(ctx context.Context) {
	for {
		l.qmu.Lock()
		n, size := 0, 0
		for n < len(l.queue) && (n == 0 || size+l.queue[n].size <= l.cfg.MaxFlushBytes) {
			size += l.queue[n].size
			n++
		}
		batch := l.queue[:n:n]
		l.queue = l.queue[n:]
		if n == 0 {
			l.flushing = false
			l.qmu.Unlock()
			return
		}
		l.qmu.Unlock()
		l.flush(context.WithoutCancel(ctx), batch)
	}
}

func (l *Log) flush(ctx context.Context, batch []*pending) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	apps, err := l.write(ctx, batch)
	if errors.Is(err, errParkedFenced) {
		// Another writer took the parked lease: nothing of the round was
		// acknowledged. Again, deciding each batch afresh, with an acquire.
		for _, p := range batch {
			p.res = nil
		}
		apps, err = l.write(ctx, batch)
	}
	if errors.Is(err, errBusy) {
		l.waitTurn(ctx, batch)
		return
	}
	for i, p := range batch {
		switch {
		case p.res != nil:
			p.done <- *p.res
		case err != nil:
			p.done <- result{err: err}
		default:
			p.done <- result{app: apps[i]}
		}
	}
	l.chainRounds(ctx)
}

// contendedFor is how long a Log that found the lease held, or led a round
// that took others' batches, stages its batches first (ensureWriter).
const contendedFor = time.Second

// maxChain bounds the rounds a Lambda-mode leader runs for other writers'
// staged batches after its own, so its own request is not held long: at
// most this many, and none that starts a tenth of the lease TTL after the
// acquire (1 s by default; a round takes milliseconds).
const maxChain = 4

// chainRounds runs the rounds a Lambda-mode commit kept the lease for: each
// takes the batches staged since, and the last releases the lease.
func (l *Log) chainRounds(ctx context.Context) {
	for l.again && l.holding {
		l.again = false
		l.chained++
		if _, err := l.write(ctx, nil); err != nil {
			l.cfg.Logger.Warn("round for staged batches", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
		}
	}
	l.again = false
	if !l.cfg.HoldLease && l.holding && !l.parked {
		l.releaseLease(ctx)
	}
	l.chained = 0
}

// replay is the answer to a batch whose key the window has: the committed
// batch's offsets, or ErrKeyReused if its contents differ.
func replay(e batchEntry, p *pending) result {
	if e.Hash != p.hash || e.Count != len(p.recs) {
		return result{err: fmt.Errorf("%w: key %q", ErrKeyReused, p.key)}
	}
	return result{app: Appended{BaseOffset: e.Base, Timestamp: e.TS, Replayed: e.Origin != p.origin}}
}

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
	var a meta.Acquired
	err := trace.Capture(ctx, trace.SpanAcquire, func(ctx context.Context) (err error) {
		a, err = l.cfg.Meta.Acquire(ctx, l.cfg.Key, l.cfg.Owner, l.cfg.Now(), l.cfg.LeaseTTL)
		return err
	})
	if err != nil {
		switch {
		case errors.Is(err, meta.ErrLeaseHeld):
			l.cfg.Metrics.Conflict()
			l.sawOther()
			l.contended = l.cfg.Now().Add(contendedFor)
			return fmt.Errorf("%w: %w: %v: %w", ErrUnavailable, errBusy, l.cfg.Key, err)
		case errors.Is(err, meta.ErrNotFound):
			return fmt.Errorf("%w: %v: %w", ErrDeleted, l.cfg.Key, err)
		}
		return fmt.Errorf("%w: acquire: %w", ErrUnavailable, err)
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
	switch {
	case st.Active == nil:
		// Nothing to continue: the first write rolls.
	case a.TakenOver:
		l.cfg.Logger.Info("lease taken over; sealing active segment",
			"topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "epoch", st.Epoch,
			"base", st.Active.Base, "committed", st.Active.Size)
		l.seal(&st)
	default:
		w, err := l.continueActive(&st)
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
			l.seal(&st)
		}
		l.w = w
	}
	l.lease = st
	return nil
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

// Close waits for in-flight appends, syncs the active segment's indexes and
// releases the lease cleanly, so the next owner continues the segment.
func (l *Log) Close(ctx context.Context) error {
	l.qmu.Lock()
	l.closed = true
	l.qmu.Unlock()
	_, err := l.Release(ctx)
	return err
}

// Release closes the files of the Log's writer (held under the lease, or
// kept open after a release: warm) and releases the lease cleanly, as Close
// does, when it holds one; the Log stays open, and its next append acquires
// the lease again and continues the active segment. A flush in progress
// finishes first. It reports whether it closed anything.
func (l *Log) Release(ctx context.Context) (bool, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.removeStaged(l.answeredStaged)
	l.answeredStaged = nil
	if !l.holding && !l.warm {
		return false, nil
	}
	var err error
	if l.w != nil {
		err = l.w.Close()
		l.w = nil
	}
	l.closeWriter(false) // the rest of its files
	l.warm = false       // a writer kept open after its release: only its files
	if l.holding {
		l.holding, l.parked = false, false
		if cerr := l.cfg.Meta.Commit(ctx, l.lease, true, l.cfg.Now(), l.cfg.LeaseTTL); cerr != nil && err == nil {
			err = fmt.Errorf("partition %v: release: %w", l.cfg.Key, cerr)
		}
	}
	return true, err
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
		offs, times := segment.ReadIndexes(l.cfg.FS, l.cfg.Dir, id)
		fresh := &cachedIndex{limit: limit, offs: offs, times: times}
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
