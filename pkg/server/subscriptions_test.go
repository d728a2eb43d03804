package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
	"github.com/tierlog/tierlog/pkg/subscribe"
)

// chaosHook is a webhook that fails, times out, answers partially and is
// slow, at random, and records what it was sent.
type chaosHook struct {
	mu       sync.Mutex
	rng      *rand.Rand
	sent     map[int]map[int64]int // partition -> offset -> sends
	firsts   map[int][]int64       // partition -> offsets in order of first send
	ok       map[int]map[int64]bool
	atRisk   map[int]map[int64]bool
	inflight map[int][]int64 // invocation id -> partition, then its offsets (see ServeHTTP)
	answered []answered      // the successful answers of the last moments, for kill
	calls    int
	killing  time.Time // when the last kill started
	timeout  time.Duration
	events   chan struct{}
	counts   map[string]int
}

func newChaosHook(seed uint64, timeout time.Duration) *chaosHook {
	return &chaosHook{rng: rand.New(rand.NewPCG(seed, 2)), sent: map[int]map[int64]int{}, firsts: map[int][]int64{},
		ok: map[int]map[int64]bool{}, atRisk: map[int]map[int64]bool{}, inflight: map[int][]int64{},
		timeout: timeout, events: make(chan struct{}, 1), counts: map[string]int{}}
}

