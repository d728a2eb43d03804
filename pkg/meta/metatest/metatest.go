// Package metatest is the conformance suite for meta.Store. Every adapter
// (meta/local, the DynamoDB one) runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) meta.Store { ... })
//	}
//
// It tests only the interface and the contract written in package meta's
// doc comments; nothing here knows how an adapter stores items.
package metatest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Run runs the suite as subtests of t. newStore is called once per subtest
// and must return an empty store; it should arrange to close it with
// t.Cleanup, and that cleanup must tolerate the store having been closed
// already (the Close subtest closes its store itself).
func Run(t *testing.T, newStore func(t *testing.T) meta.Store) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, s meta.Store)
}

var cases = []testCase{
	{"Topic/CreateGet", testTopicCreateGet},
	{"Topic/Exists", testTopicExists},
	{"Topic/NotFound", testTopicNotFound},
	{"Topic/ListSorted", testTopicsSorted},
	{"Topic/Delete", testTopicDelete},
	{"Topic/DeleteLeavesPartitionsAndGroups", testTopicDeleteLeavesItems},
	{"Partition/Unknown", testPartitionUnknown},
	{"Partition/IndependentKeys", testPartitionIndependentKeys},
	{"Partition/Delete", testDeletePartition},
	{"Acquire/Free", testAcquireFree},
	{"Acquire/Held", testAcquireHeld},
	{"Acquire/Expired", testAcquireExpired},
	{"Acquire/SameOwner", testAcquireSameOwner},
	{"Acquire/AfterRelease", testAcquireAfterRelease},
	{"Acquire/BumpsVersion", testAcquireBumpsVersion},
	{"Commit/RoundTrip", testCommitRoundTrip},
	{"Commit/ExtendsLease", testCommitExtendsLease},
	{"Commit/Release", testCommitRelease},
	{"Commit/FencedEpoch", testCommitFencedEpoch},
	{"Commit/StaleOwner", testCommitStaleOwner},
	{"Commit/FutureEpoch", testCommitFutureEpoch},
	{"Commit/Missing", testCommitMissing},
	{"Commit/ExpiredNotTaken", testCommitExpiredNotTaken},
	{"Commit/ReleasedEmptyOwner", testCommitReleasedEmptyOwner},
	{"Commit/StaleVersion", testCommitStaleVersion},
	{"Commit/FutureVersion", testCommitFutureVersion},
	{"Fence/Held", testFenceHeld},
	{"Fence/Missing", testFenceMissing},
	{"Fence/Idempotent", testFenceIdempotent},
	{"Fence/ThenDelete", testFenceThenDelete},
	{"Concurrent/Acquire", testConcurrentAcquire},
	{"Concurrent/CommitTakeover", testConcurrentCommitTakeover},
	{"Group/CommitAndList", testGroupCommitAndList},
	{"Group/Overwrite", testGroupOverwrite},
	{"Group/FilterTopic", testGroupFilter},
	{"Group/Unknown", testGroupUnknown},
	{"Group/EmptyCommit", testGroupEmptyCommit},
	{"Group/TopicID", testGroupTopicID},
	{"Tiering/CommitKeepsCompactorFields", testCommitKeepsTiering},
	{"Tiering/AdvanceMonotonic", testAdvanceMonotonic},
	{"Tiering/AdvanceMissing", testAdvanceMissing},
	{"Tiering/NoVersionBump", testTieringNoVersionBump},
	{"Catalog/PutAndRange", testCatalogRange},
	{"Catalog/Idempotent", testCatalogIdempotent},
	{"Catalog/Delete", testCatalogDelete},
	{"Catalog/Race", testCatalogRace},
	{"Catalog/MarkCold", testCatalogMarkCold},
	{"Catalog/MarkColdMissing", testCatalogMarkColdMissing},
	{"Close", testClose},
}

// t0 is a whole millisecond, so now+ttl has one obvious LeaseUntil.
var t0 = time.UnixMilli(1_700_000_000_000)

const ttl = 10 * time.Second

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func key(p int) meta.PartitionKey {
	return meta.PartitionKey{Topic: "orders", TopicID: "id-orders-1", Partition: p}
}

func topic(name, id string, partitions int) meta.TopicConfig {
	return meta.TopicConfig{
		Name: name, ID: id, Partitions: partitions,
		RetentionMs: 7 * 24 * 3600 * 1000, RetentionBytes: -1,
		SegmentBytes: 1 << 30, SegmentMs: 3600 * 1000,
		CleanupPolicy: "delete", CreatedMs: t0.UnixMilli(),
	}
}

// withState returns p carrying committed state derived from n, so two
// commits with different n are told apart in every field.
func withState(p meta.Partition, n int64) meta.Partition {
	p.NextOffset = 1000 + n
	p.LastTS = t0.UnixMilli() + n
	p.Active = &meta.SegmentInfo{
		Base: 900 + n, Epoch: p.Epoch, Size: 4096 + n, NextOffset: 1000 + n,
		FirstTS: t0.UnixMilli() - 50, LastTS: t0.UnixMilli() + n, CreatedMs: t0.UnixMilli() - 60,
	}
	p.Sealed = []meta.SegmentInfo{
		{Base: 10 + n, Epoch: 1, Size: 1 << 20, NextOffset: 500, FirstTS: 1, LastTS: 2, CreatedMs: 3},
		{Base: 500, Epoch: 2, Size: 2 << 20, NextOffset: 900 + n, FirstTS: -1, LastTS: -1, CreatedMs: 4},
	}
	return p
}

// norm makes an empty Sealed nil: adapters may return either.
func norm(p meta.Partition) meta.Partition {
	if len(p.Sealed) == 0 {
		p.Sealed = nil
	}
	return p
}

// committedOf is p's committed state with the lease fields and the
// commit version cleared.
func committedOf(p meta.Partition) meta.Partition {
	p.Epoch, p.Version, p.Owner, p.LeaseUntil = 0, 0, "", 0
	return norm(p)
}

// landed is the holder's view of p once its Commit succeeded: Commit sets
// the item's version to p.Version+1, so the holder's next commit names it.
func landed(p meta.Partition) meta.Partition {
	p.Version++
	return p
}

func mustEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, show(got), show(want))
	}
}

func show(v any) string {
	if p, ok := v.(meta.Partition); ok && p.Active != nil {
		return fmt.Sprintf("%+v active=%+v", p, *p.Active)
	}
	return fmt.Sprintf("%+v", v)
}

func mustIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func get(t *testing.T, s meta.Store, k meta.PartitionKey) meta.Partition {
	t.Helper()
	p, err := s.Partition(ctxFor(t), k)
	must(t, "Partition", err)
	return p
}

