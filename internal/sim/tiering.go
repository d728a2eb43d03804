package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

type segRecord = segment.Record

// ObjFaults are the rates (per call) of the object store's faults.
type ObjFaults struct {
	PutFail       float64 // a put is not applied; the caller gets an error
	PutLostAnswer float64 // a put is applied; the caller gets an error
	GetFail       float64 // a get or head fails (a 5xx)
	// Slow: the call takes a while (the actor is paused 50-1500 ms of
	// virtual time with the request done, before it sees the answer): a
	// yield point long enough for a pass or a takeover in between.
	Slow float64
}

// objects is one process's client of the (simulated) object store: every
// call is a yield point; the store itself is pkg/objstore/mem, behind the
// faults of ObjFaults. A get right after a delete answers not-found (the
// store is strongly consistent, as S3 is).
type objects struct {
	inner objstore.Store
	a     *Actor
	w     *World // nil: no faults (the checker)
}

var _ objstore.Store = objects{}

var errObjDead = errors.New("sim: process crashed")

func (o objects) begin(op string) error {
	if !o.a.enter(op, "") {
		return errObjDead
	}
	return nil
}

func (o objects) fault(p func(ObjFaults) float64) bool {
	if o.w == nil || o.a == nil || o.w.srv.off {
		return false
	}
	return o.w.s.chance(p(o.w.cfg.Objects))
}

func slowRate(f ObjFaults) float64 { return f.Slow }
func putFail(f ObjFaults) float64  { return f.PutFail }
func putLost(f ObjFaults) float64  { return f.PutLostAnswer }
func getFail(f ObjFaults) float64  { return f.GetFail }

// slow pauses the actor after the request was served: its answer comes
// late.
func (o objects) slow() {
	if o.fault(slowRate) {
		o.a.pausedUntil = o.w.s.now + o.w.s.between(50*time.Millisecond, 1500*time.Millisecond)
		o.w.res.Faults["s3 slow"]++
		o.a.enter("s3.answer", "")
	}
}

var errS3 = errors.New("sim: s3: 503 slow down")

func (o objects) put(key string, body io.Reader, size int64, f func(io.Reader) error) error {
	if err := o.begin("s3.put"); err != nil {
		return err
	}
	if o.fault(putFail) {
		o.w.res.Faults["s3 put fail"]++
		o.a.note("s3 put %s: refused", key)
		return errS3
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	err = f(bytes.NewReader(b))
	if o.fault(putLost) {
		o.w.res.Faults["s3 put lost answer"]++
		o.a.note("s3 put %s (%d B): %v, answer lost", key, size, err)
		return errS3
	}
	o.a.note("s3 put %s (%d B): %v", key, size, err)
	o.slow()
	return err
}

func (o objects) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	return o.put(key, body, size, func(r io.Reader) error { return o.inner.Put(ctx, key, r, size) })
}

func (o objects) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	return o.put(key, body, size, func(r io.Reader) error { return o.inner.PutIfAbsent(ctx, key, r, size) })
}

func (o objects) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := o.begin("s3.get"); err != nil {
		return nil, err
	}
	if o.fault(getFail) {
		o.w.res.Faults["s3 get fail"]++
		o.a.note("s3 get %s: 500", key)
		return nil, errS3
	}
	b, err := o.inner.Get(ctx, key, off, n)
	o.a.note("s3 get %s [%d,+%d): %v", key, off, n, err)
	o.slow()
	return b, err
}

func (o objects) Head(ctx context.Context, key string) (objstore.Info, error) {
	if err := o.begin("s3.head"); err != nil {
		return objstore.Info{}, err
	}
	if o.fault(getFail) {
		o.w.res.Faults["s3 get fail"]++
		return objstore.Info{}, errS3
	}
	return o.inner.Head(ctx, key)
}

func (o objects) List(ctx context.Context, prefix string) ([]objstore.Info, error) {
	if err := o.begin("s3.list"); err != nil {
		return nil, err
	}
	return o.inner.List(ctx, prefix)
}

func (o objects) Delete(ctx context.Context, key string) error {
	if err := o.begin("s3.delete"); err != nil {
		return err
	}
	err := o.inner.Delete(ctx, key)
	o.a.note("s3 delete %s: %v", key, err)
	o.slow()
	return err
}

