package subscribe

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Drain delivers every partition until it is caught up, leaves partitions
// another deliverer holds, and releases its leases when it returns.
func TestDrain(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, clock)
	e.topic("orders", 3)
	var got atomic.Int64
	inv := invokerFunc(func(_ context.Context, ev []byte) ([]byte, error) {
		_, recs := decodeEvent(t, ev)
		got.Add(int64(len(recs)))
		return nil, nil
	})
	cfg := Config{Store: e.store, Source: e.b, Owner: "fn-1", Clock: clock, InvokeTimeout: time.Second,
		Targets: func(Target) (Invoker, error) { return inv, nil }}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Create(e.ctx, Spec{Name: "d", Topic: "orders", Target: &Target{Type: TargetHTTP, URL: "http://127.0.0.1:9/"}, BatchSize: ptr(7)})
	if err != nil {
		t.Fatal(err)
	}
	for p := range 3 {
		e.produce("orders", p, 20, "x")
	}
	// Another process's deliverer holds partition 2.
	other := svc.c
	other.Owner = "fn-2"
	od := newDeliverer(&other, sub, 2)
	if _, err := od.step(e.ctx, 0); err != nil || !od.held {
		t.Fatalf("other deliverer: held %v, %v", od.held, err)
	}
	st, err := svc.Drain(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Partitions != 3 || st.Busy != 1 || st.Delivered != 40 || got.Load() != 40 || st.Unfinished != 0 {
		t.Fatalf("drain = %+v, target got %d; want 3 partitions, 1 busy, 40 delivered", st, got.Load())
	}
	for p, want := range []int64{20, 20, 0} {
		if c := e.committed("d", "orders", p); c != want {
			t.Fatalf("partition %d committed %d, want %d", p, c, want)
		}
	}
	// Released: a new deliverer takes partitions 0 and 1 at once.
	od.release(e.ctx)
	st, err = svc.Drain(e.ctx)
	if err != nil || st.Busy != 0 || st.Delivered != 20 {
		t.Fatalf("second drain = %+v, %v; want partition 2's 20 records", st, err)
	}
}