func acquire(t *testing.T, s meta.Store, k meta.PartitionKey, owner string, now time.Time) meta.Acquired {
	t.Helper()
	a, err := s.Acquire(ctxFor(t), k, owner, now, ttl)
	must(t, "Acquire "+owner, err)
	return a
}

// --- topics ---

func testTopicCreateGet(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	want := topic("orders", "id-1", 12)
	must(t, "CreateTopic", s.CreateTopic(ctx, want))
	got, err := s.Topic(ctx, "orders")
	must(t, "Topic", err)
	mustEqual(t, "Topic", got, want)
}

func testTopicExists(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	first := topic("orders", "id-1", 3)
	must(t, "CreateTopic", s.CreateTopic(ctx, first))
	mustIs(t, "CreateTopic again", s.CreateTopic(ctx, topic("orders", "id-2", 5)), meta.ErrTopicExists)
	got, err := s.Topic(ctx, "orders")
	must(t, "Topic", err)
	mustEqual(t, "Topic after failed create", got, first)
}

func testTopicNotFound(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	_, err := s.Topic(ctx, "nope")
	mustIs(t, "Topic", err, meta.ErrNotFound)
	mustIs(t, "DeleteTopic", s.DeleteTopic(ctx, "nope", "id"), meta.ErrNotFound)
}

func testTopicsSorted(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	got, err := s.Topics(ctx)
	must(t, "Topics on empty store", err)
	if len(got) != 0 {
		t.Fatalf("Topics on empty store = %+v", got)
	}
	var want []meta.TopicConfig
	for i, name := range []string{"c.events", "a-logs", "B_upper", "b", "a"} {
		tc := topic(name, fmt.Sprintf("id-%d", i), i+1)
		must(t, "CreateTopic", s.CreateTopic(ctx, tc))
		want = append(want, tc)
	}
	slices.SortFunc(want, func(a, b meta.TopicConfig) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	got, err = s.Topics(ctx)
	must(t, "Topics", err)
	mustEqual(t, "Topics", got, want)
}

func testTopicDelete(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "CreateTopic", s.CreateTopic(ctx, topic("a", "id-a", 1)))
	must(t, "CreateTopic", s.CreateTopic(ctx, topic("b", "id-b1", 1)))
	mustIs(t, "DeleteTopic of another incarnation", s.DeleteTopic(ctx, "b", "id-b0"), meta.ErrNotFound)
	must(t, "DeleteTopic", s.DeleteTopic(ctx, "b", "id-b1"))
	_, err := s.Topic(ctx, "b")
	mustIs(t, "Topic after delete", err, meta.ErrNotFound)
	mustIs(t, "DeleteTopic again", s.DeleteTopic(ctx, "b", "id-b1"), meta.ErrNotFound)
	got, err := s.Topics(ctx)
	must(t, "Topics", err)
	mustEqual(t, "Topics after delete", got, []meta.TopicConfig{topic("a", "id-a", 1)})

	// A new incarnation of the name.
	again := topic("b", "id-b2", 4)
	must(t, "CreateTopic after delete", s.CreateTopic(ctx, again))
	tc, err := s.Topic(ctx, "b")
	must(t, "Topic", err)
	mustEqual(t, "recreated topic", tc, again)
	// A late copy of the first delete must not delete the new incarnation.
	mustIs(t, "late DeleteTopic of the old incarnation", s.DeleteTopic(ctx, "b", "id-b1"), meta.ErrNotFound)
	tc, err = s.Topic(ctx, "b")
	must(t, "Topic after the late delete", err)
	mustEqual(t, "recreated topic after the late delete", tc, again)
}

func testTopicDeleteLeavesItems(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "CreateTopic", s.CreateTopic(ctx, topic("orders", "id-orders-1", 1)))
	a := acquire(t, s, key(0), "A", t0)
	offs := []meta.GroupOffset{{Topic: "orders", Partition: 0, Offset: 7, Metadata: "m"}}
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", offs))
	must(t, "DeleteTopic", s.DeleteTopic(ctx, "orders", "id-orders-1"))
	mustEqual(t, "partition after DeleteTopic", norm(get(t, s, key(0))), norm(a.Partition))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "group offsets after DeleteTopic", got, offs)
}

// --- partitions ---

func testPartitionUnknown(t *testing.T, s meta.Store) {
	k := meta.PartitionKey{Topic: "orders", TopicID: "id-9", Partition: 7}
	got := get(t, s, k)
	want := meta.Partition{Topic: "orders", TopicID: "id-9", Partition: 7, LastTS: -1}
	mustEqual(t, "unknown partition", norm(got), want)
}

func testPartitionIndependentKeys(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	k1 := meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 0}
	k2 := meta.PartitionKey{Topic: "orders", TopicID: "id-2", Partition: 0} // same name, new incarnation
	k3 := meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 1}
	a1 := acquire(t, s, k1, "A", t0)
	a2 := acquire(t, s, k2, "B", t0) // A's lease on k1 must not block it
	a3 := acquire(t, s, k3, "C", t0)
	for _, a := range []meta.Acquired{a1, a2, a3} {
		if a.Epoch != 1 || a.TakenOver {
			t.Fatalf("Acquire %s/%s/%d: epoch %d taken over %v, want 1 false", a.Topic, a.TopicID, a.Partition.Partition, a.Epoch, a.TakenOver)
		}
	}
	must(t, "Commit k1", s.Commit(ctx, withState(a1.Partition, 5), false, t0, ttl))
	mustEqual(t, "k2 after commit to k1", norm(get(t, s, k2)), norm(a2.Partition))
	mustEqual(t, "k3 after commit to k1", norm(get(t, s, k3)), norm(a3.Partition))
	// A's partition value with k2's key is B's item: fenced by owner.
	p := withState(a1.Partition, 6)
	p.TopicID = "id-2"
	mustIs(t, "Commit A's epoch to k2", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	must(t, "DeletePartition k1", s.DeletePartition(ctx, k1))
	mustEqual(t, "k2 after deleting k1", norm(get(t, s, k2)), norm(a2.Partition))
}

