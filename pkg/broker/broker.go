// Package broker is tierlog's entry point: topics, routing of records to
// partitions, produce, fetch, offsets and consumer groups. It sits between
// the HTTP API and package partition, and knows nothing of HTTP or AWS.
//
// # Concurrency
//
// Two layers of locks, as in the seed engine:
//
//   - Broker.mu guards the topics map only, held briefly for a lookup or
//     insert; no I/O under it.
//   - topic.mu: produce, fetch and friends hold it for reading for the whole
//     operation; delete and Close take it for writing, so a topic cannot
//     close under an in-flight operation.
//
// Parallelism comes from partitions: each partition has one writer (its
// lease) and groups concurrent batches into one write, fsync and commit.
//
// # Files
//
// The hot tier of a topic lives in <DataDir>/<topic>~<topic id>/<partition>/:
// the only two MkdirAll calls are for those two directories. The topic id
// makes a re-created topic start clean.
package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

// Config configures a Broker.
type Config struct {
	// DataDir holds the hot tier.
	DataDir string
	// Meta is the metadata store.
	Meta meta.Store
	// Owner names this process as a lease owner. Default "local": with the
	// embedded store one process owns the data dir, so a restart under the
	// same name may take its own leases back at once.
	Owner string
	// LeaseTTL is how long a lease lives without a commit. Default
	// partition.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// ReleaseEachBatch acquires and releases the lease around every batch
	// (Lambda); by default a partition keeps its lease between batches.
	ReleaseEachBatch bool
	// ReadOnly makes a broker that never writes the hot tier: no directory
	// is created and produce is refused (the fetch function, whose EFS
	// mount is read-only).
	ReadOnly bool
	// IndexIntervalBytes is the sparse index spacing. Default 4096.
	IndexIntervalBytes int
	// FS is the hot tier's file system (fault injection and simulation in
	// tests). Default the OS.
	FS segment.FS
	// Objects is the cold tier. Nil: no cold tier (nothing is ever tiered).
	Objects objstore.Store
	// Cache caches cold-tier indexes and artifacts. Nil: a cache of
	// tier.DefaultCacheBytes.
	Cache *tier.Cache
	// OnRoll is called when a partition seals a segment (the compactor's
	// cue). It must not block.
	OnRoll func(meta.PartitionKey)
	// OnDeleteTopic is called after a topic is deleted, to purge its cold
	// tier. It may block.
	OnDeleteTopic func(context.Context, meta.TopicConfig)
	// Metrics counts flushes and lease conflicts. Nil: none.
	Metrics *metrics.Set
	// Now is the clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger

	// BusyWait bounds how long a produce waits for a partition another
	// writer holds. Default partition.DefaultBusyWait.
	BusyWait time.Duration
	// IdempotencyWindow is how long an Idempotency-Key is remembered at
	// least. Default partition.DefaultIdempotencyWindow.
	IdempotencyWindow time.Duration
	// Sleep and Rand are the partitions' timer and random source (the
	// simulation's virtual ones). Default real ones.
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() uint64
	// Parallel and SoloFor are the partitions' (partition.Config): how
	// independent reads run together (the simulation runs them in turn),
	// and how soon a writer alone parks its lease. Zero: their defaults.
	Parallel func(n int, fn func(i int))
	SoloFor  time.Duration
	// Detach is the partitions' (partition.Config.Detach): where a
	// leading produce's work after its answer runs. Nil: before the answer.
	Detach func(fn func())
	// MaxOpenWriters bounds the partitions this process keeps writing
	// with their files open (writers.go). Default: half the descriptor
	// limit (RLIMIT_NOFILE), five descriptors each.
	MaxOpenWriters int
	// WriterIdle is how long a partition's writer stays open unused.
	// Default DefaultWriterIdle.
	WriterIdle time.Duration
	// TopicRefresh is how long a topic's cached configuration is used
	// before the next operation on it reads the item again (one read per
	// topic and interval while it is used): the bound on how stale another
	// process's view of a topic update (PATCH: partition growth, settings)
	// is here. Default DefaultTopicRefresh.
	TopicRefresh time.Duration
	// AnswerCacheBytes budgets the encoded fetch answers kept for
	// readers that ask the same again (FetchAnswer). Default
	// DefaultAnswerCacheBytes; negative: none kept.
	AnswerCacheBytes int64
	// Checkpoint: writers copy every committed state to the hot tier and
	// readers take their view from there (partition.Config.Checkpoint).
	// For a metadata store whose reads are network requests.
	Checkpoint bool
}

