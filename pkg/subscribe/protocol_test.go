package subscribe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
)

// protocolRun is one deterministic scenario: a real broker over the
// in-memory store, a fake clock, a scripted target, deliverers stepped by
// hand, killed mid-batch and taken over. The invariants are checked after
// every step.
type protocolRun struct {
	*env
	t       *testing.T
	rng     *rand.Rand
	sub     Subscription
	svc     *Service
	total   int64
	sent    map[int64]int  // offset -> times sent
	ok      map[int64]bool // offsets a target answer accepted
	atRisk  map[int64]bool // offsets of an invocation that did not succeed whole
	firsts  []int64        // first sends, in order
	owners  int
	killed  int
	outcome func(call int) string
	calls   int
	kill    context.CancelFunc
}

func (r *protocolRun) invoker() Invoker {
	return invokerFunc(func(ctx context.Context, ev []byte) ([]byte, error) {
		_, recs := decodeEvent(r.t, ev)
		var offs []int64
		for _, rec := range recs {
			offs = append(offs, rec.Offset)
			if r.sent[rec.Offset] == 0 {
				r.firsts = append(r.firsts, rec.Offset)
			}
			r.sent[rec.Offset]++
		}
		r.calls++
		out := r.outcome(r.calls)
		risk := func(from int) {
			for _, o := range offs[from:] {
				r.atRisk[o] = true
			}
		}
		switch out {
		case "ok":
			for _, o := range offs {
				r.ok[o] = true
			}
			return []byte(`{}`), nil
		case "partial":
			i := r.rng.IntN(len(offs))
			for _, o := range offs[:i] {
				r.ok[o] = true
			}
			risk(i)
			return fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":"%d"}]}`, offs[i]), nil
		case "kill":
			risk(0)
			r.kill() // the deliverer dies while the target holds the batch
			return nil, ctx.Err()
		default:
			risk(0)
			return nil, errors.New("target failed")
		}
	})
}

func (r *protocolRun) check(label string) {
	r.t.Helper()
	c := r.committed(r.sub.Name, r.sub.Topic, 0)
	given := map[int64]int{}
	if r.sub.OnFailure != nil {
		given = r.onFailure(r.sub.OnFailure.Topic)
	}
	for o := int64(0); o < c; o++ {
		if !r.ok[o] && given[o] == 0 && !r.dropped(o) {
			r.t.Fatalf("%s: offset %d committed (group at %d) but neither delivered nor in on_failure", label, o, c)
		}
	}
	for o, n := range given {
		if n > 1 && !r.atRisk[o] {
			r.t.Fatalf("%s: offset %d in on_failure %d times", label, o, n)
		}
	}
	if !slices.IsSorted(r.firsts) {
		r.t.Fatalf("%s: first deliveries out of order: %v", label, r.firsts)
	}
	for o, n := range r.sent {
		if n > 1 && !r.atRisk[o] {
			r.t.Fatalf("%s: offset %d sent %d times but was never in a failed or interrupted batch", label, o, n)
		}
	}
}

func (r *protocolRun) dropped(int64) bool {
	return r.sub.OnFailure == nil && r.sub.MaxRetryAttempts >= 0
}

// deliverer makes a deliverer under a new owner, as a restarted process.
func (r *protocolRun) deliverer() (*deliverer, context.Context) {
	r.owners++
	c := r.svc.c
	c.Owner = "owner-" + strconv.Itoa(r.owners)
	c.Targets = func(Target) (Invoker, error) { return r.invoker(), nil }
	ctx, cancel := context.WithCancel(context.Background())
	r.kill = cancel
	return newDeliverer(&c, r.sub, 0), ctx
}