func testDeletePartition(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit", s.Commit(ctx, withState(a.Partition, 1), false, t0, ttl))
	other := acquire(t, s, key(1), "A", t0)
	must(t, "DeletePartition", s.DeletePartition(ctx, key(0)))
	want := meta.Partition{Topic: "orders", TopicID: "id-orders-1", Partition: 0, LastTS: -1}
	mustEqual(t, "deleted partition", norm(get(t, s, key(0))), want)
	mustEqual(t, "other partition", norm(get(t, s, key(1))), norm(other.Partition))
	// The item is gone, lease included: a fresh Acquire starts over.
	b := acquire(t, s, key(0), "B", t0)
	if b.Epoch != 1 || b.TakenOver || b.NextOffset != 0 {
		t.Fatalf("Acquire after delete: epoch %d taken over %v next %d, want 1 false 0", b.Epoch, b.TakenOver, b.NextOffset)
	}
	// Deleting a missing item is not an error.
	must(t, "DeletePartition missing", s.DeletePartition(ctx, key(42)))
	mustEqual(t, "missing partition", norm(get(t, s, key(42))), meta.Partition{Topic: "orders", TopicID: "id-orders-1", Partition: 42, LastTS: -1})
}

// --- acquire ---

func testAcquireFree(t *testing.T, s meta.Store) {
	a := acquire(t, s, key(3), "A", t0)
	want := meta.Partition{
		Topic: "orders", TopicID: "id-orders-1", Partition: 3,
		Epoch: 1, Version: 1, Owner: "A", LeaseUntil: t0.Add(ttl).UnixMilli(), LastTS: -1,
	}
	if a.TakenOver {
		t.Fatal("Acquire of a free item: TakenOver")
	}
	mustEqual(t, "Acquire", norm(a.Partition), want)
	mustEqual(t, "Partition after Acquire", norm(get(t, s, key(3))), want)
}

func testAcquireHeld(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	_, err := s.Acquire(ctx, key(0), "B", t0.Add(ttl-time.Millisecond), ttl)
	mustIs(t, "Acquire by B while A's lease is live", err, meta.ErrLeaseHeld)
	mustEqual(t, "item after refused Acquire", norm(get(t, s, key(0))), norm(a.Partition))
}

func testAcquireExpired(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit", s.Commit(ctx, withState(a.Partition, 3), false, t0, ttl))
	// The lease is live before now+ttl and expired from it on.
	_, err := s.Acquire(ctx, key(0), "B", t0.Add(ttl-time.Millisecond), ttl)
	mustIs(t, "Acquire 1ms before expiry", err, meta.ErrLeaseHeld)
	later := t0.Add(ttl)
	b := acquire(t, s, key(0), "B", later)
	if !b.TakenOver {
		t.Fatal("Acquire after expiry without release: TakenOver false")
	}
	if b.Epoch != 2 || b.Owner != "B" || b.LeaseUntil != later.Add(ttl).UnixMilli() {
		t.Fatalf("Acquire after expiry: epoch %d owner %q until %d, want 2 B %d", b.Epoch, b.Owner, b.LeaseUntil, later.Add(ttl).UnixMilli())
	}
	mustEqual(t, "committed state after takeover", committedOf(b.Partition), committedOf(withState(a.Partition, 3)))
	mustEqual(t, "Partition after takeover", norm(get(t, s, key(0))), norm(b.Partition))
}

func testAcquireSameOwner(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit", s.Commit(ctx, withState(a.Partition, 1), false, t0, ttl))
	// Re-acquiring one's own live lease bumps the epoch (fencing the older
	// session) and reports the lease was not released.
	again := acquire(t, s, key(0), "A", t0.Add(time.Second))
	if again.Epoch != 2 || !again.TakenOver || again.Owner != "A" {
		t.Fatalf("re-Acquire by holder: epoch %d taken over %v owner %q, want 2 true A", again.Epoch, again.TakenOver, again.Owner)
	}
	mustEqual(t, "committed state after re-Acquire", committedOf(again.Partition), committedOf(withState(a.Partition, 1)))
	mustIs(t, "Commit from the older session", s.Commit(ctx, withState(a.Partition, 2), false, t0, ttl), meta.ErrFenced)
}

func testAcquireAfterRelease(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	committed := withState(a.Partition, 7)
	must(t, "Commit release", s.Commit(ctx, committed, true, t0, ttl))
	// Same now: A's lease would still be live had A not released it.
	b := acquire(t, s, key(0), "B", t0)
	if b.TakenOver {
		t.Fatal("Acquire after release: TakenOver")
	}
	if b.Epoch != 2 || b.Owner != "B" {
		t.Fatalf("Acquire after release: epoch %d owner %q, want 2 B", b.Epoch, b.Owner)
	}
	mustEqual(t, "committed state after release", committedOf(b.Partition), committedOf(committed))
}

// --- commit ---

func testCommitRoundTrip(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	now := t0.Add(time.Second)
	p := withState(a.Partition, 42)
	p.LeaseUntil = 1 // ignored: Commit sets now+ttl
	must(t, "Commit", s.Commit(ctx, p, false, now, ttl))

	want := landed(withState(a.Partition, 42))
	want.LeaseUntil = now.Add(ttl).UnixMilli()
	got := get(t, s, key(0))
	mustEqual(t, "Partition after Commit", norm(got), norm(want))
	if got.Version != a.Version+1 {
		t.Fatalf("version after Commit = %d, want %d", got.Version, a.Version+1)
	}

	// Neither the caller's p nor a returned value aliases the stored item.
	p.Active.Size = -1
	p.Sealed[0].Size = -1
	got.Active.NextOffset = -1
	got.Sealed[1].NextOffset = -1
	mustEqual(t, "Partition after mutating p and the result", norm(get(t, s, key(0))), norm(want))

	// Commits with no segments round-trip too. The holder carries the
	// version its last commit left (a.Version+1) forward.
	p2 := landed(a.Partition)
	p2.NextOffset, p2.LastTS = 0, -1
	must(t, "Commit empty", s.Commit(ctx, p2, false, now, ttl))
	got = get(t, s, key(0))
	if got.Active != nil || len(got.Sealed) != 0 || got.NextOffset != 0 || got.LastTS != -1 || got.Version != a.Version+2 {
		t.Fatalf("after empty Commit: %s", show(got))
	}
}

func testCommitExtendsLease(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit", s.Commit(ctx, withState(a.Partition, 1), false, t0.Add(8*time.Second), ttl))
	// Past the Acquire's expiry (t0+10s), before the Commit's (t0+18s).
	_, err := s.Acquire(ctx, key(0), "B", t0.Add(15*time.Second), ttl)
	mustIs(t, "Acquire inside the extended lease", err, meta.ErrLeaseHeld)
	b := acquire(t, s, key(0), "B", t0.Add(18*time.Second))
	if !b.TakenOver || b.Epoch != 2 {
		t.Fatalf("Acquire after extended lease: epoch %d taken over %v, want 2 true", b.Epoch, b.TakenOver)
	}
}

