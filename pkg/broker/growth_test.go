package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// growthEnv is two brokers (two processes) on one store and hot dir, with
// one settable clock, and a topic "orders" of 1 partition.
type growthEnv struct {
	t     *testing.T
	ctx   context.Context
	now   atomic.Int64 // unix ms
	b, b2 *Broker
}

func newGrowthEnv(t *testing.T) *growthEnv {
	e := &growthEnv{t: t, ctx: context.Background()}
	e.now.Store(time.Now().UnixMilli())
	store, dir := mem.New(), t.TempDir()
	for _, b := range []**Broker{&e.b, &e.b2} {
		var err error
		*b, err = New(e.ctx, Config{DataDir: dir, Meta: store, Now: func() time.Time { return time.UnixMilli(e.now.Load()) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*b).Close() })
	}
	if _, err := e.b.CreateTopic(e.ctx, TopicSpec{Name: "orders", Partitions: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *growthEnv) advance(d time.Duration) { e.now.Add(d.Milliseconds()) }

func (e *growthEnv) grow(n int) {
	e.t.Helper()
	if _, err := e.b.UpdateTopic(e.ctx, "orders", TopicPatch{Partitions: ptr(n)}); err != nil {
		e.t.Fatal(err)
	}
}

// stored is how many records the topic holds, over every partition.
func (e *growthEnv) stored() int64 {
	e.t.Helper()
	tp, err := e.b.Topic(e.ctx, "orders")
	if err != nil {
		e.t.Fatal(err)
	}
	total := int64(0)
	for p := range tp.Partitions {
		o, err := e.b.Offsets(e.ctx, "orders", p)
		if err != nil {
			e.t.Fatal(err)
		}
		total += o.HighWatermark
	}
	return total
}

// movingKey is a record key that KeyPartition sends to partition 0 of 1
// and elsewhere of n.
func movingKey(n int) []byte {
	for i := 0; ; i++ {
		if k := []byte(fmt.Sprintf("customer-%d", i)); KeyPartition(k, n) != 0 {
			return k
		}
	}
}

// A retry with the Idempotency-Key of a request committed before the topic
// grew is answered with the first attempt's offsets, whenever it comes and
// whichever process takes it: right after the growth (routing still takes
// the old count), after the growth took effect for routing (the key is
// found under the old count), on a process whose topic cache still has the
// old count. A request spread over partitions is not refused as a reused
// key. Nothing is appended twice.
func TestIdempotentRetryAfterPartitionGrowth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // from the growth to the retry
		recs  []ProduceRecord
		other bool // the retry goes to the second broker
	}{
		{"keyed record, retry at once", 0, []ProduceRecord{{Key: movingKey(8), Value: []byte("a"), Partition: -1}}, false},
		{"keyed record, retry after the growth took effect", time.Minute, []ProduceRecord{{Key: movingKey(8), Value: []byte("a"), Partition: -1}}, false},
		{"keyed record, another process", time.Minute, []ProduceRecord{{Key: movingKey(8), Value: []byte("a"), Partition: -1}}, true},
		{"unkeyed records, spread", time.Minute, []ProduceRecord{{Value: []byte("a"), Partition: -1}, {Value: []byte("b"), Partition: -1}, {Key: movingKey(8), Value: []byte("c"), Partition: -1}}, false},
		{"near the end of the window", 19 * time.Minute, []ProduceRecord{{Key: movingKey(8), Value: []byte("a"), Partition: -1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGrowthEnv(t)
			first, err := e.b.ProduceWith(e.ctx, "orders", tc.recs, ProduceOptions{IdempotencyKey: "req-1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.b2.Topic(e.ctx, "orders"); err != nil { // b2 caches 1 partition
				t.Fatal(err)
			}
			e.grow(8)
			e.advance(tc.after)
			via := e.b
			if tc.other {
				via = e.b2
			}
			retry, err := via.ProduceWith(e.ctx, "orders", tc.recs, ProduceOptions{IdempotencyKey: "req-1"})
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if !retry.Replayed || fmt.Sprint(retry.Results) != fmt.Sprint(first.Results) {
				t.Errorf("retry answered %+v (replayed %v); the first attempt %+v", retry.Results, retry.Replayed, first.Results)
			}
			if n := e.stored(); n != int64(len(tc.recs)) {
				t.Errorf("%d records stored for a %d-record request sent twice", n, len(tc.recs))
			}
		})
	}
}

// A growth takes effect for routing once every process's topic cache has
// it: until then keys route by the old count in every process, then by the
// new one in every process.
func TestGrowthTakesEffectForRoutingAfterDelay(t *testing.T) {
	e := newGrowthEnv(t)
	key := movingKey(8)
	if _, err := e.b2.Topic(e.ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	e.grow(8)
	send := func(b *Broker, v string) int {
		r, err := b.Produce(e.ctx, "orders", []ProduceRecord{{Key: key, Value: []byte(v), Partition: -1}})
		if err != nil || r[0].Err != nil {
			t.Fatalf("produce: %v %+v", err, r)
		}
		return r[0].Partition
	}
	if p, p2 := send(e.b, "x"), send(e.b2, "y"); p != 0 || p2 != 0 {
		t.Errorf("before the growth took effect: partitions %d and %d, want 0 in both processes", p, p2)
	}
	e.advance(e.b.routeDelay())
	want := KeyPartition(key, 8)
	if p, p2 := send(e.b, "x"), send(e.b2, "y"); p != want || p2 != want {
		t.Errorf("after the growth took effect: partitions %d and %d, want %d in both", p, p2, want)
	}
	// Explicit partitions past the old count are taken at once.
	e.grow(9)
	if r, err := e.b.Produce(e.ctx, "orders", []ProduceRecord{{Value: []byte("z"), Partition: 8}}); err != nil || r[0].Err != nil {
		t.Fatalf("produce to the new partition 8: %v %+v", err, r)
	}
	tp, _ := e.b.Topic(e.ctx, "orders")
	if tp.Growth[0] != (meta.Growth{From: 8, AtMs: e.now.Load()}) || tp.Growth[1].From != 1 {
		t.Errorf("growth history %+v", tp.Growth)
	}
}

// A request first sent after a growth took effect, spread over partitions
// by the new count, is answered from that attempt when retried: finding its
// key under the old routing's partitions (where the new one also put a
// part) is no evidence that the old routing was used.
func TestIdempotentRetryOfRequestRoutedAfterGrowth(t *testing.T) {
	e := newGrowthEnv(t)
	e.grow(8)
	e.advance(e.b.routeDelay())
	recs := []ProduceRecord{{Value: []byte("a"), Partition: -1}, {Value: []byte("b"), Partition: -1}, {Key: movingKey(8), Value: []byte("c"), Partition: -1}}
	first, err := e.b.ProduceWith(e.ctx, "orders", recs, ProduceOptions{IdempotencyKey: "req-2"})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := e.b2.ProduceWith(e.ctx, "orders", recs, ProduceOptions{IdempotencyKey: "req-2"})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !retry.Replayed || fmt.Sprint(retry.Results) != fmt.Sprint(first.Results) {
		t.Errorf("retry answered %+v (replayed %v); the first attempt %+v", retry.Results, retry.Replayed, first.Results)
	}
	if n := e.stored(); n != int64(len(recs)) {
		t.Errorf("%d records stored for a %d-record request sent twice", n, len(recs))
	}
}
