package metatest

import (
	"context"
	"errors"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// RunSubscriptions runs the conformance suite of meta.SubscriptionStore as
// subtests of t; newStore returns an empty store per subtest.
func RunSubscriptions(t *testing.T, newStore func(t *testing.T) meta.SubscriptionStore) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s meta.SubscriptionStore)
	}{
		{"Subscription/CreateGetList", testSubCreateGetList},
		{"Subscription/VersionCondition", testSubVersionCondition},
		{"Subscription/Delete", testSubDelete},
		{"Delivery/Fence", testDeliveryFence},
		{"Delivery/ListDelete", testDeliveryListDelete},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func testSubCreateGetList(t *testing.T, s meta.SubscriptionStore) {
	ctx := context.Background()
	it, err := s.Subscription(ctx, "a")
	if err != nil || it.Version != 0 || it.Name != "a" {
		t.Fatalf("missing subscription = %+v, %v; want the zero item named a", it, err)
	}
	for _, name := range []string{"b#1", "a", "c%x"} {
		if err := s.PutSubscription(ctx, meta.SubscriptionItem{Name: name, Spec: []byte(`{"n":"` + name + `"}`)}); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
	got, err := s.Subscription(ctx, "b#1")
	if err != nil || got.Version != 1 || string(got.Spec) != `{"n":"b#1"}` {
		t.Fatalf("get b#1 = %+v %s, %v", got, got.Spec, err)
	}
	list, err := s.Subscriptions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range list {
		names = append(names, it.Name)
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b#1" || names[2] != "c%x" {
		t.Fatalf("list = %v, want [a b#1 c%%x]", names)
	}
}

func testSubVersionCondition(t *testing.T, s meta.SubscriptionStore) {
	ctx := context.Background()
	if err := s.PutSubscription(ctx, meta.SubscriptionItem{Name: "x", Spec: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSubscription(ctx, meta.SubscriptionItem{Name: "x", Spec: []byte(`2`)}); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("second create = %v, want ErrConflict", err)
	}
	if err := s.PutSubscription(ctx, meta.SubscriptionItem{Name: "x", Version: 1, Spec: []byte(`3`)}); err != nil {
		t.Fatalf("update at version 1: %v", err)
	}
	if err := s.PutSubscription(ctx, meta.SubscriptionItem{Name: "x", Version: 1, Spec: []byte(`4`)}); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("stale update = %v, want ErrConflict", err)
	}
	got, err := s.Subscription(ctx, "x")
	if err != nil || got.Version != 2 || string(got.Spec) != "3" {
		t.Fatalf("after updates = %+v %s, %v; want version 2 spec 3", got, got.Spec, err)
	}
}

func testSubDelete(t *testing.T, s meta.SubscriptionStore) {
	ctx := context.Background()
	if err := s.DeleteSubscription(ctx, "none", 0); err != nil {
		t.Fatalf("delete missing at 0 = %v", err)
	}
	if err := s.PutSubscription(ctx, meta.SubscriptionItem{Name: "x", Spec: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSubscription(ctx, "x", 2); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("delete at wrong version = %v, want ErrConflict", err)
	}
	if err := s.DeleteSubscription(ctx, "x", 1); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Subscription(ctx, "x"); err != nil || got.Version != 0 {
		t.Fatalf("after delete = %+v, %v", got, err)
	}
	if list, err := s.Subscriptions(ctx); err != nil || len(list) != 0 {
		t.Fatalf("list after delete = %v, %v", list, err)
	}
}

func testDeliveryFence(t *testing.T, s meta.SubscriptionStore) {
	ctx := context.Background()
	d, err := s.Delivery(ctx, "s", 3)
	if err != nil || d.Version != 0 || d.Subscription != "s" || d.Partition != 3 {
		t.Fatalf("missing delivery = %+v, %v", d, err)
	}
	// Two deliverers read version 0; only one write wins.
	a := meta.DeliveryItem{Subscription: "s", Partition: 3, State: []byte(`"a"`)}
	b := meta.DeliveryItem{Subscription: "s", Partition: 3, State: []byte(`"b"`)}
	if err := s.PutDelivery(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDelivery(ctx, b); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("second writer from version 0 = %v, want ErrConflict", err)
	}
	got, err := s.Delivery(ctx, "s", 3)
	if err != nil || got.Version != 1 || string(got.State) != `"a"` {
		t.Fatalf("delivery = %+v %s, %v", got, got.State, err)
	}
}

func testDeliveryListDelete(t *testing.T, s meta.SubscriptionStore) {
	ctx := context.Background()
	for _, p := range []int{10, 2, 0} {
		if err := s.PutDelivery(ctx, meta.DeliveryItem{Subscription: "s#1", Partition: p, State: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutDelivery(ctx, meta.DeliveryItem{Subscription: "other", Partition: 0, State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	list, err := s.Deliveries(ctx, "s#1")
	if err != nil || len(list) != 3 || list[0].Partition != 0 || list[1].Partition != 2 || list[2].Partition != 10 {
		t.Fatalf("deliveries = %+v, %v; want partitions 0 2 10", list, err)
	}
	if err := s.DeleteDelivery(ctx, "s#1", 2, 7); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("delete at wrong version = %v, want ErrConflict", err)
	}
	if err := s.DeleteDelivery(ctx, "s#1", 2, 1); err != nil {
		t.Fatal(err)
	}
	if list, err = s.Deliveries(ctx, "s#1"); err != nil || len(list) != 2 {
		t.Fatalf("after delete = %+v, %v", list, err)
	}
	if list, err = s.Deliveries(ctx, "none"); err != nil || len(list) != 0 {
		t.Fatalf("deliveries of none = %+v, %v", list, err)
	}
}
