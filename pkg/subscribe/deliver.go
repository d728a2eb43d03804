package subscribe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partitioner"
)

// Headers of a record given up to on_failure, besides the record's own.
// Never change them: consumers of on_failure topics read them.
const (
	HeaderSubscription    = "tierlog-subscription"
	HeaderSourceTopic     = "tierlog-source-topic"
	HeaderSourcePartition = "tierlog-source-partition"
	HeaderSourceOffset    = "tierlog-source-offset"
	HeaderError           = "tierlog-error"
	HeaderAttempts        = "tierlog-attempts"
)

// maxErrorText bounds the error text kept in status and headers.
const maxErrorText = 500

var (
	// errStopped ends a deliverer: its subscription was deleted, replaced
	// or paused, or its topic is gone.
	errStopped = errors.New("subscribe: deliverer stopped")
	// errLost means another deliverer took the partition over.
	errLost = errors.New("subscribe: lease lost")
)

// deliveryState is a delivery item's JSON: the lease and the counters of
// one partition of one subscription, written by its deliverer only.
type deliveryState struct {
	ID              string  `json:"id"` // the subscription incarnation
	Owner           string  `json:"owner,omitempty"`
	UntilMs         int64   `json:"until_ms"`
	Delivered       int64   `json:"delivered"`
	FailedAttempts  int64   `json:"failed_attempts"`
	SentToOnFailure int64   `json:"sent_to_on_failure"`
	Dropped         int64   `json:"dropped"`
	LastError       *string `json:"last_error"`
	Failing         bool    `json:"failing"`
}

// pending is one record of the batch in flight.
type pending struct {
	rec   broker.Record
	json  []byte
	shard int
	done  bool
	tries int // attempts that carried it
}

// batch is the records fetched and not yet committed, in offset order.
// Records before the first not-done one are committed; done records
// after a not-done one (other shards) wait for it.
type batch struct {
	recs     []*pending
	attempts int // failed attempts since the last progress
	limit    int // bisect: records per shard per attempt (0: all)
	next     time.Time
}

func (b *batch) end() int64 { return b.recs[len(b.recs)-1].rec.Offset + 1 }

// commitPoint is the offset every record below which is done.
func (b *batch) commitPoint() int64 {
	for _, p := range b.recs {
		if !p.done {
			return p.rec.Offset
		}
	}
	return b.end()
}

// deliverer delivers one partition of one subscription. It is driven by
// one goroutine (step is not safe for concurrent use).
type deliverer struct {
	c         *Config
	name      string
	id        string
	partition int
	stats     *PartitionStats
	log       *slog.Logger

	sub   Subscription
	item  meta.DeliveryItem // as last written or read; Version is the stored one
	st    deliveryState
	held  bool
	pos   int64 // next offset to deliver; -1: read the group's
	batch *batch
	// windowFrom is when a batch_window started waiting for a fuller
	// batch (zero: not waiting).
	windowFrom time.Time
	enc        encoder
	tsType     string
	// idle is set by a fetch that found no record (Drain's end).
	idle bool
}

func newDeliverer(c *Config, sub Subscription, partition int) *deliverer {
	return &deliverer{
		c: c, name: sub.Name, id: sub.ID, partition: partition, sub: sub, pos: -1,
		stats: c.Stats.of(StatKey{sub.Name, partition}),
		log:   c.Logger.With("subscription", sub.Name, "partition", partition),
	}
}

// step does one thing: take or renew the lease, find the position, fetch
// a batch, or make one attempt at the batch in flight. It returns how long
// to wait before the next step (0: step again now). wait is how long a
// fetch may long-poll for records when there are none.
func (d *deliverer) step(ctx context.Context, wait time.Duration) (time.Duration, error) {
	if err := d.refresh(ctx); err != nil {
		return 0, err
	}
	now := d.c.Clock.Now()
	if !d.held {
		return d.acquire(ctx, now)
	}
	if time.UnixMilli(d.st.UntilMs).Sub(now) < d.c.LeaseTTL/2 {
		if err := d.write(ctx, now); err != nil {
			return 0, err
		}
	}
	if d.pos < 0 {
		return 0, d.position(ctx)
	}
	if d.batch == nil {
		return d.fill(ctx, now, wait)
	}
	if w := d.batch.next.Sub(now); w > 0 {
		return w, nil
	}
	return d.attempt(ctx, now)
}

