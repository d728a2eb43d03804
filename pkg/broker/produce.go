package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/tierlog/tierlog/pkg/partition"
)

// Errors of idempotent and conditional produce (docs/api.md "Idempotent
// produce", "Conditional produce").
var (
	// ErrIdempotencyKeyInUse means another request with the same
	// Idempotency-Key is still being appended by this process.
	ErrIdempotencyKeyInUse = errors.New("broker: idempotency key in use")
	// ErrIdempotencyKeyReused means the key was used before for a request
	// with other contents: nothing was appended.
	ErrIdempotencyKeyReused = errors.New("broker: idempotency key reused with another request")
	// ErrOffsetMismatch means a conditional append found the high
	// watermark elsewhere than expected: nothing was appended. The error is
	// an *OffsetMismatchError.
	ErrOffsetMismatch = errors.New("broker: offset mismatch")
)

// OffsetMismatchError is a conditional append refused: the partition's
// high watermark was not Expected.
type OffsetMismatchError struct {
	Expected      int64
	HighWatermark int64
}

func (e *OffsetMismatchError) Error() string {
	return fmt.Sprintf("broker: expected_offset %d, but the high watermark is %d", e.Expected, e.HighWatermark)
}

// Is makes errors.Is(err, ErrOffsetMismatch) hold.
func (e *OffsetMismatchError) Is(target error) bool { return target == ErrOffsetMismatch }

// MaxIdempotencyKey is the longest Idempotency-Key (docs/api.md).
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether k is a legal Idempotency-Key: 1 to
// 255 printable ASCII characters (0x20 to 0x7e).
func ValidIdempotencyKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: Idempotency-Key is empty", ErrInvalid)
	}
	if len(k) > MaxIdempotencyKey {
		return fmt.Errorf("%w: Idempotency-Key has %d characters, at most %d", ErrInvalid, len(k), MaxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: Idempotency-Key has a non-printable character at position %d (byte 0x%02x)", ErrInvalid, i, c)
		}
	}
	return nil
}

// ProduceOptions are the conditions of one produce request.
type ProduceOptions struct {
	// IdempotencyKey ("" for none) makes the request idempotent: a request
	// repeated with the same key and the same records within the
	// idempotency window is answered with the first attempt's offsets and
	// appends nothing; with other records it is ErrIdempotencyKeyReused.
	// On the multi-partition route the key covers the whole request, and
	// records without a partition or key are routed by the key, so a
	// retry routes them as the first attempt did.
	IdempotencyKey string
	// ExpectedOffset, if not nil, makes a single-partition append
	// conditional: it happens only if the high watermark is exactly
	// *ExpectedOffset, else *OffsetMismatchError.
	ExpectedOffset *int64
}

// ProduceReply is a produce request's outcome.
type ProduceReply struct {
	// Results, one per record in request order.
	Results []ProduceResult
	// Replayed is true when the request was answered from an earlier
	// attempt with the same Idempotency-Key and appended nothing.
	Replayed bool
}

// Produce appends records, routing each to a partition: explicit, else
// Kafka's murmur2 of the key, else round-robin. Records bound for one
// partition form one atomic batch in request order. The error is for the
// whole request (unknown topic, bad partition, limits); per-partition
// failures are in the results.
func (b *Broker) Produce(ctx context.Context, topicName string, recs []ProduceRecord) ([]ProduceResult, error) {
	r, err := b.ProduceWith(ctx, topicName, recs, ProduceOptions{})
	return r.Results, err
}

// ProducePartition appends recs to one partition, all or nothing.
func (b *Broker) ProducePartition(ctx context.Context, topicName string, p int, recs []ProduceRecord) ([]ProduceResult, error) {
	r, err := b.ProducePartitionWith(ctx, topicName, p, recs, ProduceOptions{})
	return r.Results, err
}

