package broker

// Consumer groups: committed offsets, membership with assignments, and the
// group lifecycle (list, describe, delete, offsets reset).
//
// # Membership state
//
// A group's members, their session deadlines, their assignments, the
// generation and the topics the group has offsets for live in one item,
// meta.GroupState, read and written whole: every change is one read and
// one conditional write on the item's version (meta.Store.PutGroup), retried
// from a fresh read when another writer got there first. Nothing runs
// between requests (a Lambda container may be frozen or gone): a member's
// expiry is decided when someone looks. Every join, heartbeat, leave and
// fenced commit first removes the members whose deadline has passed, and
// reassigns their partitions in the same write.
//
// A heartbeat in the steady state is one read of the item and no write: a
// member's deadline (ExpiresMs) is moved to now + session timeout only when
// less than half of the session remains, so with the client's heartbeat
// every third of the session a member costs one conditional write every
// second heartbeat. A member is therefore removed between half its session
// timeout and its session timeout after its last heartbeat (never later).
//
// # Assignment
//
// Each topic's partitions are split among the members subscribed to it:
// every member gets floor(P/n) or ceil(P/n) partitions, members keep what
// they had where the balance allows (sticky), so a join or leave moves only
// the partitions it must. Assignments are disjoint and cover every
// partition. The generation is bumped whenever the members or the
// assignment change. A partition count that grew (PATCH) is seen at the next
// heartbeat after the topic cache refreshes (TopicRefresh) and rebalances.
//
// # Fencing
//
// A commit carrying a member id and generation is accepted only if the
// generation is the group's current one and every partition is assigned to
// that member in it; a commit without them is refused while the group has
// live members. The check reads the item; the offsets are written after it,
// so a commit may land just after a rebalance it did not see: it then holds
// offsets the old owner had processed, and the new owner re-reads from
// what was committed: at most the uncommitted records of the moved
// partitions are delivered twice, none is lost.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tierlog/tierlog/internal/apilimit"
	"github.com/tierlog/tierlog/pkg/meta"
)

// Group errors; the API maps each to its status.
var (
	// ErrGroupNotFound means the group has no state item (admin routes).
	ErrGroupNotFound = errors.New("broker: group not found")
	// ErrMemberNotFound means the member is unknown to the group or its
	// session expired.
	ErrMemberNotFound = errors.New("broker: member not found")
	// ErrStaleGeneration means a member's commit or heartbeat named a
	// generation that is not the group's, or a commit or reset without
	// membership reached a group that has members.
	ErrStaleGeneration = errors.New("broker: stale generation")
	// ErrNotAssigned means a member committed a partition it is not
	// assigned.
	ErrNotAssigned = errors.New("broker: partition not assigned")
)

// Group limits.
const (
	DefaultSessionTimeout = apilimit.DefaultSessionTimeout
	MinSessionTimeout     = apilimit.MinSessionTimeout
	MaxSessionTimeout     = apilimit.MaxSessionTimeout
	// MaxGroupMembers bounds a group's members; MaxGroupStateBytes its
	// state item as JSON, well under DynamoDB's 400 KB item limit. A join
	// past either is ErrTooLarge.
	MaxGroupMembers    = 1000
	MaxGroupStateBytes = 256 << 10
	// MaxGroupTopics bounds the topics one member subscribes to.
	MaxGroupTopics = 100
)

// groupRetries bounds the read-modify-write loop on one group item.
const groupRetries = 32

// A group item is changed by read-modify-write, conditional on its
// version. Changes of one group in one process take turns (lockGroup), so
// they never conflict with each other; a conflict with another process
// backs off, jittered (conflictBackoff), so that processes in a storm of
// joins, heartbeats and commits spread out instead of failing together.

// groupStripes is how many locks the groups of one process share.
const groupStripes = 64