func testCommitRelease(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit release", s.Commit(ctx, withState(a.Partition, 9), true, t0, ttl))
	got := get(t, s, key(0))
	if got.Owner != "" || got.Epoch != 1 {
		t.Fatalf("after release: owner %q epoch %d, want \"\" 1", got.Owner, got.Epoch)
	}
	mustEqual(t, "committed state after release", committedOf(got), committedOf(withState(a.Partition, 9)))
	// The released owner no longer owns it, even naming the version its
	// release left.
	mustIs(t, "Commit after release", s.Commit(ctx, landed(withState(a.Partition, 10)), false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "state after refused Commit", norm(get(t, s, key(0))), norm(got))
}

func testCommitFencedEpoch(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit", s.Commit(ctx, withState(a.Partition, 1), false, t0, ttl))
	b := acquire(t, s, key(0), "B", t0.Add(time.Hour))
	must(t, "Commit B", s.Commit(ctx, withState(b.Partition, 2), false, t0.Add(time.Hour), ttl))
	before := get(t, s, key(0))
	// A zombie commits with its old epoch (and its own name).
	mustIs(t, "Commit with old epoch", s.Commit(ctx, withState(a.Partition, 3), false, t0, ttl), meta.ErrFenced)
	mustIs(t, "Commit release with old epoch", s.Commit(ctx, withState(a.Partition, 3), true, t0, ttl), meta.ErrFenced)
	// Even claiming the current owner's name with the old epoch.
	forged := withState(a.Partition, 4)
	forged.Owner, forged.Version = "B", before.Version
	mustIs(t, "Commit with old epoch as B", s.Commit(ctx, forged, false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "state after fenced commits", norm(get(t, s, key(0))), norm(before))
}

func testCommitStaleOwner(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	b := acquire(t, s, key(0), "B", t0.Add(ttl))
	before := get(t, s, key(0))
	// A learns the new epoch somehow but is not the owner.
	stale := withState(a.Partition, 5)
	stale.Epoch, stale.Version = b.Epoch, b.Version
	mustIs(t, "Commit by stale owner with current epoch", s.Commit(ctx, stale, false, t0.Add(ttl), ttl), meta.ErrFenced)
	mustIs(t, "Commit by stale owner with its epoch", s.Commit(ctx, withState(a.Partition, 5), false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "state after stale commits", norm(get(t, s, key(0))), norm(before))
	// B still can.
	must(t, "Commit by B", s.Commit(ctx, withState(b.Partition, 6), false, t0.Add(ttl), ttl))
}

func testCommitFutureEpoch(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	p := withState(a.Partition, 1)
	p.Epoch++
	mustIs(t, "Commit with a future epoch", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "state after refused Commit", norm(get(t, s, key(0))), norm(a.Partition))
}

func testCommitMissing(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	p := withState(meta.Partition{Topic: "orders", TopicID: "id-orders-1", Partition: 0, Epoch: 1, Owner: "A"}, 1)
	mustIs(t, "Commit to a missing item", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	p.Epoch = 0
	mustIs(t, "Commit epoch 0 to a missing item", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "missing item after Commit", norm(get(t, s, key(0))), meta.Partition{Topic: "orders", TopicID: "id-orders-1", Partition: 0, LastTS: -1})
}

func testCommitExpiredNotTaken(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	// The lease expired but nobody acquired it: epoch and owner are still
	// the item's, so the commit lands and renews the lease.
	late := t0.Add(time.Hour)
	must(t, "Commit after expiry", s.Commit(ctx, withState(a.Partition, 1), false, late, ttl))
	got := get(t, s, key(0))
	if got.Epoch != 1 || got.Owner != "A" || got.LeaseUntil != late.Add(ttl).UnixMilli() {
		t.Fatalf("after late Commit: epoch %d owner %q until %d", got.Epoch, got.Owner, got.LeaseUntil)
	}
	_, err := s.Acquire(ctx, key(0), "B", late, ttl)
	mustIs(t, "Acquire inside the renewed lease", err, meta.ErrLeaseHeld)
}

func testCommitReleasedEmptyOwner(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit release", s.Commit(ctx, withState(a.Partition, 1), true, t0, ttl))
	// The item now has the same epoch and owner "": a commit naming owner ""
	// must not match it.
	p := landed(withState(a.Partition, 2))
	p.Owner = ""
	mustIs(t, "Commit with empty owner", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	if got := get(t, s, key(0)); got.NextOffset != withState(a.Partition, 1).NextOffset || got.Owner != "" {
		t.Fatalf("after refused Commit: %s", show(got))
	}
}

// --- concurrency ---

func testConcurrentAcquire(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	const n = 8
	errs := make([]error, n)
	got := make([]meta.Acquired, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.Acquire(ctx, key(0), fmt.Sprintf("owner-%d", i), t0, ttl)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("owners %d and %d both acquired", winner, i)
			}
			winner = i
		case !errors.Is(err, meta.ErrLeaseHeld):
			t.Fatalf("owner %d: %v, want ErrLeaseHeld", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no Acquire won")
	}
	w := got[winner]
	if w.Epoch != 1 || w.TakenOver || w.Owner != fmt.Sprintf("owner-%d", winner) {
		t.Fatalf("winner: epoch %d taken over %v owner %q", w.Epoch, w.TakenOver, w.Owner)
	}
	mustEqual(t, "item after race", norm(get(t, s, key(0))), norm(w.Partition))
}

// testConcurrentCommitTakeover races a committing owner A against B taking
// the partition over, then A's and B's commits against each other. A's
// successes must be a prefix of its attempts, B must see exactly the last
// of them, and after the takeover only B's commits land.
func testConcurrentCommitTakeover(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	later := t0.Add(time.Hour) // A's lease has expired for B

	const maxA = 5000
	var (
		cur            = a.Partition // A's view, carrying its version forward
		lastOK   int64 = -1          // A's last successful n
		fencedAt int64 = -1          // A's first fenced n
		aErr     error
		started  = make(chan struct{})
		start    = sync.OnceFunc(func() { close(started) })
		acq      meta.Acquired
		bErr     error
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		<-started
		acq, bErr = s.Acquire(ctx, key(0), "B", later, ttl)
	})
	for n := int64(0); n < maxA && aErr == nil; n++ {
		if n == 3 {
			start()
		}
		err := s.Commit(ctx, withState(cur, n), false, t0, ttl)
		switch {
		case err == nil && fencedAt >= 0:
			t.Fatalf("A's commit %d landed after A was fenced at %d", n, fencedAt)
		case err == nil:
			lastOK = n
			cur = landed(cur)
		case errors.Is(err, meta.ErrFenced):
			if fencedAt < 0 {
				fencedAt = n
			}
		default:
			aErr = err
		}
		if fencedAt >= 0 && n >= fencedAt+20 {
			break // enough attempts after the fence to see none land
		}
	}
	start()
	wg.Wait()
	must(t, "A's commit", aErr)
	must(t, "B's Acquire", bErr)
	if fencedAt < 0 {
		// B acquired after A's last attempt: A's next commit must fail.
		mustIs(t, "A's commit after B's Acquire", s.Commit(ctx, withState(cur, maxA), false, t0, ttl), meta.ErrFenced)
	}
	if lastOK < 0 {
		t.Fatal("none of A's commits landed before B's Acquire, which waited for 3 of them")
	}
	if !acq.TakenOver || acq.Epoch != 2 || acq.Version != cur.Version+1 {
		t.Fatalf("B's Acquire: epoch %d version %d taken over %v, want 2 %d true", acq.Epoch, acq.Version, acq.TakenOver, cur.Version+1)
	}
	mustEqual(t, "state B acquired", committedOf(acq.Partition), committedOf(withState(a.Partition, lastOK)))

	// Now both commit at once: only B's land.
	const rounds = 20
	var bLast int64
	var bFail error
	var aNotFenced int
	bCur := acq.Partition
	wg.Go(func() {
		for i := range int64(rounds) {
			if err := s.Commit(ctx, withState(bCur, 10_000+i), false, later, ttl); err != nil {
				bFail = err
				return
			}
			bLast = 10_000 + i
			bCur = landed(bCur)
		}
	})
	wg.Go(func() {
		for i := range int64(rounds) {
			if err := s.Commit(ctx, withState(cur, 20_000+i), false, t0, ttl); !errors.Is(err, meta.ErrFenced) {
				aNotFenced++
			}
		}
	})
	wg.Wait()
	must(t, "B's commits", bFail)
	if aNotFenced > 0 {
		t.Fatalf("%d of the fenced epoch's commits were not ErrFenced", aNotFenced)
	}
	got := get(t, s, key(0))
	want := withState(bCur, bLast)
	want.LeaseUntil = later.Add(ttl).UnixMilli()
	mustEqual(t, "final state", norm(got), norm(want))
}

// --- groups ---

func testGroupCommitAndList(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	in := []meta.GroupOffset{
		{Topic: "orders", Partition: 3, Offset: 30, Metadata: "three"},
		{Topic: "orders", Partition: 0, Offset: 0, Metadata: ""},
		{Topic: "orders", Partition: 2, Offset: 20, Metadata: `{"x":1}`},
	}
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g1", in))
	got, err := s.GroupOffsets(ctx, "g1", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "GroupOffsets", got, []meta.GroupOffset{in[1], in[2], in[0]})
	// The result is the caller's.
	got[0].Offset = 99
	again, err := s.GroupOffsets(ctx, "g1", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "GroupOffsets after mutating a result", again, []meta.GroupOffset{in[1], in[2], in[0]})
}

func testGroupOverwrite(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", []meta.GroupOffset{
		{Topic: "orders", Partition: 0, Offset: 5, Metadata: "a"},
		{Topic: "orders", Partition: 1, Offset: 6, Metadata: "b"},
	}))
	must(t, "CommitOffsets again", s.CommitOffsets(ctx, "g", []meta.GroupOffset{
		{Topic: "orders", Partition: 0, Offset: 9, Metadata: "c"},
	}))
	// Overwrites may also move backwards (a reset).
	must(t, "CommitOffsets reset", s.CommitOffsets(ctx, "g", []meta.GroupOffset{
		{Topic: "orders", Partition: 1, Offset: 2, Metadata: ""},
	}))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "GroupOffsets", got, []meta.GroupOffset{
		{Topic: "orders", Partition: 0, Offset: 9, Metadata: "c"},
		{Topic: "orders", Partition: 1, Offset: 2, Metadata: ""},
	})
}

