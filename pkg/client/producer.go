package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by a Producer or Consumer after Close, and is the
// error of records a closing Producer could not deliver in time.
var ErrClosed = errors.New("client: closed")

// Producer defaults.
const (
	DefaultBatchRecords    = 1000
	DefaultBatchBytes      = 1 << 20
	DefaultLinger          = 5 * time.Millisecond
	DefaultMaxBuffered     = 100000
	DefaultDeliveryTimeout = 2 * time.Minute

	// attemptTimeout bounds one produce request of the Producer.
	attemptTimeout = 30 * time.Second

	// MaxBatchBytes keeps a batch's keys and values well under the 5 MiB
	// body limit; a JSON body that still ends up larger is split in two.
	MaxBatchBytes = 4 << 20
)

// ProducerOption configures NewProducer.
type ProducerOption func(*producerConfig)

type producerConfig struct {
	batchRecords    int
	batchBytes      int
	linger          time.Duration
	maxBuffered     int
	deliveryTimeout time.Duration
	onResult        func(Record, Result)
}

// WithBatchRecords sends a partition's batch once it holds n records
// (default 1000, at most 10,000).
func WithBatchRecords(n int) ProducerOption { return func(c *producerConfig) { c.batchRecords = n } }

// WithBatchBytes sends a partition's batch once its keys and values reach
// n bytes (default 1 MiB, at most 4 MiB).
func WithBatchBytes(n int) ProducerOption { return func(c *producerConfig) { c.batchBytes = n } }

// WithLinger sends a partition's batch at the latest d after its first
// record was sent, full or not (default 5 ms; 0 sends at once whatever
// has gathered while the previous batch was in flight).
func WithLinger(d time.Duration) ProducerOption { return func(c *producerConfig) { c.linger = d } }

// WithMaxBuffered bounds the records sent but not yet acknowledged; Send
// blocks beyond it (default 100,000).
func WithMaxBuffered(n int) ProducerOption { return func(c *producerConfig) { c.maxBuffered = n } }

// WithDeliveryTimeout bounds how long a batch is retried (default 2 min;
// 0: sent once, never retried).
func WithDeliveryTimeout(d time.Duration) ProducerOption {
	return func(c *producerConfig) { c.deliveryTimeout = d }
}

// WithResultCallback calls fn with every record and its result, from the
// partition's sender goroutine, in order within a partition, before the
// record's Future is done. fn must not block for long: it holds up its
// partition.
func WithResultCallback(fn func(Record, Result)) ProducerOption {
	return func(c *producerConfig) { c.onResult = fn }
}

