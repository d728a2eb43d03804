package metatest

import (
	"errors"
	"sync"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Group state items: the membership and registry of consumer groups.

func init() {
	cases = append(cases,
		testCase{"GroupState/Missing", testGroupStateMissing},
		testCase{"GroupState/PutGetVersions", testGroupStatePut},
		testCase{"GroupState/StaleVersion", testGroupStateStale},
		testCase{"GroupState/ConcurrentPut", testGroupStateConcurrent},
		testCase{"GroupState/Delete", testGroupStateDelete},
		testCase{"GroupState/ListSorted", testGroupStateList},
		testCase{"GroupState/DeleteOffsets", testGroupDeleteOffsets},
		testCase{"Offsets/OlderIncarnationDropped", testOffsetsOlderIncarnation},
	)
}

// testOffsetsOlderIncarnation: an offset committed for an incarnation of a
// topic that was deleted and created again, landing after the new one's
// commit, is dropped; one of the same incarnation or a newer one replaces;
// an item without a creation time (older stores) is replaced.
func testOffsetsOlderIncarnation(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	old := meta.GroupOffset{Topic: "orders", TopicID: "id-1", TopicCreatedMs: 1000, Partition: 0, Offset: 7}
	cur := meta.GroupOffset{Topic: "orders", TopicID: "id-2", TopicCreatedMs: 2000, Partition: 0, Offset: 3}
	legacy := meta.GroupOffset{Topic: "orders", TopicID: "id-0", Partition: 1, Offset: 9}
	must(t, "CommitOffsets new", s.CommitOffsets(ctx, "g", []meta.GroupOffset{cur, legacy}))
	must(t, "CommitOffsets late old", s.CommitOffsets(ctx, "g", []meta.GroupOffset{old, {Topic: "orders", TopicID: "id-1", TopicCreatedMs: 1000, Partition: 1, Offset: 5}}))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	want := []meta.GroupOffset{cur, {Topic: "orders", TopicID: "id-1", TopicCreatedMs: 1000, Partition: 1, Offset: 5}}
	mustEqual(t, "offsets after a late commit of an older incarnation", got, want)
	next := cur
	next.Offset = 4
	must(t, "CommitOffsets same incarnation", s.CommitOffsets(ctx, "g", []meta.GroupOffset{next}))
	got, err = s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "offset after a commit of the same incarnation", got[0], next)
}

func sampleGroup(name string) meta.GroupState {
	return meta.GroupState{
		Group:      name,
		Generation: 3,
		Members: []meta.GroupMember{
			{ID: "m-a", Topics: []string{"orders"}, SessionTimeoutMs: 30000, ExpiresMs: 1_700_000_030_000, JoinedMs: 1_700_000_000_000,
				Assignments: []meta.TopicPartitions{{Topic: "orders", Partitions: []int{0, 2}}}},
			{ID: "m-b", Topics: []string{"orders", "payments"}, SessionTimeoutMs: 10000, ExpiresMs: 1_700_000_010_000,
				Assignments: []meta.TopicPartitions{{Topic: "orders", Partitions: []int{1}}, {Topic: "payments", Partitions: []int{}}}},
		},
		Sizes:        []meta.TopicSize{{Topic: "orders", Partitions: 3}, {Topic: "payments", Partitions: 0}},
		OffsetTopics: []string{"orders"},
	}
}

func testGroupStateMissing(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	g, err := s.Group(ctx, "nobody")
	must(t, "Group of a missing group", err)
	mustEqual(t, "Group of a missing group", g, meta.GroupState{Group: "nobody"})
	gs, err := s.Groups(ctx)
	must(t, "Groups", err)
	if len(gs) != 0 {
		t.Fatalf("Groups of an empty store = %s", show(gs))
	}
}

func testGroupStatePut(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	g := sampleGroup("billing")
	must(t, "PutGroup version 0", s.PutGroup(ctx, g))
	got, err := s.Group(ctx, "billing")
	must(t, "Group", err)
	want := g.Clone()
	want.Version = 1
	mustEqual(t, "Group after the first put", got, want)
	// The result is the caller's.
	got.Members[0].Assignments[0].Partitions[0] = 99
	again, err := s.Group(ctx, "billing")
	must(t, "Group", err)
	mustEqual(t, "Group after mutating a result", again, want)

	next := again.Clone()
	next.Generation++
	next.Members = next.Members[:1]
	must(t, "PutGroup version 1", s.PutGroup(ctx, next))
	got, err = s.Group(ctx, "billing")
	must(t, "Group", err)
	want = next.Clone()
	want.Version = 2
	mustEqual(t, "Group after the second put", got, want)
}

func testGroupStateStale(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	g := sampleGroup("g")
	must(t, "PutGroup", s.PutGroup(ctx, g))
	// Another writer that read "no item" loses.
	mustIs(t, "PutGroup version 0 over an item", s.PutGroup(ctx, g), meta.ErrConflict)
	cur, err := s.Group(ctx, "g")
	must(t, "Group", err)
	stale := cur.Clone()
	cur.Generation = 10
	must(t, "PutGroup current", s.PutGroup(ctx, cur))
	stale.Generation = 11
	mustIs(t, "PutGroup from a stale read", s.PutGroup(ctx, stale), meta.ErrConflict)
	future := cur.Clone()
	future.Version = 7
	mustIs(t, "PutGroup at a future version", s.PutGroup(ctx, future), meta.ErrConflict)
	got, err := s.Group(ctx, "g")
	must(t, "Group", err)
	if got.Generation != 10 || got.Version != 2 {
		t.Fatalf("after refused puts: generation %d version %d, want 10 and 2", got.Generation, got.Version)
	}
}