// lockGroup takes group's lock of this process and returns its unlock.
func (b *Broker) lockGroup(group string) func() {
	mu := &b.groupLocks[xxhash.Sum64String(group)%groupStripes]
	mu.Lock()
	return mu.Unlock
}

// conflictBackoff waits before attempt (from 0) of a read-modify-write
// that lost a conflict: nothing before the first, then 1 ms doubling to
// 64 ms, each a random time up to that; or returns ctx's error.
func conflictBackoff(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return ctx.Err()
	}
	d := time.Duration(mrand.Int64N(int64(time.Millisecond) << min(attempt-1, 6)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	}
}

// Membership is a member's view of its group: its id, the generation and
// its assignments.
type Membership struct {
	MemberID    string
	Generation  int64
	Assignments []meta.TopicPartitions
}

// MemberFence names the member and generation a commit is made under.
type MemberFence struct {
	MemberID   string
	Generation int64
}

// GroupSummary is one group of a listing: its live members.
type GroupSummary struct {
	Group   string
	Members int
}

// GroupDescription is a group's membership as of now (expired members
// left out) and the topics it has offsets for.
type GroupDescription struct {
	Group        string
	Generation   int64
	Members      []meta.GroupMember
	OffsetTopics []string
}

// checkGroupName applies the topic name rule to group names.
func checkGroupName(group string) error {
	if !topicName.MatchString(group) || group == "." || group == ".." {
		//lint:ignore ST1005 the message ends with the rule it quotes (". or ..") and is an API answer
		return fmt.Errorf("%w: group name %q must match ^[A-Za-z0-9._-]{1,249}$ and not be . or ..", ErrInvalid, group)
	}
	return nil
}

// updateGroup reads the group item, runs fn on a copy and writes it back if
// fn changed it, retrying from a fresh read when another writer won. fn
// returns whether it changed the state and the error the caller gets (the
// change is written even with an error: an expiry found by a heartbeat of
// an expired member). It returns the state as written (or read).
func (b *Broker) updateGroup(ctx context.Context, group string, fn func(g *meta.GroupState, now int64) (bool, error)) (meta.GroupState, error) {
	defer b.lockGroup(group)()
	for attempt := range groupRetries {
		if err := conflictBackoff(ctx, attempt); err != nil {
			return meta.GroupState{}, err
		}
		cur, err := b.cfg.Meta.Group(ctx, group)
		if err != nil {
			return meta.GroupState{}, metaErr(fmt.Sprintf("read group %q", group), err)
		}
		g := cur.Clone()
		changed, ferr := fn(&g, b.cfg.Now().UnixMilli())
		if !changed {
			return cur, ferr
		}
		if err := b.cfg.Meta.PutGroup(ctx, g); err != nil {
			if errors.Is(err, meta.ErrConflict) {
				continue
			}
			return meta.GroupState{}, metaErr(fmt.Sprintf("write group %q", group), err)
		}
		g.Version++
		return g, ferr
	}
	return meta.GroupState{}, fmt.Errorf("%w: group %q: too many concurrent changes", ErrUnavailable, group)
}

// expire removes the members whose deadline has passed.
func expire(g *meta.GroupState, now int64) bool {
	n := len(g.Members)
	g.Members = slices.DeleteFunc(g.Members, func(m meta.GroupMember) bool { return m.ExpiresMs <= now })
	return len(g.Members) != n
}

func liveMembers(g meta.GroupState, now int64) int {
	n := 0
	for _, m := range g.Members {
		if m.ExpiresMs > now {
			n++
		}
	}
	return n
}

func findMember(g *meta.GroupState, id string) *meta.GroupMember {
	for i := range g.Members {
		if g.Members[i].ID == id {
			return &g.Members[i]
		}
	}
	return nil
}