func testGroupFilter(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", []meta.GroupOffset{
		{Topic: "a", Partition: 1, Offset: 11},
		{Topic: "b", Partition: 0, Offset: 20},
		{Topic: "a", Partition: 0, Offset: 10},
		{Topic: "ab", Partition: 0, Offset: 30},
	}))
	must(t, "CommitOffsets other group", s.CommitOffsets(ctx, "g2", []meta.GroupOffset{
		{Topic: "a", Partition: 2, Offset: 99},
	}))
	got, err := s.GroupOffsets(ctx, "g", "a")
	must(t, "GroupOffsets a", err)
	mustEqual(t, "GroupOffsets g a", got, []meta.GroupOffset{{Topic: "a", Partition: 0, Offset: 10}, {Topic: "a", Partition: 1, Offset: 11}})
	got, err = s.GroupOffsets(ctx, "g", "b")
	must(t, "GroupOffsets b", err)
	mustEqual(t, "GroupOffsets g b", got, []meta.GroupOffset{{Topic: "b", Partition: 0, Offset: 20}})
	got, err = s.GroupOffsets(ctx, "g2", "a")
	must(t, "GroupOffsets g2", err)
	mustEqual(t, "GroupOffsets g2 a", got, []meta.GroupOffset{{Topic: "a", Partition: 2, Offset: 99}})
}

func testGroupUnknown(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	got, err := s.GroupOffsets(ctx, "nobody", "orders")
	must(t, "GroupOffsets of unknown group", err)
	if len(got) != 0 {
		t.Fatalf("GroupOffsets of unknown group = %+v", got)
	}
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", []meta.GroupOffset{{Topic: "orders", Partition: 0, Offset: 1}}))
	got, err = s.GroupOffsets(ctx, "g", "other")
	must(t, "GroupOffsets of unknown topic", err)
	if len(got) != 0 {
		t.Fatalf("GroupOffsets of unknown topic = %+v", got)
	}
}

func testGroupEmptyCommit(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "CommitOffsets nil", s.CommitOffsets(ctx, "g", nil))
	must(t, "CommitOffsets empty", s.CommitOffsets(ctx, "g", []meta.GroupOffset{}))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	if len(got) != 0 {
		t.Fatalf("GroupOffsets after empty commits = %+v", got)
	}
}

// --- close ---

func testClose(t *testing.T, s meta.Store) {
	must(t, "CreateTopic", s.CreateTopic(ctxFor(t), topic("orders", "id", 1)))
	must(t, "Close", s.Close())
}

