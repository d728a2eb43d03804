package subscribe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
)

// Service creates, lists, describes, changes and deletes subscriptions,
// and (Start) runs their deliverers in this process. Safe for concurrent
// use.
type Service struct {
	c Config
	r *runner
}

// New returns a Service over cfg (defaults applied).
func New(cfg Config) (*Service, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	s := &Service{c: cfg}
	s.r = newRunner(&s.c)
	return s, nil
}

// Stats are the counters of this process's deliverers.
func (s *Service) Stats() *Stats { return s.c.Stats }

// Topics are the topics a subscription touches: its topic and its
// on_failure topic, if any. A scope check runs over them before any change.
func (sub Subscription) Topics() []string {
	out := []string{sub.Topic}
	if sub.OnFailure != nil {
		out = append(out, sub.OnFailure.Topic)
	}
	return out
}

// Validate applies the defaults to sp and checks it, without I/O: what
// Create would store, ID and creation time aside.
func Validate(sp Spec) (Subscription, error) { return fromSpec(sp) }

// CheckTopics reports broker.ErrTopicNotFound for the first of topics that
// does not exist.
func (s *Service) CheckTopics(ctx context.Context, topics []string) error {
	for _, t := range topics {
		if _, err := s.c.Source.Topic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// Create stores a new subscription and commits its start offsets as its
// group's. ErrExists if the name is taken; broker.ErrTopicNotFound if a
// topic is missing.
func (s *Service) Create(ctx context.Context, sp Spec) (Subscription, error) {
	sub, err := fromSpec(sp)
	if err != nil {
		return sub, err
	}
	if err := s.CheckTopics(ctx, sub.Topics()); err != nil {
		return sub, err
	}
	t, err := s.c.Source.Topic(ctx, sub.Topic)
	if err != nil {
		return sub, err
	}
	starts, err := s.startOffsets(ctx, sub, t.Partitions)
	if err != nil {
		return sub, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	sub.ID = hex.EncodeToString(id[:])
	sub.CreatedMs = s.c.Clock.Now().UnixMilli()
	body, err := json.Marshal(sub)
	if err != nil {
		return sub, fmt.Errorf("encode subscription: %w", err)
	}
	err = s.c.Store.PutSubscription(ctx, meta.SubscriptionItem{Name: sub.Name, Spec: body})
	if errors.Is(err, meta.ErrConflict) {
		return sub, fmt.Errorf("%w: %q", ErrExists, sub.Name)
	}
	if err != nil {
		return sub, fmt.Errorf("store subscription: %w", err)
	}
	if err := s.c.Source.CommitGroupOffsets(ctx, sub.Name, starts); err != nil {
		// Undo: a subscription whose start was not recorded would start
		// wherever its group happened to be.
		if derr := s.c.Store.DeleteSubscription(ctx, sub.Name, 1); derr != nil {
			s.c.Logger.Error("undo subscription create", "subscription", sub.Name, "err", derr)
		}
		return sub, fmt.Errorf("commit start offsets of %q: %w", sub.Name, err)
	}
	s.r.changed(sub.Name)
	return sub, nil
}

// startOffsets resolves sub.Start on every partition.
func (s *Service) startOffsets(ctx context.Context, sub Subscription, partitions int) ([]meta.GroupOffset, error) {
	out := make([]meta.GroupOffset, partitions)
	for p := range partitions {
		b, err := s.c.Source.Offsets(ctx, sub.Topic, p)
		if err != nil {
			return nil, err
		}
		off := b.HighWatermark
		switch {
		case sub.Start.Position == StartEarliest:
			off = b.LogStartOffset
		case sub.Start.Timestamp != nil:
			to, err := s.c.Source.OffsetForTime(ctx, sub.Topic, p, *sub.Start.Timestamp)
			if err != nil {
				return nil, err
			}
			off = to.Offset
		case sub.Start.Offset != nil:
			off = min(max(*sub.Start.Offset, b.LogStartOffset), b.HighWatermark)
		}
		out[p] = meta.GroupOffset{Topic: sub.Topic, Partition: p, Offset: off}
	}
	return out, nil
}

// Get returns the named subscription and its stored version, or
// ErrNotFound.
func (s *Service) Get(ctx context.Context, name string) (Subscription, uint64, error) {
	if err := checkName(name); err != nil {
		return Subscription{}, 0, err
	}
	it, err := s.c.Store.Subscription(ctx, name)
	if err != nil {
		return Subscription{}, 0, fmt.Errorf("read subscription: %w", err)
	}
	if it.Version == 0 {
		return Subscription{}, 0, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	var sub Subscription
	if err := json.Unmarshal(it.Spec, &sub); err != nil {
		return sub, 0, fmt.Errorf("decode subscription %q: %w", name, err)
	}
	return sub, it.Version, nil
}

// List returns every subscription, sorted by name.
func (s *Service) List(ctx context.Context) ([]Subscription, error) {
	items, err := s.c.Store.Subscriptions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	out := make([]Subscription, 0, len(items))
	for _, it := range items {
		var sub Subscription
		if err := json.Unmarshal(it.Spec, &sub); err != nil {
			return nil, fmt.Errorf("decode subscription %q: %w", it.Name, err)
		}
		out = append(out, sub)
	}
	return out, nil
}

// Status is a subscription's delivery state.
type Status struct {
	State           string            `json:"state"` // active, paused or failing
	Delivered       int64             `json:"delivered"`
	FailedAttempts  int64             `json:"failed_attempts"`
	SentToOnFailure int64             `json:"sent_to_on_failure"`
	Dropped         int64             `json:"dropped"`
	Partitions      []PartitionStatus `json:"partitions"`
}

// PartitionStatus is one partition's delivery state.
type PartitionStatus struct {
	Partition       int     `json:"partition"`
	CommittedOffset int64   `json:"committed_offset"`
	Lag             int64   `json:"lag"`
	LastError       *string `json:"last_error"`
}

// Describe returns the subscription with its status.
func (s *Service) Describe(ctx context.Context, sub Subscription) (Status, error) {
	st := Status{State: "active", Partitions: []PartitionStatus{}}
	if !sub.Enabled {
		st.State = "paused"
	}
	items, err := s.c.Store.Deliveries(ctx, sub.Name)
	if err != nil {
		return st, fmt.Errorf("read deliveries: %w", err)
	}
	errs := map[int]*string{}
	for _, it := range items {
		var d deliveryState
		if err := json.Unmarshal(it.State, &d); err != nil || d.ID != sub.ID {
			continue
		}
		st.Delivered += d.Delivered
		st.FailedAttempts += d.FailedAttempts
		st.SentToOnFailure += d.SentToOnFailure
		st.Dropped += d.Dropped
		errs[it.Partition] = d.LastError
		if d.Failing && sub.Enabled {
			st.State = "failing"
		}
	}
	offs, err := s.c.Source.GroupOffsets(ctx, sub.Name, sub.Topic)
	if err != nil && !errors.Is(err, broker.ErrTopicNotFound) {
		return st, err
	}
	for _, o := range offs {
		st.Partitions = append(st.Partitions, PartitionStatus{Partition: o.Partition, CommittedOffset: o.Offset, Lag: o.Lag, LastError: errs[o.Partition]})
	}
	slices.SortFunc(st.Partitions, func(a, b PartitionStatus) int { return a.Partition - b.Partition })
	return st, nil
}

// Update applies p to the subscription at version (as Get returned it):
// meta.ErrConflict if it changed since. The caller checks the topics of
// the result before (a new on_failure topic must exist).
func (s *Service) Update(ctx context.Context, sub Subscription, version uint64, p Patch) (Subscription, error) {
	next, err := sub.apply(p)
	if err != nil {
		return sub, err
	}
	body, err := json.Marshal(next)
	if err != nil {
		return sub, fmt.Errorf("encode subscription: %w", err)
	}
	if err := s.c.Store.PutSubscription(ctx, meta.SubscriptionItem{Name: sub.Name, Version: version, Spec: body}); err != nil {
		return sub, fmt.Errorf("update subscription %q: %w", sub.Name, err)
	}
	s.r.changed(sub.Name)
	return next, nil
}

// Delete removes the subscription at version, its delivery items and its
// group (offsets included). This process's deliverers of it stop first.
func (s *Service) Delete(ctx context.Context, sub Subscription, version uint64) error {
	if err := s.c.Store.DeleteSubscription(ctx, sub.Name, version); err != nil {
		return fmt.Errorf("delete subscription %q: %w", sub.Name, err)
	}
	s.r.changed(sub.Name) // stops this process's deliverers, and waits for them
	items, err := s.c.Store.Deliveries(ctx, sub.Name)
	if err != nil {
		return fmt.Errorf("read deliveries: %w", err)
	}
	for _, it := range items {
		if err := s.c.Store.DeleteDelivery(ctx, sub.Name, it.Partition, it.Version); err != nil && !errors.Is(err, meta.ErrConflict) {
			return fmt.Errorf("delete delivery: %w", err)
		}
	}
	if err := s.c.Source.DeleteGroup(ctx, sub.Name); err != nil && !errors.Is(err, broker.ErrGroupNotFound) {
		return fmt.Errorf("delete group of %q: %w", sub.Name, err)
	}
	s.c.Stats.forget(sub.Name)
	return nil
}
