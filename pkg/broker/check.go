package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
)

// HotReport is what CheckHot found in the hot tier that the metadata does
// not account for.
type HotReport struct {
	// Unknown lists directories under the data dir that name no topic
	// incarnation the metadata knows: a topic whose metadata was lost (or
	// a delete in progress in another process).
	Unknown []string
	// Behind lists partitions whose files show more history than their
	// committed state: a segment file created under an epoch the item has
	// not reached, or based past its next offset. Only lost metadata makes
	// that: those files may hold acknowledged records the metadata no
	// longer names. When the metadata store says it lost committed data,
	// an active segment longer than its committed length counts too (it
	// may be an aborted attempt, or records whose commit was lost). The
	// broker refuses writes to these partitions, so nothing is overwritten
	// while an operator looks.
	Behind []BehindPartition
}

// BehindPartition is one partition of HotReport.Behind.
type BehindPartition struct {
	Key        meta.PartitionKey
	Epoch      uint64 // the item's
	NextOffset int64  // the item's
	Segment    string // the first file found beyond them
}

// ErrMetadataBehind means a partition refuses writes because its files show
// history its metadata lost (see CheckHot).
var ErrMetadataBehind = fmt.Errorf("%w: the partition's metadata is behind its files (see the server log); writes refused", ErrUnavailable)

// CheckHot compares the hot tier with the metadata, once at startup: it
// lists every partition directory first and reads the partition item after,
// so files other processes create meanwhile (under newer epochs, at offsets
// below the newer next offset) never look like lost history. Partitions it
// reports as Behind refuse writes from then on (ErrMetadataBehind). lost
// says the metadata store found evidence that it lost committed data.
func (b *Broker) CheckHot(ctx context.Context, lost bool) (HotReport, error) {
	var rep HotReport
	topics, err := b.cfg.Meta.Topics(ctx)
	if err != nil {
		return rep, metaErr("list topics", err)
	}
	known := map[string]meta.TopicConfig{}
	for _, t := range topics {
		known[meta.IncarnationName(t.Name, t.ID)] = t
	}
	ents, err := b.cfg.FS.ReadDir(b.cfg.DataDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return rep, nil
		}
		return rep, fmt.Errorf("broker: check hot tier: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		t, ok := known[e.Name()]
		if !ok {
			if strings.Contains(e.Name(), "~") { // "<topic>~<id>": one of ours
				rep.Unknown = append(rep.Unknown, e.Name())
			}
			continue
		}
		for p := 0; p < t.Partitions; p++ {
			k := meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p}
			if bp, ok, err := b.checkPartition(ctx, k, lost); err != nil {
				return rep, err
			} else if ok {
				rep.Behind = append(rep.Behind, bp)
			}
		}
	}
	if len(rep.Behind) > 0 {
		m := map[meta.PartitionKey]bool{}
		for _, bp := range rep.Behind {
			m[bp.Key] = true
		}
		b.behind.Store(&m)
	}
	return rep, nil
}

func (b *Broker) checkPartition(ctx context.Context, k meta.PartitionKey, lost bool) (BehindPartition, bool, error) {
	ents, err := b.cfg.FS.ReadDir(partition.Dir(b.cfg.DataDir, k))
	if errors.Is(err, fs.ErrNotExist) {
		return BehindPartition{}, false, nil
	}
	if err != nil {
		return BehindPartition{}, false, fmt.Errorf("broker: check %s/%d: %w", k.Topic, k.Partition, err)
	}
	p, err := b.cfg.Meta.Partition(ctx, k) // after the listing: see CheckHot
	if err != nil {
		return BehindPartition{}, false, metaErr("read partition "+k.Topic+"/"+strconv.Itoa(k.Partition), err)
	}
	for _, e := range ents {
		id, kind, ok := segment.ParseName(e.Name())
		if !ok || kind != segment.KindLog {
			continue
		}
		behind := id.Epoch > p.Epoch || id.Base > p.NextOffset
		if a := p.Active; lost && !behind && a != nil && id == (segment.ID{Base: a.Base, Epoch: a.Epoch}) {
			fi, err := e.Info()
			behind = err == nil && fi.Size() > a.Size
		}
		if behind {
			return BehindPartition{Key: k, Epoch: p.Epoch, NextOffset: p.NextOffset, Segment: e.Name()}, true, nil
		}
	}
	return BehindPartition{}, false, nil
}
