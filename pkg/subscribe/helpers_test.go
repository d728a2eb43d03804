package subscribe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_764_500_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// After fires at once: the deterministic tests drive step themselves and
// never wait on the clock.
func (c *fakeClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// env is a real broker over the in-memory metadata store.
type env struct {
	t     *testing.T
	ctx   context.Context
	b     *broker.Broker
	store *mem.Store
	clock *fakeClock
}

func newEnv(t *testing.T, clock *fakeClock) *env {
	t.Helper()
	store := mem.New()
	cfg := broker.Config{DataDir: t.TempDir(), Meta: store}
	if clock != nil {
		cfg.Now = clock.Now
	}
	b, err := broker.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &env{t: t, ctx: context.Background(), b: b, store: store, clock: clock}
}

func (e *env) topic(name string, partitions int) {
	e.t.Helper()
	if _, err := e.b.CreateTopic(e.ctx, broker.TopicSpec{Name: name, Partitions: &partitions}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) produce(topic string, p, n int, prefix string) {
	e.t.Helper()
	recs := make([]broker.ProduceRecord, n)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "%s-%d", prefix, i), Partition: p,
			Headers: []broker.Header{{Key: "h", Value: []byte{0xff, 'a'}}}}
	}
	if _, err := e.b.Produce(e.ctx, topic, recs); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) committed(group, topic string, p int) int64 {
	e.t.Helper()
	offs, err := e.b.GroupOffsets(e.ctx, group, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range offs {
		if o.Partition == p {
			return o.Offset
		}
	}
	return -1
}

// onFailure reads every record of topic's partitions and returns the
// source offsets named by their headers.
func (e *env) onFailure(topic string) map[int64]int {
	e.t.Helper()
	out := map[int64]int{}
	t, err := e.b.Topic(e.ctx, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	for p := range t.Partitions {
		for off := int64(0); ; {
			res, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Partition: p, Offset: off})
			if err != nil {
				e.t.Fatal(err)
			}
			for _, r := range res.Records {
				for _, h := range r.Headers {
					if h.Key == HeaderSourceOffset {
						var v int64
						fmt.Sscan(string(h.Value), &v)
						out[v]++
					}
				}
			}
			if len(res.Records) == 0 {
				break
			}
			off = res.NextOffset
		}
	}
	return out
}

// decodeEvent decodes an event as a Lambda handler would.
func decodeEvent(t testing.TB, body []byte) (events.KafkaEvent, []events.KafkaRecord) {
	t.Helper()
	var ev events.KafkaEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatalf("event does not decode into events.KafkaEvent: %v\n%s", err, body)
	}
	if len(ev.Records) != 1 {
		t.Fatalf("event has %d partitions, want 1", len(ev.Records))
	}
	for _, recs := range ev.Records {
		return ev, recs
	}
	return ev, nil
}

// invokerFunc adapts a function to Invoker.
type invokerFunc func(ctx context.Context, event []byte) ([]byte, error)

func (f invokerFunc) Invoke(ctx context.Context, event []byte) ([]byte, error) { return f(ctx, event) }

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