// topicSizes returns the partition count of every topic the members
// subscribe to, from the topic cache; a topic that does not exist counts 0.
func (b *Broker) topicSizes(ctx context.Context, g *meta.GroupState) ([]meta.TopicSize, error) {
	var names []string
	for _, m := range g.Members {
		names = append(names, m.Topics...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]meta.TopicSize, 0, len(names))
	for _, name := range names {
		t, err := b.acquire(ctx, name)
		if errors.Is(err, ErrTopicNotFound) {
			out = append(out, meta.TopicSize{Topic: name})
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, meta.TopicSize{Topic: name, Partitions: t.cfg.Partitions})
		t.release()
	}
	return out, nil
}

// rebalance recomputes the assignment for the current members and topic
// sizes, and bumps the generation if the members (membersChanged) or the
// assignment changed. It reports whether g changed.
func (b *Broker) rebalance(ctx context.Context, g *meta.GroupState, membersChanged bool) (bool, error) {
	sizes, err := b.topicSizes(ctx, g)
	if err != nil {
		return false, err
	}
	before := assignmentKey(g)
	assign(g, sizes)
	changed := membersChanged || assignmentKey(g) != before || !slices.Equal(sizes, g.Sizes)
	g.Sizes = sizes
	if changed {
		g.Generation++
	}
	return changed, nil
}

func assignmentKey(g *meta.GroupState) string {
	var sb strings.Builder
	for _, m := range g.Members {
		fmt.Fprintf(&sb, "%s:%v;", m.ID, m.Assignments)
	}
	return sb.String()
}

// assign splits each topic's partitions among its subscribers: balanced
// (each gets floor or ceil of P/n), sticky (a member keeps what it had,
// within its quota), disjoint and covering.
func assign(g *meta.GroupState, sizes []meta.TopicSize) {
	next := make([][]meta.TopicPartitions, len(g.Members))
	for _, ts := range sizes {
		var subs []int // indexes into g.Members, in id order
		for i, m := range g.Members {
			if slices.Contains(m.Topics, ts.Topic) {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 {
			continue
		}
		owned := make([]bool, ts.Partitions)
		kept := make(map[int][]int, len(subs))
		for _, i := range subs {
			for _, a := range g.Members[i].Assignments {
				if a.Topic != ts.Topic {
					continue
				}
				for _, p := range a.Partitions {
					if p >= 0 && p < ts.Partitions && !owned[p] {
						owned[p] = true
						kept[i] = append(kept[i], p)
					}
				}
			}
		}
		// The members keeping most get the larger quotas, so fewest move.
		order := slices.Clone(subs)
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(len(kept[y]), len(kept[x])) })
		base, extra := ts.Partitions/len(subs), ts.Partitions%len(subs)
		quota := map[int]int{}
		for rank, i := range order {
			quota[i] = base
			if rank < extra {
				quota[i]++
			}
		}
		var free []int
		got := map[int][]int{}
		for _, i := range subs {
			ps := kept[i]
			slices.Sort(ps)
			if len(ps) > quota[i] {
				free = append(free, ps[quota[i]:]...)
				ps = ps[:quota[i]]
			}
			got[i] = slices.Clone(ps)
		}
		for p := range ts.Partitions {
			if !owned[p] {
				free = append(free, p)
			}
		}
		slices.Sort(free)
		for _, i := range subs {
			for len(got[i]) < quota[i] && len(free) > 0 {
				got[i] = append(got[i], free[0])
				free = free[1:]
			}
			slices.Sort(got[i])
			next[i] = append(next[i], meta.TopicPartitions{Topic: ts.Topic, Partitions: got[i]})
		}
	}
	for i := range g.Members {
		g.Members[i].Assignments = next[i]
	}
}

func membershipOf(g meta.GroupState, m *meta.GroupMember) Membership {
	out := Membership{MemberID: m.ID, Generation: g.Generation, Assignments: []meta.TopicPartitions{}}
	for _, a := range m.Assignments {
		out.Assignments = append(out.Assignments, meta.TopicPartitions{Topic: a.Topic, Partitions: slices.Clone(a.Partitions)})
	}
	return out
}