// ProduceWith is Produce with options. With an IdempotencyKey, records
// without a partition or key start round-robin at a partition chosen by the
// key, so a retry routes them as the first attempt did; each partition's
// part is appended at most once, and a key committed before with other
// contents on any partition of the request is ErrIdempotencyKeyReused
// before anything is appended.
func (b *Broker) ProduceWith(ctx context.Context, topicName string, recs []ProduceRecord, o ProduceOptions) (ProduceReply, error) {
	if err := checkBatch(recs); err != nil {
		return ProduceReply{}, err
	}
	if o.ExpectedOffset != nil {
		return ProduceReply{}, fmt.Errorf("%w: expected_offset needs the single-partition route", ErrInvalid)
	}
	if o.IdempotencyKey != "" {
		if err := ValidIdempotencyKey(o.IdempotencyKey); err != nil {
			return ProduceReply{}, err
		}
	}
	t, err := b.acquire(ctx, topicName)
	if err != nil {
		return ProduceReply{}, err
	}
	defer t.release()
	if err := checkRecords(t.cfg, recs); err != nil {
		return ProduceReply{}, err
	}

	now := b.cfg.Now()
	groups, order, err := b.route(t, recs, routeCount(t.cfg, now, b.routeDelay()), o.IdempotencyKey)
	if err != nil {
		return ProduceReply{}, err
	}
	var hash [16]byte
	if o.IdempotencyKey != "" {
		hash = requestHash(routeTopic, -1, recs)
	}
	batches := makeBatches(recs, groups, order, o.IdempotencyKey, hash)
	if o.IdempotencyKey != "" {
		// A retry of a request whose first attempt a topic's growth
		// routed otherwise is answered where that attempt went.
		for _, c := range earlierCounts(t.cfg, now, 2*b.cfg.IdempotencyWindow+b.routeDelay()) {
			g, ord, err := b.route(t, recs, c, o.IdempotencyKey)
			if err != nil || sameRoute(g, groups) {
				continue
			}
			bs := makeBatches(recs, g, ord, o.IdempotencyKey, hash)
			found, err := b.routedBefore(ctx, t, ord, bs, groups)
			if err != nil {
				return ProduceReply{}, err
			}
			if found {
				groups, order, batches = g, ord, bs
				break
			}
		}
	}
	if o.IdempotencyKey != "" && len(order) > 1 {
		// A key reused with other contents is refused before any part is
		// appended (a part whose key is new would be, otherwise).
		for _, p := range order {
			if err := b.checkKey(ctx, t, p, batches[p]); err != nil {
				return ProduceReply{}, err
			}
		}
	}
	out := make([]ProduceResult, len(recs))
	replayed := make([]bool, len(order))
	appendPart := func(k, p int) {
		app, err := b.appendTo(ctx, t, p, batches[p])
		replayed[k] = err == nil && app.Replayed
		for j, i := range groups[p] {
			if err != nil {
				out[i] = ProduceResult{Partition: p, Offset: -1, Err: err}
			} else {
				out[i] = ProduceResult{Partition: p, Offset: app.BaseOffset + int64(j), Timestamp: recordTS(&recs[i], app)}
			}
		}
	}
	// The partitions are appended in parallel, the last in this goroutine
	// (a request for one partition starts none).
	var wg sync.WaitGroup
	for k, p := range order[:len(order)-1] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendPart(k, p)
		}()
	}
	appendPart(len(order)-1, order[len(order)-1])
	wg.Wait()
	if err := out[0].Err; len(order) == 1 && errors.Is(err, ErrIdempotencyKeyReused) {
		return ProduceReply{}, err // nothing was appended
	}
	reply := ProduceReply{Results: out, Replayed: o.IdempotencyKey != ""}
	for _, r := range replayed {
		reply.Replayed = reply.Replayed && r
	}
	return reply, nil
}

