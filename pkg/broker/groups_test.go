package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// countingStore counts group item reads and writes.
type countingStore struct {
	meta.Store
	mu            sync.Mutex
	reads, writes int
}

func (s *countingStore) Group(ctx context.Context, g string) (meta.GroupState, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.Group(ctx, g)
}

func (s *countingStore) PutGroup(ctx context.Context, g meta.GroupState) error {
	s.mu.Lock()
	s.writes++
	s.mu.Unlock()
	return s.Store.PutGroup(ctx, g)
}

func (s *countingStore) counts() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.writes
}

func groupBroker(t *testing.T, store meta.Store, partitions ...int) (*Broker, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	b, err := New(context.Background(), Config{DataDir: t.TempDir(), Meta: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for i, n := range partitions {
		if _, err := b.CreateTopic(context.Background(), TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: ptr(n)}); err != nil {
			t.Fatal(err)
		}
	}
	return b, clock
}

// checkCover fails unless the members' assignments of topic are disjoint
// and cover its n partitions, each member holding floor or ceil of n/len.
func checkCover(t *testing.T, ms []Membership, topic string, n int) {
	t.Helper()
	owner := map[int]string{}
	for _, m := range ms {
		cnt := 0
		for _, a := range m.Assignments {
			if a.Topic != topic {
				continue
			}
			for _, p := range a.Partitions {
				if prev, dup := owner[p]; dup {
					t.Fatalf("partition %d of %s assigned to %s and %s", p, topic, prev, m.MemberID)
				}
				owner[p] = m.MemberID
				cnt++
			}
		}
		if lo, hi := n/len(ms), (n+len(ms)-1)/len(ms); cnt < lo || cnt > hi {
			t.Fatalf("member %s holds %d of %d partitions among %d members", m.MemberID, cnt, n, len(ms))
		}
	}
	if len(owner) != n {
		t.Fatalf("%d of %d partitions of %s assigned: %v", len(owner), n, topic, owner)
	}
}

func heartbeatAll(t *testing.T, b *Broker, group string, ms []Membership) []Membership {
	t.Helper()
	out := make([]Membership, len(ms))
	for i, m := range ms {
		hb, err := b.Heartbeat(context.Background(), group, m.MemberID, nil)
		if err != nil {
			t.Fatalf("heartbeat %s: %v", m.MemberID, err)
		}
		out[i] = hb
	}
	return out
}

func partsOf(m Membership, topic string) []int {
	for _, a := range m.Assignments {
		if a.Topic == topic {
			return a.Partitions
		}
	}
	return nil
}

func TestGroupJoinAssignsDisjointCovering(t *testing.T) {
	ctx := context.Background()
	b, _ := groupBroker(t, mem.New(), 6, 1)
	var ms []Membership
	gen := int64(0)
	for i := range 4 {
		m, err := b.JoinGroup(ctx, "g", []string{"t0", "t1"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m.Generation <= gen {
			t.Fatalf("join %d: generation %d after %d", i, m.Generation, gen)
		}
		gen = m.Generation
		ms = append(ms, m)
		ms = heartbeatAll(t, b, "g", ms)
		checkCover(t, ms, "t0", 6)
		checkCover(t, ms, "t1", 1)
		for _, m := range ms {
			if m.Generation != gen {
				t.Fatalf("member %s at generation %d, group at %d", m.MemberID, m.Generation, gen)
			}
		}
	}
	// Leaving moves only the leaver's partitions: the others keep theirs.
	before := map[string][]int{}
	for _, m := range ms {
		before[m.MemberID] = partsOf(m, "t0")
	}
	if err := b.LeaveGroup(ctx, "g", ms[1].MemberID); err != nil {
		t.Fatal(err)
	}
	rest := heartbeatAll(t, b, "g", []Membership{ms[0], ms[2], ms[3]})
	checkCover(t, rest, "t0", 6)
	for _, m := range rest {
		for _, p := range before[m.MemberID] {
			if !slices.Contains(partsOf(m, "t0"), p) {
				t.Fatalf("member %s lost partition %d when another left: had %v, has %v", m.MemberID, p, before[m.MemberID], partsOf(m, "t0"))
			}
		}
	}
	if err := b.LeaveGroup(ctx, "g", ms[1].MemberID); !errors.Is(err, ErrMemberNotFound) {
		t.Fatalf("second leave: %v, want ErrMemberNotFound", err)
	}
}

func TestGroupSessionExpiry(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: mem.New()}
	b, clock := groupBroker(t, store, 4)
	a, err := b.JoinGroup(ctx, "g", []string{"t0"}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.JoinGroup(ctx, "g", []string{"t0"}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// a heartbeats every second; c never again.
	for range 2 {
		clock.Advance(time.Second)
		if _, err := b.Heartbeat(ctx, "g", a.MemberID, nil); err != nil {
			t.Fatal(err)
		}
	}
	if hb, err := b.Heartbeat(ctx, "g", c.MemberID, nil); err != nil || len(partsOf(hb, "t0")) != 2 {
		t.Fatalf("c at 2 s, within its session: %+v %v", hb, err)
	}
	// c's deadline (3 s after its join, extended once at 2 s to 5 s: half
	// of it was left) passes at 5 s; a keeps heartbeating.
	for range 3 {
		clock.Advance(time.Second)
		if _, err := b.Heartbeat(ctx, "g", a.MemberID, nil); err != nil {
			t.Fatal(err)
		}
	}
	hb, err := b.Heartbeat(ctx, "g", a.MemberID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := partsOf(hb, "t0"); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("after c expired a holds %v, want every partition", got)
	}
	if _, err := b.Heartbeat(ctx, "g", c.MemberID, nil); !errors.Is(err, ErrMemberNotFound) {
		t.Fatalf("heartbeat of the expired member: %v, want ErrMemberNotFound", err)
	}
	// A commit under c's old membership is refused.
	err = b.CommitGroupOffsetsAs(ctx, "g", &MemberFence{MemberID: c.MemberID, Generation: c.Generation}, []meta.GroupOffset{{Topic: "t0", Partition: 0}})
	if !errors.Is(err, ErrMemberNotFound) {
		t.Fatalf("commit of the expired member: %v", err)
	}
	// The steady state: a heartbeat with more than half the session left
	// reads the item and writes nothing.
	r0, w0 := store.counts()
	clock.Advance(time.Second) // less than half the session left: this one extends
	if _, err := b.Heartbeat(ctx, "g", a.MemberID, nil); err != nil {
		t.Fatal(err)
	}
	_, w1 := store.counts()
	if _, err := b.Heartbeat(ctx, "g", a.MemberID, nil); err != nil {
		t.Fatal(err)
	}
	r2, w2 := store.counts()
	if w2 != w1 || r2-r0 != 2 {
		t.Fatalf("steady heartbeat: %d reads and %d writes for two heartbeats (writes after the second: %d)", r2-r0, w2-w0, w2-w1)
	}
	t.Logf("heartbeats: 2 reads, %d writes (one extension)", w2-w0)
	// Nobody looks for a long time: the last member expires when someone
	// does, and the listing counts no live member without writing.
	clock.Advance(10 * time.Second)
	gs, err := b.Groups(ctx)
	if err != nil || len(gs) != 1 || gs[0].Members != 0 {
		t.Fatalf("groups after every session passed: %+v %v", gs, err)
	}
}

func TestGroupFencedCommits(t *testing.T) {
	ctx := context.Background()
	b, _ := groupBroker(t, mem.New(), 2)
	if _, err := b.Produce(ctx, "t0", []ProduceRecord{{Value: []byte("a"), Partition: 0}, {Value: []byte("b"), Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	a, err := b.JoinGroup(ctx, "g", []string{"t0"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	fa := &MemberFence{MemberID: a.MemberID, Generation: a.Generation}
	if err := b.CommitGroupOffsetsAs(ctx, "g", fa, []meta.GroupOffset{{Topic: "t0", Partition: 0, Offset: 1}, {Topic: "t0", Partition: 1, Offset: 1}}); err != nil {
		t.Fatalf("commit of the only member: %v", err)
	}
	c, err := b.JoinGroup(ctx, "g", []string{"t0"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// a's generation is stale now.
	err = b.CommitGroupOffsetsAs(ctx, "g", fa, []meta.GroupOffset{{Topic: "t0", Partition: 0, Offset: 0}})
	if !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("commit with the old generation: %v, want ErrStaleGeneration", err)
	}
	if _, err := b.Heartbeat(ctx, "g", a.MemberID, &fa.Generation); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("heartbeat with the old generation: %v", err)
	}
	a, err = b.Heartbeat(ctx, "g", a.MemberID, nil)
	if err != nil {
		t.Fatal(err)
	}
	fa = &MemberFence{MemberID: a.MemberID, Generation: a.Generation}
	theirs := partsOf(c, "t0")[0]
	err = b.CommitGroupOffsetsAs(ctx, "g", fa, []meta.GroupOffset{{Topic: "t0", Partition: theirs, Offset: 0}})
	if !errors.Is(err, ErrNotAssigned) {
		t.Fatalf("commit of another member's partition: %v, want ErrNotAssigned", err)
	}
	if err := b.CommitGroupOffsets(ctx, "g", []meta.GroupOffset{{Topic: "t0", Partition: 0, Offset: 0}}); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("commit without membership while members: %v", err)
	}
	if _, err := b.ResetGroupOffsets(ctx, "g", ResetRequest{Topic: "t0", To: "earliest"}); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("reset while members: %v", err)
	}
	// Nothing refused was stored.
	offs, err := b.GroupOffsets(ctx, "g", "t0")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		if o.Offset != 1 {
			t.Fatalf("offsets after refused commits: %+v", offs)
		}
	}
	// Everyone left: plain commits and resets work again.
	for _, m := range []Membership{a, c} {
		if err := b.LeaveGroup(ctx, "g", m.MemberID); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.CommitGroupOffsets(ctx, "g", []meta.GroupOffset{{Topic: "t0", Partition: 0, Offset: 0}}); err != nil {
		t.Fatalf("commit of an empty group: %v", err)
	}
}

func TestGroupLifecycle(t *testing.T) {
	ctx := context.Background()
	b, clock := groupBroker(t, mem.New(), 3)
	for i := range 5 {
		if _, err := b.Produce(ctx, "t0", []ProduceRecord{{Value: []byte{byte(i)}, Partition: i % 3}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if err := b.CommitGroupOffsets(ctx, "billing", []meta.GroupOffset{{Topic: "t0", Partition: 0, Offset: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JoinGroup(ctx, "alpha", []string{"t0"}, 0); err != nil {
		t.Fatal(err)
	}
	gs, err := b.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []GroupSummary{{"alpha", 1}, {"billing", 0}}; !slices.Equal(gs, want) {
		t.Fatalf("groups %+v, want %+v", gs, want)
	}
	// Resets.
	check := func(req ResetRequest, want map[int]int64) {
		t.Helper()
		got, err := b.ResetGroupOffsets(ctx, "billing", req)
		if err != nil {
			t.Fatalf("reset %+v: %v", req, err)
		}
		m := map[int]int64{}
		for _, o := range got {
			m[o.Partition] = o.Offset
		}
		if fmt.Sprint(m) != fmt.Sprint(want) {
			t.Fatalf("reset %+v: %v, want %v", req, m, want)
		}
	}
	check(ResetRequest{Topic: "t0", To: "latest"}, map[int]int64{0: 2, 1: 2, 2: 1})
	check(ResetRequest{Topic: "t0", To: "earliest", Partitions: []int{1}}, map[int]int64{1: 0})
	check(ResetRequest{Topic: "t0", Offset: ptr(int64(1)), Partitions: []int{0}}, map[int]int64{0: 1})
	// Record i was appended at t0+i s: from t0+3 s on, partition 0 holds
	// record 3 (offset 1), partition 1 record 4 (offset 1), partition 2 none.
	check(ResetRequest{Topic: "t0", Timestamp: ptr(int64(1_700_000_003_000))}, map[int]int64{0: 1, 1: 1, 2: 1})
	var oor *OffsetOutOfRangeError
	if _, err := b.ResetGroupOffsets(ctx, "billing", ResetRequest{Topic: "t0", Offset: ptr(int64(9)), Partitions: []int{0}}); !errors.As(err, &oor) {
		t.Fatalf("reset past the high watermark: %v", err)
	}
	if _, err := b.ResetGroupOffsets(ctx, "billing", ResetRequest{Topic: "t0", To: "latest", Partitions: []int{}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reset of no partitions: %v", err)
	}
	if _, err := b.ResetGroupOffsets(ctx, "billing", ResetRequest{Topic: "t0", To: "middle"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reset to middle: %v", err)
	}
	if _, err := b.ResetGroupOffsets(ctx, "billing", ResetRequest{Topic: "t0", To: "latest", Partitions: []int{3}}); !errors.Is(err, ErrPartitionNotFound) {
		t.Fatalf("reset of partition 3: %v", err)
	}
	// Delete.
	if err := b.DeleteGroup(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteGroup(ctx, "billing"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := b.DescribeGroup(ctx, "billing"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("describe deleted: %v", err)
	}
	offs, err := b.GroupOffsets(ctx, "billing", "t0")
	if err != nil || len(offs) != 0 {
		t.Fatalf("offsets of a deleted group: %+v %v", offs, err)
	}
}

// A topic delete removes every group's offsets of it; a topic created again
// under the name starts with none, and other topics' offsets stay.
func TestTopicDeleteRemovesGroupOffsets(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	b, _ := groupBroker(t, store, 2, 1)
	if _, err := b.Produce(ctx, "t0", []ProduceRecord{{Value: []byte("a"), Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g1", "g2"} {
		if err := b.CommitGroupOffsets(ctx, g, []meta.GroupOffset{{Topic: "t0", Partition: 0, Offset: 1}, {Topic: "t1", Partition: 0, Offset: 0}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteTopic(ctx, "t0"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g1", "g2"} {
		raw, err := store.GroupOffsets(ctx, g, "t0")
		if err != nil || len(raw) != 0 {
			t.Fatalf("group %s offsets of the deleted topic in the store: %+v %v", g, raw, err)
		}
		kept, err := b.GroupOffsets(ctx, g, "t1")
		if err != nil || len(kept) != 1 {
			t.Fatalf("group %s offsets of the other topic: %+v %v", g, kept, err)
		}
		st, _ := store.Group(ctx, g)
		if !slices.Equal(st.OffsetTopics, []string{"t1"}) {
			t.Fatalf("group %s registry after the delete: %v", g, st.OffsetTopics)
		}
	}
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "t0", Partitions: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	offs, err := b.GroupOffsets(ctx, "g1", "t0")
	if err != nil || len(offs) != 0 {
		t.Fatalf("offsets of the re-created topic: %+v %v", offs, err)
	}
}

// Many members joining at once through several brokers on one store (the
// Lambda case: no shared memory) all get in, with one covering assignment.
func TestGroupConcurrentJoins(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	b0, clock := groupBroker(t, store, 12)
	brokers := []*Broker{b0}
	for range 2 {
		b, err := New(ctx, Config{DataDir: t.TempDir(), Meta: store, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		brokers = append(brokers, b)
	}
	var wg sync.WaitGroup
	ids := make([]string, 9)
	errs := make([]error, 9)
	for i := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := brokers[i%3].JoinGroup(ctx, "g", []string{"t0"}, time.Minute)
			ids[i], errs[i] = m.MemberID, err
		}()
	}
	wg.Wait()
	var ms []Membership
	for i, err := range errs {
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		ms = append(ms, Membership{MemberID: ids[i]})
	}
	ms = heartbeatAll(t, b0, "g", ms)
	checkCover(t, ms, "t0", 12)
}
