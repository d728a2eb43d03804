package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/client"
)

// produceN writes values "prefix-i" for i in [from, to) to partition p.
func produceN(t *testing.T, c *client.Client, topic string, p, from, to int, prefix string) {
	t.Helper()
	var recs []client.Record
	for i := from; i < to; i++ {
		recs = append(recs, client.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if _, err := c.ProduceTo(ctxT(t), topic, p, recs); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// pollUntil polls until n records arrived, failing after a deadline.
func pollUntil(t *testing.T, k *client.Consumer, n int) []client.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []client.Message
	for len(out) < n {
		msgs, err := k.PollN(ctx, n-len(out))
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, msgs...)
	}
	return out
}

// TestConsumerResume consumes a partitioned topic in three sessions of one
// group, each stopping part way and committing: together they must read
// every record exactly once, in order per partition.
func TestConsumerResume(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f client.Format) {
		s := newServer(t, nil)
		c := s.client(client.WithFormat(f))
		createTopic(t, c, "res", 2)
		for p := range 2 {
			produceN(t, c, "res", p, 0, 150, fmt.Sprintf("p%d", p))
		}
		ctx := ctxT(t)
		got := map[int][]string{}
		for session, take := range []int{70, 100, 130} {
			opts := []client.ConsumerOption{client.WithGroup("g"), client.WithReset(client.ResetEarliest), client.WithWait(100 * time.Millisecond), client.WithFetchMax(40, 0)}
			if session == 1 {
				opts = append(opts, client.WithAutoCommit(time.Hour)) // committed by Close
			}
			k, err := c.NewConsumer(ctx, "res", opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range pollUntil(t, k, take) {
				got[m.Partition] = append(got[m.Partition], string(m.Value))
			}
			if session != 1 {
				if err := k.Commit(ctx); err != nil {
					t.Fatalf("commit: %v", err)
				}
			}
			if err := k.Close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			if _, err := k.Poll(ctx); !errors.Is(err, client.ErrClosed) {
				t.Fatalf("poll after close: %v", err)
			}
		}
		for p := range 2 {
			if len(got[p]) != 150 {
				t.Fatalf("partition %d: read %d records, want 150", p, len(got[p]))
			}
			for i, v := range got[p] {
				if want := fmt.Sprintf("p%d-%d", p, i); v != want {
					t.Fatalf("partition %d record %d: %s, want %s", p, i, v, want)
				}
			}
		}
		gos, err := c.GroupOffsets(ctx, "g", "res")
		if err != nil || len(gos) != 2 || gos[0].Offset != 150 || gos[1].Offset != 150 || gos[0].Lag != 0 {
			t.Fatalf("final group offsets: %+v %v", gos, err)
		}
		// A consumer with no group commits nothing.
		k, err := c.NewConsumer(ctx, "res", client.WithReset(client.ResetEarliest))
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Commit(ctx); !errors.Is(err, client.ErrNoGroup) {
			t.Fatalf("commit without group: %v", err)
		}
		k.Close(ctx)
	})
}

// TestConsumerFollow long-polls at the end of the log: records produced
// later arrive promptly, and an idle consumer sends few requests.
func TestConsumerFollow(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int64
	parked := make(chan struct{}) // closed when the fetch at the end of the log arrives
	var parkedOnce sync.Once
	s := newServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/records") {
				fetches.Add(1)
				if r.URL.Query().Get("offset") == "5" {
					parkedOnce.Do(func() { close(parked) })
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	c := s.client(client.WithFormat(client.Binary))
	createTopic(t, c, "tail", 1)
	produceN(t, c, "tail", 0, 0, 5, "old")
	ctx := ctxT(t)
	k, err := c.NewConsumer(ctx, "tail", client.WithWait(10*time.Second), client.WithReset(client.ResetLatest)) // skips "old"
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	if pos, _ := k.Position(0); pos != 5 {
		t.Fatalf("latest start at %d, want 5", pos)
	}
	select { // the fetcher sent its long poll at the end of the log
	case <-parked:
	case <-ctx.Done():
		t.Fatal("the consumer sent no fetch at offset 5")
	}
	start := time.Now()
	produceN(t, c, "tail", 0, 0, 3, "new")
	msgs := pollUntil(t, k, 3)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("records arrived after %v of a 10 s long poll", d)
	}
	for i, m := range msgs {
		if string(m.Value) != fmt.Sprintf("new-%d", i) || m.Offset != int64(5+i) {
			t.Fatalf("message %d: %q at %d", i, m.Value, m.Offset)
		}
	}
	if n := fetches.Load(); n > 6 {
		t.Fatalf("%d fetches for one long-polled batch: the consumer spins", n)
	}
}

