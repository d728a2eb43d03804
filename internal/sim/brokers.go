package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/tier"
)

// AddBroker adds a broker process (pkg/broker over its own NFS client, meta
// connection and object store client): it produces with ProducePartition
// and reads with Fetch and OffsetForTime, which read the cold tier through
// the broker's own path. release: ReleaseEachBatch (Lambda).
func (w *World) AddBroker(name string, release bool) *Actor {
	return w.s.addActor(name, "broker", w.skew(), func(a *Actor) { w.brokerBody(a, release) })
}

func (w *World) newBroker(a *Actor, release bool) *broker.Broker {
	cli := w.srv.NewClient(a)
	a.onCrash = cli.crash
	for {
		cfg := broker.Config{
			DataDir: w.root, Meta: w.net.Client(a), FS: cli, Objects: objects{inner: w.objs, a: a, w: w},
			Owner: fmt.Sprintf("%s.%d", a.Name, a.incarnation), LeaseTTL: w.cfg.LeaseTTL,
			ReleaseEachBatch: release, IndexIntervalBytes: w.idxB, Cache: tier.NewCache(1 << 20),
			Now: a.Now, Logger: slog.New(slog.DiscardHandler),
			Sleep: w.sleeper(a), Rand: w.rand64, BusyWait: w.busyWait,
			Checkpoint: w.ckpt, AnswerCacheBytes: simAnswerBytes,
			Parallel: w.inSomeOrder, SoloFor: w.soloFor,
		}
		b, err := broker.New(bg, cfg)
		if err == nil {
			return b
		}
		a.note("broker: %v", err)
		w.idle(a)
	}
}

func (w *World) brokerBody(a *Actor, release bool) {
	b := w.newBroker(a, release)
	do := func(at attempt) (partition.Appended, string, error) {
		in := make([]broker.ProduceRecord, len(at.recs))
		for i, r := range at.recs {
			in[i] = broker.ProduceRecord{Key: r.Key, Value: r.Value, Partition: at.p, Headers: r.Headers, Timestamp: r.Timestamp, HasTimestamp: r.HasTimestamp}
		}
		o := broker.ProduceOptions{IdempotencyKey: at.key}
		if at.expected >= 0 {
			e := at.expected
			o.ExpectedOffset = &e
		}
		delete(w.net.lastCommit, a)
		delete(w.net.lastRead, a)
		var out broker.ProduceReply
		var err error
		if at.to != nil {
			out, err = b.ProduceWith(bg, w.topic.Name, in, o)
			if err == nil && len(out.Results) > 0 && out.Results[0].Err != nil {
				err = out.Results[0].Err // the partition's failure
			}
			if err == nil && len(out.Results) > 0 {
				*at.to = out.Results[0].Partition
				at.p = *at.to
			}
		} else {
			out, err = b.ProducePartitionWith(bg, w.topic.Name, at.p, in, o)
		}
		var me *broker.OffsetMismatchError
		switch {
		case errors.As(err, &me):
			return partition.Appended{}, "", &partition.MismatchError{Expected: me.Expected, HighWatermark: me.HighWatermark}
		case errors.Is(err, broker.ErrIdempotencyKeyReused):
			return partition.Appended{}, "", fmt.Errorf("%w: %w", partition.ErrKeyReused, err)
		case errors.Is(err, broker.ErrIdempotencyKeyInUse):
			return partition.Appended{}, "", fmt.Errorf("%w: %w", partition.ErrKeyInUse, err)
		case err != nil:
			return partition.Appended{}, "", err
		}
		if len(out.Results) != len(in) {
			w.fail(fmt.Errorf("I8: %s: produce of %d records to %d answered %d results", a.Name, len(in), at.p, len(out.Results)))
			return partition.Appended{}, "", fmt.Errorf("%w: bad answer", broker.ErrUnavailable)
		}
		// One batch: dense offsets, one server timestamp for the records
		// without their own; those with one (create time) answered theirs.
		serverTS := int64(-1)
		for i, r := range out.Results {
			own := in[i].HasTimestamp
			if own && r.Timestamp != in[i].Timestamp {
				w.fail(fmt.Errorf("%s: produce to %d answered record %d with timestamp %d; it was sent with %d", a.Name, at.p, i, r.Timestamp, in[i].Timestamp))
			}
			if !own && serverTS < 0 {
				serverTS = r.Timestamp
			}
			if r.Offset != out.Results[0].Offset+int64(i) || !own && r.Timestamp != serverTS {
				w.fail(fmt.Errorf("I8: %s: produce to %d answered record %d at offset %d ts %d, record 0 at %d ts %d: not one batch", a.Name, at.p, i, r.Offset, r.Timestamp, out.Results[0].Offset, serverTS))
			}
		}
		// The incarnation: of the broker's own commit; else (a replayed
		// answer, or a batch another leader committed) of its last read.
		id := w.net.lastRead[a].id
		if lc, ok := w.net.lastCommit[a]; ok {
			id = lc.id
		}
		return partition.Appended{BaseOffset: out.Results[0].Offset, Timestamp: max(serverTS, 0), Replayed: out.Replayed}, id, nil
	}
	w.resumePending(a, do)
	for {
		c := w.idle(a)
		switch c.kind {
		case cmdAppend:
			if c.routed {
				w.produceRouted(a, c.pad, do)
				continue
			}
			w.produce(a, c.p, c.n, c.pad, c.mode, do)
		case cmdRead:
			if last, ok := w.lastAsk[a]; ok && c.reask && last.p == c.p {
				c.offset, c.max, c.maxBytes = last.offset, last.max, last.maxBytes
			}
			w.lastAsk[a] = c
			for range 1 + c.again {
				w.brokerFetch(a, b, c)
			}
		case cmdOffsetForTime:
			w.brokerOffsetForTime(a, b, c)
		}
	}
}