// Routing after a growth. A topic's partition count grows by UpdateTopic;
// each process learns of it within TopicRefresh. Routing by the count a
// process has cached would send one key to different partitions in
// different processes for that long, and a retry of an idempotent request
// elsewhere than its first attempt (appended twice). So a growth takes
// effect for routing routeDelay after it was stored (TopicRefresh, and
// the clocks' skew), when every process has it: until then every process
// routes by the count before it. New partitions take records addressed to
// them at once. A request with an Idempotency-Key is also looked up under
// the counts the topic had in the last two idempotency windows: if any
// partition that routing names committed the key, the request is routed
// as then, so a retry is answered from its first attempt (or completes
// it) wherever the new count routes it. A retry sent while its first
// attempt is still in flight, across the moment a growth takes effect,
// can still be appended twice: the two attempts meet no common lease.

// maxRouteSkew bounds the clock skew between processes that routing after
// a growth allows for.
const maxRouteSkew = 2 * time.Second

// routeDelay is how long after it was stored a growth takes effect.
func (b *Broker) routeDelay() time.Duration { return b.cfg.TopicRefresh + maxRouteSkew }

// routeCount is the partition count records of topic t are routed by at
// now: the count before every growth stored less than delay ago.
func routeCount(t Topic, now time.Time, delay time.Duration) int {
	n := t.Partitions
	for _, g := range t.Growth { // newest first
		if g.AtMs == 0 || now.UnixMilli() >= g.AtMs+delay.Milliseconds() {
			break
		}
		n = g.From
	}
	return n
}

// earlierCounts are the counts other than routeCount's that topic t
// routed requests by within span before now (or will, once a growth
// takes effect: clocks differ), newest first.
func earlierCounts(t Topic, now time.Time, span time.Duration) []int {
	var out []int
	for _, g := range t.Growth {
		if g.AtMs == 0 || now.UnixMilli()-g.AtMs > span.Milliseconds() {
			break
		}
		out = append(out, g.From)
	}
	if len(out) > 0 {
		out = append(out, t.Partitions)
	}
	return out
}

// route assigns each record a partition of n: its own, else its key's
// (Kafka's murmur2), else round-robin, from the Idempotency-Key's hash if
// there is one (a retry routes as its first attempt did) or the topic's
// counter. It returns the record indexes of each partition, in order.
func (b *Broker) route(t *topic, recs []ProduceRecord, n int, idemKey string) (map[int][]int, []int, error) {
	groups := map[int][]int{}
	var order []int
	var rr uint64
	if idemKey != "" {
		rr = xxhash.Sum64String(idemKey)
	}
	for i, r := range recs {
		p := r.Partition
		switch {
		case p >= t.cfg.Partitions:
			return nil, nil, fmt.Errorf("%w: record %d: partition %d of topic %q (partitions: %d)", ErrPartitionNotFound, i, p, t.cfg.Name, t.cfg.Partitions)
		case p >= 0:
		case r.Key != nil:
			p = KeyPartition(r.Key, n)
		case idemKey != "":
			p = int(rr % uint64(n))
			rr++
		default:
			p = int((t.rr.Add(1) - 1) % uint64(n))
		}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], i)
	}
	return groups, order, nil
}