// refresh rereads the subscription: a PATCH applies from the next step;
// a delete, a new incarnation or a pause stops the deliverer.
func (d *deliverer) refresh(ctx context.Context) error {
	it, err := d.c.Store.Subscription(ctx, d.name)
	if err != nil {
		return fmt.Errorf("read subscription: %w", err)
	}
	if it.Version == 0 {
		return errStopped
	}
	var s Subscription
	if err := json.Unmarshal(it.Spec, &s); err != nil {
		return fmt.Errorf("decode subscription %q: %w", d.name, err)
	}
	if s.ID != d.id || !s.Enabled {
		return errStopped
	}
	d.sub = s
	return nil
}

// acquire takes the partition's delivery lease if it is free, expired or
// this owner's, with one conditional write; else it says how long the
// holder's lease has left.
func (d *deliverer) acquire(ctx context.Context, now time.Time) (time.Duration, error) {
	it, err := d.c.Store.Delivery(ctx, d.name, d.partition)
	if err != nil {
		return 0, fmt.Errorf("read delivery: %w", err)
	}
	var st deliveryState
	if it.Version != 0 {
		if err := json.Unmarshal(it.State, &st); err != nil {
			return 0, fmt.Errorf("decode delivery: %w", err)
		}
	}
	if st.ID != d.id {
		st = deliveryState{ID: d.id} // an earlier incarnation's item: start afresh
	}
	if st.Owner != "" && st.Owner != d.c.Owner && now.UnixMilli() < st.UntilMs {
		return time.UnixMilli(st.UntilMs).Sub(now), nil
	}
	d.item, d.st = it, st
	d.st.Owner = d.c.Owner
	if err := d.write(ctx, now); err != nil {
		if errors.Is(err, errLost) {
			return 0, nil // another deliverer won the race: look again
		}
		return 0, err
	}
	d.held, d.pos, d.batch = true, -1, nil
	d.log.Debug("delivery lease taken")
	return 0, nil
}

// write stores the delivery item (lease extended to now+LeaseTTL, the
// counters) on the version last seen: a different version means another
// deliverer took over, errLost, and this one drops what it holds.
func (d *deliverer) write(ctx context.Context, now time.Time) error {
	st := d.st
	st.UntilMs = now.Add(d.c.LeaseTTL).UnixMilli()
	body, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode delivery: %w", err)
	}
	it := meta.DeliveryItem{Subscription: d.name, Partition: d.partition, Version: d.item.Version, State: body}
	err = d.c.Store.PutDelivery(ctx, it)
	if errors.Is(err, meta.ErrConflict) {
		d.lose()
		return errLost
	}
	if err != nil {
		return fmt.Errorf("write delivery: %w", err)
	}
	it.Version++
	d.item, d.st = it, st
	return nil
}

// lose forgets the lease and everything in flight.
func (d *deliverer) lose() {
	if d.held {
		d.log.Warn("delivery lease lost to another deliverer; the batch in flight is left to it")
	}
	d.held, d.pos, d.batch = false, -1, nil
}

// release frees the lease (on a clean stop) so another deliverer need not
// wait for it to expire.
func (d *deliverer) release(ctx context.Context) {
	if !d.held {
		return
	}
	d.st.Owner = ""
	body, _ := json.Marshal(d.st)
	it := meta.DeliveryItem{Subscription: d.name, Partition: d.partition, Version: d.item.Version, State: body}
	if err := d.c.Store.PutDelivery(ctx, it); err != nil {
		d.log.Debug("release delivery lease", "err", err)
	}
	d.held = false
}

