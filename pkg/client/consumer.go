package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tierlog/tierlog/internal/apilimit"
)

// ResetPolicy says where a consumer starts when it has no committed offset
// and where it goes when its offset is out of range (416).
type ResetPolicy int

// Reset policies, as Kafka's auto.offset.reset. The default is
// ResetEarliest (DefaultReset), as franz-go's kgo and the tierlog CLI
// start: a new group reads what the topic holds. (Kafka's Java consumer
// defaults to latest; WithReset(ResetLatest) is that.)
const (
	// ResetLatest starts at the high watermark: only new records.
	ResetLatest ResetPolicy = iota
	// ResetEarliest starts at the log start offset: everything kept.
	ResetEarliest
	// ResetNone fails instead: NewConsumer without a start, Poll on 416.
	ResetNone
)

func (r ResetPolicy) String() string {
	switch r {
	case ResetEarliest:
		return "earliest"
	case ResetNone:
		return "none"
	}
	return "latest"
}

// ErrNoGroup is returned by Commit on a consumer without a group.
var ErrNoGroup = errors.New("client: consumer has no group")

// DefaultReset is where a consumer starts without a committed offset or a
// start option, and where it goes on an offset out of range.
const DefaultReset = ResetEarliest

// DefaultWait is how long one fetch long-polls at the end of the log.
const DefaultWait = 5 * time.Second

// ConsumerOption configures NewConsumer.
type ConsumerOption func(*consumerConfig)

type consumerConfig struct {
	group          string
	partitions     []int
	startOffset    *int64
	startOffsets   map[int]int64
	startTimestamp *int64
	reset          ResetPolicy
	wait           time.Duration
	maxRecords     int
	maxBytes       int
	autoCommit     time.Duration
	metadata       string
	skipDamaged    bool
	noMembership   bool
	session        time.Duration
	onAssigned     PartitionsFunc
	onRevoked      PartitionsFunc
	onLost         PartitionsFunc
}

// PartitionsFunc is a rebalance callback: the topic and the partitions
// that moved. It runs on the goroutine that applies the group's answer
// (NewConsumer's, the heartbeat's, a Commit's or Refresh's) with no lock
// held, before that goroutine goes on: keep it short, and do not call
// Commit, Refresh or Close from it (they wait for the membership it is
// part of).
type PartitionsFunc func(ctx context.Context, topic string, partitions []int)

// WithOnAssigned calls fn with the partitions a group member gains, once
// their fetchers started at their positions (kgo's OnPartitionsAssigned):
// in NewConsumer with the first assignment, then after each rebalance
// that gives it partitions. Only for a member (WithGroup without
// WithPartitions or WithoutMembership).
func WithOnAssigned(fn PartitionsFunc) ConsumerOption {
	return func(c *consumerConfig) { c.onAssigned = fn }
}

// WithOnRevoked calls fn with the partitions a group member gives up in
// an orderly way: a rebalance moved them to another member while this
// one was in the group, or Close leaves the group (kgo's
// OnPartitionsRevoked). They have stopped: Poll returns none of their
// records after fn is called. Their positions were committed only as far
// as the last Commit (or auto-commit); the new owner starts there.
func WithOnRevoked(fn PartitionsFunc) ConsumerOption {
	return func(c *consumerConfig) { c.onRevoked = fn }
}

// WithOnLost calls fn with the partitions a group member lost without a
// rebalance it took part in: its session expired (no heartbeat within the
// session timeout), so the group gave them away and it joined again
// (kgo's OnPartitionsLost). Anything processed since the last commit of
// them may be processed again by their new owner.
func WithOnLost(fn PartitionsFunc) ConsumerOption {
	return func(c *consumerConfig) { c.onLost = fn }
}

// WithGroup makes the consumer resume from the group's committed offsets
// and commit to them. Without WithPartitions it is also a member of the
// group (see Consumer): the group's members split the topic's partitions.
func WithGroup(group string) ConsumerOption { return func(c *consumerConfig) { c.group = group } }

// WithoutMembership makes a WithGroup consumer read every partition (or
// WithPartitions) and commit without joining the group: the offsets-only
// behaviour, refused by the server while the group has members.
func WithoutMembership() ConsumerOption { return func(c *consumerConfig) { c.noMembership = true } }

