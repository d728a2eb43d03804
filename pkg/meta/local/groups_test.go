package local

import (
	"context"
	"reflect"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Group state items, offset deletes and group deletes survive a reopen,
// from the journal and from a snapshot.
func TestGroupStateReopen(t *testing.T) {
	for _, snap := range []int64{0, 256} {
		dir := t.TempDir()
		s := openT(t, dir, WithSnapshotBytes(snap))
		ctx := context.Background()
		g := meta.GroupState{Group: "billing", Generation: 2, Members: []meta.GroupMember{{ID: "m", Topics: []string{"orders"},
			SessionTimeoutMs: 1000, ExpiresMs: 5, Assignments: []meta.TopicPartitions{{Topic: "orders", Partitions: []int{0, 1}}}}},
			OffsetTopics: []string{"orders"}}
		must(t, s.PutGroup(ctx, g))
		must(t, s.PutGroup(ctx, meta.GroupState{Group: "gone"}))
		must(t, s.DeleteGroup(ctx, "gone", 1))
		must(t, s.CommitOffsets(ctx, "billing", []meta.GroupOffset{{Topic: "orders", Offset: 3}, {Topic: "other", Offset: 4}}))
		must(t, s.DeleteGroupOffsets(ctx, "billing", "orders"))
		for range 20 { // enough to rotate with the small threshold
			cur, err := s.Group(ctx, "billing")
			must(t, err)
			cur.Generation++
			must(t, s.PutGroup(ctx, cur))
		}
		want, err := s.Groups(ctx)
		must(t, err)
		must(t, s.Close())
		s = openT(t, dir)
		got, err := s.Groups(ctx)
		must(t, err)
		if !reflect.DeepEqual(got, want) || len(got) != 1 || got[0].Generation != 22 || got[0].Version != 21 {
			t.Fatalf("groups after reopen (snapshot bytes %d):\n got %+v\nwant %+v", snap, got, want)
		}
		offs, err := s.GroupOffsets(ctx, "billing", "orders")
		must(t, err)
		other, err := s.GroupOffsets(ctx, "billing", "other")
		must(t, err)
		if len(offs) != 0 || len(other) != 1 {
			t.Fatalf("offsets after reopen: orders %+v other %+v", offs, other)
		}
		must(t, s.Close())
	}
}
