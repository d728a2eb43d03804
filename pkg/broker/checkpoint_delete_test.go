package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// A reader process with a topic cached reads its partitions' views from the
// checkpoint, not the items: once the topic is deleted (and created again),
// its fetches must not serve the deleted incarnation's records.
func TestCheckpointReaderAfterTopicDelete(t *testing.T) {
	ctx := context.Background()
	store, dir := mem.New(), t.TempDir()
	open := func(owner string) *Broker {
		b, err := New(ctx, Config{DataDir: dir, Meta: store, ReleaseEachBatch: true, Owner: owner, Checkpoint: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	admin, reader := open("admin"), open("reader")
	if _, err := admin.CreateTopic(ctx, TopicSpec{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := admin.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte(fmt.Sprint("old-", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if f, err := reader.Fetch(ctx, FetchRequest{Topic: "s", Offset: 0}); err != nil || len(f.Records) != 3 {
		t.Fatalf("before the delete: %d records, %v", len(f.Records), err) // reader caches the incarnation
	}
	admin.crashAfter = func(s string) bool { return s == "topic" } // files stay: only the checkpoints go
	if err := admin.DeleteTopic(ctx, "s"); !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, TopicSpec{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a stale cache may cost a retry, never old records
		f, err := reader.Fetch(ctx, FetchRequest{Topic: "s", Offset: 0})
		if err == nil {
			if len(f.Records) != 0 {
				t.Fatalf("after delete and re-create: %d records of the deleted incarnation (%q)", len(f.Records), f.Records[0].Value)
			}
			return
		}
		if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrTopicNotFound) {
			t.Fatalf("fetch after delete: %v", err)
		}
	}
	t.Fatal("the reader never saw the re-created topic")
}