// WithSessionTimeout sets a member's session timeout (default
// DefaultSessionTimeout, 1 s to 300 s): a member that stops heartbeating
// (it heartbeats every third of it) loses its partitions to the others
// within it.
func WithSessionTimeout(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.session = d }
}

// WithPartitions limits the consumer to these partitions (default all).
func WithPartitions(ps ...int) ConsumerOption {
	return func(c *consumerConfig) { c.partitions = slices.Clone(ps) }
}

// WithStartOffset starts every partition at offset, whatever the group
// committed. With ResetNone, NewConsumer refuses an offset out of a
// partition's bounds (an *Error with code offset_out_of_range).
func WithStartOffset(offset int64) ConsumerOption {
	return func(c *consumerConfig) { c.startOffset = &offset }
}

// WithStartOffsets starts each partition at its own offset, whatever the
// group committed; every partition consumed must have one. With
// ResetNone, NewConsumer refuses an offset out of a partition's bounds,
// as for WithStartOffset.
func WithStartOffsets(offsets map[int]int64) ConsumerOption {
	return func(c *consumerConfig) { c.startOffsets = maps.Clone(offsets) }
}

// WithStartTimestamp starts every partition at its first record with a
// timestamp at or after ts (ms), whatever the group committed.
func WithStartTimestamp(ts int64) ConsumerOption {
	return func(c *consumerConfig) { c.startTimestamp = &ts }
}

// WithReset sets the reset policy (default DefaultReset, ResetEarliest).
func WithReset(r ResetPolicy) ConsumerOption { return func(c *consumerConfig) { c.reset = r } }

// WithWait sets how long one fetch long-polls when there is nothing new
// (default 5 s, at most 20 s). Records are returned as soon as they are
// committed, whatever the wait.
func WithWait(d time.Duration) ConsumerOption { return func(c *consumerConfig) { c.wait = d } }

// WithFetchMax bounds one fetch (server defaults: 500 records, 1 MiB).
func WithFetchMax(records, bytes int) ConsumerOption {
	return func(c *consumerConfig) { c.maxRecords, c.maxBytes = records, bytes }
}

// WithAutoCommit commits the group's positions every interval, and once
// more on Close (default 0: only Commit commits).
func WithAutoCommit(interval time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.autoCommit = interval }
}

// WithSkipDamaged makes the consumer skip records the server reports
// damaged on disk (a *DamagedError from the fetch): the partition's
// position moves to the next readable offset, the records in between are
// lost to this consumer, and each skip is logged at error level. Without
// it (the default) nothing is skipped: Poll returns the *DamagedError and
// that partition stops, so the caller decides (for example a new Consumer
// WithStartOffset(err.Next)).
func WithSkipDamaged() ConsumerOption { return func(c *consumerConfig) { c.skipDamaged = true } }

// WithCommitMetadata sets the metadata string stored with commits.
func WithCommitMetadata(md string) ConsumerOption { return func(c *consumerConfig) { c.metadata = md } }

// Consumer reads partitions of one topic. One goroutine per partition
// long-polls ahead (at most one fetched batch waiting per partition); Poll
// hands the records out and moves each partition's position past them.
// Positions are what Commit stores, so a restarted consumer of the group
// resumes after the last record Poll returned: at-least-once.
//
// With WithGroup (and no WithPartitions or WithoutMembership) the
// consumer is a member of the group: it joins, reads only the partitions
// the group assigns it, heartbeats every third of its session timeout,
// and follows rebalances: a partition it loses stops at once (records of
// it not yet returned by Poll are dropped) and one it gains starts at the
// group's committed offset. Its commits are fenced by the generation; a
// commit refused after a rebalance it had not seen yet refreshes the
// membership and commits the partitions it still holds. Close leaves the
// group. So a partition that moves is read again by its new owner from
// its last commit: only records returned after that commit are delivered
// twice, and none is skipped.
//
// Poll must not be called from two goroutines at once; Commit, Position,
// Positions and Close may be called from any goroutine.
type Consumer struct {
	c       *Client
	topic   string
	cfg     consumerConfig
	batches chan fetched
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	pending []Message // the rest of the last batch; Poll's goroutine only
	pendEp  uint64    // the fetcher epoch pending came from
	member  *member   // nil without membership

	mu struct {
		sync.Mutex
		parts     []int // read now, sorted
		fetchers  map[int]*fetcher
		epoch     uint64
		pos       map[int]int64
		committed map[int]int64
		closed    bool
	}
}