func checkSession(d time.Duration) error {
	if d < MinSessionTimeout || d > MaxSessionTimeout {
		return fmt.Errorf("%w: session_timeout_ms %d must be %d..%d", ErrInvalid, d.Milliseconds(), MinSessionTimeout.Milliseconds(), MaxSessionTimeout.Milliseconds())
	}
	return nil
}

func newMemberID() string {
	var id [12]byte
	rand.Read(id[:])
	return "m-" + hex.EncodeToString(id[:])
}

// JoinGroup adds a member subscribed to topics (which must exist) with a
// session timeout (0: DefaultSessionTimeout), rebalances, and returns the
// new member's membership.
func (b *Broker) JoinGroup(ctx context.Context, group string, topics []string, session time.Duration) (Membership, error) {
	if err := checkGroupName(group); err != nil {
		return Membership{}, err
	}
	if session == 0 {
		session = DefaultSessionTimeout
	}
	if err := checkSession(session); err != nil {
		return Membership{}, err
	}
	if len(topics) == 0 || len(topics) > MaxGroupTopics {
		return Membership{}, fmt.Errorf("%w: topics must name 1 to %d topics", ErrInvalid, MaxGroupTopics)
	}
	topics = slices.Clone(topics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	for _, name := range topics {
		t, err := b.acquire(ctx, name)
		if err != nil {
			return Membership{}, err
		}
		t.release()
	}
	id := newMemberID()
	g, err := b.updateGroup(ctx, group, func(g *meta.GroupState, now int64) (bool, error) {
		expire(g, now)
		if len(g.Members) >= MaxGroupMembers {
			return false, fmt.Errorf("%w: group %q has %d members, at most %d", ErrTooLarge, group, len(g.Members), MaxGroupMembers)
		}
		g.Group = group
		g.Members = append(g.Members, meta.GroupMember{ID: id, Topics: topics, SessionTimeoutMs: session.Milliseconds(),
			ExpiresMs: now + session.Milliseconds(), JoinedMs: now})
		slices.SortFunc(g.Members, func(x, y meta.GroupMember) int { return strings.Compare(x.ID, y.ID) })
		if _, err := b.rebalance(ctx, g, true); err != nil {
			return false, err
		}
		if body, err := json.Marshal(g); err != nil || len(body) > MaxGroupStateBytes {
			return false, fmt.Errorf("%w: group %q would hold more than %d bytes of membership state", ErrTooLarge, group, MaxGroupStateBytes)
		}
		return true, nil
	})
	if err != nil {
		return Membership{}, err
	}
	m := findMember(&g, id)
	if m == nil {
		return Membership{}, fmt.Errorf("%w: group %q: joined member %s not in the state written", ErrUnavailable, group, id)
	}
	return membershipOf(g, m), nil
}

// Heartbeat keeps a member alive and returns its current membership. With
// generation set, a generation that is not the group's is
// ErrStaleGeneration. An unknown or expired member is ErrMemberNotFound.
func (b *Broker) Heartbeat(ctx context.Context, group, member string, generation *int64) (Membership, error) {
	if err := checkGroupName(group); err != nil {
		return Membership{}, err
	}
	g, err := b.updateGroup(ctx, group, func(g *meta.GroupState, now int64) (bool, error) {
		expired := expire(g, now)
		m := findMember(g, member)
		if m == nil {
			changed := expired
			if expired {
				if _, err := b.rebalance(ctx, g, true); err != nil {
					return false, err
				}
			}
			return changed, fmt.Errorf("%w: member %q of group %q (expired, left or never joined): join again", ErrMemberNotFound, member, group)
		}
		changed := false
		if left := m.ExpiresMs - now; left < m.SessionTimeoutMs/2 {
			m.ExpiresMs = now + m.SessionTimeoutMs
			changed = true
		}
		rb, err := b.rebalance(ctx, g, expired)
		if err != nil {
			return false, err
		}
		return changed || rb, nil
	})
	if err != nil {
		return Membership{}, err
	}
	m := findMember(&g, member)
	if m == nil {
		return Membership{}, fmt.Errorf("%w: member %q of group %q", ErrMemberNotFound, member, group)
	}
	if generation != nil && *generation != g.Generation {
		return Membership{}, fmt.Errorf("%w: generation %d of member %q, group %q is at generation %d", ErrStaleGeneration, *generation, member, group, g.Generation)
	}
	return membershipOf(g, m), nil
}

// LeaveGroup removes a member and rebalances its partitions to the others.
func (b *Broker) LeaveGroup(ctx context.Context, group, member string) error {
	if err := checkGroupName(group); err != nil {
		return err
	}
	_, err := b.updateGroup(ctx, group, func(g *meta.GroupState, now int64) (bool, error) {
		expired := expire(g, now)
		n := len(g.Members)
		g.Members = slices.DeleteFunc(g.Members, func(m meta.GroupMember) bool { return m.ID == member })
		left := len(g.Members) != n
		if left || expired {
			if _, err := b.rebalance(ctx, g, true); err != nil {
				return false, err
			}
		}
		if !left {
			return expired, fmt.Errorf("%w: member %q of group %q", ErrMemberNotFound, member, group)
		}
		return true, nil
	})
	return err
}

// CommitGroupOffsets stores group offsets after checking each is within its
// partition's [log start, high watermark]. Nothing is stored unless all
// are. It is CommitGroupOffsetsAs without a member: refused while the group
// has members.
func (b *Broker) CommitGroupOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error {
	return b.CommitGroupOffsetsAs(ctx, group, nil, offsets)
}

// CommitGroupOffsetsAs is CommitGroupOffsets fenced by membership: with
// fence, the generation must be the group's and every partition assigned
// to the member (ErrStaleGeneration, ErrNotAssigned, ErrMemberNotFound);
// without, the group must have no live members (ErrStaleGeneration).
func (b *Broker) CommitGroupOffsetsAs(ctx context.Context, group string, fence *MemberFence, offsets []meta.GroupOffset) error {
	if len(offsets) == 0 {
		return fmt.Errorf("%w: no offsets", ErrInvalid)
	}
	offsets = append([]meta.GroupOffset(nil), offsets...)
	hws := make([]int64, len(offsets))
	var topics []string
	for i, o := range offsets {
		inc, bounds, err := b.topicOffsets(ctx, o.Topic, o.Partition)
		if err != nil {
			return err
		}
		if o.Offset < bounds.LogStartOffset || o.Offset > bounds.HighWatermark {
			return &OffsetOutOfRangeError{Offset: o.Offset, LogStartOffset: bounds.LogStartOffset, HighWatermark: bounds.HighWatermark}
		}
		offsets[i].TopicID, offsets[i].TopicCreatedMs = inc.ID, inc.CreatedMs // offsets belong to this incarnation only
		hws[i] = bounds.HighWatermark
		topics = append(topics, o.Topic)
	}
	if err := b.admitCommit(ctx, group, fence, offsets, topics); err != nil {
		return err
	}
	if err := b.cfg.Meta.CommitOffsets(ctx, group, offsets); err != nil {
		return metaErr(fmt.Sprintf("commit offsets of group %q", group), err)
	}
	for i, o := range offsets {
		b.lags.record(group, o.Topic, o.Partition, hws[i]-o.Offset)
	}
	return nil
}

// admitCommit checks a commit against the group's membership and
// registers its topics in the group item (a write only the first time a
// topic is committed, or when expired members are found).
func (b *Broker) admitCommit(ctx context.Context, group string, fence *MemberFence, offsets []meta.GroupOffset, topics []string) error {
	_, err := b.updateGroup(ctx, group, func(g *meta.GroupState, now int64) (bool, error) {
		g.Group = group
		changed := false
		if expire(g, now) {
			if _, err := b.rebalance(ctx, g, true); err != nil {
				return false, err
			}
			changed = true
		}
		if err := checkFence(g, fence, offsets); err != nil {
			return changed, err
		}
		for _, t := range topics {
			if i, found := slices.BinarySearch(g.OffsetTopics, t); !found {
				g.OffsetTopics = slices.Insert(g.OffsetTopics, i, t)
				changed = true
			}
		}
		return changed, nil
	})
	return err
}

func checkFence(g *meta.GroupState, fence *MemberFence, offsets []meta.GroupOffset) error {
	if fence == nil {
		if len(g.Members) > 0 {
			return fmt.Errorf("%w: group %q has %d members at generation %d: commit with member_id and generation", ErrStaleGeneration, g.Group, len(g.Members), g.Generation)
		}
		return nil
	}
	m := findMember(g, fence.MemberID)
	if m == nil {
		return fmt.Errorf("%w: member %q of group %q (expired, left or never joined): join again", ErrMemberNotFound, fence.MemberID, g.Group)
	}
	if fence.Generation != g.Generation {
		return fmt.Errorf("%w: generation %d of member %q, group %q is at generation %d", ErrStaleGeneration, fence.Generation, fence.MemberID, g.Group, g.Generation)
	}
	for _, o := range offsets {
		if !assigned(m, o.Topic, o.Partition) {
			return fmt.Errorf("%w: topic %q partition %d is not assigned to member %q in generation %d", ErrNotAssigned, o.Topic, o.Partition, fence.MemberID, g.Generation)
		}
	}
	return nil
}

func assigned(m *meta.GroupMember, topic string, p int) bool {
	for _, a := range m.Assignments {
		if a.Topic == topic && slices.Contains(a.Partitions, p) {
			return true
		}
	}
	return false
}

// GroupOffsets returns a group's offsets for a topic with each partition's
// lag (high watermark minus the committed offset).
func (b *Broker) GroupOffsets(ctx context.Context, group, topicName string) ([]GroupOffset, error) {
	t, err := b.acquire(ctx, topicName)
	if err != nil {
		return nil, err
	}
	defer t.release()
	offs, err := b.cfg.Meta.GroupOffsets(ctx, group, topicName)
	if err != nil {
		return nil, metaErr(fmt.Sprintf("read offsets of group %q", group), err)
	}
	out := make([]GroupOffset, 0, len(offs))
	for _, o := range offs {
		if (o.TopicID != "" && o.TopicID != t.cfg.ID) || o.Partition >= t.cfg.Partitions {
			continue // left from an earlier topic of that name: deleted with it
		}
		l, err := t.part(ctx, o.Partition)
		if err != nil {
			return nil, err
		}
		bounds, err := l.Bounds(ctx)
		if err != nil {
			return nil, mapErr(err)
		}
		lag := max(bounds.HighWatermark-o.Offset, 0)
		b.lags.record(group, topicName, o.Partition, lag)
		out = append(out, GroupOffset{GroupOffset: o, Lag: lag})
	}
	return out, nil
}

// Groups lists every group with its live members, sorted by name. A group
// exists from its first join or commit until DeleteGroup.
func (b *Broker) Groups(ctx context.Context) ([]GroupSummary, error) {
	gs, err := b.cfg.Meta.Groups(ctx)
	if err != nil {
		return nil, metaErr("list groups", err)
	}
	now := b.cfg.Now().UnixMilli()
	out := make([]GroupSummary, 0, len(gs))
	for _, g := range gs {
		out = append(out, GroupSummary{Group: g.Group, Members: liveMembers(g, now)})
	}
	slices.SortFunc(out, func(x, y GroupSummary) int { return strings.Compare(x.Group, y.Group) })
	return out, nil
}

// DescribeGroup returns a group's live members and offset topics; it
// writes nothing (expired members are left out, not removed).
func (b *Broker) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	if err := checkGroupName(group); err != nil {
		return GroupDescription{}, err
	}
	g, err := b.cfg.Meta.Group(ctx, group)
	if err != nil {
		return GroupDescription{}, metaErr(fmt.Sprintf("read group %q", group), err)
	}
	if g.Version == 0 {
		return GroupDescription{}, fmt.Errorf("%w: %q", ErrGroupNotFound, group)
	}
	now := b.cfg.Now().UnixMilli()
	d := GroupDescription{Group: group, Generation: g.Generation, Members: []meta.GroupMember{}, OffsetTopics: slices.Clone(g.OffsetTopics)}
	for _, m := range g.Members {
		if m.ExpiresMs > now {
			d.Members = append(d.Members, m)
		}
	}
	return d, nil
}

