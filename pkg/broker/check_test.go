package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// Metadata that lost committed state (a truncated journal, a restored
// backup) must be reported at startup, and the partitions whose files show
// the lost history must not be written: the next write would reuse offsets
// whose acknowledged records are still on disk.
func TestCheckHotReportsLostMetadata(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := mem.New()
	b, err := New(ctx, Config{DataDir: dir, Meta: store})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := b.CreateTopic(ctx, TopicSpec{Name: "t", Partitions: ptr(2)})
	if err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		if _, err := b.ProducePartition(ctx, "t", p, []ProduceRecord{{Value: []byte("acked")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "gone~0123456789abcdef", "0"), 0o755); err != nil {
		t.Fatal(err)
	}

	// The metadata loses partition 0's history; partition 1 keeps its own.
	lost := mem.New()
	if err := lost.CreateTopic(ctx, tp); err != nil {
		t.Fatal(err)
	}
	k1 := meta.PartitionKey{Topic: "t", TopicID: tp.ID, Partition: 1}
	p1, _ := store.Partition(ctx, k1)
	if _, err := lost.Acquire(ctx, k1, "x", b.cfg.Now(), 0); err != nil {
		t.Fatal(err)
	}
	if err := lost.Commit(ctx, withLease(p1, lost, k1), true, b.cfg.Now(), 0); err != nil {
		t.Fatal(err)
	}

	b2, err := New(ctx, Config{DataDir: dir, Meta: lost})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	rep, err := b2.CheckHot(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unknown) != 1 || rep.Unknown[0] != "gone~0123456789abcdef" {
		t.Errorf("unknown dirs %v, want the one no topic names", rep.Unknown)
	}
	if len(rep.Behind) != 1 || rep.Behind[0].Key.Partition != 0 {
		t.Fatalf("behind %+v, want partition 0 only", rep.Behind)
	}
	if _, err := b2.ProducePartition(ctx, "t", 0, []ProduceRecord{{Value: []byte("would overwrite")}}); !errors.Is(err, ErrMetadataBehind) {
		t.Errorf("write to a partition whose metadata is behind: %v, want ErrMetadataBehind", err)
	}
	if _, err := b2.ProducePartition(ctx, "t", 1, []ProduceRecord{{Value: []byte("fine")}}); err != nil {
		t.Errorf("write to an intact partition: %v", err)
	}
}

// withLease is p's committed state under the lease just acquired in s.
func withLease(p meta.Partition, s meta.Store, k meta.PartitionKey) meta.Partition {
	cur, _ := s.Partition(context.Background(), k)
	p.Epoch, p.Owner, p.Version = cur.Epoch, cur.Owner, cur.Version
	return p
}

// A journal that lost its last commits leaves the active segment longer
// than its committed length, with no file beyond the item's epoch or next
// offset. That also happens after an aborted attempt, so it counts only when
// the metadata store says it lost committed data.
func TestCheckHotActiveLongerThanLostCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := mem.New()
	b, err := New(ctx, Config{DataDir: dir, Meta: store})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := b.CreateTopic(ctx, TopicSpec{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	k := meta.PartitionKey{Topic: "t", TopicID: tp.ID, Partition: 0}
	if _, err := b.ProducePartition(ctx, "t", 0, []ProduceRecord{{Value: []byte("first")}}); err != nil {
		t.Fatal(err)
	}
	early, _ := store.Partition(ctx, k)
	for range 2 {
		if _, err := b.ProducePartition(ctx, "t", 0, []ProduceRecord{{Value: []byte("acked, then forgotten")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The metadata as it was after the first batch.
	lost := mem.New()
	if err := lost.CreateTopic(ctx, tp); err != nil {
		t.Fatal(err)
	}
	if _, err := lost.Acquire(ctx, k, "x", b.cfg.Now(), 0); err != nil {
		t.Fatal(err)
	}
	if err := lost.Commit(ctx, withLease(early, lost, k), true, b.cfg.Now(), 0); err != nil {
		t.Fatal(err)
	}
	for _, knownLost := range []bool{false, true} {
		b2, err := New(ctx, Config{DataDir: dir, Meta: lost})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := b2.CheckHot(ctx, knownLost)
		b2.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rep.Behind) == 1; got != knownLost {
			t.Errorf("metadata known lost %v: behind %+v", knownLost, rep.Behind)
		}
	}
}
