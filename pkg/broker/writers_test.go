package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// A broker keeps at most MaxOpenWriters partitions' writers (their files
// open, their leases held), and releases one idle for WriterIdle: every
// record stays readable, and a released partition's next write continues
// it.
func TestWriterBudget(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store := mem.New()
	b, err := New(ctx, Config{DataDir: t.TempDir(), Meta: store, MaxOpenWriters: 3, WriterIdle: time.Minute,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 8 {
		name := fmt.Sprintf("t%d", i)
		if _, err := b.CreateTopic(ctx, TopicSpec{Name: name, Partitions: ptr(1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ProducePartition(ctx, name, 0, []ProduceRecord{{Value: []byte("a")}}); err != nil {
			t.Fatal(err)
		}
		if n := b.writers.len(); n > 3 {
			t.Fatalf("after %d partitions written: %d writers kept, budget 3", i+1, n)
		}
	}
	held := func(name string) bool {
		tp, _ := b.Topic(ctx, name)
		p, err := store.Partition(ctx, meta.PartitionKey{Topic: tp.Name, TopicID: tp.ID, Partition: 0})
		return err == nil && p.Owner != ""
	}
	if held("t0") || !held("t7") {
		t.Errorf("lease of t0 (least recently written) held %v, of t7 %v: want released, held", held("t0"), held("t7"))
	}
	now = now.Add(2 * time.Minute)
	if _, err := b.ProducePartition(ctx, "t0", 0, []ProduceRecord{{Value: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	if n := b.writers.len(); n != 1 || held("t7") {
		t.Errorf("after %v idle: %d writers kept (want 1), t7's lease held %v", 2*time.Minute, n, held("t7"))
	}
	for i := range 8 {
		f, err := b.Fetch(ctx, FetchRequest{Topic: fmt.Sprintf("t%d", i), Offset: 0, MaxRecords: 10, MaxBytes: 1 << 20})
		want := 1
		if i == 0 {
			want = 2
		}
		if err != nil || len(f.Records) != want {
			t.Errorf("t%d: %d records %v, want %d", i, len(f.Records), err, want)
		}
	}
}
