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
// renewed by each commit, so a batch costs one metadata write. Without it
// (Lambda, where a frozen container must not sit on a lease) a batch
// acquires and releases, two writes, unless the writer is alone: then it
// parks the lease (park.go) and a batch costs its commit alone. Writers
// that find the lease held stage their batches in the partition's write
// buffer for the holder to take (stage.go, batch.go, round.go).
//
// Concurrent Appends to one Log are grouped: while one batch is being
// written and committed, the next ones queue, and the queue is written as one
// write, one fsync and one commit. Each request's records stay contiguous and
// in order.
//
// # Read path (read.go)
//
// Readers see only committed state: a read takes a view (the committed
// checkpoint's, or one consistent item read; checkpoint.go), then reads the
// offsets below its next offset, in the segments it lists, each below its
// committed length. An offset above a checkpoint's high watermark is looked
// up in the item before it is answered out of range. Files are re-opened
// per read (close-to-open consistency on NFS). A file that disappears under
// a reader (ENOENT, or ESTALE on NFS: the compactor removed it) makes the
// read look again with a fresh view. Records that fail their checks are
// never returned: a read stops before them, and a read that starts at them
// answers a *DamagedError naming the offsets and where good records resume.
//
// # Tracing
//
// The lease acquire, the append with its fsync and the commit each run in a
// span of the context's tracer (package trace; none by default). A grouped
// flush runs under the context of the request that leads it.
//
// # Concurrency
//
// A Log is safe for concurrent use. wmu is held by the one goroutine that
// flushes (a round, or a wait for another process's round) and by Close and
// Release; the writer's state is its (the fields under it in Log). qmu
// guards the queue and is taken alone or under wmu; notifyMu (publishing a
// view) nests inside wmu; ckpt and idx are taken alone, by readers. The
// order, and what each lock guards, is in docs/internals.md ("Lock order").
package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/segment"
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
	// Detach, if set, runs fn on a goroutine of its own and returns: fn is
	// what follows the answers of a round that a writer alone led (its
	// lease parked before and after): the checkpoint, then the batches
	// queued meanwhile, so that the leading Append returns as soon as
	// its own batch is answered. fn holds wmu from the round on. Whoever
	// sets it sees fn through before the process may stop or freeze
	// (Lambda: pkg/lambdafn keeps the container from freezing until it
	// has). Nil: the leading Append does that work before it returns.
	Detach func(fn func())
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
	again       bool        // the last commit kept the lease for another round (afterAnswers)
	// parkedHint is whether the lease was parked when the last flush
	// ended (a writer alone): AppendBatch reads it, without wmu, to
	// decide whether a leading Append is answered before the work after
	// its round (Config.Detach). A stale value only costs time.
	parkedHint atomic.Bool
	// tail is what the last committed round does after its answers
	// (commit sets it, afterAnswers runs it): its checkpoint, and the
	// removal of staged files too old for any waiter.
	tail      func()
	contended time.Time // until then, stage first (ensureWriter)
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

// lead flushes the queue until it is empty, or until a flush hands what
// follows its answers, and the leading, to Config.Detach.
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
		if l.flush(context.WithoutCancel(ctx), batch) {
			return
		}
	}
}

// flush runs a round for batch under wmu and answers it. With a context
// from a lead that may detach (mayDetach) and the lease still parked, it
// hands the rest (afterAnswers, then leading whatever was queued
// meanwhile) to Config.Detach, still under wmu, and reports true: its
// caller has its answer.
func (l *Log) flush(ctx context.Context, batch []*pending) (handed bool) {
	l.wmu.Lock()
	defer func() {
		if !handed {
			l.wmu.Unlock()
		}
	}()
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
		return false
	}
	for i, p := range batch {
		switch {
		case p.res != nil:
			finish(p, *p.res)
		case err != nil:
			finish(p, result{err: err})
		default:
			finish(p, result{app: apps[i]})
		}
	}
	if ctx.Value(leadKey{}) == mayDetach && l.holding && l.parked {
		dctx := context.WithValue(ctx, leadKey{}, detached)
		l.cfg.Detach(func() {
			l.afterAnswers(dctx)
			l.wmu.Unlock()
			l.lead(dctx)
		})
		return true
	}
	l.afterAnswers(ctx)
	return false
}

// maxChain bounds the rounds a Lambda-mode leader runs for other writers'
// staged batches after its own, so its own request is not held long: at
// most this many, and none that starts a tenth of the lease TTL after the
// acquire (1 s by default; a round takes milliseconds).
const maxChain = 4

// afterAnswers is what a leader does once its round's batches are
// answered: the round's tail (its checkpoint), then the rounds a
// Lambda-mode commit kept the lease for, each taking the batches staged
// since (the last releases the lease).
func (l *Log) afterAnswers(ctx context.Context) {
	if ctx.Value(leadKey{}) == detached {
		// After the leading Append's answer too (Detach): Lambda bills it.
		defer func(start time.Time) { l.cfg.Metrics.ObserveAfterAnswer(time.Since(start)) }(time.Now())
	}
	l.runTail()
	for l.again && l.holding {
		l.again = false
		l.chained++
		_, err := l.write(ctx, nil)
		l.runTail()
		if err != nil {
			l.cfg.Logger.Warn("round for staged batches", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
		}
	}
	l.again = false
	if !l.cfg.HoldLease && l.holding && !l.parked {
		l.releaseLease(ctx)
	}
	l.chained = 0
	l.parkedHint.Store(l.holding && l.parked)
}

// leadKey is the context key of a lead's leadMode.
type leadKey struct{}

// leadMode says where a lead stands towards Config.Detach.
type leadMode uint8

const (
	// mayDetach: a lead that may hand what follows its first round's
	// answers to Detach (AppendBatch: a writer alone).
	mayDetach leadMode = iota + 1
	// detached: the work Detach runs; what follows its answers is after
	// the leading Append's too.
	detached
)

// runTail runs the tail the last committed round left, if any.
func (l *Log) runTail() {
	if t := l.tail; t != nil {
		l.tail = nil
		t()
	}
}

// replay is the answer to a batch whose key the window has: the committed
// batch's offsets, or ErrKeyReused if its contents differ.
func replay(e batchEntry, p *pending) result {
	if e.Hash != p.hash || e.Count != len(p.recs) {
		return result{err: fmt.Errorf("%w: key %q", ErrKeyReused, p.key)}
	}
	return result{app: Appended{BaseOffset: e.Base, Timestamp: e.TS, Replayed: e.Origin != p.origin}}
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
	l.parkedHint.Store(false)
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