func producerDefaults(opts []ProducerOption) (producerConfig, error) {
	c := producerConfig{
		batchRecords: DefaultBatchRecords, batchBytes: DefaultBatchBytes, linger: DefaultLinger,
		maxBuffered: DefaultMaxBuffered, deliveryTimeout: DefaultDeliveryTimeout,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch {
	case c.batchRecords < 1 || c.batchRecords > MaxRecords:
		return c, fmt.Errorf("client: batch records %d: want 1 to %d", c.batchRecords, MaxRecords)
	case c.batchBytes < 1 || c.batchBytes > MaxBatchBytes:
		return c, fmt.Errorf("client: batch bytes %d: want 1 to %d", c.batchBytes, MaxBatchBytes)
	case c.linger < 0:
		return c, fmt.Errorf("client: negative linger %v", c.linger)
	case c.maxBuffered < 1:
		return c, fmt.Errorf("client: max buffered %d: want at least 1", c.maxBuffered)
	case c.deliveryTimeout < 0:
		return c, fmt.Errorf("client: negative delivery timeout %v", c.deliveryTimeout)
	}
	return c, nil
}

// Producer batches records per partition and sends each partition's
// batches in order, one at a time, retrying what is retriable (see the
// package doc on duplicates). It is safe for concurrent use.
//
// Records are routed client side, exactly as the server would: a set
// Partition, else murmur2 of the key, else round-robin. So every batch
// goes to the partition route, all or nothing.
type Producer struct {
	c          *Client
	topic      string
	partitions int
	cfg        producerConfig
	rr         atomic.Uint64
	sem        chan struct{} // one token per buffered record
	queues     []*pqueue
	ctx        context.Context // cancelled when Close gives up
	abort      context.CancelFunc
	wg         sync.WaitGroup

	mu struct {
		sync.RWMutex
		closed bool
	}
}

// batch is a partition's records sent together, and their results.
type batch struct {
	recs    []Record               // as given to Send (Partition kept for callbacks)
	cbs     []func(Record, Result) // SendFunc's callbacks, nil where none; nil if no record has one
	results []Result
	bytes   int
	first   time.Time
	done    chan struct{}
}

// pqueue is one partition's queue: an open batch gathering records, sealed
// batches waiting, and the one in flight. Its sender goroutine starts on
// the first record.
type pqueue struct {
	p         *Producer
	partition int
	once      sync.Once
	wake      chan struct{} // capacity 1

	mu       sync.Mutex
	open     *batch
	sealed   []*batch
	inflight *batch
	stopping bool
}

// Future is the result of one sent record: a handle that may be copied
// and waited on from any goroutine. Only a Future that Send returned
// without error is valid.
type Future struct {
	b *batch
	i int
}

// Done is closed once the record's result is known.
func (f Future) Done() <-chan struct{} { return f.b.done }

// Wait returns the record's result when it is known, and its Err; or the
// context's error if ctx ends first (the record is still in flight).
func (f Future) Wait(ctx context.Context) (Result, error) {
	select {
	case <-f.b.done:
		r := f.b.results[f.i]
		return r, r.Err
	case <-ctx.Done():
		return Result{Partition: -1, Offset: -1}, ctx.Err()
	}
}

// NewProducer returns a producer for topic. It reads the topic once to
// learn its partition count.
func (c *Client) NewProducer(ctx context.Context, topic string, opts ...ProducerOption) (*Producer, error) {
	cfg, err := producerDefaults(opts)
	if err != nil {
		return nil, err
	}
	t, err := c.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if t.Partitions < 1 {
		return nil, fmt.Errorf("client: topic %q has %d partitions", topic, t.Partitions)
	}
	pctx, abort := context.WithCancel(context.Background())
	p := &Producer{
		c: c, topic: topic, partitions: t.Partitions, cfg: cfg,
		sem: make(chan struct{}, cfg.maxBuffered), ctx: pctx, abort: abort,
		queues: make([]*pqueue, t.Partitions),
	}
	for i := range p.queues {
		p.queues[i] = &pqueue{p: p, partition: i, wake: make(chan struct{}, 1)}
	}
	// Round-robin starts at a random partition, as Kafka's producers do:
	// short-lived producers (one CLI run each) do not all fill partition 0.
	p.rr.Store(rand.Uint64N(uint64(t.Partitions)))
	return p, nil
}

// Partitions is the topic's partition count the producer routes over.
func (p *Producer) Partitions() int { return p.partitions }

// route picks rec's partition as the server would.
func (p *Producer) route(rec *Record) (int, error) {
	switch {
	case rec.Partition != nil:
		if q := *rec.Partition; q < 0 || q >= p.partitions {
			return 0, fmt.Errorf("client: topic %q has no partition %d (it has %d: 0 to %d)", p.topic, q, p.partitions, p.partitions-1)
		}
		return *rec.Partition, nil
	case rec.Key != nil:
		return KeyPartition(rec.Key, p.partitions), nil
	}
	return int((p.rr.Add(1) - 1) % uint64(p.partitions)), nil
}

// Send queues rec and returns its Future. It blocks while the producer
// holds its maximum of unacknowledged records, until ctx ends. It fails
// at once for a record over 1 MiB (key, value and headers), bad headers
// or timestamp (Record), a partition out of range, or a closed
// producer.
func (p *Producer) Send(ctx context.Context, rec Record) (Future, error) {
	return p.send(ctx, rec, nil)
}

// send is Send and SendFunc: fn, if not nil, is rec's own callback.
func (p *Producer) send(ctx context.Context, rec Record, fn func(Record, Result)) (Future, error) {
	size := rec.Size()
	if err := rec.check(-1); err != nil {
		return Future{}, err
	}
	part, err := p.route(&rec)
	if err != nil {
		return Future{}, err
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return Future{}, ctx.Err()
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.closed {
		<-p.sem
		return Future{}, ErrClosed
	}
	q := p.queues[part]
	q.once.Do(func() {
		p.wg.Add(1)
		go q.run()
	})
	f, signal := q.add(rec, size, fn)
	if signal {
		q.signal()
	}
	return f, nil
}

// SendFunc is Send with a callback for this record alone (kgo's Produce
// with a promise): fn is called once with the record and its result, on
// the partition's sender goroutine, in Send order within a partition,
// after WithResultCallback's function. fn must not block for long: the
// partition's next batch waits for it. If SendFunc returns an error, fn
// is never called.
func (p *Producer) SendFunc(ctx context.Context, rec Record, fn func(Record, Result)) error {
	_, err := p.send(ctx, rec, fn)
	return err
}

// Produce sends rec and waits for its result.
func (p *Producer) Produce(ctx context.Context, rec Record) (Result, error) {
	f, err := p.Send(ctx, rec)
	if err != nil {
		return Result{Partition: -1, Offset: -1, Err: err}, err
	}
	return f.Wait(ctx)
}

// add appends rec to the open batch, sealing batches that are full. It
// reports whether the sender must look: a new batch (its linger starts)
// or a sealed one.
func (q *pqueue) add(rec Record, size int, fn func(Record, Result)) (Future, bool) {
	cfg := &q.p.cfg
	q.mu.Lock()
	defer q.mu.Unlock()
	signal := false
	if q.open != nil && q.open.bytes+size > cfg.batchBytes {
		q.seal()
		signal = true
	}
	if q.open == nil {
		q.open = &batch{first: time.Now(), done: make(chan struct{})}
		signal = true
	}
	b := q.open
	if fn != nil && b.cbs == nil {
		b.cbs = make([]func(Record, Result), len(b.recs), cap(b.recs))
	}
	if b.cbs != nil {
		b.cbs = append(b.cbs, fn)
	}
	b.recs = append(b.recs, rec)
	b.bytes += size
	if len(b.recs) >= cfg.batchRecords || b.bytes >= cfg.batchBytes {
		q.seal()
		signal = true
	}
	return Future{b: b, i: len(b.recs) - 1}, signal
}

// seal moves the open batch to the sealed list. q.mu must be held.
func (q *pqueue) seal() {
	if q.open != nil {
		q.sealed = append(q.sealed, q.open)
		q.open = nil
	}
}

func (q *pqueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run is the partition's sender: one batch at a time, in order.
func (q *pqueue) run() {
	defer q.p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		b := q.next(timer)
		if b == nil {
			return
		}
		q.p.deliver(q.partition, b)
		q.mu.Lock()
		q.inflight = nil
		q.mu.Unlock()
	}
}

// next waits for the next batch to send: a sealed one, or the open one
// once its linger is over. It returns nil when the producer stops.
func (q *pqueue) next(timer *time.Timer) *batch {
	for {
		q.mu.Lock()
		if q.open != nil && time.Since(q.open.first) >= q.p.cfg.linger {
			q.seal()
		}
		if len(q.sealed) > 0 {
			b := q.sealed[0]
			q.sealed[0] = nil
			q.sealed = q.sealed[1:]
			q.inflight = b
			q.mu.Unlock()
			return b
		}
		if q.open == nil && q.stopping {
			q.mu.Unlock()
			return nil
		}
		var tc <-chan time.Time
		if q.open != nil {
			timer.Reset(q.p.cfg.linger - time.Since(q.open.first))
			tc = timer.C
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-tc:
		case <-q.p.ctx.Done():
			return nil
		}
		timer.Stop()
	}
}

// deliver sends b to partition part, retrying, and resolves its records:
// callbacks first, then Done, then the buffer tokens.
func (p *Producer) deliver(part int, b *batch) {
	b.results = make([]Result, len(b.recs))
	// Retries stop starting after the delivery timeout; the bound on the
	// context also lets the last attempt finish, and keeps a server that
	// never answers from holding the partition forever.
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.deliveryTimeout+attemptTimeout)
	p.sendRange(ctx, part, b, 0, len(b.recs))
	cancel()
	p.resolve(b)
}

func (p *Producer) resolve(b *batch) {
	if b.results == nil {
		b.results = make([]Result, len(b.recs))
		for i := range b.results {
			b.results[i] = Result{Partition: -1, Offset: -1, Err: ErrClosed}
		}
	}
	if p.cfg.onResult != nil {
		for i := range b.recs {
			p.cfg.onResult(b.recs[i], b.results[i])
		}
	}
	for i, fn := range b.cbs {
		if fn != nil {
			fn(b.recs[i], b.results[i])
		}
	}
	close(b.done)
	for range b.recs {
		<-p.sem
	}
}

// sendRange sends b.recs[lo:hi] as one request, or as two halves if its
// body would pass the 5 MiB limit (JSON and base64 inflate bytes).
func (p *Producer) sendRange(ctx context.Context, part int, b *batch, lo, hi int) {
	recs := make([]Record, hi-lo)
	for i := range recs {
		r := b.recs[lo+i]
		recs[i] = Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
	}
	fail := func(err error) {
		for i := lo; i < hi; i++ {
			b.results[i] = Result{Partition: part, Offset: -1, Timestamp: -1, Err: err}
		}
	}
	body, encErr := encodeProduce(p.c.cfg.format, recs, false)
	if errors.Is(encErr, ErrTooLarge) && hi-lo > 1 {
		mid := lo + (hi-lo)/2
		p.sendRange(ctx, part, b, lo, mid)
		p.sendRange(ctx, part, b, mid, hi)
		return
	}
	if encErr != nil {
		fail(encErr)
		return
	}
	path := partitionPath(p.topic, part) + "/records"
	op := "POST " + path
	// One key per request: every retry of it carries the same, so the
	// server appends it once whatever happened to earlier attempts.
	rq := p.c.produceRequest(path, body, NewIdempotencyKey())
	log := p.c.cfg.log.With(slog.String("topic", p.topic), slog.Int("partition", part), slog.Int("records", hi-lo))
	send := func() (*ProduceReply, error) {
		r, err := p.c.send(ctx, rq)
		if err != nil {
			return nil, err
		}
		return p.c.decodeProduceReply(r, hi-lo, op)
	}
	rep, err := p.c.retryProduce(ctx, p.cfg.deliveryTimeout, log, send)
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "produce failed", slog.String("err", err.Error()))
		fail(err)
		return
	}
	copy(b.results[lo:hi], rep.Results)
}