// The compactor's fields survive the lease holder's commits, and the lease
// holder's fields survive the compactor's advances.
func testCommitKeepsTiering(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a, err := s.Acquire(ctx, key(0), "A", t0, ttl)
	must(t, "Acquire", err)
	must(t, "AdvanceLogStart", s.AdvanceLogStart(ctx, key(0), 7))
	must(t, "AdvanceColdEnd", s.AdvanceColdEnd(ctx, key(0), 9))
	p := withState(a.Partition, 3)
	p.LogStartOffset, p.ColdEnd = 1, 2 // stale values a writer might carry
	must(t, "Commit", s.Commit(ctx, p, false, t0, ttl))
	got := get(t, s, key(0))
	if got.LogStartOffset != 7 || got.ColdEnd != 9 {
		t.Fatalf("Commit overwrote the compactor's fields: log start %d cold end %d", got.LogStartOffset, got.ColdEnd)
	}
	if got.NextOffset != p.NextOffset || got.Owner != "A" || got.Epoch != a.Epoch || got.Version != a.Version+1 {
		t.Fatalf("advance changed the writer's fields: %s", show(got))
	}
	b, err := s.Acquire(ctx, key(0), "B", t0.Add(time.Hour), ttl)
	must(t, "Acquire B", err)
	if b.LogStartOffset != 7 || b.ColdEnd != 9 {
		t.Fatalf("Acquire lost tiering fields: %s", show(b.Partition))
	}
}

func testAdvanceMonotonic(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	_, err := s.Acquire(ctx, key(0), "A", t0, ttl)
	must(t, "Acquire", err)
	for _, step := range []struct{ v, want int64 }{{5, 5}, {3, 5}, {5, 5}, {11, 11}} {
		must(t, "AdvanceLogStart", s.AdvanceLogStart(ctx, key(0), step.v))
		must(t, "AdvanceColdEnd", s.AdvanceColdEnd(ctx, key(0), step.v+100))
		got := get(t, s, key(0))
		if got.LogStartOffset != step.want || got.ColdEnd != step.want+100 {
			t.Fatalf("after advancing to %d: log start %d cold end %d, want %d and %d", step.v, got.LogStartOffset, got.ColdEnd, step.want, step.want+100)
		}
	}
	if got := get(t, s, key(0)); got.Owner != "A" {
		t.Fatalf("advance touched the lease: %s", show(got))
	}
}

func testAdvanceMissing(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	mustIs(t, "AdvanceLogStart on a missing item", s.AdvanceLogStart(ctx, key(5), 1), meta.ErrNotFound)
	mustIs(t, "AdvanceColdEnd on a missing item", s.AdvanceColdEnd(ctx, key(5), 1), meta.ErrNotFound)
}

func entry(base, next int64) meta.CatalogEntry {
	return meta.CatalogEntry{
		Base: base, NextOffset: next, Epoch: 3, Key: fmt.Sprintf("p/%020d.seg", base), Size: 100 + next,
		FirstTS: base, LastTS: next, LogOff: 0, LogLen: 50, LogCRC: 1, IndexOff: 50, IndexLen: 8, IndexCRC: 2,
		TimeOff: 58, TimeLen: 12, TimeCRC: 3, CreatedMs: t0.UnixMilli(),
	}
}

func testCatalogRange(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	var all []meta.CatalogEntry
	for i := int64(0); i < 30; i++ { // put out of order
		e := entry((i*7%30)*10, (i*7%30)*10+10)
		must(t, "PutSegment", s.PutSegment(ctx, key(0), e))
	}
	for i := int64(0); i < 30; i++ {
		all = append(all, entry(i*10, i*10+10))
	}
	must(t, "PutSegment other partition", s.PutSegment(ctx, key(1), entry(0, 10)))
	got, err := s.Segments(ctx, key(0), -1, 0)
	must(t, "Segments all", err)
	mustEqual(t, "all entries in order", got, all)
	for _, c := range []struct {
		from  int64
		limit int
		first int
		n     int
	}{{0, 1, 0, 1}, {9, 2, 0, 2}, {10, 3, 1, 3}, {155, 0, 15, 15}, {299, 5, 29, 1}, {300, 5, 0, 0}} {
		got, err := s.Segments(ctx, key(0), c.from, c.limit)
		must(t, "Segments", err)
		if len(got) != c.n || (c.n > 0 && !reflect.DeepEqual(got[0], all[c.first])) {
			t.Fatalf("Segments(from %d, limit %d): %d entries starting %+v; want %d starting at entry %d", c.from, c.limit, len(got), got, c.n, c.first)
		}
	}
	other, err := s.Segments(ctx, key(1), 0, 0)
	must(t, "Segments other partition", err)
	if len(other) != 1 {
		t.Fatalf("partition 1 has %d entries, want 1", len(other))
	}
}

func testCatalogIdempotent(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	e := entry(0, 10)
	must(t, "PutSegment", s.PutSegment(ctx, key(0), e))
	must(t, "PutSegment again", s.PutSegment(ctx, key(0), e))
	other := e
	other.Key = "p/other.seg"
	mustIs(t, "PutSegment with another key", s.PutSegment(ctx, key(0), other), meta.ErrConflict)
	got, err := s.Segments(ctx, key(0), 0, 0)
	must(t, "Segments", err)
	mustEqual(t, "entries", got, []meta.CatalogEntry{e})
}

func testCatalogDelete(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	for i := int64(0); i < 3; i++ {
		must(t, "PutSegment", s.PutSegment(ctx, key(0), entry(i*10, i*10+10)))
	}
	must(t, "DeleteSegment", s.DeleteSegment(ctx, key(0), entry(0, 10)))
	must(t, "DeleteSegment missing", s.DeleteSegment(ctx, key(0), entry(0, 10)))
	got, err := s.Segments(ctx, key(0), -1, 0)
	must(t, "Segments", err)
	mustEqual(t, "after delete", got, []meta.CatalogEntry{entry(10, 20), entry(20, 30)})
}

// Two compactors finalizing the same segment: both succeed, one entry.
func testCatalogRace(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.PutSegment(ctx, key(0), entry(0, 10))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		must(t, fmt.Sprintf("PutSegment %d", i), err)
	}
	got, err := s.Segments(ctx, key(0), 0, 0)
	must(t, "Segments", err)
	mustEqual(t, "one entry", got, []meta.CatalogEntry{entry(0, 10)})
}

// --- commit versions ---

