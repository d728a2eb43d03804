package subscribe

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/partitioner"
)

// With a parallelization factor above 1 an invocation carries one key-hash
// shard; per key, first sends are in offset order; a failed shard is sent
// again without the shards that succeeded.
func TestParallelizationShardsByKey(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, clock)
	e.topic("orders", 1)
	var mu sync.Mutex
	firstByKey := map[string][]int64{}
	sends := map[int64]int{}
	failOnce := map[int]bool{}
	calls := 0
	inv := invokerFunc(func(_ context.Context, ev []byte) ([]byte, error) {
		_, recs := decodeEvent(t, ev)
		mu.Lock()
		defer mu.Unlock()
		calls++
		shard := -1
		for _, r := range recs {
			key, _ := decodeB64(r.Key)
			s := partitioner.ForKey(key, 3)
			if shard >= 0 && s != shard {
				t.Errorf("one event holds shards %d and %d", shard, s)
			}
			shard = s
			if sends[r.Offset] == 0 {
				firstByKey[string(key)] = append(firstByKey[string(key)], r.Offset)
			}
			sends[r.Offset]++
		}
		if shard == 1 && !failOnce[shard] {
			failOnce[shard] = true
			return nil, errors.New("shard 1 fails once")
		}
		return nil, nil
	})
	svc, err := New(Config{Store: e.store, Source: e.b, Owner: "a", Clock: clock, InvokeTimeout: time.Second,
		Targets: func(Target) (Invoker, error) { return inv, nil }})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Create(e.ctx, Spec{Name: "p", Topic: "orders", Target: &Target{Type: TargetHTTP, URL: "http://127.0.0.1:9/"},
		Start: &Start{Position: StartEarliest}, ParallelizationFactor: ptr(3), BatchSize: ptr(50)})
	if err != nil {
		t.Fatal(err)
	}
	e.produce("orders", 0, 140, "v")
	d := newDeliverer(&svc.c, sub, 0)
	for steps := 0; e.committed("p", "orders", 0) != 140; steps++ {
		if steps > 1000 {
			t.Fatal("no end")
		}
		wait, err := d.step(e.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(wait)
	}
	for k, offs := range firstByKey {
		for i := 1; i < len(offs); i++ {
			if offs[i] < offs[i-1] {
				t.Fatalf("key %s: first sends out of order: %v", k, offs)
			}
		}
	}
	again := 0
	for o, n := range sends {
		if n > 1 {
			again++
			if k := []byte("k" + string(rune('0'+o%7))); partitioner.ForKey(k, 3) != 1 {
				t.Fatalf("offset %d (shard %d) sent %d times; only shard 1 failed", o, partitioner.ForKey(k, 3), n)
			}
		}
	}
	if again == 0 || len(sends) != 140 {
		t.Fatalf("%d records sent, %d sent again: want 140, and shard 1's first batch again", len(sends), again)
	}
}
