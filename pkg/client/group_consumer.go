package client

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tierlog/tierlog/internal/apilimit"
)

// DefaultSessionTimeout is a member consumer's session timeout unless
// WithSessionTimeout says otherwise: the server's default (docs/api.md).
// A consumer that dies loses its partitions to the others within it.
const DefaultSessionTimeout = apilimit.DefaultSessionTimeout

// member is a consumer's group membership.
type member struct {
	session time.Duration

	// refreshMu serializes heartbeats, joins and the assignment changes
	// they make.
	refreshMu sync.Mutex
	mu        sync.Mutex // guards id and gen
	id        string
	gen       int64
}

func (m *member) fence() (string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id, m.gen
}

// newMemberConsumer joins the group and starts reading its assignment.
func (c *Client) newMemberConsumer(ctx context.Context, topic string, cfg consumerConfig) (*Consumer, error) {
	session := cfg.session
	if session == 0 {
		session = DefaultSessionTimeout
	}
	k := newConsumer(c, topic, cfg)
	k.member = &member{session: session}
	m, err := c.JoinGroup(ctx, cfg.group, []string{topic}, session)
	if err != nil {
		k.stop()
		return nil, err
	}
	// The first assignment honours the start options (WithStartOffset...);
	// later ones start at the group's committed offsets.
	if err := k.apply(ctx, m, &k.cfg, false); err != nil {
		k.stop()
		k.wg.Wait()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.LeaveGroup(lctx, cfg.group, m.MemberID)
		return nil, err
	}
	k.wg.Add(1)
	go k.heartbeatLoop()
	k.startAutoCommit()
	return k, nil
}

// apply makes m the consumer's membership: fetchers stop for partitions
// it lost and start for those it gained, at the committed offsets (or
// where start says, for the first assignment).
// With expired, the partitions it no longer has were lost (the member's
// session had ended), not revoked: the callbacks say which.
func (k *Consumer) apply(ctx context.Context, m Membership, start *consumerConfig, expired bool) error {
	want := slices.Clone(m.Partitions(k.topic))
	slices.Sort(want)
	k.mu.Lock()
	var lost, gained []int
	for _, p := range k.mu.parts {
		if !slices.Contains(want, p) {
			lost = append(lost, p)
		}
	}
	for _, p := range want {
		if _, ok := k.mu.fetchers[p]; !ok {
			gained = append(gained, p)
		}
	}
	done := k.stopLocked(lost)
	k.mu.Unlock()
	for _, d := range done {
		<-d
	}
	k.member.mu.Lock()
	k.member.id, k.member.gen = m.MemberID, m.Generation
	k.member.mu.Unlock()
	if len(lost) > 0 || len(gained) > 0 {
		k.c.cfg.log.LogAttrs(ctx, slog.LevelInfo, "group assignment changed", slog.String("group", k.cfg.group),
			slog.String("member", m.MemberID), slog.Int64("generation", m.Generation),
			slog.Any("lost", lost), slog.Any("gained", gained))
	}
	if len(lost) > 0 {
		if fn := k.cfg.onRevoked; expired {
			fn = k.cfg.onLost
			if fn != nil {
				fn(ctx, k.topic, lost)
			}
		} else if fn != nil {
			fn(ctx, k.topic, lost)
		}
	}
	if len(gained) == 0 {
		return nil
	}
	if start == nil {
		start = &consumerConfig{group: k.cfg.group, reset: k.cfg.reset}
	}
	pos, err := k.c.startPositions(ctx, k.topic, gained, start)
	if err != nil {
		return err
	}
	k.mu.Lock()
	if k.ctx.Err() != nil {
		k.mu.Unlock()
		return ErrClosed
	}
	k.startLocked(gained, pos)
	k.mu.Unlock()
	if k.cfg.onAssigned != nil {
		k.cfg.onAssigned(ctx, k.topic, gained)
	}
	return nil
}

// refresh heartbeats (joining again if the member expired) and applies
// the answer.
func (k *Consumer) refresh(ctx context.Context) error {
	k.member.refreshMu.Lock()
	defer k.member.refreshMu.Unlock()
	id, _ := k.member.fence()
	m, err := k.c.Heartbeat(ctx, k.cfg.group, id)
	expired := false
	if isMemberGone(err) {
		k.c.cfg.log.LogAttrs(ctx, slog.LevelWarn, "group membership expired; joining again", slog.String("group", k.cfg.group), slog.String("member", id))
		m, err = k.c.JoinGroup(ctx, k.cfg.group, []string{k.topic}, k.member.session)
		expired = true
	}
	if err != nil {
		return err
	}
	return k.apply(ctx, m, nil, expired)
}

// heartbeatLoop heartbeats every third of the session timeout (a commit
// that finds the membership out of date refreshes it itself).
func (k *Consumer) heartbeatLoop() {
	defer k.wg.Done()
	interval := k.member.session / 3
	t := time.NewTimer(interval)
	defer t.Stop()
	bo := newBackOff(k.c.cfg.backoff)
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		err := k.refresh(k.ctx)
		next := interval
		if err != nil {
			if k.ctx.Err() != nil {
				return
			}
			next = min(bo.NextBackOff(), interval)
			k.c.cfg.log.LogAttrs(k.ctx, slog.LevelWarn, "group heartbeat failed; retrying", slog.String("group", k.cfg.group),
				slog.Duration("wait", next), slog.String("err", err.Error()))
		} else {
			bo.Reset()
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// commitAsMember commits the changed positions under the current
// membership. Refused because a rebalance moved on, it refreshes the
// membership and commits what the consumer still holds; partitions that
// went elsewhere are not committed (their new owner reads from the last
// commit).
func (k *Consumer) commitAsMember(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		offs := k.changedOffsets()
		if len(offs) == 0 {
			return nil
		}
		id, gen := k.member.fence()
		err := k.c.CommitGroupOffsetsAs(ctx, k.cfg.group, id, gen, offs)
		if err == nil {
			k.markCommitted(offs)
			return nil
		}
		if !isFenced(err) {
			return err
		}
		if attempt > 0 {
			k.c.cfg.log.LogAttrs(ctx, slog.LevelWarn, "group commit refused after a rebalance; positions not committed",
				slog.String("group", k.cfg.group), slog.String("err", err.Error()))
			return nil
		}
		if k.ctx.Err() != nil {
			return fmt.Errorf("client: commit of group %q after close: %w", k.cfg.group, err)
		}
		if rerr := k.refresh(ctx); rerr != nil {
			return rerr
		}
	}
}

// leave removes the member from the group.
func (k *Consumer) leave(ctx context.Context) error {
	id, _ := k.member.fence()
	err := k.c.LeaveGroup(ctx, k.cfg.group, id)
	if isMemberGone(err) {
		return nil // expired already
	}
	return err
}

// Refresh heartbeats now and applies the group's current assignment (a
// member consumer does so by itself every third of its session timeout).
// Without membership it does nothing.
func (k *Consumer) Refresh(ctx context.Context) error {
	if k.member == nil {
		return nil
	}
	if k.ctx.Err() != nil {
		return ErrClosed
	}
	return k.refresh(ctx)
}