// Every Acquire bumps the version, whether the item was free, released,
// expired or held by the same owner.
func testAcquireBumpsVersion(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	if a.Version != 1 {
		t.Fatalf("first Acquire: version %d, want 1", a.Version)
	}
	must(t, "Commit release", s.Commit(ctx, withState(a.Partition, 1), true, t0, ttl))
	b := acquire(t, s, key(0), "B", t0) // after a release
	if b.Version != 3 {
		t.Fatalf("Acquire after a release: version %d, want 3", b.Version)
	}
	c := acquire(t, s, key(0), "C", t0.Add(ttl)) // after expiry
	if c.Version != 4 {
		t.Fatalf("Acquire after expiry: version %d, want 4", c.Version)
	}
	again := acquire(t, s, key(0), "C", t0.Add(ttl)) // own live lease
	if again.Version != 5 {
		t.Fatalf("re-Acquire by the holder: version %d, want 5", again.Version)
	}
	mustEqual(t, "Partition after Acquires", norm(get(t, s, key(0))), norm(again.Partition))
	// The re-Acquire fenced the earlier session by version as well as by
	// epoch: a commit with the old session's version is refused even with
	// the new epoch.
	old := withState(c.Partition, 2)
	old.Epoch = again.Epoch
	mustIs(t, "Commit with the older session's version", s.Commit(ctx, old, false, t0.Add(ttl), ttl), meta.ErrFenced)
	must(t, "Commit with the current version", s.Commit(ctx, withState(again.Partition, 3), false, t0.Add(ttl), ttl))
}

// A holder keeping its lease commits twice; a late copy of the first
// commit (its old version, same epoch and owner) is refused and changes
// nothing. Without versions it would roll next_offset back.
func testCommitStaleVersion(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	first := withState(a.Partition, 1)
	must(t, "Commit 1", s.Commit(ctx, first, false, t0, ttl))
	second := withState(landed(first), 2)
	must(t, "Commit 2", s.Commit(ctx, second, false, t0, ttl))
	before := get(t, s, key(0))
	if before.Version != a.Version+2 || before.NextOffset != second.NextOffset {
		t.Fatalf("after two commits: %s", show(before))
	}
	mustIs(t, "late copy of commit 1", s.Commit(ctx, first, false, t0, ttl), meta.ErrFenced)
	mustIs(t, "late copy of commit 1, releasing", s.Commit(ctx, first, true, t0, ttl), meta.ErrFenced)
	mustIs(t, "repeat of commit 2", s.Commit(ctx, second, false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "state after the late copies", norm(get(t, s, key(0))), norm(before))
	// The holder's next commit still lands.
	must(t, "Commit 3", s.Commit(ctx, withState(landed(second), 3), true, t0, ttl))
}

func testCommitFutureVersion(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	p := landed(withState(a.Partition, 1))
	mustIs(t, "Commit with a future version", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "state after refused Commit", norm(get(t, s, key(0))), norm(a.Partition))
}

// The compactor's writes, the catalog and group offsets never move the
// version: the holder's next commit names the version it left.
func testTieringNoVersionBump(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	p := withState(a.Partition, 1)
	must(t, "Commit", s.Commit(ctx, p, false, t0, ttl))
	before := get(t, s, key(0))
	must(t, "AdvanceLogStart", s.AdvanceLogStart(ctx, key(0), 5))
	must(t, "AdvanceColdEnd", s.AdvanceColdEnd(ctx, key(0), 6))
	must(t, "AdvanceLogStart not greater", s.AdvanceLogStart(ctx, key(0), 1))
	must(t, "PutSegment", s.PutSegment(ctx, key(0), entry(0, 10)))
	must(t, "MarkSegmentCold", s.MarkSegmentCold(ctx, key(0), 10, t0.UnixMilli()))
	must(t, "DeleteSegment", s.DeleteSegment(ctx, key(0), entry(0, 10)))
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", []meta.GroupOffset{{Topic: "orders", TopicID: "id-orders-1", Partition: 0, Offset: 1}}))
	must(t, "CreateTopic", s.CreateTopic(ctx, topic("orders", "id-orders-1", 1)))
	got := get(t, s, key(0))
	if got.Version != before.Version || got.Epoch != before.Epoch {
		t.Fatalf("version/epoch moved from %d/%d to %d/%d without an Acquire or Commit", before.Version, before.Epoch, got.Version, got.Epoch)
	}
	must(t, "holder's next Commit", s.Commit(ctx, withState(landed(p), 2), false, t0, ttl))
}

// --- fencing on delete ---

func testFenceHeld(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	p := withState(a.Partition, 1)
	must(t, "Commit", s.Commit(ctx, p, false, t0, ttl))
	must(t, "AdvanceColdEnd", s.AdvanceColdEnd(ctx, key(0), 3))
	before := get(t, s, key(0))
	other := acquire(t, s, key(1), "A", t0)

	// A's lease is live: fencing does not wait for it.
	must(t, "FencePartition", s.FencePartition(ctx, key(0)))
	got := get(t, s, key(0))
	want := before
	want.Epoch, want.Version = before.Epoch+1, before.Version+1
	want.Owner, want.LeaseUntil, want.Deleted = "", 0, true
	mustEqual(t, "Partition after FencePartition", norm(got), norm(want))
	mustEqual(t, "other partition", norm(get(t, s, key(1))), norm(other.Partition))

	// The holder's next commit, with the version it carries, is fenced.
	mustIs(t, "holder's Commit", s.Commit(ctx, withState(landed(p), 2), false, t0, ttl), meta.ErrFenced)
	mustIs(t, "holder's release", s.Commit(ctx, withState(landed(p), 2), true, t0, ttl), meta.ErrFenced)
	// Even naming the item's new epoch and version.
	forged := withState(got, 3)
	forged.Owner = "A"
	mustIs(t, "Commit with the fenced epoch and version", s.Commit(ctx, forged, false, t0, ttl), meta.ErrFenced)
	// Nobody can take it, the holder included, expired or not.
	for _, owner := range []string{"A", "B"} {
		_, err := s.Acquire(ctx, key(0), owner, t0.Add(time.Hour), ttl)
		mustIs(t, "Acquire of a fenced partition by "+owner, err, meta.ErrNotFound)
	}
	mustEqual(t, "Partition after refused writes", norm(get(t, s, key(0))), norm(want))
	// The compactor's monotonic writes still apply (it only ever moves
	// forward, and DeleteTopic's cleanup removes the item anyway).
	must(t, "AdvanceLogStart on a fenced partition", s.AdvanceLogStart(ctx, key(0), 2))
}

// A missing item is created Deleted: a writer with the topic cached must
// not create it afresh.
func testFenceMissing(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "FencePartition of a missing item", s.FencePartition(ctx, key(4)))
	got := get(t, s, key(4))
	if !got.Deleted || got.Owner != "" || got.Epoch != 1 || got.Version != 1 || got.NextOffset != 0 || got.Active != nil {
		t.Fatalf("fenced missing partition: %s", show(got))
	}
	_, err := s.Acquire(ctx, key(4), "A", t0, ttl)
	mustIs(t, "Acquire of a fenced missing partition", err, meta.ErrNotFound)
	p := withState(meta.Partition{Topic: "orders", TopicID: "id-orders-1", Partition: 4, Epoch: 1, Version: 1, Owner: "A"}, 1)
	mustIs(t, "Commit to a fenced missing partition", s.Commit(ctx, p, false, t0, ttl), meta.ErrFenced)
	mustEqual(t, "after refused writes", norm(get(t, s, key(4))), norm(got))
}