// DeleteGroup removes a group's offsets and its membership item. Members
// still running find themselves unknown at their next heartbeat.
func (b *Broker) DeleteGroup(ctx context.Context, group string) error {
	if err := checkGroupName(group); err != nil {
		return err
	}
	defer b.lockGroup(group)()
	for attempt := range groupRetries {
		if err := conflictBackoff(ctx, attempt); err != nil {
			return err
		}
		g, err := b.cfg.Meta.Group(ctx, group)
		if err != nil {
			return metaErr(fmt.Sprintf("read group %q", group), err)
		}
		if g.Version == 0 {
			return fmt.Errorf("%w: %q", ErrGroupNotFound, group)
		}
		for _, topic := range g.OffsetTopics {
			if err := b.cfg.Meta.DeleteGroupOffsets(ctx, group, topic); err != nil {
				return metaErr(fmt.Sprintf("delete offsets of group %q topic %q", group, topic), err)
			}
		}
		err = b.cfg.Meta.DeleteGroup(ctx, group, g.Version)
		if errors.Is(err, meta.ErrConflict) {
			continue // a member or a commit changed it: look again
		}
		if err != nil {
			return metaErr(fmt.Sprintf("delete group %q", group), err)
		}
		for _, topic := range g.OffsetTopics {
			b.lags.forgetGroup(group, topic)
		}
		return nil
	}
	return fmt.Errorf("%w: group %q: too many concurrent changes", ErrUnavailable, group)
}

