package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// A partition count grown through one process reaches another process's
// topic cache within TopicRefresh, and a group's assignment follows it.
func TestTopicGrowthAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	store, dir := mem.New(), t.TempDir()
	clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	var bs []*Broker
	for _, owner := range []string{"a", "b"} { // two processes over one hot tier, as Lambda containers on EFS
		b, err := New(ctx, Config{DataDir: dir, Meta: store, Now: clock.Now, Owner: owner, ReleaseEachBatch: true, TopicRefresh: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		bs = append(bs, b)
	}
	a, b := bs[0], bs[1]
	if _, err := a.CreateTopic(ctx, TopicSpec{Name: "t0", Partitions: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	// b caches the topic with 2 partitions and opens one.
	if _, err := b.Produce(ctx, "t0", []ProduceRecord{{Value: []byte("x"), Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	m, err := b.JoinGroup(ctx, "g", []string{"t0"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := partsOf(m, "t0"); len(got) != 2 {
		t.Fatalf("assignment before growth: %v", got)
	}
	grown, err := a.UpdateTopic(ctx, "t0", TopicPatch{Partitions: ptr(4), RetentionMs: ptr(int64(1000))})
	if err != nil || grown.Partitions != 4 || grown.RetentionMs != 1000 {
		t.Fatalf("UpdateTopic: %+v %v", grown, err)
	}
	// a sees it at once; b still has its cached view.
	if _, err := a.Produce(ctx, "t0", []ProduceRecord{{Value: []byte("y"), Partition: 3}}); err != nil {
		t.Fatalf("produce to a new partition through the updating process: %v", err)
	}
	if _, err := b.Produce(ctx, "t0", []ProduceRecord{{Value: []byte("y"), Partition: 3}}); !errors.Is(err, ErrPartitionNotFound) {
		t.Fatalf("produce through a process within its refresh interval: %v, want ErrPartitionNotFound", err)
	}
	clock.Advance(5 * time.Second)
	if _, err := b.Produce(ctx, "t0", []ProduceRecord{{Value: []byte("z"), Partition: 3}}); err != nil {
		t.Fatalf("produce after the refresh interval: %v", err)
	}
	// The partition b had open keeps its log: its records are all there.
	f, err := b.Fetch(ctx, FetchRequest{Topic: "t0", Partition: 1})
	if err != nil || len(f.Records) != 1 {
		t.Fatalf("fetch of the partition open before the growth: %+v %v", f, err)
	}
	f, err = b.Fetch(ctx, FetchRequest{Topic: "t0", Partition: 3})
	if err != nil || len(f.Records) != 2 {
		t.Fatalf("fetch of the new partition: %+v %v", f, err)
	}
	hb, err := b.Heartbeat(ctx, "g", m.MemberID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := partsOf(hb, "t0"); len(got) != 4 || hb.Generation <= m.Generation {
		t.Fatalf("assignment after growth: %v generation %d (was %d)", got, hb.Generation, m.Generation)
	}
	if _, err := a.UpdateTopic(ctx, "t0", TopicPatch{Partitions: ptr(3)}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("shrink: %v, want ErrInvalid", err)
	}
	if _, err := a.UpdateTopic(ctx, "t0", TopicPatch{SegmentBytes: ptr(int64(1))}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("segment_bytes 1: %v, want ErrInvalid", err)
	}
	if _, err := a.UpdateTopic(ctx, "nope", TopicPatch{Partitions: ptr(3)}); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// A segment_bytes update reaches a partition this process has open: its
// next write rolls at the new size, not at the one it was opened with.
func TestSegmentBytesUpdateReachesOpenPartition(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	b, err := New(ctx, Config{DataDir: t.TempDir(), Meta: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	tp, err := b.CreateTopic(ctx, TopicSpec{Name: "roll"})
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]ProduceRecord, 10)
	for i := range batch {
		batch[i] = ProduceRecord{Value: make([]byte, 1000), Partition: 0}
	}
	sealed := func() int {
		p, err := store.Partition(ctx, meta.PartitionKey{Topic: tp.Name, TopicID: tp.ID, Partition: 0})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Sealed)
	}
	if _, err := b.Produce(ctx, "roll", batch); err != nil { // opens the partition: 16 MiB segments
		t.Fatal(err)
	}
	if _, err := b.Produce(ctx, "roll", batch); err != nil {
		t.Fatal(err)
	}
	if n := sealed(); n != 0 {
		t.Fatalf("%d sealed segments before the update, want 0", n)
	}
	if _, err := b.UpdateTopic(ctx, "roll", TopicPatch{SegmentBytes: ptr(int64(MinSegmentBytes))}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Produce(ctx, "roll", batch); err != nil {
		t.Fatal(err)
	}
	if n := sealed(); n != 1 {
		t.Fatalf("%d sealed segments after segment_bytes went to %d with a 20 KB active segment, want 1", n, MinSegmentBytes)
	}
}
