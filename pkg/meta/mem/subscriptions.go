package mem

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tierlog/tierlog/pkg/meta"
)

var _ meta.SubscriptionStore = (*Store)(nil)

// subs holds the subscription and delivery items; guarded by Store.mu.
type subs struct {
	items      map[string]meta.SubscriptionItem
	deliveries map[string]map[int]meta.DeliveryItem // subscription -> partition
}

func (s *Store) subsLocked() *subs {
	if s.subs == nil {
		s.subs = &subs{items: map[string]meta.SubscriptionItem{}, deliveries: map[string]map[int]meta.DeliveryItem{}}
	}
	return s.subs
}

func cloneSub(it meta.SubscriptionItem) meta.SubscriptionItem {
	it.Spec = bytes.Clone(it.Spec)
	return it
}

func cloneDelivery(d meta.DeliveryItem) meta.DeliveryItem {
	d.State = bytes.Clone(d.State)
	return d
}

// Subscription implements meta.SubscriptionStore.
func (s *Store) Subscription(_ context.Context, name string) (meta.SubscriptionItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it, ok := s.subsLocked().items[name]; ok {
		return cloneSub(it), nil
	}
	return meta.SubscriptionItem{Name: name}, nil
}

// Subscriptions implements meta.SubscriptionStore.
func (s *Store) Subscriptions(context.Context) ([]meta.SubscriptionItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]meta.SubscriptionItem, 0, len(s.subsLocked().items))
	for _, it := range s.subs.items {
		out = append(out, cloneSub(it))
	}
	slices.SortFunc(out, func(a, b meta.SubscriptionItem) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutSubscription implements meta.SubscriptionStore.
func (s *Store) PutSubscription(_ context.Context, it meta.SubscriptionItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.subsLocked()
	if cur := st.items[it.Name]; cur.Version != it.Version {
		return fmt.Errorf("%w: subscription %q is at version %d, not %d", meta.ErrConflict, it.Name, cur.Version, it.Version)
	}
	it = cloneSub(it)
	it.Version++
	st.items[it.Name] = it
	return nil
}

// DeleteSubscription implements meta.SubscriptionStore.
func (s *Store) DeleteSubscription(_ context.Context, name string, version uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.subsLocked()
	if cur := st.items[name]; cur.Version != version {
		return fmt.Errorf("%w: subscription %q is at version %d, not %d", meta.ErrConflict, name, cur.Version, version)
	}
	delete(st.items, name)
	return nil
}

// Delivery implements meta.SubscriptionStore.
func (s *Store) Delivery(_ context.Context, sub string, partition int) (meta.DeliveryItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.subsLocked().deliveries[sub][partition]; ok {
		return cloneDelivery(d), nil
	}
	return meta.DeliveryItem{Subscription: sub, Partition: partition}, nil
}

// Deliveries implements meta.SubscriptionStore.
func (s *Store) Deliveries(_ context.Context, sub string) ([]meta.DeliveryItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []meta.DeliveryItem
	for _, d := range s.subsLocked().deliveries[sub] {
		out = append(out, cloneDelivery(d))
	}
	slices.SortFunc(out, func(a, b meta.DeliveryItem) int { return a.Partition - b.Partition })
	return out, nil
}

// PutDelivery implements meta.SubscriptionStore.
func (s *Store) PutDelivery(_ context.Context, d meta.DeliveryItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.subsLocked()
	if cur := st.deliveries[d.Subscription][d.Partition]; cur.Version != d.Version {
		return fmt.Errorf("%w: delivery %q/%d is at version %d, not %d", meta.ErrConflict, d.Subscription, d.Partition, cur.Version, d.Version)
	}
	d = cloneDelivery(d)
	d.Version++
	if st.deliveries[d.Subscription] == nil {
		st.deliveries[d.Subscription] = map[int]meta.DeliveryItem{}
	}
	st.deliveries[d.Subscription][d.Partition] = d
	return nil
}

// DeleteDelivery implements meta.SubscriptionStore.
func (s *Store) DeleteDelivery(_ context.Context, sub string, partition int, version uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.subsLocked()
	if cur := st.deliveries[sub][partition]; cur.Version != version {
		return fmt.Errorf("%w: delivery %q/%d is at version %d, not %d", meta.ErrConflict, sub, partition, cur.Version, version)
	}
	delete(st.deliveries[sub], partition)
	if len(st.deliveries[sub]) == 0 {
		delete(st.deliveries, sub)
	}
	return nil
}