// position reads the group's committed offset. A partition without one
// (the topic grew after the subscription was made) starts at its log
// start, so no record of a new partition is missed.
func (d *deliverer) position(ctx context.Context) error {
	offs, err := d.c.Source.GroupOffsets(ctx, d.name, d.sub.Topic)
	if errors.Is(err, broker.ErrTopicNotFound) {
		return errStopped
	}
	if err != nil {
		return fmt.Errorf("read group offsets: %w", err)
	}
	for _, o := range offs {
		if o.Partition == d.partition {
			d.pos = o.Offset
			return nil
		}
	}
	b, err := d.c.Source.Offsets(ctx, d.sub.Topic, d.partition)
	if err != nil {
		return fmt.Errorf("read offsets: %w", err)
	}
	d.pos = b.LogStartOffset
	return d.commit(ctx, d.pos)
}

// fill fetches the next batch from pos, waiting up to wait for records.
func (d *deliverer) fill(ctx context.Context, now time.Time, wait time.Duration) (time.Duration, error) {
	t, err := d.c.Source.Topic(ctx, d.sub.Topic)
	if errors.Is(err, broker.ErrTopicNotFound) {
		return 0, errStopped
	}
	if err != nil {
		return 0, fmt.Errorf("read topic: %w", err)
	}
	if d.partition >= t.Partitions {
		return 0, errStopped
	}
	d.tsType = timestampLogAppend
	if t.TimestampType == broker.TimestampCreate {
		d.tsType = timestampCreate
	}
	d.enc = newEncoder(d.c.SourceARN(d.sub.Topic), d.sub.Topic, d.partition)
	res, err := d.c.Source.Fetch(ctx, broker.FetchRequest{
		Topic: d.sub.Topic, Partition: d.partition, Offset: d.pos,
		MaxRecords: d.sub.BatchSize, MaxBytes: min(d.sub.MaxBatchBytes, broker.MaxFetchBytes), Wait: wait,
	})
	var oor *broker.OffsetOutOfRangeError
	if errors.As(err, &oor) {
		return 0, d.outOfRange(ctx, oor)
	}
	if err != nil {
		return 0, fmt.Errorf("fetch: %w", err)
	}
	d.stats.LagRecords.Store(res.HighWatermark - d.pos)
	if len(res.Records) == 0 {
		d.stats.LagAgeMs.Store(0)
		d.idle = true
		return 0, nil
	}
	d.stats.LagAgeMs.Store(max(now.UnixMilli()-res.Records[0].Timestamp, 0))
	if d.sub.BatchWindowMs > 0 && len(res.Records) < d.sub.BatchSize && res.HighWatermark-d.pos < int64(d.sub.BatchSize) {
		// Wait for a fuller batch, up to the window from the first look.
		if d.windowFrom.IsZero() {
			d.windowFrom = now
		}
		if w := d.windowFrom.Add(time.Duration(d.sub.BatchWindowMs) * time.Millisecond).Sub(now); w > 0 {
			return w, nil
		}
	}
	d.windowFrom = time.Time{}
	d.batch = d.makeBatch(res.Records)
	return 0, nil
}

// outOfRange moves a position that retention passed (those records are
// gone: nothing can deliver them) or that is beyond the log (a position
// set for an earlier state of the log) into the log, and commits it.
func (d *deliverer) outOfRange(ctx context.Context, oor *broker.OffsetOutOfRangeError) error {
	to := oor.LogStartOffset
	if d.pos > oor.HighWatermark {
		to = oor.HighWatermark
	}
	d.log.Warn("subscription position out of the log: moved", "from", d.pos, "to", to,
		"log_start_offset", oor.LogStartOffset, "high_watermark", oor.HighWatermark)
	d.st.LastError = ptr(fmt.Sprintf("position %d was out of the log [%d, %d]: moved to %d", d.pos, oor.LogStartOffset, oor.HighWatermark, to))
	d.pos = to
	return d.commit(ctx, to)
}

// makeBatch encodes recs and keeps the longest prefix whose event fits
// max_batch_bytes (always at least one record).
func (d *deliverer) makeBatch(recs []broker.Record) *batch {
	b := &batch{}
	size := d.enc.overhead()
	factor := d.sub.ParallelizationFactor
	for i := range recs {
		r := recs[i]
		p := &pending{rec: r, json: recordJSON(nil, d.sub.Topic, d.partition, d.tsType, &r)}
		if len(b.recs) > 0 && size+len(p.json)+1 > d.sub.MaxBatchBytes {
			break
		}
		if factor > 1 {
			p.shard = partitioner.ForKey(r.Key, factor)
			if r.Key == nil {
				p.shard = int(r.Offset % int64(factor))
			}
		}
		size += len(p.json) + 1
		b.recs = append(b.recs, p)
	}
	return b
}

