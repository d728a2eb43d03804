package broker

import (
	"context"
	"math/bits"
	"strconv"
	"sync"

	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

// Encoded fetch answers, kept for readers that ask the same again: the
// fan-out case, where many consumers of one partition fetch the same
// offsets with the same limits (and waiting consumers all wake at the same
// commit). The first asks cost a read and an encoding each; once a request
// was seen before, its answer is kept, and while the partition's log start
// and high watermark are those it was built with, the same request is
// answered with the same bytes: no segment read, no CRC check, no encoding.
//
// Why this is safe: the answer to a fetch is a function of the request and
// of the committed records from its offset on, which never change once
// committed (I1, I2), cut by the request's limits and by the high watermark
// and the log start of the moment. A kept answer is used only when both
// bounds are still those it was built with, so it is an answer the broker
// could give now; checking them costs the look at the committed state that
// any fetch takes (partition.Log.ReadUnless), so a kept answer is never
// served from a deleted incarnation (keys carry the topic's ID, and the
// look fails once the partition is deleted) and never below the log start.
// The shape of a kept answer (where a read that stopped at a segment's end
// cut it) is one a read could give.

// DefaultAnswerCacheBytes is Config.AnswerCacheBytes's default.
const DefaultAnswerCacheBytes = 64 << 20

// answerSeenBytes budgets the keys of answers asked for once (each costs
// its length plus 64 bytes: about 500 keys of a topic ID, the request and
// the encoding): an answer is kept the second time it is asked for, so one
// consumer reading forward keeps nothing and costs no copy.
const answerSeenBytes = 64 << 10

type answers struct {
	kept *tier.Cache // key -> *answer
	seen *tier.Cache // key -> nil: asked for once
}

type answer struct {
	body         []byte
	logStart, hw int64 // the bounds it was built with
}

func newAnswers(budget int64) *answers {
	if budget <= 0 {
		return nil
	}
	return &answers{kept: tier.NewCache(budget), seen: tier.NewCache(answerSeenBytes)}
}

// answerKey names an answer: the partition's incarnation, the request
// (limits as Fetch applies them) and the encoding.
func answerKey(t *topic, req FetchRequest, maxRecords, maxBytes int, format string) string {
	b := make([]byte, 0, 96)
	b = append(b, t.cfg.ID...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(req.Partition), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, req.Offset, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(maxRecords), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(maxBytes), 10)
	b = append(b, '/')
	b = append(b, format...)
	return string(b)
}

// lookup is a fetch's look for a kept answer: fetch sets key once it knows
// the topic, and hit when the committed state's bounds are the answer's.
type lookup struct {
	format string
	key    string
	hit    *answer
	bufs   readBufs // what the fetch read into; reused once the answer is encoded
}

func (a *answers) have(lk *lookup) func(partition.Bounds) bool {
	return func(bd partition.Bounds) bool {
		v, ok := a.kept.Get(lk.key)
		if !ok {
			return false
		}
		e := v.(*answer)
		if e.logStart != bd.LogStartOffset || e.hw != bd.HighWatermark {
			return false
		}
		lk.hit = e
		return true
	}
}

// FetchAnswer is Fetch for a caller that sends answers encoded: format
// names the encoding (each distinct encoding its own name), and encode
// appends the answer for a FetchResult to dst. It returns the encoded
// answer; shared is true when body is a kept answer, which the caller must
// not modify or reuse, and false when body is what encode appended to dst.
// An error is Fetch's, or encode's.
//
// The records of an answer die with it (encode must not keep them), so a
// fetch reads them into buffers that later fetches reuse.
func (b *Broker) FetchAnswer(ctx context.Context, req FetchRequest, format string, dst []byte, encode func(dst []byte, res *FetchResult) ([]byte, error)) (body []byte, shared bool, err error) {
	lk := &lookup{format: format}
	defer lk.bufs.release()
	res, err := b.fetch(ctx, req, lk)
	if err != nil {
		return nil, false, err
	}
	if b.answers == nil {
		body, err = encode(dst, &res)
		return body, false, err
	}
	if lk.hit != nil {
		return lk.hit.body, true, nil
	}
	if len(res.Records) == 0 {
		body, err = encode(dst, &res)
		return body, false, err
	}
	if !b.answers.seen.Contains(lk.key) {
		b.answers.seen.Put(lk.key, nil, int64(len(lk.key))+64)
		body, err = encode(dst, &res)
		return body, false, err
	}
	if body, err = encode(nil, &res); err != nil {
		return nil, false, err
	}
	e := &answer{body: body, logStart: res.LogStartOffset, hw: res.HighWatermark}
	b.answers.kept.Put(lk.key, e, int64(cap(body)+len(lk.key)+64))
	return body, true, nil
}

// readBufs hands out the memory one fetch reads records into: byte
// buffers from pools by power-of-two size, and record slices. It takes all
// of it back when the fetch's answer is encoded (release).
type readBufs struct {
	held []*[]byte
	recs []*[]segment.Record
	sc   segment.Scratch
}

const (
	minReadBufShift = 12 // 4 KiB
	maxReadBufShift = 23 // 8 MiB: larger reads are not pooled
)

var (
	readBufPools [maxReadBufShift + 1]sync.Pool // *[]byte of cap 1<<i
	readRecPool  sync.Pool                      // *[]segment.Record
)

func (r *readBufs) scratch() *segment.Scratch {
	r.sc = segment.Scratch{Bytes: r.alloc, Records: r.records}
	return &r.sc
}

func (r *readBufs) alloc(n int) []byte {
	shift := max(minReadBufShift, bits.Len(uint(max(n, 1)-1)))
	if shift > maxReadBufShift {
		return make([]byte, n)
	}
	p, _ := readBufPools[shift].Get().(*[]byte)
	if p == nil {
		b := make([]byte, 1<<shift)
		p = &b
	}
	r.held = append(r.held, p)
	return (*p)[:n]
}

func (r *readBufs) records(n int) []segment.Record {
	p, _ := readRecPool.Get().(*[]segment.Record)
	if p == nil || cap(*p) < n {
		s := make([]segment.Record, 0, n)
		p = &s
	}
	r.recs = append(r.recs, p)
	return (*p)[:0]
}

func (r *readBufs) release() {
	for _, p := range r.held {
		readBufPools[bits.Len(uint(cap(*p)-1))].Put(p)
	}
	for _, p := range r.recs {
		// Not cleared (that is the zeroing the pool saves): what its
		// stale records point at stays reachable until the next reuse or
		// until the pool drops it at a GC.
		readRecPool.Put(p)
	}
	r.held, r.recs = nil, nil
}