// current is the model of the partition a broker operation went to, or
// nil when it went to another incarnation than the current one (a cached
// one; checkStale says whether that was allowed).
func (w *World) current(a *Actor, p int, what string, served int) *part {
	rd, ok := w.net.lastRead[a]
	if !ok || len(w.parts) == 0 || rd.id != w.topic.ID {
		if at, gone := w.gone[rd.id]; ok && gone && rd.step > at && served > 0 {
			w.fail(fmt.Errorf("audit finding 3: %s's %s of %s/%d read incarnation %s at step %d, after its topic item was deleted at step %d: it serves %d records of a deleted topic under the name",
				a.Name, what, w.topic.Name, p, rd.id, rd.step, at, served))
		}
		return nil
	}
	return w.parts[p]
}

// simAnswerBytes budgets each broker's kept answers: small, so that
// answers are evicted as well as kept.
const simAnswerBytes = 16 << 10

// brokerFetch: a fetch racing tiering and retention answers records or
// out of range, never another error; one below the high watermark that
// answers records answers at least one; damaged records are refused, never served.
//
// Brokers fetch through FetchAnswer, as the HTTP API does, with JSON of
// the result as the encoding; the answers they keep are checked as every
// other answer is.
func (w *World) brokerFetch(a *Actor, b *broker.Broker, c cmd) {
	a.note("FETCH %d from %d max %d/%dB", c.p, c.offset, c.max, c.maxBytes)
	start := w.readStart(c.p)
	delete(w.net.lastRead, a)
	var res broker.FetchResult
	encoded := false
	body, _, err := b.FetchAnswer(bg, broker.FetchRequest{Topic: w.topic.Name, Partition: c.p, Offset: c.offset, MaxRecords: c.max, MaxBytes: c.maxBytes}, "sim-json", nil,
		func(dst []byte, res *broker.FetchResult) ([]byte, error) {
			encoded = true
			out, err := json.Marshal(res)
			return append(dst, out...), err
		})
	if err == nil {
		if !encoded {
			w.res.KeptAnswers++
		}
		if uerr := json.Unmarshal(body, &res); uerr != nil {
			w.fail(fmt.Errorf("%s: fetch %d from %d: answer does not decode: %v", a.Name, c.p, c.offset, uerr))
			return
		}
	}
	w.res.Reads++
	a.note("FETCH %d from %d: %d records, hw %d, log start %d, %v", c.p, c.offset, len(res.Records), res.HighWatermark, res.LogStartOffset, err)
	pm := w.current(a, c.p, "fetch", len(res.Records))
	if err != nil {
		var oor *broker.OffsetOutOfRangeError
		switch {
		case errors.As(err, &oor):
			if pm != nil {
				w.checkOutOfRange(a, c, start, oor.HighWatermark)
			}
		case errors.Is(err, broker.ErrUnavailable), errors.Is(err, broker.ErrTopicNotFound), errors.Is(err, errS3):
			// (an injected S3 5xx is unavailable; errS3 stays accepted
			// for reads that fail before the broker classifies them)
		case pm != nil && w.damageExplains(pm, err):
		case pm == nil && len(w.gone) > 0 && isDamage(err):
			// an older incarnation's damage (deleted since, and maybe
			// not created again yet)
		default:
			w.fail(fmt.Errorf("audit findings 5/7: %s: fetch %d from %d (committed hw %d) answered neither records nor out of range: %v", a.Name, c.p, c.offset, w.hw(c.p), err))
		}
		return
	}
	if pm == nil {
		return
	}
	if len(res.Records) == 0 && c.offset < res.HighWatermark {
		w.fail(fmt.Errorf("audit finding 8: %s: fetch %d from %d below the high watermark %d answered no records (max %d records, %d bytes)", a.Name, c.p, c.offset, res.HighWatermark, c.max, c.maxBytes))
	}
	w.checkRecords(pm, c.offset, res.Records, "broker "+a.Name)
	w.checkReaderHW(a, pm, res.HighWatermark)
	w.checkClient(a, c, start, len(res.Records), res.HighWatermark)
}