func runProtocol(t *testing.T, seed uint64, spec func(*Spec), outcome func(rng *rand.Rand, call int) string) *protocolRun {
	clock := newFakeClock()
	e := newEnv(t, clock)
	e.topic("orders", 1)
	e.topic("dlq", 2)
	svc, err := New(Config{Store: e.store, Source: e.b, Owner: "unused", Clock: clock, InvokeTimeout: time.Second, RetryBase: 100 * time.Millisecond, RetryMax: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{Name: "billing", Topic: "orders", Target: &Target{Type: TargetHTTP, URL: "http://127.0.0.1:9/"}, Start: &Start{Position: StartEarliest},
		BatchSize: ptr(10)}
	spec(&sp)
	sub, err := svc.Create(e.ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	r := &protocolRun{env: e, t: t, rng: rand.New(rand.NewPCG(seed, 1)), sub: sub, svc: svc, total: 200,
		sent: map[int64]int{}, ok: map[int64]bool{}, atRisk: map[int64]bool{}}
	r.outcome = func(call int) string { return outcome(r.rng, call) }
	e.produce("orders", 0, 120, "a")
	d, ctx := r.deliverer()
	for steps := 0; ; steps++ {
		if steps == 40 {
			e.produce("orders", 0, 80, "b") // more records while delivering
		}
		if steps > 20000 {
			t.Fatalf("seed %d: no end after %d steps; committed %d", seed, steps, r.committed("billing", "orders", 0))
		}
		wait, err := d.step(ctx, 0)
		switch {
		case ctx.Err() != nil:
			r.killed++
			// The dead deliverer's lease runs out; a new one waits for it.
			d, ctx = r.deliverer()
		case errors.Is(err, errLost):
		case err != nil:
			t.Fatalf("seed %d step %d: %v", seed, steps, err)
		}
		r.check(fmt.Sprintf("seed %d step %d", seed, steps))
		if r.committed("billing", "orders", 0) == r.total && d.batch == nil {
			break
		}
		if wait > 0 {
			clock.Advance(wait)
		} else if steps%50 == 49 && r.rng.IntN(4) == 0 {
			// A stalled deliverer: its lease expires and another takes
			// over; the stalled one must find itself fenced.
			clock.Advance(r.svc.c.LeaseTTL + time.Millisecond)
			zombie, zctx := d, ctx
			d, ctx = r.deliverer()
			for range 3 {
				if _, err := d.step(ctx, 0); err != nil && ctx.Err() == nil {
					t.Fatalf("seed %d: takeover: %v", seed, err)
				}
			}
			if _, err := zombie.step(zctx, 0); zombie.held || (err != nil && !errors.Is(err, errLost)) {
				t.Fatalf("seed %d: a deliverer whose lease was taken still holds it (err %v)", seed, err)
			}
			r.check(fmt.Sprintf("seed %d takeover", seed))
		}
	}
	return r
}

// With retries bounded and on_failure set, under failures, partial
// answers, kills and takeovers: everything ends committed, every record
// delivered or in on_failure, first deliveries in order, duplicates only
// of failed or interrupted batches.
func TestProtocolBoundedRetries(t *testing.T) {
	for seed := range uint64(12) {
		r := runProtocol(t, seed, func(s *Spec) {
			s.MaxRetryAttempts = ptr(2)
			s.BisectBatchOnError = ptr(seed%2 == 0)
			s.OnFailure = &OnFailure{Topic: "dlq"}
		}, func(rng *rand.Rand, _ int) string {
			switch n := rng.IntN(100); {
			case n < 55:
				return "ok"
			case n < 75:
				return "fail"
			case n < 92:
				return "partial"
			default:
				return "kill"
			}
		})
		given := r.onFailure("dlq")
		for o := range r.total {
			if !r.ok[o] && given[o] == 0 {
				t.Fatalf("seed %d: offset %d neither delivered nor in on_failure", seed, o)
			}
		}
		t.Logf("seed %d: sends %d for %d records, given up %d, kills %d, owners %d", seed, sum(r.sent), r.total, len(given), r.killed, r.owners)
	}
}

// With the defaults (-1, -1) nothing is ever given up: a failing target
// holds the partition until it recovers.
func TestProtocolDefaultsNeverGiveUp(t *testing.T) {
	for seed := range uint64(6) {
		r := runProtocol(t, seed, func(s *Spec) { s.OnFailure = &OnFailure{Topic: "dlq"} }, func(rng *rand.Rand, call int) string {
			if call < 30 { // a long outage first
				return "fail"
			}
			if rng.IntN(10) < 7 {
				return "ok"
			}
			return []string{"fail", "partial", "kill"}[rng.IntN(3)]
		})
		if given := r.onFailure("dlq"); len(given) != 0 {
			t.Fatalf("seed %d: %d records given up with max_retry_attempts -1", seed, len(given))
		}
		for o := range r.total {
			if !r.ok[o] {
				t.Fatalf("seed %d: offset %d never delivered", seed, o)
			}
		}
	}
}

// Records older than max_record_age_ms are given up to on_failure, with
// their key, value and headers and the tierlog-* headers, and delivery goes
// on past them.
func TestRecordAgeGivesUp(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, clock)
	e.topic("orders", 1)
	e.topic("dlq", 1)
	calls := 0
	svc, err := New(Config{Store: e.store, Source: e.b, Owner: "a", Clock: clock, InvokeTimeout: time.Second,
		Targets: func(Target) (Invoker, error) {
			return invokerFunc(func(context.Context, []byte) ([]byte, error) {
				calls++
				return nil, errors.New("boom")
			}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Create(e.ctx, Spec{Name: "s", Topic: "orders", Target: &Target{Type: TargetHTTP, URL: "http://127.0.0.1:9/"},
		Start: &Start{Position: StartEarliest}, MaxRecordAgeMs: ptr(int64(60000)), OnFailure: &OnFailure{Topic: "dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	e.produce("orders", 0, 5, "old")
	d := newDeliverer(&svc.c, sub, 0)
	for calls == 0 {
		if _, err := d.step(e.ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.committed("s", "orders", 0); got != 0 {
		t.Fatalf("committed %d after a failed attempt", got)
	}
	clock.Advance(61 * time.Second)
	for e.committed("s", "orders", 0) != 5 {
		if _, err := d.step(e.ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("target called %d times; expired records must not be sent again", calls)
	}
	res, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: "dlq", Partition: 0, Offset: 0})
	if err != nil || len(res.Records) != 5 {
		t.Fatalf("dlq: %d records, %v", len(res.Records), err)
	}
	r := res.Records[3]
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	if string(r.Key) != "k3" || string(r.Value) != "old-3" || h["h"] != "\xffa" || h[HeaderSubscription] != "s" ||
		h[HeaderSourceTopic] != "orders" || h[HeaderSourcePartition] != "0" || h[HeaderSourceOffset] != "3" ||
		h[HeaderAttempts] != "1" || !strings.Contains(h[HeaderError], "max_record_age_ms") {
		t.Fatalf("given-up record: key %q value %q headers %q", r.Key, r.Value, h)
	}
	st, err := svc.Describe(e.ctx, sub)
	if err != nil || st.SentToOnFailure != 5 || st.FailedAttempts != 1 || st.Delivered != 0 {
		t.Fatalf("status = %+v, %v", st, err)
	}
}

func sum(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
