package local

import (
	"context"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

func TestSubscriptionConformance(t *testing.T) {
	metatest.RunSubscriptions(t, func(t *testing.T) meta.SubscriptionStore { return openT(t, t.TempDir()) })
	metatest.RunSubscriptions(t, func(t *testing.T) meta.SubscriptionStore {
		return openT(t, t.TempDir(), WithSnapshotBytes(256))
	})
}

// Subscription and delivery items survive a reopen, through the journal
// and through a snapshot.
func TestSubscriptionsDurable(t *testing.T) {
	ctx := context.Background()
	for _, opts := range [][]Option{nil, {WithSnapshotBytes(256)}} {
		dir := t.TempDir()
		s := openT(t, dir, opts...)
		must(t, s.PutSubscription(ctx, meta.SubscriptionItem{Name: "sub", Spec: []byte(`{"topic":"orders"}`)}))
		for p := range 5 {
			must(t, s.PutDelivery(ctx, meta.DeliveryItem{Subscription: "sub", Partition: p, State: []byte(`{"n":1}`)}))
		}
		must(t, s.DeleteDelivery(ctx, "sub", 4, 1))
		must(t, s.Close())
		s = openT(t, dir, opts...)
		it, err := s.Subscription(ctx, "sub")
		if err != nil || it.Version != 1 || string(it.Spec) != `{"topic":"orders"}` {
			t.Fatalf("after reopen: %+v %s, %v", it, it.Spec, err)
		}
		ds, err := s.Deliveries(ctx, "sub")
		if err != nil || len(ds) != 4 || ds[3].Partition != 3 || string(ds[0].State) != `{"n":1}` {
			t.Fatalf("deliveries after reopen: %+v, %v", ds, err)
		}
	}
}