func (w *World) hw(p int) int64 {
	if p < len(w.parts) {
		return w.committed(w.parts[p]).NextOffset
	}
	return -1
}

// brokerOffsetForTime checks Broker.OffsetForTime against the model at
// once: the answer is at or before the first known record (acknowledged or
// read) at or after the time that was committed when the lookup started
// and is above the log start when it ended; it is found if there is one;
// its record is at or after the time. A lookup racing tiering must not skip a
// segment.
func (w *World) brokerOffsetForTime(a *Actor, b *broker.Broker, c cmd) {
	var hw0 int64 = -1
	if c.p < len(w.parts) {
		hw0 = w.committed(w.parts[c.p]).NextOffset
	}
	id0 := w.topic.ID
	delete(w.net.lastRead, a)
	to, err := b.OffsetForTime(bg, w.topic.Name, c.p, c.ts)
	a.note("OFFSET FOR TIME %d of %d: %+v %v", c.ts, c.p, to, err)
	pm := w.current(a, c.p, "offset for time", 0)
	if err != nil {
		switch {
		case errors.Is(err, broker.ErrUnavailable), errors.Is(err, broker.ErrTopicNotFound), errors.Is(err, errS3):
		case pm != nil && w.damageExplains(pm, err):
		case pm == nil && len(w.gone) > 0 && isDamage(err):
			// an older incarnation's damage (as for fetches)
		default:
			w.fail(fmt.Errorf("%s: offset for time %d of %d: %v", a.Name, c.ts, c.p, err))
		}
		return
	}
	if pm == nil || id0 != w.topic.ID || len(pm.damaged) > 0 {
		return
	}
	start := w.committed(pm).LogStartOffset
	first := int64(-1)
	known := func(off int64) (rec, bool) {
		if r, ok := pm.acked[off]; ok {
			return r, true
		}
		r, ok := pm.seen[off]
		return r, ok
	}
	for off := start; off < hw0; off++ {
		if r, ok := known(off); ok && r.ts >= c.ts {
			first = off
			break
		}
	}
	switch {
	case first >= 0 && !to.Found:
		w.fail(fmt.Errorf("audit finding 5: %s: offset for time %d of %d found nothing; offset %d (committed, above the log start %d) has a timestamp at or after it", a.Name, c.ts, c.p, first, start))
	case first >= 0 && to.Offset > first:
		r, _ := known(first)
		w.fail(fmt.Errorf("audit finding 5: %s: offset for time %d of %d answered %d; offset %d has timestamp %d, at or after it (log start %d): a segment was skipped", a.Name, c.ts, c.p, to.Offset, first, r.ts, start))
	case to.Found && to.Timestamp < c.ts:
		w.fail(fmt.Errorf("I6: %s: offset for time %d of %d answered %d with timestamp %d, before it", a.Name, c.ts, c.p, to.Offset, to.Timestamp))
	}
	if to.Found {
		if r, ok := known(to.Offset); ok && r.ts != to.Timestamp {
			w.fail(fmt.Errorf("I6: %s: offset for time %d of %d answered %d with timestamp %d; it has %d", a.Name, c.ts, c.p, to.Offset, to.Timestamp, r.ts))
		}
	}
}

