package partition

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// readCountingStore counts partition item reads.
type readCountingStore struct {
	meta.Store
	reads atomic.Int64
}

func (s *readCountingStore) Partition(ctx context.Context, k meta.PartitionKey) (meta.Partition, error) {
	s.reads.Add(1)
	return s.Store.Partition(ctx, k)
}

// A reader with the checkpoint learns of another process's commits from
// the hot tier: no item read per read; and its view never goes back.
func TestCheckpointServesReadsWithoutItemReads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	writer := e.openWith("w", false, func(c *Config) { c.Checkpoint = true })
	rs := &readCountingStore{Store: e.store}
	reader := e.openWith("r", false, func(c *Config) { c.Checkpoint = true; c.Meta = rs })
	for i := range 5 {
		if _, err := writer.Append(ctx, batch("a", 2)); err != nil {
			t.Fatal(err)
		}
		e.clock.advance(10 * ckptFresh) // past the reader's reuse of its last checkpoint read
		before := rs.reads.Load()
		recs, b, err := reader.Read(ctx, 0, 1000, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(2 * (i + 1)); b.HighWatermark != want || int64(len(recs)) != want {
			t.Fatalf("after %d commits: hw %d, %d records; want %d", i+1, b.HighWatermark, len(recs), want)
		}
		if n := rs.reads.Load() - before; n != 0 {
			t.Fatalf("a read after a commit made %d item reads, want none", n)
		}
	}
	// A late checkpoint of an older commit never moves a reader back.
	p, _ := e.store.Partition(ctx, e.key)
	old := p
	old.Version, old.NextOffset = p.Version-4, p.NextOffset-2
	writer.writeCheckpoint(&old, e.clock.now(), false, false)
	e.clock.advance(10 * ckptFresh)
	if b, err := reader.Bounds(ctx); err != nil || b.HighWatermark != p.NextOffset {
		t.Fatalf("after a late checkpoint: %+v %v, want hw %d", b, err, p.NextOffset)
	}
}