func testFenceIdempotent(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	a := acquire(t, s, key(0), "A", t0)
	must(t, "Commit", s.Commit(ctx, withState(a.Partition, 1), true, t0, ttl))
	must(t, "FencePartition", s.FencePartition(ctx, key(0)))
	first := get(t, s, key(0))
	must(t, "FencePartition again", s.FencePartition(ctx, key(0)))
	got := get(t, s, key(0))
	if !got.Deleted || got.Owner != "" || got.Epoch < first.Epoch || got.Version < first.Version {
		t.Fatalf("after a second FencePartition: %s (first: %s)", show(got), show(first))
	}
	mustEqual(t, "committed state after fencing twice", committedOf(got), committedOf(first))
	_, err := s.Acquire(ctx, key(0), "B", t0, ttl)
	mustIs(t, "Acquire after fencing twice", err, meta.ErrNotFound)
}

// DeletePartition removes a fenced item like any other; the next Acquire
// starts from the zero state (the broker orders its steps so that no stale
// writer reaches this point; see meta.Store).
func testFenceThenDelete(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "FencePartition", s.FencePartition(ctx, key(0)))
	must(t, "DeletePartition", s.DeletePartition(ctx, key(0)))
	mustEqual(t, "deleted fenced partition", norm(get(t, s, key(0))), meta.Partition{Topic: "orders", TopicID: "id-orders-1", Partition: 0, LastTS: -1})
	b := acquire(t, s, key(0), "B", t0)
	if b.Epoch != 1 || b.Version != 1 || b.Deleted || b.TakenOver {
		t.Fatalf("Acquire after deleting a fenced partition: %s", show(b.Partition))
	}
}

// --- cold marks ---

func testCatalogMarkCold(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	for i := int64(0); i < 3; i++ {
		must(t, "PutSegment", s.PutSegment(ctx, key(0), entry(i*10, i*10+10)))
	}
	must(t, "PutSegment other partition", s.PutSegment(ctx, key(1), entry(10, 20)))
	ms := t0.UnixMilli() + 500
	must(t, "MarkSegmentCold", s.MarkSegmentCold(ctx, key(0), 20, ms))
	// The first mark wins.
	must(t, "MarkSegmentCold again, later", s.MarkSegmentCold(ctx, key(0), 20, ms+1000))
	must(t, "MarkSegmentCold again, earlier", s.MarkSegmentCold(ctx, key(0), 20, ms-1000))
	marked := entry(10, 20)
	marked.ColdMs = ms
	want := []meta.CatalogEntry{entry(0, 10), marked, entry(20, 30)}
	got, err := s.Segments(ctx, key(0), -1, 0)
	must(t, "Segments", err)
	mustEqual(t, "entries after marking", got, want)
	got, err = s.Segments(ctx, key(0), 15, 1)
	must(t, "Segments from 15", err)
	mustEqual(t, "marked entry from a ranged read", got, []meta.CatalogEntry{marked})
	other, err := s.Segments(ctx, key(1), -1, 0)
	must(t, "Segments other partition", err)
	mustEqual(t, "other partition's entry", other, []meta.CatalogEntry{entry(10, 20)})
	// A racing compactor's put of the same segment is still success and
	// does not clear the mark.
	must(t, "PutSegment of the marked entry", s.PutSegment(ctx, key(0), entry(10, 20)))
	got, err = s.Segments(ctx, key(0), -1, 0)
	must(t, "Segments", err)
	mustEqual(t, "entries after a repeated put", got, want)
}

func testCatalogMarkColdMissing(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	mustIs(t, "MarkSegmentCold with no catalog", s.MarkSegmentCold(ctx, key(0), 10, 1), meta.ErrNotFound)
	must(t, "PutSegment", s.PutSegment(ctx, key(0), entry(0, 10)))
	mustIs(t, "MarkSegmentCold of another offset", s.MarkSegmentCold(ctx, key(0), 20, 1), meta.ErrNotFound)
	mustIs(t, "MarkSegmentCold of another partition", s.MarkSegmentCold(ctx, key(1), 10, 1), meta.ErrNotFound)
	must(t, "DeleteSegment", s.DeleteSegment(ctx, key(0), entry(0, 10)))
	mustIs(t, "MarkSegmentCold of a deleted entry", s.MarkSegmentCold(ctx, key(0), 10, 1), meta.ErrNotFound)
	got, err := s.Segments(ctx, key(0), -1, 0)
	must(t, "Segments", err)
	if len(got) != 0 {
		t.Fatalf("MarkSegmentCold created entries: %+v", got)
	}
}

// --- topic ids on group offsets ---

func testGroupTopicID(t *testing.T, s meta.Store) {
	ctx := ctxFor(t)
	must(t, "CommitOffsets", s.CommitOffsets(ctx, "g", []meta.GroupOffset{
		{Topic: "orders", TopicID: "id-1", Partition: 0, Offset: 5, Metadata: "a"},
		{Topic: "orders", Partition: 1, Offset: 6}, // written before ids were recorded
		{Topic: "orders", TopicID: "id-1", Partition: 2, Offset: 7},
	}))
	// The topic was re-created: a commit for the new incarnation replaces
	// the old one's offset.
	must(t, "CommitOffsets new incarnation", s.CommitOffsets(ctx, "g", []meta.GroupOffset{
		{Topic: "orders", TopicID: "id-2", Partition: 2, Offset: 1},
	}))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, "GroupOffsets", err)
	mustEqual(t, "GroupOffsets", got, []meta.GroupOffset{
		{Topic: "orders", TopicID: "id-1", Partition: 0, Offset: 5, Metadata: "a"},
		{Topic: "orders", Partition: 1, Offset: 6},
		{Topic: "orders", TopicID: "id-2", Partition: 2, Offset: 1},
	})
}
