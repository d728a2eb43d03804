package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
)

// callbackLog records rebalance callbacks.
type callbackLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callbackLog) fn(kind string) client.PartitionsFunc {
	return func(_ context.Context, topic string, ps []int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, kind+" "+topic+" "+fmtInts(ps))
	}
}

// fmtInts is "0,2" for [0 2] (partitions below 10).
func fmtInts(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(rune('0' + p))
	}
	return strings.Join(s, ",")
}

func (l *callbackLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// TestRebalanceCallbacks: assigned with the first assignment, revoked
// when a second member takes half and when Close leaves, lost when the
// member's session expired and it joined again.
func TestRebalanceCallbacks(t *testing.T) {
	var blockHeartbeats atomic.Bool
	s := newServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if blockHeartbeats.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
				http.Error(w, `{"error":{"code":"unavailable","message":"test"}}`, http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	c := s.client(client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxElapsed: 50 * time.Millisecond}))
	ctx := ctxT(t)
	createTopic(t, c, "orders", 4)
	var l1 callbackLog
	opts := func(l *callbackLog) []client.ConsumerOption {
		return []client.ConsumerOption{client.WithGroup("g"), client.WithWait(50 * time.Millisecond), client.WithSessionTimeout(time.Second),
			client.WithOnAssigned(l.fn("assigned")), client.WithOnRevoked(l.fn("revoked")), client.WithOnLost(l.fn("lost"))}
	}
	k1, err := c.NewConsumer(ctx, "orders", opts(&l1)...)
	if err != nil {
		t.Fatal(err)
	}
	defer k1.Close(context.Background())
	if got := l1.take(); !slices.Equal(got, []string{"assigned orders 0,1,2,3"}) {
		t.Fatalf("after NewConsumer: %q", got)
	}

	var l2 callbackLog
	k2, err := c.NewConsumer(ctx, "orders", opts(&l2)...)
	if err != nil {
		t.Fatal(err)
	}
	p2 := k2.Partitions()
	if err := k1.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l1.take(); len(got) != 1 || got[0] != "revoked orders "+fmtInts(p2) {
		t.Fatalf("k1 after k2 joined with %v: %q", p2, got)
	}
	if err := k2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l2.take(); len(got) != 2 || got[1] != "revoked orders "+fmtInts(p2) {
		t.Fatalf("k2's callbacks through Close: %q", got)
	}
	if err := k1.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l1.take(); !slices.Equal(got, []string{"assigned orders " + fmtInts(p2)}) {
		t.Fatalf("k1 after k2 left: %q", got)
	}

	// k1's heartbeats fail until its session ends; k3 joins and takes
	// everything; k1 then finds itself gone, joins again and gets half:
	// the other half was lost, not revoked.
	blockHeartbeats.Store(true)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := c.DescribeGroup(ctx, "g")
		if err == nil && len(d.Members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("k1's session did not end: %+v %v", d, err)
		}
	}
	var l3 callbackLog
	k3, err := c.NewConsumer(ctx, "orders", opts(&l3)...)
	if err != nil {
		t.Fatal(err)
	}
	defer k3.Close(context.Background())
	blockHeartbeats.Store(false)
	if err := k1.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var lost []int
	for p := range 4 {
		if !slices.Contains(k1.Partitions(), p) {
			lost = append(lost, p)
		}
	}
	got := l1.take()
	if len(lost) == 0 || !slices.Contains(got, "lost orders "+fmtInts(lost)) || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "revoked") }) {
		t.Fatalf("k1 after its session expired (now reads %v): %q, want lost %v", k1.Partitions(), got, lost)
	}
}