// ResetRequest says where ResetGroupOffsets moves a group's offsets: To
// ("earliest" or "latest"), or Timestamp, or Offset (exactly one), on
// Partitions (nil: all) of Topic.
type ResetRequest struct {
	Topic      string
	To         string
	Timestamp  *int64
	Offset     *int64
	Partitions []int
}

// ResetGroupOffsets sets the group's offsets of a topic (Kafka's
// kafka-consumer-groups --reset-offsets). Refused while the group has live
// members (ErrStaleGeneration); an explicit offset outside a partition's
// [log start, high watermark] is an *OffsetOutOfRangeError. It returns
// the offsets as GroupOffsets answers them, for the partitions reset.
func (b *Broker) ResetGroupOffsets(ctx context.Context, group string, req ResetRequest) ([]GroupOffset, error) {
	if err := checkGroupName(group); err != nil {
		return nil, err
	}
	n := 0
	if req.To != "" {
		n++
		if req.To != "earliest" && req.To != "latest" {
			return nil, fmt.Errorf("%w: to %q must be \"earliest\" or \"latest\"", ErrInvalid, req.To)
		}
	}
	if req.Timestamp != nil {
		n++
		if *req.Timestamp < 0 {
			return nil, fmt.Errorf("%w: timestamp %d must be >= 0", ErrInvalid, *req.Timestamp)
		}
	}
	if req.Offset != nil {
		n++
	}
	if n != 1 {
		return nil, fmt.Errorf("%w: give exactly one of to, timestamp and offset", ErrInvalid)
	}
	t, err := b.Topic(ctx, req.Topic)
	if err != nil {
		return nil, err
	}
	if req.Partitions != nil && len(req.Partitions) == 0 {
		return nil, fmt.Errorf("%w: partitions is empty: leave it out to reset every partition", ErrInvalid)
	}
	parts := slices.Clone(req.Partitions)
	if parts == nil {
		for p := range t.Partitions {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	if len(slices.Compact(slices.Clone(parts))) != len(parts) {
		return nil, fmt.Errorf("%w: partitions repeat a partition", ErrInvalid)
	}
	for _, p := range parts {
		if p < 0 || p >= t.Partitions {
			return nil, fmt.Errorf("%w: partition %d of topic %q (partitions: %d)", ErrPartitionNotFound, p, t.Name, t.Partitions)
		}
	}
	offs := make([]meta.GroupOffset, 0, len(parts))
	for _, p := range parts {
		inc, bounds, err := b.topicOffsets(ctx, req.Topic, p)
		if err != nil {
			return nil, err
		}
		var off int64
		switch {
		case req.To == "earliest":
			off = bounds.LogStartOffset
		case req.To == "latest":
			off = bounds.HighWatermark
		case req.Timestamp != nil:
			to, err := b.OffsetForTime(ctx, req.Topic, p, *req.Timestamp)
			if err != nil {
				return nil, err
			}
			off = max(to.Offset, bounds.LogStartOffset)
		default:
			off = *req.Offset
			if off < bounds.LogStartOffset || off > bounds.HighWatermark {
				return nil, &OffsetOutOfRangeError{Offset: off, LogStartOffset: bounds.LogStartOffset, HighWatermark: bounds.HighWatermark}
			}
		}
		offs = append(offs, meta.GroupOffset{Topic: req.Topic, TopicID: inc.ID, TopicCreatedMs: inc.CreatedMs, Partition: p, Offset: off})
	}
	if err := b.admitCommit(ctx, group, nil, offs, []string{req.Topic}); err != nil {
		return nil, err
	}
	if err := b.cfg.Meta.CommitOffsets(ctx, group, offs); err != nil {
		return nil, metaErr(fmt.Sprintf("reset offsets of group %q", group), err)
	}
	all, err := b.GroupOffsets(ctx, group, req.Topic)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, o := range all {
		if slices.Contains(parts, o.Partition) {
			out = append(out, o)
		}
	}
	return out, nil
}

// deleteTopicOffsets removes every group's offsets for a topic being
// deleted: the groups that registered it (GroupState.OffsetTopics, found
// with one listing of the group items), then the registration. Offsets a
// commit racing the delete writes afterwards carry the deleted
// incarnation's id and are never served for a topic created again.
func (b *Broker) deleteTopicOffsets(ctx context.Context, topic string) error {
	gs, err := b.cfg.Meta.Groups(ctx)
	if err != nil {
		return metaErr("list groups", err)
	}
	for _, g := range gs {
		if _, found := slices.BinarySearch(g.OffsetTopics, topic); !found {
			continue
		}
		if err := b.cfg.Meta.DeleteGroupOffsets(ctx, g.Group, topic); err != nil {
			return metaErr(fmt.Sprintf("delete offsets of group %q topic %q", g.Group, topic), err)
		}
		_, err := b.updateGroup(ctx, g.Group, func(g *meta.GroupState, _ int64) (bool, error) {
			i, found := slices.BinarySearch(g.OffsetTopics, topic)
			if found {
				g.OffsetTopics = slices.Delete(g.OffsetTopics, i, i+1)
			}
			return found && g.Version != 0, nil
		})
		if err != nil {
			return err
		}
		b.lags.forgetGroup(g.Group, topic)
	}
	return nil
}

// forgetGroup drops a group's lags of one topic.
func (l *lags) forgetGroup(group, topic string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if k.group == group && k.topic == topic {
			delete(l.m, k)
		}
	}
}