// fetcher is one partition's fetch loop, or the mark of a paused
// partition (no loop: done is closed).
type fetcher struct {
	epoch  uint64
	cancel context.CancelFunc
	done   chan struct{}
	paused bool
}

// fetched is what a partition's fetcher hands to Poll: records, a reset
// of its position, or the error that stopped it.
type fetched struct {
	partition int
	epoch     uint64
	msgs      []Message
	resetTo   int64 // >= 0: the position moved (416 handled)
	err       error
}

// NewConsumer starts a consumer of topic. Each partition starts at, in
// order of precedence: WithStartOffset, WithStartTimestamp, the group's
// committed offset, the reset policy.
func (c *Client) NewConsumer(ctx context.Context, topic string, opts ...ConsumerOption) (*Consumer, error) {
	cfg := consumerConfig{reset: DefaultReset, wait: DefaultWait}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.wait < 0 || cfg.wait > apilimit.MaxWait {
		return nil, fmt.Errorf("client: consumer wait %v: want 0 to %v", cfg.wait, apilimit.MaxWait)
	}
	if cfg.reset < ResetLatest || cfg.reset > ResetNone {
		return nil, fmt.Errorf("client: unknown reset policy %d", cfg.reset)
	}
	if cfg.session != 0 && (cfg.session < apilimit.MinSessionTimeout || cfg.session > apilimit.MaxSessionTimeout) {
		return nil, fmt.Errorf("client: session timeout %v: want %v to %v", cfg.session, apilimit.MinSessionTimeout, apilimit.MaxSessionTimeout)
	}
	t, err := c.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if cfg.group != "" && len(cfg.partitions) == 0 && !cfg.noMembership {
		return c.newMemberConsumer(ctx, topic, cfg)
	}
	parts := cfg.partitions
	if len(parts) == 0 {
		for p := range t.Partitions {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	for _, p := range parts {
		if p < 0 || p >= t.Partitions {
			return nil, &Error{Status: 404, Code: CodePartitionNotFound,
				Message: fmt.Sprintf("topic %q has no partition %d (it has %d: 0 to %d)", topic, p, t.Partitions, t.Partitions-1)}
		}
	}
	start, err := c.startPositions(ctx, topic, parts, &cfg)
	if err != nil {
		return nil, err
	}
	k := newConsumer(c, topic, cfg)
	k.mu.Lock()
	k.startLocked(parts, start)
	k.mu.Unlock()
	k.startAutoCommit()
	return k, nil
}

func newConsumer(c *Client, topic string, cfg consumerConfig) *Consumer {
	kctx, stop := context.WithCancel(context.Background())
	k := &Consumer{c: c, topic: topic, cfg: cfg, batches: make(chan fetched), ctx: kctx, stop: stop}
	k.mu.pos = map[int]int64{}
	k.mu.committed = map[int]int64{}
	k.mu.fetchers = map[int]*fetcher{}
	return k
}

func (k *Consumer) startAutoCommit() {
	if k.cfg.autoCommit > 0 && k.cfg.group != "" {
		k.wg.Add(1)
		go k.autoCommitLoop()
	}
}

// startLocked starts fetchers for parts at start. Called with mu held.
func (k *Consumer) startLocked(parts []int, start map[int]int64) {
	for _, p := range parts {
		k.runLocked(p, start[p])
		delete(k.mu.committed, p)
		k.mu.parts = append(k.mu.parts, p)
	}
	slices.Sort(k.mu.parts)
}

// runLocked starts partition p's fetcher at pos, under a new epoch: what
// an earlier fetcher of p fetched is dropped by Poll. Called with mu held.
func (k *Consumer) runLocked(p int, pos int64) {
	k.mu.epoch++
	ctx, cancel := context.WithCancel(k.ctx)
	f := &fetcher{epoch: k.mu.epoch, cancel: cancel, done: make(chan struct{})}
	k.mu.fetchers[p] = f
	k.mu.pos[p] = pos
	k.wg.Add(1)
	go func() {
		defer close(f.done)
		k.fetchLoop(ctx, p, pos, f.epoch)
	}()
}

// ErrNotConsumed is returned by Seek, Pause and Resume for a partition
// the consumer does not read (not its assignment, or not in
// WithPartitions).
var ErrNotConsumed = errors.New("client: partition not consumed by this consumer")

// Seek moves partition p's position to offset: the next Poll returns p's
// records from there (records of p fetched before are dropped), and the
// next Commit stores it. An offset out of the partition's range is
// handled at the first fetch by the reset policy, as a committed one is.
// A paused partition stays paused, at offset. Safe from any goroutine
// (kgo's SetOffsets).
func (k *Consumer) Seek(p int, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("client: seek to negative offset %d", offset)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mu.closed {
		return ErrClosed
	}
	f := k.mu.fetchers[p]
	if f == nil {
		return fmt.Errorf("%w: topic %q partition %d", ErrNotConsumed, k.topic, p)
	}
	f.cancel()
	if f.paused {
		k.pauseLocked(p)
		k.mu.pos[p] = offset
	} else {
		k.runLocked(p, offset)
	}
	delete(k.mu.committed, p)
	return nil
}

// Pause stops fetching partitions ps: Poll returns none of their records
// (those fetched already are dropped) until Resume. Their positions stay,
// and Commit still stores them. Pausing a paused partition does nothing.
// With membership, a paused partition the group moves elsewhere is gone,
// and one it assigns again starts unpaused (kgo's PauseFetchPartitions).
func (k *Consumer) Pause(ps ...int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mu.closed {
		return ErrClosed
	}
	for _, p := range ps {
		if k.mu.fetchers[p] == nil {
			return fmt.Errorf("%w: topic %q partition %d", ErrNotConsumed, k.topic, p)
		}
	}
	for _, p := range ps {
		if f := k.mu.fetchers[p]; !f.paused {
			f.cancel()
			k.pauseLocked(p)
		}
	}
	return nil
}

// pauseLocked marks p paused under a new epoch. Called with mu held.
func (k *Consumer) pauseLocked(p int) {
	k.mu.epoch++
	done := make(chan struct{})
	close(done)
	k.mu.fetchers[p] = &fetcher{epoch: k.mu.epoch, cancel: func() {}, done: done, paused: true}
}

// Resume fetches paused partitions ps again, from their positions.
// Resuming a partition that is not paused does nothing.
func (k *Consumer) Resume(ps ...int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mu.closed {
		return ErrClosed
	}
	for _, p := range ps {
		if k.mu.fetchers[p] == nil {
			return fmt.Errorf("%w: topic %q partition %d", ErrNotConsumed, k.topic, p)
		}
	}
	for _, p := range ps {
		if f := k.mu.fetchers[p]; f.paused {
			k.runLocked(p, k.mu.pos[p])
		}
	}
	return nil
}

// Paused returns the paused partitions, sorted.
func (k *Consumer) Paused() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []int
	for _, p := range k.mu.parts {
		if f := k.mu.fetchers[p]; f != nil && f.paused {
			out = append(out, p)
		}
	}
	return out
}

// stopLocked stops the fetchers of parts and forgets their positions; it
// returns what to wait for (outside mu).
func (k *Consumer) stopLocked(parts []int) []chan struct{} {
	var done []chan struct{}
	for _, p := range parts {
		if f := k.mu.fetchers[p]; f != nil {
			f.cancel()
			done = append(done, f.done)
		}
		delete(k.mu.fetchers, p)
		delete(k.mu.pos, p)
		delete(k.mu.committed, p)
		k.mu.parts = slices.DeleteFunc(k.mu.parts, func(q int) bool { return q == p })
	}
	return done
}

// owns reports whether partition p is read by the fetcher of epoch.
func (k *Consumer) owns(p int, epoch uint64) bool {
	f := k.mu.fetchers[p]
	return f != nil && f.epoch == epoch
}

// startPositions resolves each partition's first offset.
func (c *Client) startPositions(ctx context.Context, topic string, parts []int, cfg *consumerConfig) (map[int]int64, error) {
	start := map[int]int64{}
	if cfg.startOffsets != nil {
		for _, p := range parts {
			off, ok := cfg.startOffsets[p]
			if !ok {
				return nil, fmt.Errorf("client: topic %q partition %d: no start offset given", topic, p)
			}
			if err := c.checkStart(ctx, topic, p, off, cfg); err != nil {
				return nil, err
			}
			start[p] = off
		}
		return start, nil
	}
	if cfg.startOffset != nil {
		if *cfg.startOffset < 0 {
			return nil, fmt.Errorf("client: negative start offset %d", *cfg.startOffset)
		}
		for _, p := range parts {
			if err := c.checkStart(ctx, topic, p, *cfg.startOffset, cfg); err != nil {
				return nil, err
			}
			start[p] = *cfg.startOffset
		}
		return start, nil
	}
	if cfg.startTimestamp != nil {
		for _, p := range parts {
			to, err := c.OffsetForTimestamp(ctx, topic, p, *cfg.startTimestamp)
			if err != nil {
				return nil, err
			}
			start[p] = to.Offset
		}
		return start, nil
	}
	if cfg.group != "" {
		gos, err := c.GroupOffsets(ctx, cfg.group, topic)
		if err != nil {
			return nil, err
		}
		for _, g := range gos {
			if slices.Contains(parts, g.Partition) {
				start[g.Partition] = g.Offset
			}
		}
	}
	for _, p := range parts {
		if _, ok := start[p]; ok {
			continue
		}
		if cfg.reset == ResetNone {
			return nil, fmt.Errorf("client: topic %q partition %d: no committed offset for group %q and reset policy none", topic, p, cfg.group)
		}
		o, err := c.Offsets(ctx, topic, p)
		if err != nil {
			return nil, err
		}
		start[p] = o.HighWatermark
		if cfg.reset == ResetEarliest {
			start[p] = o.LogStartOffset
		}
	}
	return start, nil
}

// checkStart refuses a start offset that is negative or, with ResetNone
// (nothing to reset to), out of the partition's range: now, not at the
// first fetch.
func (c *Client) checkStart(ctx context.Context, topic string, p int, off int64, cfg *consumerConfig) error {
	if off < 0 {
		return fmt.Errorf("client: negative start offset %d", off)
	}
	if cfg.reset != ResetNone {
		return nil
	}
	o, err := c.Offsets(ctx, topic, p)
	if err != nil {
		return err
	}
	if off < o.LogStartOffset || off > o.HighWatermark {
		return &Error{Status: 416, Code: CodeOffsetOutOfRange, LogStartOffset: o.LogStartOffset, HighWatermark: o.HighWatermark,
			Message: fmt.Sprintf("start offset %d of topic %q partition %d is out of range [%d, %d]", off, topic, p, o.LogStartOffset, o.HighWatermark)}
	}
	return nil
}

// fetchLoop long-polls one partition from pos on and hands batches to
// Poll. Retriable errors are retried with backoff; 416 resets per policy;
// any other error is handed to Poll and stops the partition.
func (k *Consumer) fetchLoop(ctx context.Context, part int, pos int64, epoch uint64) {
	defer k.wg.Done()
	bo := newBackOff(k.c.cfg.backoff)
	log := k.c.cfg.log.With(slog.String("topic", k.topic), slog.Int("partition", part))
	opt := FetchOptions{MaxRecords: k.cfg.maxRecords, MaxBytes: k.cfg.maxBytes, Wait: k.cfg.wait}
	for ctx.Err() == nil {
		res, err := k.c.fetchOnce(ctx, k.topic, part, pos, opt)
		if err != nil {
			var (
				e   *Error
				dmg *DamagedError
			)
			switch {
			case ctx.Err() != nil:
				return
			case errors.As(err, &dmg) && k.cfg.skipDamaged:
				log.LogAttrs(ctx, slog.LevelError, "records damaged on the server; skipping them",
					slog.Int64("offset", pos), slog.Int64("next", dmg.Next), slog.String("err", dmg.Err.Error()))
				pos = dmg.Next
				if !k.hand(ctx, fetched{epoch: epoch, partition: part, resetTo: pos}) {
					return
				}
			case errors.As(err, &e) && e.Code == CodeOffsetOutOfRange && k.cfg.reset != ResetNone:
				to := e.HighWatermark
				if k.cfg.reset == ResetEarliest {
					to = e.LogStartOffset
				}
				log.LogAttrs(ctx, slog.LevelWarn, "offset out of range; resetting",
					slog.Int64("offset", pos), slog.Int64("reset_to", to), slog.String("policy", k.cfg.reset.String()))
				pos = to
				if !k.hand(ctx, fetched{epoch: epoch, partition: part, resetTo: to}) {
					return
				}
			case IsRetriable(err):
				if e != nil {
					bo.hint = e.RetryAfter
				}
				wait := bo.NextBackOff()
				log.LogAttrs(ctx, slog.LevelWarn, "fetch failed; retrying", slog.Duration("wait", wait), slog.String("err", err.Error()))
				if !sleep(ctx, wait) {
					return
				}
			default:
				k.hand(ctx, fetched{epoch: epoch, partition: part, resetTo: -1, err: err})
				return
			}
			continue
		}
		bo.Reset()
		if len(res.Messages) == 0 {
			if res.NextOffset > pos {
				pos = res.NextOffset
			}
			if opt.Wait == 0 && !sleep(ctx, k.c.cfg.backoff.Initial) {
				return
			}
			continue
		}
		for i := range res.Messages {
			res.Messages[i].Topic = k.topic
		}
		if !k.hand(ctx, fetched{epoch: epoch, partition: part, msgs: res.Messages, resetTo: -1}) {
			return
		}
		pos = res.NextOffset
	}
}

// hand gives f to Poll; false if the consumer is closing.
func (k *Consumer) hand(ctx context.Context, f fetched) bool {
	select {
	case k.batches <- f:
		return true
	case <-ctx.Done():
		return false
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetchOnce is one fetch attempt, without Fetch's retries: the consumer
// retries itself, forever.
func (c *Client) fetchOnce(ctx context.Context, topic string, partition int, offset int64, opt FetchOptions) (*FetchResult, error) {
	rq := c.fetchRequest(topic, partition, offset, opt)
	res, err := c.send(ctx, rq)
	if err != nil {
		return nil, asDamaged(err, topic, partition, offset)
	}
	return decodeFetch(res, partition, rq.method+" "+rq.path)
}

// Poll waits for records and returns them, at most one fetched batch of
// one partition per call. It returns ctx's error if ctx ends first, the
// error that stopped a partition (an unknown topic, a 416 with ResetNone,
// or a *DamagedError without WithSkipDamaged), or ErrClosed after Close.
func (k *Consumer) Poll(ctx context.Context) ([]Message, error) { return k.PollN(ctx, 0) }

// PollN is Poll returning at most max records (max <= 0: no limit); the
// rest wait for the next call, and positions move only past what was
// returned.
func (k *Consumer) PollN(ctx context.Context, max int) ([]Message, error) {
	if k.ctx.Err() != nil {
		return nil, ErrClosed
	}
	k.dropStale()
	for len(k.pending) == 0 {
		select {
		case f := <-k.batches:
			if err := k.take(f); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-k.ctx.Done():
			return nil, ErrClosed
		}
	}
	return k.handOut(max), nil
}

// dropStale forgets the pending records if their partition's fetcher
// was stopped since (the partition went to another member, a Seek, a
// Pause). Poll's goroutine only.
func (k *Consumer) dropStale() {
	if len(k.pending) == 0 {
		return
	}
	k.mu.Lock()
	if !k.owns(k.pending[0].Partition, k.pendEp) {
		k.pending = nil
	}
	k.mu.Unlock()
}

// take makes f, a fetcher's hand-off, Poll's: records become pending, a
// reset moves the position, an error is returned. What a stopped fetcher
// handed (a rebalance, a Seek, a Pause) is dropped. Poll's goroutine only.
func (k *Consumer) take(f fetched) error {
	k.mu.Lock()
	owned := k.owns(f.partition, f.epoch)
	if owned && f.resetTo >= 0 {
		k.mu.pos[f.partition] = f.resetTo
	}
	k.mu.Unlock()
	if !owned {
		return nil
	}
	if f.err != nil {
		return f.err
	}
	k.pending, k.pendEp = f.msgs, f.epoch
	return nil
}

// handOut returns up to max (<= 0: all) pending records and moves the
// position past them. Poll's goroutine only, with records pending.
func (k *Consumer) handOut(max int) []Message {
	n := len(k.pending)
	if max > 0 && max < n {
		n = max
	}
	out := k.pending[:n:n]
	k.pending = k.pending[n:]
	last := out[n-1]
	k.mu.Lock()
	if k.owns(last.Partition, k.pendEp) {
		k.mu.pos[last.Partition] = last.Offset + 1
	}
	k.mu.Unlock()
	return out
}

// Partitions are the partitions the consumer reads now, sorted (with
// membership: its current assignment).
func (k *Consumer) Partitions() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.mu.parts)
}

// Position is the next offset Poll will return for partition p: the
// offset after the last record returned (or the start).
func (k *Consumer) Position(p int) (int64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	off, ok := k.mu.pos[p]
	return off, ok
}

// Positions returns every partition's position.
func (k *Consumer) Positions() map[int]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[int]int64, len(k.mu.pos))
	for p, o := range k.mu.pos {
		out[p] = o
	}
	return out
}