func (c *Config) applyDefaults() error {
	if c.Meta == nil {
		return fmt.Errorf("%w: broker config needs a metadata store", ErrInvalid)
	}
	if c.DataDir == "" {
		return fmt.Errorf("%w: broker config needs a data dir", ErrInvalid)
	}
	if c.Owner == "" {
		c.Owner = "local"
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = partition.DefaultLeaseTTL
	}
	if c.MaxOpenWriters <= 0 {
		c.MaxOpenWriters = defaultMaxOpenWriters()
	}
	if c.WriterIdle <= 0 {
		c.WriterIdle = DefaultWriterIdle
	}
	if c.IdempotencyWindow <= 0 {
		c.IdempotencyWindow = partition.DefaultIdempotencyWindow
	}
	if c.TopicRefresh <= 0 {
		c.TopicRefresh = DefaultTopicRefresh
	}
	if c.AnswerCacheBytes == 0 {
		c.AnswerCacheBytes = DefaultAnswerCacheBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Cache == nil {
		c.Cache = tier.NewCache(tier.DefaultCacheBytes)
	}
	if c.FS == nil {
		c.FS = segment.OSFS{}
	}
	return nil
}

// Broker is safe for concurrent use.
type Broker struct {
	cfg Config

	cold *tier.Reader // nil without a cold tier

	mu     sync.RWMutex
	topics map[string]*topic
	closed bool
	// behind holds the partitions that refuse writes (CheckHot): set
	// once at startup, read by every produce without a lock.
	behind atomic.Pointer[map[meta.PartitionKey]bool]

	lags lags // for metrics: group lags last computed here

	answers *answers // encoded fetch answers kept (answers.go); nil: none

	writers *writers // partitions that may hold files open (writers.go)

	groupLocks [groupStripes]sync.Mutex // group changes of this process take turns (groups.go)

	// crashAfter, in tests, stops DeleteTopic after the named step
	// ("fence", "topic", "files"), as a crash there would.
	crashAfter func(step string) bool
}

// errCrashed is what DeleteTopic returns when a test stops it part way.
var errCrashed = errors.New("broker: stopped by test")

func (b *Broker) crashed(step string) bool { return b.crashAfter != nil && b.crashAfter(step) }

// DefaultTopicRefresh is Config.TopicRefresh's default.
const DefaultTopicRefresh = 5 * time.Second

type topic struct {
	cfg meta.TopicConfig
	dir string
	// loaded is when cfg was last read from the store (unix ns);
	// refreshing is set while one operation reads it again.
	loaded     atomic.Int64
	refreshing atomic.Bool
	// next is set once cfg was updated (a PATCH) and a successor topic
	// took over the open partitions: part opens new ones there, so one
	// partition never has two logs in this process.
	next *topic // guarded by pmu

	mu     sync.RWMutex // read: operations; write: close
	closed bool
	// ending is done once close begins (end), with what ends the topic as
	// its cause: a long-poll on the topic stops waiting and answers that,
	// so a close never waits out a wait_ms.
	ending context.Context
	end    context.CancelCauseFunc
	pmu    sync.Mutex
	parts  []*partition.Log // opened lazily
	stale  atomic.Bool      // deleted or re-created by another process
	rr     atomic.Uint64    // round-robin for keyless records
	broker *Broker
}

// errReadOnly is a bug in routing: a write reached a read-only broker.
var errReadOnly = errors.New("broker: read-only broker cannot write")

// New opens a broker over an existing (or empty) data dir and store.
func New(ctx context.Context, cfg Config) (*Broker, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	if !cfg.ReadOnly {
		if err := cfg.FS.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("broker: data dir: %w", err)
		}
	}
	b := &Broker{cfg: cfg, topics: map[string]*topic{}, answers: newAnswers(cfg.AnswerCacheBytes), writers: newWriters(cfg.MaxOpenWriters, cfg.WriterIdle)}
	if cfg.Objects != nil {
		b.cold = tier.NewReader(cfg.Objects, cfg.Cache)
		b.cold.OnDamage = func(key string, err error) {
			cfg.Logger.Error("damaged cold-tier artifact, read around", "key", key, "err", err)
			cfg.Metrics.Damaged()
		}
	}
	return b, nil
}

// CreateTopic validates spec, fills defaults and stores the topic.
func (b *Broker) CreateTopic(ctx context.Context, spec TopicSpec) (Topic, error) {
	t, err := topicFromSpec(spec)
	if err != nil {
		return Topic{}, err
	}
	var id [8]byte
	rand.Read(id[:])
	t.ID = hex.EncodeToString(id[:])
	t.CreatedMs = b.cfg.Now().UnixMilli()
	if err := b.checkOpen(); err != nil {
		return Topic{}, err
	}
	if b.cfg.ReadOnly {
		return Topic{}, errReadOnly
	}
	// The directory first, then the metadata: a topic that exists can be
	// written. The directory's name carries the new random id, so nobody
	// else uses it and removing it after a failed create is safe.
	dir := b.topicDir(t)
	if err := b.cfg.FS.MkdirAll(dir, 0o755); err != nil {
		return Topic{}, fmt.Errorf("%w: create topic %q: directory: %w", ErrUnavailable, t.Name, err)
	}
	if err := b.cfg.Meta.CreateTopic(ctx, t); err != nil {
		if rerr := b.cfg.FS.RemoveAll(dir); rerr != nil {
			b.cfg.Logger.Warn("remove directory of a topic not created", "topic", t.Name, "err", rerr)
		}
		if errors.Is(err, meta.ErrTopicExists) {
			return Topic{}, fmt.Errorf("%w: %q", ErrTopicExists, t.Name)
		}
		return Topic{}, metaErr(fmt.Sprintf("create topic %q", t.Name), err)
	}
	return t, nil
}

func topicFromSpec(s TopicSpec) (Topic, error) {
	if err := ValidTopicName(s.Name); err != nil {
		return Topic{}, err
	}
	t := Topic{
		TimestampType:     or(s.TimestampType, TimestampAppend),
		Name:              s.Name,
		Partitions:        or(s.Partitions, DefaultPartitions),
		RetentionMs:       or(s.RetentionMs, DefaultRetentionMs),
		RetentionBytes:    or(s.RetentionBytes, DefaultRetentionBytes),
		SegmentBytes:      or(s.SegmentBytes, DefaultSegmentBytes),
		SegmentMs:         or(s.SegmentMs, DefaultSegmentMs),
		CleanupPolicy:     or(s.CleanupPolicy, DefaultCleanupPolicy),
		CacheEnabled:      or(s.CacheEnabled, DefaultCacheEnabled),
		ReadAheadSegments: or(s.ReadAheadSegments, DefaultReadAhead),
	}
	if t.TimestampType != TimestampAppend && t.TimestampType != TimestampCreate {
		return t, fmt.Errorf("%w: timestamp_type %q must be %q or %q", ErrInvalid, t.TimestampType, TimestampAppend, TimestampCreate)
	}
	return t, validTopic(t)
}