// sameRoute reports whether two routings put every record where the other
// does.
func sameRoute(a, b map[int][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for p, idx := range a {
		if !slices.Equal(idx, b[p]) {
			return false
		}
	}
	return true
}

// makeBatches builds each partition's batch of a routed request.
func makeBatches(recs []ProduceRecord, groups map[int][]int, order []int, key string, hash [16]byte) map[int]partition.Batch {
	batches := make(map[int]partition.Batch, len(order))
	for _, p := range order {
		idx := groups[p]
		bt := partition.Batch{Records: make([]partition.Record, len(idx)), Key: key, Hash: hash, Expected: -1}
		for j, i := range idx {
			bt.Records[j] = partitionRecord(&recs[i])
		}
		batches[p] = bt
	}
	return batches
}

// routedBefore reports whether a partition of routing (order, batches)
// committed its part under the request's key, as a first attempt routed
// that way would have. Only partitions whose part differs in size from the
// one the current routing (cur) gives them can tell: a window entry names
// the request and its part's record count, and a part of the same size may
// be the current routing's own. A key found there with another part is
// another routing's: no evidence either way.
func (b *Broker) routedBefore(ctx context.Context, t *topic, order []int, batches map[int]partition.Batch, cur map[int][]int) (bool, error) {
	for _, p := range order {
		if len(cur[p]) == len(batches[p].Records) {
			continue
		}
		l, err := t.part(ctx, p)
		if err != nil {
			return false, err
		}
		_, found, err := l.Committed(ctx, batches[p])
		if errors.Is(err, partition.ErrKeyReused) {
			continue
		}
		if err != nil {
			return false, t.mapErr(ctx, err)
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// checkKey answers ErrIdempotencyKeyReused if partition p committed bt's key
// with other contents.
func (b *Broker) checkKey(ctx context.Context, t *topic, p int, bt partition.Batch) error {
	l, err := t.part(ctx, p)
	if err != nil {
		return err
	}
	_, _, err = l.Committed(ctx, bt)
	return t.mapErr(ctx, err)
}

// ProducePartitionWith is ProducePartition with options.
func (b *Broker) ProducePartitionWith(ctx context.Context, topicName string, p int, recs []ProduceRecord, o ProduceOptions) (ProduceReply, error) {
	if err := checkBatch(recs); err != nil {
		return ProduceReply{}, err
	}
	pr := getPartRecs(len(recs))
	defer putPartRecs(pr)
	bt := partition.Batch{Records: *pr, Key: o.IdempotencyKey, Expected: -1}
	if o.IdempotencyKey != "" {
		if err := ValidIdempotencyKey(o.IdempotencyKey); err != nil {
			return ProduceReply{}, err
		}
		bt.Hash = requestHash(routePartition, p, recs)
	}
	if e := o.ExpectedOffset; e != nil {
		if *e < 0 {
			return ProduceReply{}, fmt.Errorf("%w: expected_offset %d is negative", ErrInvalid, *e)
		}
		bt.Expected = *e
	}
	t, err := b.acquire(ctx, topicName)
	if err != nil {
		return ProduceReply{}, err
	}
	defer t.release()
	if err := checkRecords(t.cfg, recs); err != nil {
		return ProduceReply{}, err
	}
	for i := range recs {
		bt.Records[i] = partitionRecord(&recs[i])
	}
	app, err := b.appendTo(ctx, t, p, bt)
	if err != nil {
		return ProduceReply{}, err
	}
	out := make([]ProduceResult, len(recs))
	for i := range recs {
		out[i] = ProduceResult{Partition: p, Offset: app.BaseOffset + int64(i), Timestamp: recordTS(&recs[i], app)}
	}
	return ProduceReply{Results: out, Replayed: app.Replayed}, nil
}

// partRecs recycles the partition records of ProducePartitionWith's
// batches: the partition is done with them when AppendBatch returns.
var partRecs sync.Pool // *[]partition.Record

// maxPooledRecs bounds the batches whose records partRecs keeps.
const maxPooledRecs = MaxBatchRecords

func getPartRecs(n int) *[]partition.Record {
	p, _ := partRecs.Get().(*[]partition.Record)
	if p == nil {
		p = new([]partition.Record)
	}
	if cap(*p) < n {
		*p = make([]partition.Record, n)
	}
	*p = (*p)[:n]
	return p
}

func putPartRecs(p *[]partition.Record) {
	clear(*p) // hold no caller's memory
	if cap(*p) <= maxPooledRecs {
		partRecs.Put(p)
	}
}

// Header limits (docs/api.md "Produce": headers).
const (
	MaxHeaders      = 64  // headers of one record
	MaxHeaderKeyLen = 256 // bytes of a header key (at least 1)
)

// checkRecords checks what the topic decides about records: producer
// timestamps only on a create-time topic, and never below 0; at most
// MaxHeaders headers a record, keys of 1 to MaxHeaderKeyLen bytes of valid
// UTF-8; key, value and headers within MaxRecordBytes.
func checkRecords(cfg Topic, recs []ProduceRecord) error {
	createTime := cfg.TimestampType == TimestampCreate
	for i := range recs {
		r := &recs[i]
		if r.HasTimestamp {
			if !createTime {
				return fmt.Errorf("%w: record %d has a timestamp, but topic %q has timestamp_type %q: only a %q topic takes producer timestamps",
					ErrInvalid, i, cfg.Name, TimestampAppend, TimestampCreate)
			}
			if r.Timestamp < 0 {
				return fmt.Errorf("%w: record %d: timestamp %d is negative", ErrInvalid, i, r.Timestamp)
			}
		}
		if len(r.Headers) > MaxHeaders {
			return fmt.Errorf("%w: record %d has %d headers, at most %d", ErrInvalid, i, len(r.Headers), MaxHeaders)
		}
		size := len(r.Key) + len(r.Value)
		for j, h := range r.Headers {
			switch {
			case len(h.Key) == 0:
				return fmt.Errorf("%w: record %d: header %d has an empty key", ErrInvalid, i, j)
			case len(h.Key) > MaxHeaderKeyLen:
				return fmt.Errorf("%w: record %d: header %d key is %d bytes, at most %d", ErrInvalid, i, j, len(h.Key), MaxHeaderKeyLen)
			case !utf8.ValidString(h.Key):
				return fmt.Errorf("%w: record %d: header %d key %q is not valid UTF-8", ErrInvalid, i, j, h.Key)
			}
			size += len(h.Key) + len(h.Value)
		}
		if size > MaxRecordBytes {
			return fmt.Errorf("%w: record %d has %d bytes of key, value and headers, at most %d", ErrTooLarge, i, size, MaxRecordBytes)
		}
	}
	return nil
}

// partitionRecord is r as the partition appends it.
func partitionRecord(r *ProduceRecord) partition.Record {
	return partition.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp, HasTimestamp: r.HasTimestamp}
}

// recordTS is the timestamp record r got in batch app: its own on a
// create-time topic (checkRecords refuses one elsewhere), else the batch's.
func recordTS(r *ProduceRecord, app partition.Appended) int64 {
	if r.HasTimestamp {
		return r.Timestamp
	}
	return app.Timestamp
}

// The routes a request hash distinguishes: the same key on the two produce
// routes names two different requests.
const (
	routeTopic     = 1
	routePartition = 2
)

// requestHash identifies a produce request's contents for its key: the
// route, the partition of the single-partition route, and every record's
// partition field, key and value, absent ones told from empty ones, and,
// when any record has them, every record's timestamp and headers (after
// the rest, so a request without either hashes as it always did).
func requestHash(route byte, p int, recs []ProduceRecord) [16]byte {
	h1, h2 := xxhash.New(), xxhash.NewWithSeed(0x9e3779b97f4a7c15)
	var buf [8]byte
	put := func(b []byte) { h1.Write(b); h2.Write(b) }
	num := func(v int64) { binary.LittleEndian.PutUint64(buf[:], uint64(v)); put(buf[:]) }
	bytes := func(v []byte) {
		if v == nil {
			num(-1)
			return
		}
		num(int64(len(v)))
		put(v)
	}
	put([]byte{route})
	num(int64(p))
	num(int64(len(recs)))
	for _, r := range recs {
		if route == routeTopic {
			num(int64(r.Partition))
		}
		bytes(r.Key)
		bytes(r.Value)
	}
	extended := false
	for i := range recs {
		extended = extended || recs[i].HasTimestamp || len(recs[i].Headers) > 0
	}
	if extended {
		for _, r := range recs {
			ts := int64(-1)
			if r.HasTimestamp {
				ts = r.Timestamp
			}
			num(ts)
			num(int64(len(r.Headers)))
			for _, h := range r.Headers {
				num(int64(len(h.Key)))
				put([]byte(h.Key))
				bytes(h.Value)
			}
		}
	}
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:8], h1.Sum64())
	binary.LittleEndian.PutUint64(out[8:], h2.Sum64())
	return out
}