// TestSeekPauseResume: Seek moves a partition's position (and what Poll
// returns next), Pause stops a partition's records until Resume, and a
// partition not consumed is ErrNotConsumed.
func TestSeekPauseResume(t *testing.T) {
	s := newServer(t, nil)
	c := s.client()
	ctx := ctxT(t)
	createTopic(t, c, "t", 2)
	produceN(t, c, "t", 0, 0, 5, "a")
	produceN(t, c, "t", 1, 0, 5, "b")
	k, err := c.NewConsumer(ctx, "t", client.WithPartitions(0, 1), client.WithWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	if err := k.Pause(1); err != nil {
		t.Fatal(err)
	}
	if got := k.Paused(); !slices.Equal(got, []int{1}) {
		t.Fatalf("Paused: %v", got)
	}
	for _, m := range pollUntil(t, k, 5) {
		if m.Partition != 0 {
			t.Fatalf("a record of paused partition 1: %+v", m)
		}
	}
	if err := k.Seek(0, 3); err != nil {
		t.Fatal(err)
	}
	if pos, _ := k.Position(0); pos != 3 {
		t.Fatalf("position after Seek: %d", pos)
	}
	got := pollUntil(t, k, 2)
	if got[0].Partition != 0 || got[0].Offset != 3 || got[1].Offset != 4 {
		t.Fatalf("after Seek(0, 3): %+v", got)
	}
	if err := k.Seek(1, 2); err != nil { // paused: stays paused, at 2
		t.Fatal(err)
	}
	if err := k.Resume(1); err != nil {
		t.Fatal(err)
	}
	got = pollUntil(t, k, 3)
	if got[0].Partition != 1 || got[0].Offset != 2 || len(k.Paused()) != 0 {
		t.Fatalf("after Resume(1) from 2: %+v, paused %v", got, k.Paused())
	}
	for _, err := range []error{k.Seek(7, 0), k.Pause(7), k.Resume(7)} {
		if !errors.Is(err, client.ErrNotConsumed) {
			t.Errorf("partition 7: %v, want ErrNotConsumed", err)
		}
	}
}

// TestSendFuncAndHooks: SendFunc calls each record's own callback once,
// in order per partition; the hooks see every request (and may add a
// header).
func TestSendFuncAndHooks(t *testing.T) {
	var traced atomic.Int64
	s := newServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Traceparent") != "" {
				traced.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	var mu sync.Mutex
	var infos []client.RequestInfo
	c := s.client(client.WithHooks(client.Hooks{
		BeforeRequest: func(r *http.Request) {
			r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		},
		AfterRequest: func(i client.RequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			infos = append(infos, i)
		},
	}))
	ctx := ctxT(t)
	createTopic(t, c, "t", 1)
	p, err := c.NewProducer(ctx, "t", client.WithLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	var cbMu sync.Mutex
	for i := range 20 {
		rec := client.Record{Value: []byte{byte('a' + i)}}
		if i%2 == 0 {
			_, err = p.Send(ctx, rec) // no callback of its own
		} else {
			err = p.SendFunc(ctx, rec, func(r client.Record, res client.Result) {
				cbMu.Lock()
				defer cbMu.Unlock()
				if res.Err != nil || r.Value[0] != byte('a'+res.Offset) {
					t.Errorf("callback: %q -> %+v", r.Value, res)
				}
				got = append(got, res.Offset)
			})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cbMu.Lock()
	if want := []int64{1, 3, 5, 7, 9, 11, 13, 15, 17, 19}; !slices.Equal(got, want) {
		t.Errorf("callbacks saw offsets %v, want %v", got, want)
	}
	cbMu.Unlock()
	if _, err := c.Topic(ctx, "nope"); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var produced, missing int
	for _, i := range infos {
		switch {
		case i.Method == "POST" && i.Path == "/v1/topics/t/partitions/0/records":
			if i.Status != 200 || i.Err != nil || i.RequestBytes == 0 || i.ResponseBytes == 0 || i.Duration <= 0 {
				t.Errorf("a produce attempt: %+v", i)
			}
			produced++
		case i.Path == "/v1/topics/nope":
			if i.Status != 404 || !client.IsCode(i.Err, client.CodeTopicNotFound) {
				t.Errorf("the 404: %+v", i)
			}
			missing++
		}
	}
	if produced == 0 || missing != 1 || int(traced.Load()) != len(infos) {
		t.Errorf("hooks saw %d produce attempts, %d 404s, %d traced of %d requests", produced, missing, traced.Load(), len(infos))
	}
}

// TestMultiConsumer: one Poll over two topics, each record naming its
// topic; the group's commits of both resume a second MultiConsumer after
// them; per-topic Seek through Consumer(topic).
func TestMultiConsumer(t *testing.T) {
	s := newServer(t, nil)
	c := s.client()
	ctx := ctxT(t)
	createTopic(t, c, "orders", 2)
	createTopic(t, c, "payments", 1)
	produceN(t, c, "orders", 0, 0, 3, "o0")
	produceN(t, c, "orders", 1, 0, 2, "o1")
	produceN(t, c, "payments", 0, 0, 4, "p0")
	if _, err := c.NewMultiConsumer(ctx, nil); err == nil {
		t.Fatal("no topics accepted")
	}
	if _, err := c.NewMultiConsumer(ctx, []string{"orders", "orders"}); err == nil {
		t.Fatal("a topic twice accepted")
	}
	if _, err := c.NewMultiConsumer(ctx, []string{"orders", "nope"}); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatalf("an unknown topic: %v", err)
	}
	opts := []client.ConsumerOption{client.WithGroup("g"), client.WithWait(50 * time.Millisecond)}
	m, err := c.NewMultiConsumer(ctx, []string{"orders", "payments"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for n := 0; n < 9; {
		msgs, err := m.PollN(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range msgs {
			if !strings.HasPrefix(string(msg.Value), map[string]string{"orders": "o", "payments": "p"}[msg.Topic]) {
				t.Fatalf("record %q names topic %q", msg.Value, msg.Topic)
			}
			count[msg.Topic]++
		}
		n += len(msgs)
	}
	if count["orders"] != 5 || count["payments"] != 4 {
		t.Fatalf("records by topic: %v", count)
	}
	if err := m.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Consumer("payments").Seek(0, 1); err != nil || m.Consumer("nope") != nil {
		t.Fatalf("Consumer(payments).Seek: %v", err)
	}
	msgs, err := m.PollN(ctx, 10)
	if err != nil || len(msgs) != 3 || msgs[0].Topic != "payments" || msgs[0].Offset != 1 {
		t.Fatalf("after Seek(payments 0, 1): %+v %v", msgs, err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Poll(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Poll after Close: %v", err)
	}
	// The group resumes where the first one committed: the Seek's re-read
	// was not committed, so nothing of payments is left; new records only.
	m2, err := c.NewMultiConsumer(ctx, []string{"payments", "orders"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close(ctx)
	produceN(t, c, "orders", 1, 2, 3, "o1")
	msgs, err = m2.Poll(ctx)
	if err != nil || len(msgs) != 1 || msgs[0].Topic != "orders" || msgs[0].Partition != 1 || msgs[0].Offset != 2 {
		t.Fatalf("a new member of the group: %+v %v", msgs, err)
	}
}