// TestConsumerReset416 starts beyond the high watermark: earliest and
// latest reset, none reports the server's 416.
func TestConsumerReset416(t *testing.T) {
	t.Parallel()
	// fetchedAt10 is closed by the second consumer's first fetch at
	// offset 10 (the first consumer, reading from the start, fetches there
	// too, and a fetch of its may still arrive after it closed): the second
	// consumer's client marks its requests.
	fetchedAt10 := make(chan struct{})
	var fetchedOnce sync.Once
	const mark = "X-Test-Consumer"
	s := newServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(mark) == "2" && r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/records") && r.URL.Query().Get("offset") == "10" {
				fetchedOnce.Do(func() { close(fetchedAt10) })
			}
			h.ServeHTTP(w, r)
		})
	})
	c := s.client()
	createTopic(t, c, "oor", 1)
	produceN(t, c, "oor", 0, 0, 10, "v")
	ctx := ctxT(t)

	k, err := c.NewConsumer(ctx, "oor", client.WithStartOffset(1000), client.WithReset(client.ResetEarliest), client.WithWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	msgs := pollUntil(t, k, 10)
	if msgs[0].Offset != 0 || string(msgs[9].Value) != "v-9" {
		t.Fatalf("earliest reset read %d..%d", msgs[0].Offset, msgs[len(msgs)-1].Offset)
	}
	k.Close(ctx)

	c2 := s.client(client.WithHooks(client.Hooks{BeforeRequest: func(r *http.Request) { r.Header.Set(mark, "2") }}))
	k, err = c2.NewConsumer(ctx, "oor", client.WithStartOffset(1000), client.WithReset(client.ResetLatest), client.WithWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		// Once the consumer fetches at the high watermark (its reset to
		// latest happened), a record arrives there.
		select {
		case <-fetchedAt10:
		case <-ctx.Done():
			t.Error("the consumer never fetched at offset 10")
			return
		}
		produceN(t, c, "oor", 0, 10, 11, "v")
	}()
	msgs = pollUntil(t, k, 1)
	<-produced
	if msgs[0].Offset != 10 || string(msgs[0].Value) != "v-10" {
		t.Fatalf("latest reset read %q at %d", msgs[0].Value, msgs[0].Offset)
	}
	if pos, _ := k.Position(0); pos != 11 {
		t.Fatalf("position %d after reading offset 10", pos)
	}
	k.Close(ctx)

	// With ResetNone an explicit start out of range is refused at once...
	_, err = c.NewConsumer(ctx, "oor", client.WithStartOffset(1000), client.WithReset(client.ResetNone))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 416 || e.HighWatermark != 11 {
		t.Fatalf("reset none, explicit start: %v", err)
	}
	// A topic deleted and created again starts without the group's
	// offsets (Kafka): with reset none the group cannot start there.
	if err := c.CommitGroupOffsets(ctx, "stale", []client.GroupOffset{{Topic: "oor", Partition: 0, Offset: 11}}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, "oor"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, "oor", 1)
	if gos, err := c.GroupOffsets(ctx, "stale", "oor"); err != nil || len(gos) != 0 {
		t.Fatalf("offsets of the deleted topic's group: %v %v", gos, err)
	}
	if _, err := c.NewConsumer(ctx, "oor", client.WithGroup("stale"), client.WithReset(client.ResetNone)); err == nil {
		t.Fatal("reset none with the old incarnation's offset started")
	}
	// A group with nothing committed and reset none cannot start.
	if _, err := c.NewConsumer(ctx, "oor", client.WithGroup("fresh"), client.WithReset(client.ResetNone)); err == nil {
		t.Fatal("reset none without a committed offset started")
	}
}