// Flush sends every record sent before it without waiting for linger, and
// waits until all of them have results, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	var waits []chan struct{}
	for _, q := range p.queues {
		q.mu.Lock()
		if q.open != nil {
			q.seal()
		}
		if q.inflight != nil {
			waits = append(waits, q.inflight.done)
		}
		for _, b := range q.sealed {
			waits = append(waits, b.done)
		}
		pending := len(q.sealed) > 0
		q.mu.Unlock()
		if pending {
			q.signal()
		}
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return fmt.Errorf("client: flush: %w", ctx.Err())
		}
	}
	return nil
}

// Close stops accepting records, flushes until ctx ends, then stops. What
// could not be delivered by then fails with ErrClosed (or the in-flight
// request's context error: its outcome is unknown). Close returns the
// flush's error.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.closed = true
	p.mu.Unlock()
	err := p.Flush(ctx)
	if err != nil {
		p.abort()
	}
	for _, q := range p.queues {
		q.mu.Lock()
		q.stopping = true
		q.mu.Unlock()
		q.signal()
	}
	p.wg.Wait()
	p.abort()
	// Senders are gone: fail whatever they left.
	for _, q := range p.queues {
		q.mu.Lock()
		q.seal()
		left := q.sealed
		q.sealed = nil
		q.mu.Unlock()
		for _, b := range left {
			p.resolve(b)
		}
	}
	return err
}
