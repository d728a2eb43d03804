package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
)

// refreshTo makes k take the group's assignment now and checks it.
func refreshTo(t *testing.T, k *client.Consumer, want []int) {
	t.Helper()
	if err := k.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := k.Partitions(); !slices.Equal(got, want) {
		t.Fatalf("consumer reads %v, want %v", got, want)
	}
}

// Two members of one group split the partitions; when one leaves, the
// other takes its partitions from the committed offsets, so every record
// is read and none twice (the leaver committed before leaving).
func TestMemberConsumersSplitAndRebalance(t *testing.T) {
	s := newServer(t, nil)
	c := s.client()
	ctx := ctxT(t)
	createTopic(t, c, "orders", 4)
	for p := range 4 {
		produceN(t, c, "orders", p, 0, 10, "a")
	}
	opts := []client.ConsumerOption{client.WithGroup("g"), client.WithReset(client.ResetEarliest),
		client.WithWait(50 * time.Millisecond), client.WithSessionTimeout(3 * time.Second)}
	k1, err := c.NewConsumer(ctx, "orders", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer k1.Close(context.Background())
	if got := k1.Partitions(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("alone, k1 reads %v", got)
	}
	k2, err := c.NewConsumer(ctx, "orders", opts...)
	if err != nil {
		t.Fatal(err)
	}
	p2 := k2.Partitions()
	if len(p2) != 2 {
		t.Fatalf("k2 reads %v, want two partitions", p2)
	}
	var p1 []int
	for p := range 4 {
		if !slices.Contains(p2, p) {
			p1 = append(p1, p)
		}
	}
	refreshTo(t, k1, p1)

	seen := map[string]int{}
	count := func(ms []client.Message) {
		for _, m := range ms {
			seen[string(m.Value)+"@"+string(rune('0'+m.Partition))]++
		}
	}
	count(pollUntil(t, k2, 20))
	if err := k2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// k1 reads its two partitions, then, after k2 left, k2's from where
	// k2 committed: nothing more.
	refreshTo(t, k1, []int{0, 1, 2, 3})
	count(pollUntil(t, k1, 20))
	if len(seen) != 40 {
		t.Fatalf("%d distinct records read, want 40", len(seen))
	}
	for r, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times", r, n)
		}
	}
	// A commit without membership is refused while k1 is a member.
	err = c.CommitGroupOffsets(ctx, "g", []client.GroupOffset{{Topic: "orders", Partition: 0, Offset: 0}})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeStaleGeneration {
		t.Fatalf("commit without membership: %v", err)
	}
	if err := k1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	gs, err := c.Groups(ctx)
	if err != nil || len(gs) != 1 || gs[0].Members != 1 {
		t.Fatalf("groups: %+v %v", gs, err)
	}
	d, err := c.DescribeGroup(ctx, "g")
	if err != nil || len(d.Members) != 1 || !slices.Equal(d.OffsetTopics, []string{"orders"}) {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if err := k1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := c.ResetGroupOffsets(ctx, "g", "orders", client.Reset{To: "earliest", Partitions: []int{1}})
	if err != nil || len(offs) != 1 || offs[0].Offset != 0 {
		t.Fatalf("reset after everyone left: %+v %v", offs, err)
	}
	if err := c.DeleteGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeGroup(ctx, "g"); !errors.As(err, &e) || e.Code != client.CodeGroupNotFound {
		t.Fatalf("describe after delete: %v", err)
	}
}