// validTopic checks a topic's settings (create and update).
func validTopic(t Topic) error {
	switch {
	case t.Partitions < 1 || t.Partitions > MaxPartitions:
		return fmt.Errorf("%w: partitions %d must be 1..%d", ErrInvalid, t.Partitions, MaxPartitions)
	case t.RetentionMs < -1 || t.RetentionMs == 0:
		return fmt.Errorf("%w: retention_ms %d must be positive or -1 (forever)", ErrInvalid, t.RetentionMs)
	case t.RetentionBytes < -1 || t.RetentionBytes == 0:
		return fmt.Errorf("%w: retention_bytes %d must be positive or -1 (unlimited)", ErrInvalid, t.RetentionBytes)
	case t.SegmentBytes < MinSegmentBytes || t.SegmentBytes > MaxSegmentBytes:
		return fmt.Errorf("%w: segment_bytes %d must be %d..%d", ErrInvalid, t.SegmentBytes, MinSegmentBytes, MaxSegmentBytes)
	case t.SegmentMs < 1:
		return fmt.Errorf("%w: segment_ms %d must be positive", ErrInvalid, t.SegmentMs)
	case t.ReadAheadSegments < 0 || t.ReadAheadSegments > MaxReadAhead:
		return fmt.Errorf("%w: read_ahead_segments %d must be 0..%d", ErrInvalid, t.ReadAheadSegments, MaxReadAhead)
	case t.CleanupPolicy != "delete":
		return fmt.Errorf("%w: cleanup_policy %q: only \"delete\" is supported", ErrInvalid, t.CleanupPolicy)
	}
	return nil
}

// or is *p, or def when p is nil (a field the request left out).
func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

func (b *Broker) topicDir(t Topic) string {
	return partition.TopicDir(b.cfg.DataDir, t.Name, t.ID)
}

func (b *Broker) checkOpen() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	return nil
}