// Commit stores the positions that changed since the last commit as the
// group's offsets.
func (k *Consumer) Commit(ctx context.Context) error {
	if k.cfg.group == "" {
		return ErrNoGroup
	}
	if k.member != nil {
		return k.commitAsMember(ctx)
	}
	offs := k.changedOffsets()
	if len(offs) == 0 {
		return nil
	}
	if err := k.c.CommitGroupOffsets(ctx, k.cfg.group, offs); err != nil {
		return err
	}
	k.markCommitted(offs)
	return nil
}

// changedOffsets are the positions that moved since their last commit.
func (k *Consumer) changedOffsets() []GroupOffset {
	k.mu.Lock()
	defer k.mu.Unlock()
	var offs []GroupOffset
	for _, p := range k.mu.parts {
		pos := k.mu.pos[p]
		if c, ok := k.mu.committed[p]; ok && c == pos {
			continue
		}
		offs = append(offs, GroupOffset{Topic: k.topic, Partition: p, Offset: pos, Metadata: k.cfg.metadata})
	}
	return offs
}

func (k *Consumer) markCommitted(offs []GroupOffset) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, o := range offs {
		if _, ok := k.mu.fetchers[o.Partition]; ok {
			k.mu.committed[o.Partition] = o.Offset
		}
	}
}

func (k *Consumer) autoCommitLoop() {
	defer k.wg.Done()
	t := time.NewTicker(k.cfg.autoCommit)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := k.Commit(k.ctx); err != nil && k.ctx.Err() == nil {
				k.c.cfg.log.LogAttrs(k.ctx, slog.LevelWarn, "auto-commit failed", slog.String("group", k.cfg.group), slog.String("err", err.Error()))
			}
		case <-k.ctx.Done():
			return
		}
	}
}

// Close stops the fetchers and, with auto-commit on, commits the
// positions one last time (bounded by ctx).
func (k *Consumer) Close(ctx context.Context) error {
	k.mu.Lock()
	if k.mu.closed {
		k.mu.Unlock()
		return nil
	}
	k.mu.closed = true
	k.mu.Unlock()
	k.stop()
	k.wg.Wait()
	var err error
	if k.cfg.autoCommit > 0 && k.cfg.group != "" {
		err = k.Commit(ctx)
	}
	if k.member != nil {
		err = errors.Join(err, k.leave(ctx))
		if parts := k.Partitions(); len(parts) > 0 && k.cfg.onRevoked != nil {
			k.cfg.onRevoked(ctx, k.topic, parts)
		}
	}
	return err
}
