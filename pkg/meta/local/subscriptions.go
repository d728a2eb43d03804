package local

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/tierlog/tierlog/pkg/meta"
)

var _ meta.SubscriptionStore = (*Store)(nil)

func cloneSub(it meta.SubscriptionItem) meta.SubscriptionItem {
	it.Spec = bytes.Clone(it.Spec)
	return it
}

func cloneDlv(d meta.DeliveryItem) meta.DeliveryItem {
	d.State = bytes.Clone(d.State)
	return d
}

// applySubs performs a subscription or delivery entry (state.apply).
func (st *state) applySubs(e *entry) {
	switch e.Op {
	case opPutSub:
		st.subs[e.Sub.Name] = cloneSub(*e.Sub)
	case opDelSub:
		delete(st.subs, e.Sub.Name)
	case opPutDlv:
		if st.dlvs[e.Dlv.Subscription] == nil {
			st.dlvs[e.Dlv.Subscription] = map[int]meta.DeliveryItem{}
		}
		st.dlvs[e.Dlv.Subscription][e.Dlv.Partition] = cloneDlv(*e.Dlv)
	case opDelDlv:
		delete(st.dlvs[e.Dlv.Subscription], e.Dlv.Partition)
		if len(st.dlvs[e.Dlv.Subscription]) == 0 {
			delete(st.dlvs, e.Dlv.Subscription)
		}
	}
}

// subEntries returns the subscription and delivery items as put entries,
// by name and partition (state.entries).
func (st *state) subEntries() []*entry {
	var out []*entry
	for _, name := range sortedKeys(st.subs) {
		it := cloneSub(st.subs[name])
		out = append(out, &entry{Op: opPutSub, Sub: &it})
	}
	for _, name := range sortedKeys(st.dlvs) {
		for _, p := range slices.Sorted(maps.Keys(st.dlvs[name])) {
			d := cloneDlv(st.dlvs[name][p])
			out = append(out, &entry{Op: opPutDlv, Dlv: &d})
		}
	}
	return out
}

// Subscription implements meta.SubscriptionStore.
func (s *Store) Subscription(ctx context.Context, name string) (meta.SubscriptionItem, error) {
	out := meta.SubscriptionItem{Name: name}
	err := s.read(ctx, func(st *state) error {
		if it, ok := st.subs[name]; ok {
			out = cloneSub(it)
		}
		return nil
	})
	return out, err
}

// Subscriptions implements meta.SubscriptionStore.
func (s *Store) Subscriptions(ctx context.Context) ([]meta.SubscriptionItem, error) {
	var out []meta.SubscriptionItem
	err := s.read(ctx, func(st *state) error {
		out = make([]meta.SubscriptionItem, 0, len(st.subs))
		for _, name := range sortedKeys(st.subs) {
			out = append(out, cloneSub(st.subs[name]))
		}
		return nil
	})
	return out, err
}

// PutSubscription implements meta.SubscriptionStore: one put_sub entry.
func (s *Store) PutSubscription(ctx context.Context, it meta.SubscriptionItem) error {
	next := cloneSub(it)
	next.Version = it.Version + 1
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if cur := st.subs[it.Name]; cur.Version != it.Version {
			return nil, fmt.Errorf("%w: subscription %q is at version %d, not %d", meta.ErrConflict, it.Name, cur.Version, it.Version)
		}
		return &entry{Op: opPutSub, Sub: &next}, nil
	})
}

// DeleteSubscription implements meta.SubscriptionStore: one del_sub entry.
func (s *Store) DeleteSubscription(ctx context.Context, name string, version uint64) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.subs[name]
		if cur.Version != version {
			return nil, fmt.Errorf("%w: subscription %q is at version %d, not %d", meta.ErrConflict, name, cur.Version, version)
		}
		if !ok {
			return nil, nil
		}
		return &entry{Op: opDelSub, Sub: &meta.SubscriptionItem{Name: name}}, nil
	})
}

// Delivery implements meta.SubscriptionStore.
func (s *Store) Delivery(ctx context.Context, sub string, partition int) (meta.DeliveryItem, error) {
	out := meta.DeliveryItem{Subscription: sub, Partition: partition}
	err := s.read(ctx, func(st *state) error {
		if d, ok := st.dlvs[sub][partition]; ok {
			out = cloneDlv(d)
		}
		return nil
	})
	return out, err
}

// Deliveries implements meta.SubscriptionStore.
func (s *Store) Deliveries(ctx context.Context, sub string) ([]meta.DeliveryItem, error) {
	var out []meta.DeliveryItem
	err := s.read(ctx, func(st *state) error {
		for _, p := range slices.Sorted(maps.Keys(st.dlvs[sub])) {
			out = append(out, cloneDlv(st.dlvs[sub][p]))
		}
		return nil
	})
	return out, err
}

// PutDelivery implements meta.SubscriptionStore: one put_dlv entry.
func (s *Store) PutDelivery(ctx context.Context, d meta.DeliveryItem) error {
	next := cloneDlv(d)
	next.Version = d.Version + 1
	return s.mutate(ctx, func(st *state) (*entry, error) {
		if cur := st.dlvs[d.Subscription][d.Partition]; cur.Version != d.Version {
			return nil, fmt.Errorf("%w: delivery %q/%d is at version %d, not %d", meta.ErrConflict, d.Subscription, d.Partition, cur.Version, d.Version)
		}
		return &entry{Op: opPutDlv, Dlv: &next}, nil
	})
}

// DeleteDelivery implements meta.SubscriptionStore: one del_dlv entry.
func (s *Store) DeleteDelivery(ctx context.Context, sub string, partition int, version uint64) error {
	return s.mutate(ctx, func(st *state) (*entry, error) {
		cur, ok := st.dlvs[sub][partition]
		if cur.Version != version {
			return nil, fmt.Errorf("%w: delivery %q/%d is at version %d, not %d", meta.ErrConflict, sub, partition, cur.Version, version)
		}
		if !ok {
			return nil, nil
		}
		return &entry{Op: opDelDlv, Dlv: &meta.DeliveryItem{Subscription: sub, Partition: partition}}, nil
	})
}