// AddAdmin adds the admin process of churn seeds: now and then it deletes
// the topic through Broker.DeleteTopic (a crash may interrupt it: the
// restarted process deletes again) and creates the next incarnation.
func (w *World) AddAdmin(name string) *Actor {
	return w.s.addActor(name, "admin", w.skew(), w.adminBody)
}

func (w *World) adminBody(a *Actor) {
	b := w.newBroker(a, true)
	for {
		c := w.idle(a)
		_, err := w.net.inner.Topic(bg, w.topic.Name)
		exists := err == nil
		switch {
		case c.kind == cmdUpdate:
			w.updateTopic(a, b, c.n)
		case !exists && !w.churn:
			a.pausedUntil = w.s.now + w.s.between(100*time.Millisecond, 500*time.Millisecond)
		case !exists:
			a.note("CREATE TOPIC %s", w.topic.Name)
			err := w.createTopic(a)
			a.note("CREATE TOPIC %s: %v", w.topic.Name, err)
			if err == nil {
				w.deleting = false
			}
		case w.updates && !w.quiet && w.s.rng.IntN(30) == 0:
			w.updateTopic(a, b, w.s.rng.IntN(3))
		case w.churn && (w.deleting || (!w.quiet && (w.script || w.s.rng.IntN(40) == 0))):
			// An operator retries a delete that did not finish (a crash).
			w.deleting = true
			a.note("DELETE TOPIC %s", w.topic.Name)
			err := b.DeleteTopic(bg, w.topic.Name)
			a.note("DELETE TOPIC %s: %v", w.topic.Name, err)
		default:
			a.pausedUntil = w.s.now + w.s.between(100*time.Millisecond, 500*time.Millisecond)
		}
	}
}

// maxParts bounds the partitions a topic update grows a topic to.
const maxParts = 4

// updateTopic has the admin update the topic through Broker.UpdateTopic:
// k 0, one more partition (its directory made first, as createTopic does);
// 1, another segment size; 2, another segment age.
func (w *World) updateTopic(a *Actor, b *broker.Broker, k int) {
	var patch broker.TopicPatch
	what := ""
	switch {
	case k == 0 && w.nparts < maxParts:
		n := w.nparts + 1
		dir := partition.Dir(w.root, meta.PartitionKey{Topic: w.topic.Name, TopicID: w.topic.ID, Partition: n - 1})
		if err := w.srv.NewClient(a).MkdirAll(dir, 0o755); err != nil {
			a.note("UPDATE TOPIC: mkdir: %v", err)
			return
		}
		patch.Partitions, what = &n, fmt.Sprintf("partitions %d", n)
	case k == 1:
		v := 256 + w.s.rng.Int64N(1200)
		patch.SegmentBytes, what = &v, fmt.Sprintf("segment_bytes %d", v)
	default:
		v := [...]int64{500, 1500, broker.DefaultSegmentMs}[w.s.rng.IntN(3)]
		patch.SegmentMs, what = &v, fmt.Sprintf("segment_ms %d", v)
	}
	a.note("UPDATE TOPIC %s: %s", w.topic.Name, what)
	_, err := b.UpdateTopic(bg, w.topic.Name, patch)
	a.note("UPDATE TOPIC %s: %s: %v", w.topic.Name, what, err)
}