// TestConsumerPoll416ResetNone: a position that falls out of range while
// consuming (here: a server whose log start moved past it) fails Poll
// with the server's 416 when the policy is none.
func TestConsumerPoll416ResetNone(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/topics/gone":
			fmt.Fprint(w, `{"name":"gone","partitions":1}`)
		case "/v1/topics/gone/partitions/0/offsets":
			fmt.Fprint(w, `{"log_start_offset":0,"high_watermark":10}`)
		default:
			w.WriteHeader(416)
			fmt.Fprint(w, `{"error":{"code":"offset_out_of_range","message":"offset 5 out of range [8, 10]"},"log_start_offset":8,"high_watermark":10}`)
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	k, err := c.NewConsumer(ctx, "gone", client.WithStartOffset(5), client.WithReset(client.ResetNone))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	var e *client.Error
	if _, err := k.Poll(ctx); !errors.As(err, &e) || e.Status != 416 || e.LogStartOffset != 8 || e.Code != client.CodeOffsetOutOfRange {
		t.Fatalf("reset none, position out of range: %v", err)
	}
}

// TestConsumerStartTimestamp starts from a timestamp.
func TestConsumerStartTimestamp(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	c := s.client()
	createTopic(t, c, "ts", 1)
	produceN(t, c, "ts", 0, 0, 3, "before")
	// mark is a millisecond of the server's clock (the wall clock) after
	// the "before" records' and before the "after" records': nothing to
	// wait on but the clock's next millisecond, twice.
	clockPast := func(ms int64) {
		testenv.Eventually(t, time.Second, func() error {
			if now := time.Now().UnixMilli(); now <= ms {
				return fmt.Errorf("the clock is at %d ms, not past %d", now, ms)
			}
			return nil
		})
	}
	clockPast(time.Now().UnixMilli())
	mark := time.Now().UnixMilli()
	clockPast(mark)
	produceN(t, c, "ts", 0, 3, 5, "after")
	ctx := ctxT(t)
	k, err := c.NewConsumer(ctx, "ts", client.WithStartTimestamp(mark))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	msgs := pollUntil(t, k, 2)
	if msgs[0].Offset != 3 || string(msgs[0].Value) != "after-3" {
		t.Fatalf("start at timestamp read %q at %d", msgs[0].Value, msgs[0].Offset)
	}
}

// TestConsumerDefaultStartEarliest: without a start option, a consumer and
// a group with nothing committed start at the log start, as the CLI does
// (and franz-go): Poll returns the records already there.
func TestConsumerDefaultStartEarliest(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	c := s.client()
	createTopic(t, c, "old", 2)
	produceN(t, c, "old", 0, 0, 3, "p0-")
	produceN(t, c, "old", 1, 0, 2, "p1-")
	ctx := ctxT(t)
	for _, opts := range [][]client.ConsumerOption{nil, {client.WithGroup("fresh")}} {
		k, err := c.NewConsumer(ctx, "old", opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{0, 1} {
			if pos, ok := k.Position(p); !ok || pos != 0 {
				t.Errorf("%d options: partition %d starts at %d (%v), want 0", len(opts), p, pos, ok)
			}
		}
		if msgs := pollUntil(t, k, 5); len(msgs) != 5 {
			t.Errorf("%d options: polled %d records, want the 5 already there", len(opts), len(msgs))
		}
		if err := k.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if client.DefaultReset != client.ResetEarliest {
		t.Errorf("DefaultReset is %v", client.DefaultReset)
	}
}