// attempt sends the batch's not-done records (one event per shard, the
// shards at once), applies the answers, gives up what is exhausted, and
// commits what is done.
func (d *deliverer) attempt(ctx context.Context, now time.Time) (time.Duration, error) {
	b := d.batch
	shards := map[int][]*pending{}
	var order []int
	var expired []*pending
	for _, p := range b.recs {
		if p.done {
			continue
		}
		if d.sub.MaxRecordAgeMs >= 0 && now.UnixMilli()-p.rec.Timestamp > d.sub.MaxRecordAgeMs {
			expired = append(expired, p)
			continue
		}
		if b.limit > 0 && len(shards[p.shard]) >= b.limit {
			continue
		}
		if shards[p.shard] == nil {
			order = append(order, p.shard)
		}
		shards[p.shard] = append(shards[p.shard], p)
	}
	if len(expired) > 0 {
		if err := d.giveUp(ctx, expired, "record older than max_record_age_ms"); err != nil {
			return 0, err
		}
	}
	if len(order) == 0 {
		return 0, d.progress(ctx)
	}
	inv, err := d.c.Targets(d.sub.Target)
	if err != nil {
		return 0, fmt.Errorf("target: %w", err)
	}
	type result struct {
		sent   []*pending
		failed int64 // lowest failed offset; -1: none
		err    error
	}
	results := make([]result, len(order))
	var wg sync.WaitGroup
	for i, sh := range order {
		sent := shards[sh]
		results[i].sent = sent
		for _, p := range sent {
			if p.tries > 0 {
				d.stats.Retries.Add(1)
			}
			p.tries++
		}
		ev := d.enc.event(sent)
		wg.Go(func() {
			ictx, cancel := context.WithTimeout(ctx, d.c.InvokeTimeout)
			defer cancel()
			body, err := inv.Invoke(ictx, ev)
			if err == nil {
				var a answer
				a, err = parseAnswer(body, sent[0].rec.Offset, sent[len(sent)-1].rec.Offset)
				results[i].failed = a.failed
			}
			results[i].err = err
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return 0, ctx.Err() // stopped mid-batch: nothing is committed
	}
	var failedSent []*pending
	var lastErr error
	for _, r := range results {
		d.stats.Invocations.Add(1)
		switch {
		case r.err != nil:
			failedSent = append(failedSent, r.sent...)
			lastErr = r.err
		case r.failed >= 0:
			for _, p := range r.sent {
				if p.rec.Offset < r.failed {
					d.markDelivered(p)
				} else {
					failedSent = append(failedSent, p)
				}
			}
			lastErr = fmt.Errorf("partial batch failure from offset %d", r.failed)
		default:
			for _, p := range r.sent {
				d.markDelivered(p)
			}
		}
	}
	if lastErr != nil {
		d.stats.Failures.Add(1)
		d.st.FailedAttempts++
		d.st.Failing = true
		d.st.LastError = ptr(truncate(lastErr.Error()))
		b.attempts++
		switch {
		case d.sub.MaxRetryAttempts >= 0 && b.attempts > d.sub.MaxRetryAttempts:
			if err := d.giveUp(ctx, failedSent, lastErr.Error()); err != nil {
				return 0, err
			}
			b.attempts, b.limit = 0, 0
		case d.sub.BisectBatchOnError && len(failedSent) > 1:
			b.limit = max((b.limitOr(len(failedSent))+1)/2, 1)
			b.next = now.Add(d.backoff(b.attempts))
		default:
			b.next = now.Add(d.backoff(b.attempts))
		}
		d.log.Warn("delivery attempt failed", "attempt", b.attempts, "records", len(failedSent), "err", lastErr)
	} else {
		d.st.Failing = false
		b.attempts = 0
	}
	return 0, d.progress(ctx)
}

func (b *batch) limitOr(n int) int {
	if b.limit > 0 {
		return min(b.limit, n)
	}
	return n
}

func (d *deliverer) markDelivered(p *pending) {
	p.done = true
	d.st.Delivered++
	d.stats.Delivered.Add(1)
}

// progress commits the batch's done prefix and ends the batch when all of
// it is done. Without progress it still writes the delivery item, so the
// status shows the failure (and the lease is renewed).
func (d *deliverer) progress(ctx context.Context) error {
	cp := d.batch.commitPoint()
	whole := cp == d.batch.end()
	if cp <= d.pos {
		return d.write(ctx, d.c.Clock.Now())
	}
	if whole {
		d.st.Failing = false
	}
	if err := d.commit(ctx, cp); err != nil {
		return err // the batch stays: the next step retries the commit's attempt
	}
	d.pos = cp
	if whole {
		d.batch = nil
	}
	return nil
}

// commit writes the delivery item (the fence: it fails if another
// deliverer took over) and then the group offset.
func (d *deliverer) commit(ctx context.Context, offset int64) error {
	if err := d.write(ctx, d.c.Clock.Now()); err != nil {
		return err
	}
	err := d.c.Source.CommitGroupOffsets(ctx, d.name, []meta.GroupOffset{{Topic: d.sub.Topic, Partition: d.partition, Offset: offset}})
	if err != nil {
		return fmt.Errorf("commit offset %d: %w", offset, err)
	}
	return nil
}

// giveUp hands recs to on_failure (or drops them without one), counted
// and logged, and marks them done. If the produce fails nothing is marked
// and the caller retries the step.
func (d *deliverer) giveUp(ctx context.Context, recs []*pending, reason string) error {
	reason = truncate(reason)
	if d.sub.OnFailure != nil {
		out := make([]broker.ProduceRecord, len(recs))
		for i, p := range recs {
			hs := append([]broker.Header(nil), p.rec.Headers...)
			hs = append(hs,
				broker.Header{Key: HeaderSubscription, Value: []byte(d.name)},
				broker.Header{Key: HeaderSourceTopic, Value: []byte(d.sub.Topic)},
				broker.Header{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(d.partition))},
				broker.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(p.rec.Offset, 10))},
				broker.Header{Key: HeaderError, Value: []byte(reason)},
				broker.Header{Key: HeaderAttempts, Value: []byte(strconv.Itoa(p.tries))})
			out[i] = broker.ProduceRecord{Key: p.rec.Key, Value: p.rec.Value, Headers: hs, Partition: -1}
		}
		for len(out) > 0 {
			n := min(len(out), broker.MaxBatchRecords)
			res, err := d.c.Source.Produce(ctx, d.sub.OnFailure.Topic, out[:n])
			if err != nil {
				return fmt.Errorf("produce given-up records to on_failure topic %q: %w", d.sub.OnFailure.Topic, err)
			}
			for _, r := range res {
				if r.Err != nil {
					return fmt.Errorf("produce given-up records to on_failure topic %q: %w", d.sub.OnFailure.Topic, r.Err)
				}
			}
			out = out[n:]
		}
		d.st.SentToOnFailure += int64(len(recs))
		d.stats.SentToOnFailure.Add(int64(len(recs)))
	} else {
		d.st.Dropped += int64(len(recs))
		d.stats.Dropped.Add(int64(len(recs)))
	}
	for _, p := range recs {
		p.done = true
	}
	d.log.Error("records given up", "first_offset", recs[0].rec.Offset, "last_offset", recs[len(recs)-1].rec.Offset,
		"records", len(recs), "on_failure", d.sub.OnFailure != nil, "reason", reason)
	return nil
}

// backoff is RetryBase doubled per failed attempt, at most RetryMax.
func (d *deliverer) backoff(attempts int) time.Duration {
	b := d.c.RetryBase
	for i := 1; i < attempts && b < d.c.RetryMax; i++ {
		b *= 2
	}
	return min(b, d.c.RetryMax)
}

func truncate(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText]
	}
	return s
}

func ptr[T any](v T) *T { return &v }