func (h *chaosHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev events.KafkaEvent
	if err := json.Unmarshal(body, &ev); err != nil || len(ev.Records) != 1 {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	var p int
	var offs []int64
	for _, recs := range ev.Records {
		for _, rec := range recs {
			p = int(rec.Partition)
			offs = append(offs, rec.Offset)
		}
	}
	h.mu.Lock()
	h.calls++
	id := h.calls
	if h.sent[p] == nil {
		h.sent[p], h.ok[p], h.atRisk[p] = map[int64]int{}, map[int64]bool{}, map[int64]bool{}
	}
	for _, o := range offs {
		if h.sent[p][o] == 0 {
			h.firsts[p] = append(h.firsts[p], o)
		}
		h.sent[p][o]++
	}
	h.inflight[id] = append([]int64{int64(p)}, offs...)
	n := h.rng.IntN(100)
	failAt := h.rng.IntN(len(offs))
	risk := func(from int) {
		for _, o := range offs[from:] {
			h.atRisk[p][o] = true
		}
	}
	var mode string
	switch {
	case n < 60:
		mode = "ok"
	case n < 70:
		mode = "error"
	case n < 80:
		mode = "partial"
	case n < 90:
		mode = "slow"
	default:
		mode = "timeout"
		// Failed from now on: the deliverer gives up waiting and sends the
		// batch again while this answer is still to come (maybe after the
		// test has counted).
		risk(0)
	}
	h.mu.Unlock()
	switch mode {
	case "slow":
		time.Sleep(h.timeout / 4) // a slow target, within the invocation timeout
	case "timeout":
		time.Sleep(h.timeout * 3 / 2) // past the invocation timeout: the batch failed
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := h.inflight[id]
	delete(h.inflight, id)
	h.counts[mode]++
	if mode != "error" && mode != "timeout" {
		// The last 2 invocation timeouts are enough (kill); however many
		// batches were answered in them (a count would drop some when the
		// deliverers are fast).
		now := time.Now()
		for len(h.answered) > 0 && now.Sub(h.answered[0].at) >= 2*h.timeout {
			h.answered = h.answered[1:]
		}
		h.answered = append(h.answered, answered{at: now, keys: keys})
	}
	// An answer that may not have reached the deliverer before a kill
	// leaves its batch in flight.
	killed := !h.killing.IsZero() && time.Since(h.killing) < 2*h.timeout
	switch mode {
	case "ok", "slow":
		if killed {
			risk(0)
		}
		for _, o := range offs {
			h.ok[p][o] = true
		}
		w.WriteHeader(http.StatusOK)
	case "partial":
		risk(failAt)
		if killed {
			risk(0)
		}
		for _, o := range offs[:failAt] {
			h.ok[p][o] = true
		}
		fmt.Fprintf(w, `{"batchItemFailures":[{"itemIdentifier":"%d"}]}`, offs[failAt])
	default:
		risk(0)
		w.WriteHeader(http.StatusInternalServerError)
	}
	select {
	case h.events <- struct{}{}:
	default:
	}
}

// answered is a batch the hook answered with a success, and when.
type answered struct {
	at   time.Time
	keys []int64 // partition, then its offsets
}

// kill marks every batch the hook holds, and every batch it answered with
// a success in the last 2 invocation timeouts, as in flight at a failure:
// an answer the deliverer got but had not committed yet when it was
// stopped is delivered again, as the protocol says (commit after success).
func (h *chaosHook) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.killing = time.Now()
	mark := func(keys []int64) {
		p := int(keys[0])
		for _, o := range keys[1:] {
			h.atRisk[p][o] = true
		}
	}
	for _, keys := range h.inflight {
		mark(keys)
	}
	for _, a := range h.answered {
		if h.killing.Sub(a.at) < 2*h.timeout {
			mark(a.keys)
		}
	}
}

// TestSubscriptionChaos runs a subscription through the local server with a
// webhook that fails, times out, answers partially and is slow, while the
// server is killed (closed and opened again over its data dir) mid-batch.
// Every record must end delivered or in on_failure, first deliveries in
// offset order per partition, duplicates only of batches in flight at a
// failure.
func TestSubscriptionChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of chaos: skipped with -short")
	}
	const (
		partitions = 3
		records    = 3000
		invoke     = 400 * time.Millisecond
	)
	hook := newChaosHook(7, invoke)
	web := httptest.NewServer(hook)
	defer web.Close()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func() *server.Server {
		s, err := server.Open(context.Background(), server.Config{DataDir: dir, CompactInterval: -1, Logger: log, RunSubscriptions: true,
			Subscribe: subscribe.Config{InvokeTimeout: invoke, RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		return s
	}
	s := open()
	ctx := context.Background()
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "orders", Partitions: ptr(partitions)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "dlq"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscriptions.Create(ctx, subscribe.Spec{Name: "chaos", Topic: "orders",
		Target: &subscribe.Target{Type: subscribe.TargetHTTP, URL: web.URL}, Start: &subscribe.Start{Position: subscribe.StartEarliest},
		BatchSize: ptr(50), MaxRetryAttempts: ptr(4), BisectBatchOnError: ptr(true), OnFailure: &subscribe.OnFailure{Topic: "dlq"}}); err != nil {
		t.Fatal(err)
	}
	produce := func(s *server.Server, from, n int) {
		recs := make([]broker.ProduceRecord, n)
		for i := range recs {
			recs[i] = broker.ProduceRecord{Key: fmt.Appendf(nil, "k%d", (from+i)%11), Value: fmt.Appendf(nil, "v%d", from+i), Partition: -1}
		}
		if _, err := s.Broker.Produce(ctx, "orders", recs); err != nil {
			t.Fatal(err)
		}
	}
	kills := 0
	for i := 0; i < records; i += 250 {
		produce(s, i, 250)
		if i%750 == 500 {
			// Kill the server while batches are in flight, and start it
			// again over the same data dir.
			wait(t, hook.events, 5*time.Second)
			hook.kill()
			s.Close()
			kills++
			s = open()
		}
	}
	defer func() { s.Close() }()

	// Wait until every partition's group offset reaches its end.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		sub, _, err := s.Subscriptions.Get(ctx, "chaos")
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Subscriptions.Describe(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		done := len(st.Partitions) == partitions
		for _, p := range st.Partitions {
			done = done && p.Lag == 0
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered within a minute: %+v", st)
		}
		select {
		case <-hook.events:
		case <-tick.C:
		}
	}
	s.Close()
	s = open()

	hook.mu.Lock()
	defer hook.mu.Unlock()
	given := dlqOffsets(t, s)
	delivered, duplicates, bad := 0, 0, 0
	for p := range partitions {
		offs, err := s.Broker.Offsets(ctx, "orders", p)
		if err != nil {
			t.Fatal(err)
		}
		for o := range offs.HighWatermark {
			if !hook.ok[p][o] && given[[2]int64{int64(p), o}] == 0 {
				t.Errorf("partition %d offset %d: neither delivered nor in on_failure", p, o)
			}
			if hook.ok[p][o] {
				delivered++
			}
			if n := hook.sent[p][o]; n > 1 {
				duplicates += n - 1
				if !hook.atRisk[p][o] {
					bad++
					t.Errorf("partition %d offset %d sent %d times but never in a batch in flight at a failure", p, o, n)
				}
			}
		}
		f := hook.firsts[p]
		for i := 1; i < len(f); i++ {
			if f[i] < f[i-1] {
				t.Fatalf("partition %d: first deliveries out of order at %d: %d after %d", p, i, f[i], f[i-1])
			}
		}
	}
	t.Logf("chaos: %d records, %d kills, %d invocations %v; delivered %d, given up to on_failure %d, duplicate sends %d",
		records, kills, hook.calls, hook.counts, delivered, len(given), duplicates)
}

// dlqOffsets reads the dlq topic: the (partition, offset) of every given-up
// record, from its tierlog-* headers.
func dlqOffsets(t *testing.T, s *server.Server) map[[2]int64]int {
	t.Helper()
	out := map[[2]int64]int{}
	for off := int64(0); ; {
		res, err := s.Broker.Fetch(context.Background(), broker.FetchRequest{Topic: "dlq", Partition: 0, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			var p, o int64
			for _, h := range r.Headers {
				switch h.Key {
				case subscribe.HeaderSourcePartition:
					fmt.Sscan(string(h.Value), &p)
				case subscribe.HeaderSourceOffset:
					fmt.Sscan(string(h.Value), &o)
				}
			}
			if !strings.HasPrefix(string(r.Value), "v") {
				t.Fatalf("given-up record value %q", r.Value)
			}
			out[[2]int64{p, o}]++
		}
		if len(res.Records) == 0 {
			return out
		}
		off = res.NextOffset
	}
}

func wait(t *testing.T, ch <-chan struct{}, d time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatal("no invocation within", d)
	}
}

func ptr[T any](v T) *T { return &v }

// The deliverers' counters reach /metrics, per subscription and partition.
func TestSubscriptionMetrics(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer web.Close()
	s, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1, RunSubscriptions: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "orders", Partitions: ptr(2)}); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscriptions.Create(ctx, subscribe.Spec{Name: "m", Topic: "orders", Target: &subscribe.Target{Type: subscribe.TargetHTTP, URL: web.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Broker.Produce(ctx, "orders", []broker.ProduceRecord{{Value: []byte("a"), Partition: 1}, {Value: []byte("b"), Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := s.Subscriptions.Describe(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if st.Delivered == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %+v", st)
		}
		<-tick.C
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`tierlog_subscription_delivered_records_total{partition="1",subscription="m"} 2`,
		`tierlog_subscription_invocations_total{partition="1",subscription="m"} 1`,
		`tierlog_subscription_failures_total{partition="1",subscription="m"} 0`,
		`tierlog_subscription_on_failure_records_total{partition="1",subscription="m"} 0`,
		`tierlog_subscription_lag_records{partition="0",subscription="m"} 0`,
		`tierlog_subscription_series_dropped_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
