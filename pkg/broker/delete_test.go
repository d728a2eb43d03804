package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// A DeleteTopic interrupted at any step (a Lambda timeout, a killed
// process) must never leave a partition that a process with the old
// incarnation cached can keep acknowledging writes into: such a write is
// acknowledged and never readable (I2). Deleting the topic item first and
// the partition items after would leave them writable after a crash between
// the two, and a cached writer only re-checks the incarnation when an item
// looks never written.
func TestInterruptedDeleteNeverAcknowledgesIntoOldIncarnation(t *testing.T) {
	for _, step := range []string{"fence", "topic", "files"} {
		t.Run("crash after "+step, func(t *testing.T) {
			ctx := context.Background()
			open := processes(t)
			a, b := open(), open()
			if _, err := a.CreateTopic(ctx, TopicSpec{Name: "s"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("old")}}); err != nil {
				t.Fatal(err) // b caches the first incarnation
			}
			a.crashAfter = func(s string) bool { return s == step }
			if err := a.DeleteTopic(ctx, "s"); !errors.Is(err, errCrashed) {
				t.Fatalf("delete stopped after %s: %v", step, err)
			}
			a.crashAfter = nil

			// While the delete is unfinished, b's write through its cache is
			// refused (nothing acknowledged).
			if res, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("during")}}); err == nil {
				t.Errorf("b's write into a topic being deleted was acknowledged at %d", res[0].Offset)
			}

			// Finish (or retry) the delete, create the name again, and write
			// through b's stale cache: acknowledged means readable in "s".
			if err := a.DeleteTopic(ctx, "s"); err != nil && !errors.Is(err, ErrTopicNotFound) {
				t.Fatal(err)
			}
			if _, err := a.CreateTopic(ctx, TopicSpec{Name: "s"}); err != nil {
				t.Fatal(err)
			}
			var res []ProduceResult
			var err error
			for range 3 { // a stale cache may cost a retry, never an ack
				if res, err = b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("after")}}); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatalf("produce after re-create: %v", err)
			}
			f, err := a.Fetch(ctx, FetchRequest{Topic: "s", Partition: 0, Offset: 0})
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Records) != 1 || string(f.Records[0].Value) != "after" || f.Records[0].Offset != res[0].Offset {
				t.Errorf("I2: write acknowledged at s/0 offset %d; topic s holds %d records: %v", res[0].Offset, len(f.Records), f.Records)
			}
		})
	}
}

// Two processes with the old incarnation cached open a partition of it for
// the first time after the topic was deleted and created again. The first
// one's Acquire used to create the deleted partition item afresh (epoch 1:
// it looked new, the topic check refused); the second one's Acquire then
// got epoch 2, did not look new, skipped the check and acknowledged a write
// nobody can read. Found by the simulation (stale-item-recreated-skips-verify).
func TestStaleProcessesNeverRecreateDeletedPartitions(t *testing.T) {
	ctx := context.Background()
	open := processes(t)
	adm, b0, b1 := open(), open(), open()
	if _, err := adm.CreateTopic(ctx, TopicSpec{Name: "s", Partitions: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*Broker{b0, b1} {
		if _, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("old")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := adm.DeleteTopic(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, TopicSpec{Name: "s", Partitions: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	var acked []string
	for i, b := range []*Broker{b0, b1, b0, b1} {
		v := fmt.Sprint("new-", i)
		if _, err := b.ProducePartition(ctx, "s", 1, []ProduceRecord{{Value: []byte(v)}}); err == nil {
			acked = append(acked, v)
		}
	}
	f, err := adm.Fetch(ctx, FetchRequest{Topic: "s", Partition: 1, Offset: 0})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.Records {
		got = append(got, string(r.Value))
	}
	if fmt.Sprint(got) != fmt.Sprint(acked) {
		t.Errorf("I2: acknowledged %v, topic s partition 1 holds %v", acked, got)
	}
}

// processes returns a function that starts one more broker process (its own
// lease owner, as a Lambda container is) over one shared metadata store and
// hot tier.
func processes(t *testing.T) func() *Broker {
	store, dir := mem.New(), t.TempDir()
	n := 0
	return func() *Broker {
		n++
		b, err := New(context.Background(), Config{DataDir: dir, Meta: store, ReleaseEachBatch: true, Owner: fmt.Sprint("p", n)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
}

// A produce through a process whose cache still has a topic another
// process deleted is answered topic_not_found at once, not first a
// retriable unavailable: the retry could only find the topic gone.
func TestProduceAfterDeleteElsewhereIsNotFound(t *testing.T) {
	ctx := context.Background()
	open := processes(t)
	a, b := open(), open()
	if _, err := a.CreateTopic(ctx, TopicSpec{Name: "s", Partitions: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("old")}}); err != nil {
		t.Fatal(err) // b caches the topic and has partition 0 open
	}
	if err := a.DeleteTopic(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for p := range 2 { // an open partition, and one b never opened
		_, err := b.ProducePartition(ctx, "s", p, []ProduceRecord{{Value: []byte("late")}})
		if !errors.Is(err, ErrTopicNotFound) {
			t.Errorf("partition %d: produce after the delete elsewhere: %v, want topic not found", p, err)
		}
	}
}