// coldRead reads committed records below the hot start from the cold tier:
// the catalog entry holding offset, then the artifact.
func (w *World) coldRead(pm *part, m meta.Store, objs objstore.Store, off int64, max, maxBytes int) ([]segment.Record, error) {
	es, err := m.Segments(bg, pm.key, off, 1)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 || es[0].Base > off {
		return nil, fmt.Errorf("offset %d is in no catalog entry", off)
	}
	return tier.NewReader(objs, tier.NewCache(1<<20)).Read(bg, es[0], off, max, maxBytes, tier.Options{})
}

// readAt reads from l (hot), or the cold tier when the offset is there,
// once more from the hot tier if the cold read races tiering or retention
// the other way.
func (w *World) readAt(pm *part, l *partition.Log, m meta.Store, objs objstore.Store, off int64, max, maxBytes int) ([]segment.Record, partition.Bounds, error) {
	recs, b, err := l.Read(bg, off, max, maxBytes)
	if errors.Is(err, partition.ErrNotHot) && w.objs != nil {
		recs, err = w.coldRead(pm, m, objs, off, max, maxBytes)
		if err != nil {
			// Retention may have dropped it since (the broker answers
			// out of range then); a get may fail (a 5xx).
			p, perr := m.Partition(bg, pm.key)
			switch {
			case perr != nil:
				// Whether retention explains the miss is unknown: so is
				// the answer (the broker answers 503 then).
				return nil, b, fmt.Errorf("%w: %w (and the item read failed: %w)", partition.ErrUnavailable, err, perr)
			case off < p.LogStartOffset:
				return nil, b, &partition.OutOfRangeError{Offset: off, LogStartOffset: p.LogStartOffset, HighWatermark: p.NextOffset}
			}
			if errors.Is(err, errS3) {
				err = fmt.Errorf("%w: %w", partition.ErrUnavailable, err)
			}
		}
	}
	return recs, b, err
}

// createTopic creates the next incarnation of the topic: its directories,
// then its item (as Broker.CreateTopic does, with an id from the seed: a
// random one would make runs differ). a nil: at world creation, no faults.
func (w *World) createTopic(a *Actor) error {
	t := meta.TopicConfig{
		Name: "t", ID: fmt.Sprintf("id%d", w.inc+1), Partitions: w.nparts,
		SegmentBytes: w.segB, SegmentMs: broker.DefaultSegmentMs, CleanupPolicy: "delete", RetentionBytes: w.retention, RetentionMs: -1,
		CreatedMs: w.s.Time().Add(-time.Hour).UnixMilli(), CacheEnabled: w.cacheOn,
	}
	if w.retention == 0 {
		t.RetentionBytes = -1
	}
	if w.createTime {
		t.TimestampType = broker.TimestampCreate
	}
	cli := w.srv.NewClient(a)
	for p := range t.Partitions {
		dir := partition.Dir(w.root, meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p})
		if err := cli.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	err := w.net.Client(a).CreateTopic(bg, t)
	if errors.Is(err, meta.ErrTopicExists) {
		if cur, _ := w.net.inner.Topic(bg, t.Name); cur.ID == t.ID {
			err = nil // an earlier attempt landed
		}
	}
	return err
}

// onTopicCreated is called when a topic item lands in the store: the model
// starts the new incarnation.
func (w *World) onTopicCreated(t meta.TopicConfig) {
	w.inc++
	w.topic = t
	w.parts = nil
	for p := range t.Partitions {
		w.parts = append(w.parts, newPart(meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p}, w.root))
	}
	w.s.eventf("TOPIC %s created as %s", t.Name, t.ID)
}

// onTopicUpdated is called when a topic update lands in the store: the
// model takes the new partitions of the current incarnation.
func (w *World) onTopicUpdated(t meta.TopicConfig) {
	if t.ID != w.topic.ID {
		return
	}
	for p := len(w.parts); p < t.Partitions; p++ {
		w.parts = append(w.parts, newPart(meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p}, w.root))
	}
	w.topic = t
	w.nparts = max(w.nparts, t.Partitions)
	w.s.eventf("TOPIC %s updated: %d partitions, segment %d B, %d ms", t.Name, t.Partitions, t.SegmentBytes, t.SegmentMs)
}

// onTopicDeleted is called when a topic item is deleted in the store: its
// acknowledged records are gone legitimately; an acknowledgement of a
// commit into it after this is a violation (an acknowledged write must be
// readable under the topic name).
func (w *World) onTopicDeleted(cur meta.TopicConfig) {
	w.gone[cur.ID] = w.s.step
	if cur.ID == w.topic.ID {
		w.parts = nil
	}
	w.s.eventf("TOPIC %s (%s) deleted", cur.Name, cur.ID)
}

type metaSeg = meta.SegmentInfo