// Topic returns a topic or ErrTopicNotFound.
func (b *Broker) Topic(ctx context.Context, name string) (Topic, error) {
	if err := ValidTopicName(name); err != nil {
		return Topic{}, err
	}
	t, err := b.cfg.Meta.Topic(ctx, name)
	if errors.Is(err, meta.ErrNotFound) {
		return Topic{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	if err != nil {
		return Topic{}, metaErr(fmt.Sprintf("read topic %q", name), err)
	}
	return t, nil
}

// Topics lists topics sorted by name.
func (b *Broker) Topics(ctx context.Context) ([]Topic, error) {
	ts, err := b.cfg.Meta.Topics(ctx)
	if err != nil {
		return nil, metaErr("list topics", err)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts, nil
}

// acquire returns the open topic, read-locked: call release when done.
func (b *Broker) acquire(ctx context.Context, name string) (*topic, error) {
	if err := ValidTopicName(name); err != nil {
		return nil, err
	}
	for {
		b.mu.RLock()
		if b.closed {
			b.mu.RUnlock()
			return nil, ErrClosed
		}
		t := b.topics[name]
		b.mu.RUnlock()
		if t == nil {
			cfg, err := b.cfg.Meta.Topic(ctx, name)
			if errors.Is(err, meta.ErrNotFound) {
				return nil, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
			}
			if err != nil {
				return nil, metaErr(fmt.Sprintf("read topic %q", name), err)
			}
			t = b.newTopic(cfg)
			b.mu.Lock()
			if b.closed {
				b.mu.Unlock()
				return nil, ErrClosed
			}
			if cur := b.topics[name]; cur != nil {
				t = cur
			} else {
				b.topics[name] = t
			}
			b.mu.Unlock()
		}
		if t.stale.Load() {
			// Another process deleted or re-created the topic: forget this
			// incarnation and look the name up again.
			b.mu.Lock()
			if b.topics[name] == t {
				delete(b.topics, name)
			}
			b.mu.Unlock()
			// Close it here, not in the background: its logs may keep
			// files open (a Lambda-mode writer between batches), and their
			// operations in flight end soon (close cuts long-polls short).
			t.close(context.WithoutCancel(ctx), errStaleTopic)
			continue
		}
		if b.refresh(ctx, t) {
			continue // updated, deleted or re-created: take the new view
		}
		t.mu.RLock()
		if !t.closed {
			return t, nil
		}
		t.mu.RUnlock() // deleted under us: look again
	}
}

func (b *Broker) newTopic(cfg meta.TopicConfig) *topic {
	t := &topic{cfg: cfg, dir: b.topicDir(cfg), parts: make([]*partition.Log, cfg.Partitions), broker: b}
	t.ending, t.end = context.WithCancelCause(context.Background())
	t.loaded.Store(b.cfg.Now().UnixNano())
	return t
}

// refresh reads t's item again once TopicRefresh has passed since it was
// read (one caller at a time; the others go on with the cached view). It
// reports whether the cache changed: t is stale (deleted or re-created) or
// was replaced by a successor with the updated configuration.
func (b *Broker) refresh(ctx context.Context, t *topic) bool {
	now := b.cfg.Now().UnixNano()
	if now-t.loaded.Load() < int64(b.cfg.TopicRefresh) || !t.refreshing.CompareAndSwap(false, true) {
		return false
	}
	defer t.refreshing.Store(false)
	cfg, err := b.cfg.Meta.Topic(ctx, t.cfg.Name)
	switch {
	case errors.Is(err, meta.ErrNotFound) || (err == nil && cfg.ID != t.cfg.ID):
		t.stale.Store(true)
		return true
	case err != nil:
		return false // keep the cached view; the next operation tries again
	}
	t.loaded.Store(now)
	if cfg == t.cfg {
		return false
	}
	return b.replaceTopic(t, cfg)
}

// replaceTopic makes a successor of old with configuration cfg (the same
// incarnation, updated) the cached topic. The successor takes over old's
// open partition logs, and old opens no more of its own: operations still
// running on old finish on the same logs. A count that shrank (impossible
// through UpdateTopic) makes old stale instead.
func (b *Broker) replaceTopic(old *topic, cfg meta.TopicConfig) bool {
	if cfg.Partitions < old.cfg.Partitions {
		old.stale.Store(true)
		return true
	}
	nt := b.newTopic(cfg)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.topics[cfg.Name] != old {
		return true // someone else replaced or removed it: look again
	}
	old.pmu.Lock()
	copy(nt.parts, old.parts)
	old.next = nt
	old.pmu.Unlock()
	nt.pmu.Lock()
	for _, l := range nt.parts {
		if l != nil { // open: the update applies from its next write
			l.SetRolling(cfg.SegmentBytes, cfg.SegmentMs)
		}
	}
	nt.pmu.Unlock()
	b.topics[cfg.Name] = nt
	return true
}

func (t *topic) release() { t.mu.RUnlock() }

// part opens partition p lazily.
func (t *topic) part(ctx context.Context, p int) (*partition.Log, error) {
	if p < 0 || p >= t.cfg.Partitions {
		return nil, fmt.Errorf("%w: partition %d of topic %q (partitions: %d)", ErrPartitionNotFound, p, t.cfg.Name, t.cfg.Partitions)
	}
	t.pmu.Lock()
	if nt := t.next; nt != nil {
		t.pmu.Unlock()
		return nt.partOfSuccessor(ctx, p)
	}
	defer t.pmu.Unlock()
	if l := t.parts[p]; l != nil {
		return l, nil
	}
	c0 := t.broker.cfg
	dir := partition.Dir(c0.DataDir, meta.PartitionKey{Topic: t.cfg.Name, TopicID: t.cfg.ID, Partition: p})
	if !t.broker.cfg.ReadOnly {
		if err := c0.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: partition dir: %w", ErrUnavailable, err)
		}
	}
	c := t.broker.cfg
	l, err := partition.Open(ctx, partition.Config{
		Dir:                dir,
		Key:                meta.PartitionKey{Topic: t.cfg.Name, TopicID: t.cfg.ID, Partition: p},
		Meta:               c.Meta,
		Owner:              c.Owner,
		LeaseTTL:           c.LeaseTTL,
		HoldLease:          !c.ReleaseEachBatch,
		SegmentBytes:       t.cfg.SegmentBytes,
		SegmentMs:          t.cfg.SegmentMs,
		IndexIntervalBytes: c.IndexIntervalBytes,
		FS:                 c.FS,
		Now:                c.Now,
		Logger:             c.Logger,
		OnRoll:             c.OnRoll,
		Metrics:            c.Metrics,
		Verify:             t.verify,
		BusyWait:           c.BusyWait,
		IdempotencyWindow:  c.IdempotencyWindow,
		Sleep:              c.Sleep,
		Rand:               c.Rand,
		Parallel:           c.Parallel,
		SoloFor:            c.SoloFor,
		Detach:             c.Detach,
		Checkpoint:         c.Checkpoint,
		CreateTime:         t.cfg.TimestampType == TimestampCreate,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	t.parts[p] = l
	return l, nil
}

// partOfSuccessor is part for an operation that began on a predecessor
// (replaceTopic): it refuses once the successor is closed, so no log opens
// after a delete or Close.
func (t *topic) partOfSuccessor(ctx context.Context, p int) (*partition.Log, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return nil, errStaleTopic
	}
	return t.part(ctx, p)
}

// TopicPatch is an update of a topic's settings (PATCH): nil fields stay.
// Partitions may only grow.
type TopicPatch struct {
	Partitions        *int
	RetentionMs       *int64
	RetentionBytes    *int64
	SegmentBytes      *int64
	SegmentMs         *int64
	CacheEnabled      *bool
	ReadAheadSegments *int
}

// UpdateTopic applies patch to a topic and returns it as stored. This
// process's cache takes the update at once; other processes within
// TopicRefresh. A partition count that grows changes the partition of
// keyed records (KeyPartition hashes over the count), as in Kafka.
// segment_bytes and segment_ms apply to a partition from the next time a
// process opens it (partitions not yet open here at once, open ones after
// a restart or in a new Lambda container).
func (b *Broker) UpdateTopic(ctx context.Context, name string, patch TopicPatch) (Topic, error) {
	if err := ValidTopicName(name); err != nil {
		return Topic{}, err
	}
	if b.cfg.ReadOnly {
		return Topic{}, errReadOnly
	}
	for range groupRetries {
		cur, err := b.Topic(ctx, name)
		if err != nil {
			return Topic{}, err
		}
		next := cur
		set := func(dst *int64, v *int64) {
			if v != nil {
				*dst = *v
			}
		}
		set(&next.RetentionMs, patch.RetentionMs)
		set(&next.RetentionBytes, patch.RetentionBytes)
		set(&next.SegmentBytes, patch.SegmentBytes)
		set(&next.SegmentMs, patch.SegmentMs)
		if patch.CacheEnabled != nil {
			next.CacheEnabled = *patch.CacheEnabled
		}
		if patch.ReadAheadSegments != nil {
			next.ReadAheadSegments = *patch.ReadAheadSegments
		}
		if patch.Partitions != nil {
			if *patch.Partitions < cur.Partitions {
				return Topic{}, fmt.Errorf("%w: partitions %d: topic %q has %d, and partitions may only grow", ErrInvalid, *patch.Partitions, name, cur.Partitions)
			}
			next.Partitions = *patch.Partitions
			if next.Partitions > cur.Partitions {
				// Routing takes the new count a while from now (produce.go).
				next.Growth = [2]meta.Growth{{From: cur.Partitions, AtMs: b.cfg.Now().UnixMilli()}, cur.Growth[0]}
			}
		}
		if err := validTopic(next); err != nil {
			return Topic{}, err
		}
		if next == cur {
			return cur, nil
		}
		err = b.cfg.Meta.UpdateTopic(ctx, cur, next)
		if errors.Is(err, meta.ErrConflict) {
			continue // another update of the partition count: apply to it
		}
		if errors.Is(err, meta.ErrNotFound) {
			return Topic{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
		}
		if err != nil {
			return Topic{}, metaErr(fmt.Sprintf("update topic %q", name), err)
		}
		b.mu.RLock()
		t := b.topics[name]
		b.mu.RUnlock()
		if t != nil && t.cfg.ID == next.ID {
			t.loaded.Store(b.cfg.Now().UnixNano())
			b.replaceTopic(t, next)
		}
		return next, nil
	}
	return Topic{}, fmt.Errorf("%w: topic %q: too many concurrent updates", ErrUnavailable, name)
}

// DeleteTopic deletes a topic: it waits for this process's in-flight
// operations and closes the partitions, then
//
//  1. fences every partition item (FencePartition): from here no writer in
//     any process, whatever incarnation it has cached, can acquire or commit;
//  2. deletes the topic item (this incarnation's only: a late copy of the
//     request never deletes a topic created again): the topic is gone for
//     clients;
//  3. removes the files.
//
// The fenced partition items stay, as tombstones: a process with the old
// incarnation cached, or a late Acquire still in the network, finds them
// fenced. Were they deleted, such an Acquire would create the item afresh
// (the partition then checks the topic before writing, but a tombstone
// refuses without asking). They are small, one per partition of a deleted
// topic.
//
// A crash after 1 leaves the topic listed but unwritable (produce answers
// topic_not_found) until the delete is retried; a crash after 2 leaves
// fenced items and files nobody can write. Deleting the topic item first
// would leave writable partition items that a process with the old
// incarnation cached could keep acknowledging writes into.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	if err := ValidTopicName(name); err != nil {
		return err
	}
	if b.cfg.ReadOnly {
		return errReadOnly
	}
	cfg, err := b.cfg.Meta.Topic(ctx, name)
	if errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	if err != nil {
		return metaErr(fmt.Sprintf("read topic %q", name), err)
	}
	b.mu.Lock()
	t := b.topics[name]
	delete(b.topics, name)
	b.mu.Unlock()
	if t != nil {
		t.close(ctx, fmt.Errorf("%w: %q was deleted", ErrTopicNotFound, name))
	}
	for p := 0; p < cfg.Partitions; p++ {
		k := meta.PartitionKey{Topic: cfg.Name, TopicID: cfg.ID, Partition: p}
		if err := b.cfg.Meta.FencePartition(ctx, k); err != nil {
			return fmt.Errorf("%w: delete topic %q: fence partition %d: %w", ErrUnavailable, name, p, err)
		}
	}
	// Readers with the incarnation cached take their view from the
	// partitions' checkpoints, without reading the (now fenced) items:
	// remove the checkpoints before the topic item goes, so no read that
	// starts after it serves the old incarnation. A writer late with its
	// checkpoint cannot create one again (partition.RemoveCheckpoint).
	for p := 0; p < cfg.Partitions; p++ {
		k := meta.PartitionKey{Topic: cfg.Name, TopicID: cfg.ID, Partition: p}
		if err := partition.RemoveCheckpoint(b.cfg.FS, partition.Dir(b.cfg.DataDir, k)); err != nil {
			return fmt.Errorf("%w: delete topic %q: partition %d: %w", ErrUnavailable, name, p, err)
		}
	}
	if b.crashed("fence") {
		return errCrashed
	}
	// Every group's offsets of the topic go before the topic item, so a
	// failure here leaves the delete to be retried on a topic still listed.
	if err := b.deleteTopicOffsets(ctx, name); err != nil {
		return fmt.Errorf("delete topic %q: group offsets: %w", name, err)
	}
	if err := b.cfg.Meta.DeleteTopic(ctx, name, cfg.ID); err != nil {
		if errors.Is(err, meta.ErrNotFound) {
			return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
		}
		return metaErr(fmt.Sprintf("delete topic %q", name), err)
	}
	// The topic is gone for clients; what follows is cleanup, and a crash
	// here leaves only fenced items and files nobody can write.
	if b.crashed("topic") {
		return errCrashed
	}
	if err := b.cfg.FS.RemoveAll(b.topicDir(cfg)); err != nil {
		b.cfg.Logger.Warn("remove topic dir", "topic", name, "err", err)
	}
	if b.crashed("files") {
		return errCrashed
	}
	b.lags.forget(name)
	if b.cfg.OnDeleteTopic != nil {
		b.cfg.OnDeleteTopic(ctx, cfg)
	}
	return nil
}

// errStaleTopic means this process's view of a topic is an incarnation that
// was deleted: nothing was written, and a retry looks the topic up afresh.
var errStaleTopic = fmt.Errorf("%w: topic was deleted or re-created", ErrUnavailable)

// verify checks that the topic item still names this incarnation. The
// partition asks when a partition item looks never written, which is also
// how a deleted one looks.
// A topic that is gone is ErrTopicNotFound (a retry would find nothing);
// one created again is the retryable errStaleTopic.
func (t *topic) verify(ctx context.Context) error {
	cur, err := t.broker.cfg.Meta.Topic(ctx, t.cfg.Name)
	if errors.Is(err, meta.ErrNotFound) {
		t.stale.Store(true)
		return fmt.Errorf("%w: %q was deleted", ErrTopicNotFound, t.cfg.Name)
	}
	if err == nil && cur.ID != t.cfg.ID {
		t.stale.Store(true)
		return fmt.Errorf("%w: %q (id %s)", errStaleTopic, t.cfg.Name, t.cfg.ID)
	}
	if err != nil {
		return fmt.Errorf("%w: read topic %q: %w", ErrUnavailable, t.cfg.Name, err)
	}
	return nil
}

// wait is l.Wait, cut short when t ends: it then returns what ended t
// (a delete: ErrTopicNotFound; Close: ErrClosed; an incarnation found
// stale: errStaleTopic), and nil otherwise.
func (t *topic) wait(ctx context.Context, l *partition.Log, offset int64, d time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(t.ending, cancel)
	defer stop()
	l.Wait(ctx, offset, d)
	return context.Cause(t.ending)
}

// close ends t with cause (its long-polls answer it at once), waits for
// the operations in flight and closes the partitions.
func (t *topic) close(ctx context.Context, cause error) error {
	t.end(cause)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for _, l := range t.parts {
		if l != nil {
			t.broker.writers.forget(l)
			errs = append(errs, l.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

func (b *Broker) appendTo(ctx context.Context, t *topic, p int, batch partition.Batch) (partition.Appended, error) {
	if b.cfg.ReadOnly {
		return partition.Appended{}, errReadOnly
	}
	l, err := t.part(ctx, p)
	if err != nil {
		return partition.Appended{}, err
	}
	if m := b.behind.Load(); m != nil && (*m)[meta.PartitionKey{Topic: t.cfg.Name, TopicID: t.cfg.ID, Partition: p}] {
		return partition.Appended{}, fmt.Errorf("%w: %s/%d", ErrMetadataBehind, t.cfg.Name, p)
	}
	app, err := l.AppendBatch(ctx, batch)
	b.keepWriter(ctx, l)
	return app, t.mapErr(ctx, err)
}

func checkBatch(recs []ProduceRecord) error {
	if len(recs) == 0 {
		return fmt.Errorf("%w: no records", ErrInvalid)
	}
	if len(recs) > MaxBatchRecords {
		return fmt.Errorf("%w: %d records, at most %d", ErrTooLarge, len(recs), MaxBatchRecords)
	}
	for i, r := range recs {
		if n := len(r.Key) + len(r.Value); n > MaxRecordBytes {
			return fmt.Errorf("%w: record %d has %d bytes of key and value, at most %d", ErrTooLarge, i, n, MaxRecordBytes)
		}
	}
	return nil
}

// mapErr turns partition errors into broker errors.
func mapErr(err error) error {
	var oor *partition.OutOfRangeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oor):
		return &OffsetOutOfRangeError{Offset: oor.Offset, LogStartOffset: oor.LogStartOffset, HighWatermark: oor.HighWatermark}
	case errors.As(err, new(*partition.MismatchError)):
		var m *partition.MismatchError
		errors.As(err, &m)
		return &OffsetMismatchError{Expected: m.Expected, HighWatermark: m.HighWatermark}
	case errors.Is(err, partition.ErrKeyReused):
		return fmt.Errorf("%w: %w", ErrIdempotencyKeyReused, err)
	case errors.Is(err, partition.ErrKeyInUse):
		return fmt.Errorf("%w: %w", ErrIdempotencyKeyInUse, err)
	case errors.Is(err, partition.ErrDeleted):
		return fmt.Errorf("%w: the topic is being deleted", ErrTopicNotFound)
	case errors.Is(err, partition.ErrUnavailable), errors.Is(err, partition.ErrClosed):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// mapErr is mapErr for an operation on t. A partition fenced for deletion
// means t is an incarnation to forget: if the topic is gone or was created
// again, the answer is the retryable errStaleTopic (the retry looks the name
// up afresh); if t is still the topic, its delete is in progress (or was
// interrupted), and the topic is as good as gone.
func (t *topic) mapErr(ctx context.Context, err error) error {
	if errors.Is(err, partition.ErrDeleted) {
		if verr := t.verify(ctx); verr != nil {
			return verr
		}
		t.stale.Store(true)
	}
	return mapErr(err)
}

// Fetch reads records of one partition from req.Offset on. With Wait, a
// fetch at the high watermark waits up to Wait for records.
func (b *Broker) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	return b.fetch(ctx, req, nil)
}

// fetch is Fetch; with lk, a look at the committed state that finds the
// answer kept (FetchAnswer) sets lk.hit and reads nothing, and hot records
// are read into lk.bufs.
func (b *Broker) fetch(ctx context.Context, req FetchRequest, lk *lookup) (FetchResult, error) {
	t, err := b.acquire(ctx, req.Topic)
	if err != nil {
		return FetchResult{}, err
	}
	defer t.release()
	l, err := t.part(ctx, req.Partition)
	if err != nil {
		return FetchResult{}, err
	}
	maxRecords := req.MaxRecords
	if maxRecords <= 0 {
		maxRecords = DefaultMaxFetch
	}
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultFetchSize
	}
	maxRecords, maxBytes = min(maxRecords, MaxFetchRecords), min(maxBytes, MaxFetchBytes)
	var (
		have func(partition.Bounds) bool
		sc   *segment.Scratch
	)
	if lk != nil {
		sc = lk.bufs.scratch()
		if b.answers != nil {
			lk.key = answerKey(t, req, maxRecords, maxBytes, lk.format)
			have = b.answers.have(lk)
		}
	}
	recs, bounds, had, err := l.ReadUnless(ctx, req.Offset, maxRecords, maxBytes, have, sc)
	if err == nil && !had && len(recs) == 0 && req.Wait > 0 && req.Offset == bounds.HighWatermark {
		// Nothing to return yet: wait for the next commit, then read again.
		if err := t.wait(ctx, l, req.Offset, min(req.Wait, MaxWait)); err != nil {
			return FetchResult{}, err
		}
		recs, bounds, had, err = l.ReadUnless(ctx, req.Offset, maxRecords, maxBytes, have, sc)
	}
	if had {
		return FetchResult{}, nil
	}
	if errors.Is(err, partition.ErrNotHot) {
		recs, bounds, err = b.fetchCold(ctx, t, l, req.Partition, req.Offset, maxRecords, maxBytes, bounds, sc)
	}
	if err != nil {
		return FetchResult{}, t.mapErr(ctx, err)
	}
	next := req.Offset
	if len(recs) > 0 {
		next = recs[len(recs)-1].Offset + 1
	}
	return FetchResult{Records: recs, NextOffset: next, HighWatermark: bounds.HighWatermark, LogStartOffset: bounds.LogStartOffset}, nil
}

// raceRetries bounds how often a read that raced the compactor (tiering or
// retention moved a boundary between two metadata reads) looks again.
const raceRetries = 3

// fetchCold reads offset, below the hot start, from the cold tier. A cold
// read can race the compactor: retention may delete the artifact and its
// catalog entry after the bounds were read. On any failure the bounds are
// read again, and the answer follows them: below the new log start is out
// of range (416, never 500); at or past the hot start reads the hot tier.
// bounds are those of the hot read that sent the fetch here: a cold read
// that succeeds answers with them, costing no metadata read of its own.
// Records are read into memory from sc, as hot reads are (nil: make).
func (b *Broker) fetchCold(ctx context.Context, t *topic, l *partition.Log, p int, offset int64, maxRecords, maxBytes int, bounds partition.Bounds, sc *segment.Scratch) ([]Record, partition.Bounds, error) {
	for attempt := 1; ; attempt++ {
		recs, err := b.readCold(ctx, t, p, offset, maxRecords, maxBytes, sc)
		if err == nil {
			return recs, bounds, nil
		}
		nb, berr := l.FreshBounds(ctx)
		if berr != nil {
			return nil, bounds, berr
		}
		bounds = nb
		switch {
		case offset < nb.LogStartOffset || offset > nb.HighWatermark:
			return nil, nb, &partition.OutOfRangeError{Offset: offset, LogStartOffset: nb.LogStartOffset, HighWatermark: nb.HighWatermark}
		case offset >= nb.HotStart:
			recs, nb, err = l.Read(ctx, offset, maxRecords, maxBytes)
			if !errors.Is(err, partition.ErrNotHot) {
				return recs, nb, err
			}
		case errors.As(err, new(*tier.DamageError)) || attempt >= raceRetries:
			var gone *missingArtifactError
			if errors.As(err, &gone) {
				// Still named by the catalog above the log start, yet not in
				// the object store: lost, as damage is.
				err = &tier.DamageError{Key: gone.key, First: offset, Next: gone.next, Err: err}
			}
			var de *tier.DamageError
			if errors.As(err, &de) {
				err = b.coldDamaged(t, p, de)
			}
			return nil, nb, err
		}
	}
}

// missingArtifactError is a catalog entry whose object is not in the store.
type missingArtifactError struct {
	key  string
	next int64 // the entry's end
	err  error
}

func (e *missingArtifactError) Error() string { return e.err.Error() }
func (e *missingArtifactError) Unwrap() error { return e.err }

// coldDamaged reports damaged cold-tier records as the hot tier does: a
// *partition.DamagedError (corrupt_record with where reading resumes),
// logged and counted.
func (b *Broker) coldDamaged(t *topic, p int, de *tier.DamageError) error {
	b.cfg.Logger.Error("damaged records", "topic", t.cfg.Name, "partition", p, "tier", "cold",
		"first", de.First, "next", de.Next, "err", de)
	b.cfg.Metrics.Damaged()
	return &partition.DamagedError{Topic: t.cfg.Name, Partition: p, First: de.First, Next: de.Next, Err: de}
}

// readCold reads offset from the cold tier through the catalog.
func (b *Broker) readCold(ctx context.Context, t *topic, p int, offset int64, maxRecords, maxBytes int, sc *segment.Scratch) ([]Record, error) {
	if b.cold == nil {
		return nil, fmt.Errorf("broker: offset %d of %s/%d is tiered but no cold tier is configured", offset, t.cfg.Name, p)
	}
	k := meta.PartitionKey{Topic: t.cfg.Name, TopicID: t.cfg.ID, Partition: p}
	n := 1
	if t.cfg.CacheEnabled {
		n += t.cfg.ReadAheadSegments
	}
	entries, err := b.cfg.Meta.Segments(ctx, k, offset, n)
	if err != nil {
		return nil, fmt.Errorf("%w: read catalog: %w", ErrUnavailable, err)
	}
	if len(entries) == 0 || entries[0].Base > offset {
		return nil, fmt.Errorf("broker: offset %d of %s/%d is in no catalog entry", offset, t.cfg.Name, p)
	}
	recs, err := b.cold.ReadWith(ctx, entries[0], offset, maxRecords, maxBytes,
		tier.Options{CacheEnabled: t.cfg.CacheEnabled, ReadAhead: entries[1:]}, sc)
	if errors.Is(err, objstore.ErrNotFound) {
		err = &missingArtifactError{key: entries[0].Key, next: entries[0].NextOffset, err: err}
	}
	return recs, coldErr(err)
}

// coldErr classifies a cold-tier read error: an object that is not there
// (retention raced the read) stays objstore.ErrNotFound for the caller to
// re-check the bounds, a damaged artifact stays what it is, and anything
// else is the object store failing: retryable.
func coldErr(err error) error {
	if err == nil || errors.Is(err, objstore.ErrNotFound) || errors.Is(err, tier.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: cold tier: %w", ErrUnavailable, err)
}

// Offsets returns a partition's log start offset and high watermark.
func (b *Broker) Offsets(ctx context.Context, topicName string, p int) (Offsets, error) {
	_, o, err := b.topicOffsets(ctx, topicName, p)
	return o, err
}

// topicOffsets is Offsets, with the topic incarnation they are of.
func (b *Broker) topicOffsets(ctx context.Context, topicName string, p int) (Topic, Offsets, error) {
	t, err := b.acquire(ctx, topicName)
	if err != nil {
		return Topic{}, Offsets{}, err
	}
	defer t.release()
	l, err := t.part(ctx, p)
	if err != nil {
		return Topic{}, Offsets{}, err
	}
	bounds, err := l.Bounds(ctx)
	if err != nil {
		return Topic{}, Offsets{}, t.mapErr(ctx, err)
	}
	return t.cfg, Offsets{LogStartOffset: bounds.LogStartOffset, HighWatermark: bounds.HighWatermark}, nil
}

// metaErr wraps a metadata store error of operation op: one whose outcome
// is unknown or that the store could not serve is ErrUnavailable (503).
func metaErr(op string, err error) error {
	if errors.Is(err, meta.ErrUnavailable) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("broker: %s: %w", op, err)
}

// OffsetForTime returns the earliest offset whose timestamp is >= ts. Both
// tiers are asked about one split: the cold tier below the hot start of one
// view, the hot tier from there on. If tiering moved the split in between,
// the hot tier says so (ErrNotHot) and the lookup starts again, so a
// segment tiered meanwhile is never skipped by both.
func (b *Broker) OffsetForTime(ctx context.Context, topicName string, p int, ts int64) (TimeOffset, error) {
	t, err := b.acquire(ctx, topicName)
	if err != nil {
		return TimeOffset{}, err
	}
	defer t.release()
	l, err := t.part(ctx, p)
	if err != nil {
		return TimeOffset{}, err
	}
	for attempt := 1; ; attempt++ {
		to, err := b.offsetForTime(ctx, t, l, p, ts)
		if (errors.Is(err, partition.ErrNotHot) || errors.Is(err, objstore.ErrNotFound)) && attempt < raceRetries {
			continue // raced tiering or retention: look again
		}
		if errors.Is(err, partition.ErrNotHot) {
			err = fmt.Errorf("%w: the cold tier boundary keeps moving", ErrUnavailable)
		}
		return to, t.mapErr(ctx, err)
	}
}

func (b *Broker) offsetForTime(ctx context.Context, t *topic, l *partition.Log, p int, ts int64) (TimeOffset, error) {
	var from int64
	if b.cold != nil {
		// The cold tier holds the oldest records: look there first.
		bounds, err := l.FreshBounds(ctx)
		if err != nil {
			return TimeOffset{}, err
		}
		from = bounds.HotStart
		k := meta.PartitionKey{Topic: t.cfg.Name, TopicID: t.cfg.ID, Partition: p}
		entries, err := b.cfg.Meta.Segments(ctx, k, bounds.LogStartOffset, 0)
		if err != nil {
			return TimeOffset{}, fmt.Errorf("%w: read catalog: %w", ErrUnavailable, err)
		}
		for _, e := range entries {
			if e.NextOffset > from {
				break
			}
			if e.LastTS < ts {
				continue
			}
			off, at, found, err := b.cold.OffsetForTime(ctx, e, ts, tier.Options{CacheEnabled: t.cfg.CacheEnabled})
			if err != nil {
				return TimeOffset{}, coldErr(err)
			}
			if found && off >= bounds.LogStartOffset {
				return TimeOffset{Offset: off, Timestamp: at, Found: true}, nil
			}
		}
	}
	off, at, found, err := l.OffsetForTime(ctx, ts, from)
	if err != nil {
		return TimeOffset{}, err
	}
	return TimeOffset{Offset: off, Timestamp: at, Found: found}, nil
}

// PartitionState is one open partition's bounds as last seen by this
// process (OpenPartitions).
type PartitionState struct {
	Topic          string
	Partition      int
	LogStartOffset int64
	HighWatermark  int64
}

// OpenPartitions returns, sorted by topic and partition, the partitions
// this process has open (they open on first use) with their last seen
// bounds. It does no I/O.
func (b *Broker) OpenPartitions() []PartitionState {
	b.mu.RLock()
	topics := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		topics = append(topics, t)
	}
	b.mu.RUnlock()
	sort.Slice(topics, func(i, j int) bool { return topics[i].cfg.Name < topics[j].cfg.Name })
	var out []PartitionState
	for _, t := range topics {
		t.pmu.Lock()
		for p, l := range t.parts {
			if l == nil {
				continue
			}
			bd := l.LastBounds()
			out = append(out, PartitionState{Topic: t.cfg.Name, Partition: p, LogStartOffset: bd.LogStartOffset, HighWatermark: bd.HighWatermark})
		}
		t.pmu.Unlock()
	}
	return out
}

// Close waits for in-flight operations, then closes every partition,
// releasing leases cleanly. The metadata store is the caller's to close.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	topics := b.topics
	b.topics = nil
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, t := range topics {
		errs = append(errs, t.close(ctx, ErrClosed))
	}
	return errors.Join(errs...)
}
