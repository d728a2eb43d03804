package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

// objects is one process's client of the (simulated) object store: every
// call is a yield point; the store itself is pkg/objstore/mem.
type objects struct {
	inner objstore.Store
	a     *Actor
}

var _ objstore.Store = objects{}

var errObjDead = errors.New("sim: process crashed")

func (o objects) begin(op string) error {
	if !o.a.enter(op, "") {
		return errObjDead
	}
	return nil
}

func (o objects) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if err := o.begin("s3.put"); err != nil {
		return err
	}
	err := o.inner.Put(ctx, key, body, size)
	o.a.note("s3 put %s (%d B): %v", key, size, err)
	return err
}

func (o objects) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	if err := o.begin("s3.put"); err != nil {
		return err
	}
	err := o.inner.PutIfAbsent(ctx, key, body, size)
	o.a.note("s3 put-if-absent %s (%d B): %v", key, size, err)
	return err
}

func (o objects) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := o.begin("s3.get"); err != nil {
		return nil, err
	}
	b, err := o.inner.Get(ctx, key, off, n)
	o.a.note("s3 get %s [%d,+%d): %v", key, off, n, err)
	return b, err
}

func (o objects) Head(ctx context.Context, key string) (objstore.Info, error) {
	if err := o.begin("s3.head"); err != nil {
		return objstore.Info{}, err
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
	return err
}

// AddCompactor adds a compactor (a Lambda invocation per pass, each its own
// NFS client; passes of several compactors may overlap).
func (w *World) AddCompactor(name string) *Actor {
	return w.s.addActor(name, "compactor", w.skew(), w.compactorBody)
}

func (w *World) compactorBody(a *Actor) {
	for {
		w.idle(a)
		cli := w.srv.NewClient(a)
		a.onCrash = cli.crash
		c, err := compactor.New(compactor.Config{
			Meta: w.net.Client(a), Objects: objects{inner: w.objs, a: a},
			HotDir: w.root, FS: cli, Grace: w.cfg.LeaseTTL, IndexIntervalBytes: w.idxB,
			Now: a.Now, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			panic(err)
		}
		a.note("COMPACT pass")
		st, err := c.Partition(bg, w.topic, 0)
		st.FinalizeSeconds = 0 // wall clock: not part of the deterministic trace
		a.note("COMPACT pass: %+v %v", st, err)
		w.res.Faults["compactor pass"]++
	}
}

// coldRead reads committed records below the hot start from the cold tier:
// the catalog entry holding offset, then the artifact.
func (w *World) coldRead(m meta.Store, objs objstore.Store, off int64, max, maxBytes int) ([]segment.Record, error) {
	es, err := m.Segments(bg, w.key, off, 1)
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
func (w *World) readAt(l *partition.Log, m meta.Store, objs objstore.Store, off int64, max, maxBytes int) ([]segment.Record, partition.Bounds, error) {
	recs, b, err := l.Read(bg, off, max, maxBytes)
	if errors.Is(err, partition.ErrNotHot) && w.objs != nil {
		recs, err = w.coldRead(m, objs, off, max, maxBytes)
		if err != nil {
			// Retention may have dropped it since (the broker answers
			// out of range then).
			if p, perr := m.Partition(bg, w.key); perr == nil && off < p.LogStartOffset {
				return nil, b, &partition.OutOfRangeError{Offset: off, LogStartOffset: p.LogStartOffset, HighWatermark: p.NextOffset}
			}
		}
	}
	return recs, b, err
}

// timeNow is for the compactor's topic config.
func (w *World) createTopic() {
	w.topic = meta.TopicConfig{
		Name: w.key.Topic, ID: w.key.TopicID, Partitions: 1,
		SegmentBytes: w.segB, CleanupPolicy: "delete", RetentionBytes: w.retention,
		CreatedMs: w.s.Time().Add(-time.Hour).UnixMilli(),
	}
	if err := w.net.inner.CreateTopic(bg, w.topic); err != nil {
		panic(err)
	}
}