// From one read, exactly one of many writers succeeds.
func testGroupStateConcurrent(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "PutGroup", s.PutGroup(ctx, meta.GroupState{Group: "g"}))
	base, err := s.Group(ctx, "g")
	must(t, "Group", err)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := base.Clone()
			g.Generation = int64(100 + i)
			errs[i] = s.PutGroup(ctx, g)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both succeeded from one read", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, meta.ErrConflict):
			t.Fatalf("writer %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer succeeded")
	}
	got, err := s.Group(ctx, "g")
	must(t, "Group", err)
	if got.Generation != int64(100+won) || got.Version != 2 {
		t.Fatalf("stored generation %d version %d, want %d and 2", got.Generation, got.Version, 100+won)
	}
}

func testGroupStateDelete(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "DeleteGroup of a missing group at version 0", s.DeleteGroup(ctx, "g", 0))
	must(t, "PutGroup", s.PutGroup(ctx, sampleGroup("g")))
	mustIs(t, "DeleteGroup at version 0 of an item", s.DeleteGroup(ctx, "g", 0), meta.ErrConflict)
	mustIs(t, "DeleteGroup at a stale version", s.DeleteGroup(ctx, "g", 2), meta.ErrConflict)
	must(t, "DeleteGroup", s.DeleteGroup(ctx, "g", 1))
	got, err := s.Group(ctx, "g")
	must(t, "Group", err)
	mustEqual(t, "Group after delete", got, meta.GroupState{Group: "g"})
	// Created again from scratch.
	must(t, "PutGroup after delete", s.PutGroup(ctx, meta.GroupState{Group: "g", Generation: 1}))
	got, err = s.Group(ctx, "g")
	must(t, "Group", err)
	if got.Version != 1 || got.Generation != 1 {
		t.Fatalf("re-created group: %s", show(got))
	}
}

func testGroupStateList(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	names := []string{"payments", "a.b", "billing", "Z-9", "billing_2"}
	for _, n := range names {
		must(t, "PutGroup "+n, s.PutGroup(ctx, sampleGroup(n)))
	}
	// Offsets alone make no group item.
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "offsets-only", []meta.GroupOffset{{Topic: "orders", Offset: 1}}))
	gs, err := s.Groups(ctx)
	must(t, "Groups", err)
	var got []string
	for _, g := range gs {
		got = append(got, g.Group)
		if g.Version != 1 || len(g.Members) != 2 {
			t.Fatalf("listed group %s", show(g))
		}
	}
	mustEqual(t, "Groups names", got, []string{"Z-9", "a.b", "billing", "billing_2", "payments"})
}

func testGroupDeleteOffsets(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	var offs []meta.GroupOffset
	for p := range 5 {
		offs = append(offs, meta.GroupOffset{Topic: "orders", TopicID: "id", Partition: p, Offset: int64(p)})
	}
	offs = append(offs, meta.GroupOffset{Topic: "orders2", Partition: 0, Offset: 7})
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", offs))
	must(t, "CommitOffsets other group", s.CommitOffsets(ctx, "h", offs[:2]))
	must(t, "DeleteGroupOffsets", s.DeleteGroupOffsets(ctx, "g", "orders"))
	for _, c := range []struct {
		group, topic string
		n            int
	}{{"g", "orders", 0}, {"g", "orders2", 1}, {"h", "orders", 2}} {
		got, err := s.GroupOffsets(ctx, c.group, c.topic)
		must(t, "GroupOffsets", err)
		if len(got) != c.n {
			t.Fatalf("%s/%s after DeleteGroupOffsets: %d offsets, want %d: %s", c.group, c.topic, len(got), c.n, show(got))
		}
	}
	must(t, "DeleteGroupOffsets again (none left)", s.DeleteGroupOffsets(ctx, "g", "orders"))
	must(t, "DeleteGroupOffsets of an unknown group", s.DeleteGroupOffsets(ctx, "nobody", "orders"))
	// Committed again: they are back.
	must(t, "CommitOffsets after delete", s.CommitOffsets(ctx, "g", offs[:1]))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "GroupOffsets after re-commit", got, offs[:1])
}

func init() {
	cases = append(cases,
		testCase{"Topic/Update", testTopicUpdate},
	)
}

func testTopicUpdate(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	orig := topic("orders", "id-1", 2)
	must(t, "CreateTopic", s.CreateTopic(ctx, orig))
	next := orig
	next.Partitions, next.RetentionMs, next.CacheEnabled = 5, 1000, false
	next.Growth = [2]meta.Growth{{From: 2, AtMs: 1_700_000_000_123}}
	must(t, "UpdateTopic", s.UpdateTopic(ctx, orig, next))
	got, err := s.Topic(ctx, "orders")
	must(t, "Topic", err)
	mustEqual(t, "Topic after update", got, next)
	if all, err := s.Topics(ctx); err != nil || len(all) != 1 || all[0] != next {
		t.Fatalf("Topics after update: %+v %v, want [%+v]", all, err, next)
	}
	// A writer that read 2 partitions loses: the count never goes back.
	back := orig
	back.Partitions = 3
	mustIs(t, "UpdateTopic from a stale count", s.UpdateTopic(ctx, orig, back), meta.ErrConflict)
	other := next
	other.ID = "id-2"
	mustIs(t, "UpdateTopic of another incarnation", s.UpdateTopic(ctx, other, other), meta.ErrNotFound)
	missing := topic("nope", "id-9", 1)
	mustIs(t, "UpdateTopic of a missing topic", s.UpdateTopic(ctx, missing, missing), meta.ErrNotFound)
	got, err = s.Topic(ctx, "orders")
	must(t, "Topic", err)
	mustEqual(t, "Topic after refused updates", got, next)
}
