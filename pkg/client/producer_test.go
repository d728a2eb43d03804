package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
)

// TestProducerOrdering sends from many goroutines at once, each with its
// own key (so its records share a partition) and a sequence number. Every
// partition must be dense, hold every record exactly once, and keep each
// goroutine's records in send order; every future's offset must be where
// the record is.
func TestProducerOrdering(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f client.Format) {
		s := newServer(t, nil)
		c := s.client(client.WithFormat(f))
		createTopic(t, c, "ord", 4)
		ctx := ctxT(t)
		p, err := c.NewProducer(ctx, "ord", client.WithBatchRecords(50), client.WithLinger(2*time.Millisecond), client.WithMaxBuffered(400))
		if err != nil {
			t.Fatal(err)
		}
		const senders, perSender = 16, 300
		type sent struct {
			key string
			seq int
			fut client.Future
		}
		all := make([][]sent, senders)
		var wg sync.WaitGroup
		for g := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("sender-%d", g)
				for i := range perSender {
					// Some records pin a partition instead: ordering holds
					// for those too (per partition).
					rec := client.Record{Key: []byte(key), Value: fmt.Appendf(nil, "%s/%d", key, i)}
					fut, err := p.Send(ctx, rec)
					if err != nil {
						t.Errorf("send: %v", err)
						return
					}
					all[g] = append(all[g], sent{key, i, fut})
				}
			}()
		}
		wg.Wait()
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		where := map[string]client.Result{} // value -> result
		for _, ss := range all {
			for _, s := range ss {
				r, err := s.fut.Wait(ctx)
				if err != nil {
					t.Fatalf("record %s/%d: %v", s.key, s.seq, err)
				}
				where[fmt.Sprintf("%s/%d", s.key, s.seq)] = r
			}
		}
		total := 0
		for part := range 4 {
			msgs := readAll(t, c, "ord", part)
			total += len(msgs)
			last := map[string]int{}
			for _, m := range msgs {
				v := string(m.Value)
				r, ok := where[v]
				if !ok {
					t.Fatalf("partition %d offset %d: %q was never sent", part, m.Offset, v)
				}
				if r.Partition != part || r.Offset != m.Offset {
					t.Fatalf("%q: future says %d@%d, found at %d@%d", v, r.Partition, r.Offset, part, m.Offset)
				}
				delete(where, v) // a second copy would now be "never sent"
				key, seqStr, _ := strings.Cut(v, "/")
				seq, _ := strconv.Atoi(seqStr)
				if prev, ok := last[key]; ok && seq != prev+1 {
					t.Fatalf("partition %d: %s seq %d after %d: out of order", part, key, seq, prev)
				}
				last[key] = seq
			}
		}
		if total != senders*perSender || len(where) != 0 {
			t.Fatalf("%d records stored, %d sent, %d missing", total, senders*perSender, len(where))
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(ctx, client.Record{Value: []byte("late")}); !errors.Is(err, client.ErrClosed) {
			t.Fatalf("send after close: %v", err)
		}
	})
}

// faultInjector answers some produce requests itself, before the real
// handler sees them: 503 with Retry-After, or a dropped connection. A
// refused request never reaches the broker, so a retry cannot duplicate.
type faultInjector struct {
	next       http.Handler
	n          atomic.Int64
	refused    atomic.Int64
	dropped    atomic.Int64
	retryAfter string
	every503   int64
	everyDrop  int64
}

func (f *faultInjector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/records") {
		n := f.n.Add(1)
		switch {
		case f.everyDrop > 0 && n%f.everyDrop == 0:
			f.dropped.Add(1)
			hj, ok := w.(http.Hijacker)
			if !ok {
				panic("no hijacker")
			}
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close() // no answer at all: a connection error for the client
			}
			return
		case f.every503 > 0 && n%f.every503 != 1:
			f.refused.Add(1)
			w.Header().Set("Retry-After", f.retryAfter)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"unavailable","message":"injected: lease busy"}}`)
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// TestProducerRetries injects 503s (two of every three produce requests)
// and dropped connections: every record must end up stored exactly once,
// offsets dense, per-key order kept.
func TestProducerRetries(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f client.Format) {
		fi := &faultInjector{retryAfter: "0", every503: 3, everyDrop: 7}
		s := newServer(t, func(h http.Handler) http.Handler { fi.next = h; return fi })
		c := s.client(client.WithFormat(f))
		createTopic(t, c, "retry", 3)
		ctx := ctxT(t)
		var failed atomic.Int64
		p, err := c.NewProducer(ctx, "retry", client.WithBatchRecords(20),
			client.WithResultCallback(func(_ client.Record, r client.Result) {
				if r.Err != nil {
					failed.Add(1)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		const n = 1200
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += 4 {
					if _, err := p.Send(ctx, client.Record{Key: fmt.Appendf(nil, "k%d", g), Value: fmt.Appendf(nil, "v%05d", i)}); err != nil {
						t.Errorf("send: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if failed.Load() != 0 {
			t.Fatalf("%d records failed despite retries", failed.Load())
		}
		if fi.refused.Load() == 0 || fi.dropped.Load() == 0 {
			t.Fatalf("injector refused %d and dropped %d: nothing was tested", fi.refused.Load(), fi.dropped.Load())
		}
		seen := map[string]bool{}
		for part := range 3 {
			last := map[byte]string{}
			for _, m := range readAll(t, c, "retry", part) {
				v := string(m.Value)
				if seen[v] {
					t.Fatalf("%s stored twice", v)
				}
				seen[v] = true
				if prev, ok := last[m.Key[1]]; ok && prev >= v {
					t.Fatalf("key %s: %s after %s", m.Key, v, prev)
				}
				last[m.Key[1]] = v
			}
		}
		if len(seen) != n {
			t.Fatalf("%d distinct records stored, %d sent", len(seen), n)
		}
		t.Logf("%d requests, %d answered 503, %d dropped", fi.n.Load(), fi.refused.Load(), fi.dropped.Load())
	})
}

// TestProducerHonorsRetryAfter refuses the first attempt with
// Retry-After: 1; the retry must not come sooner.
func TestProducerHonorsRetryAfter(t *testing.T) {
	t.Parallel()
	var first atomic.Bool
	var gap, at atomic.Int64
	s := newServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/records") {
				if !first.Swap(true) {
					at.Store(time.Now().UnixNano())
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(503)
					fmt.Fprint(w, `{"error":{"code":"unavailable","message":"busy"}}`)
					return
				}
				gap.Store(time.Now().UnixNano() - at.Load())
			}
			h.ServeHTTP(w, r)
		})
	})
	c := s.client()
	createTopic(t, c, "ra", 1)
	ctx := ctxT(t)
	p, err := c.NewProducer(ctx, "ra")
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Produce(ctx, client.Record{Value: []byte("v")})
	if err != nil || r.Offset != 0 {
		t.Fatalf("produce: %+v %v", r, err)
	}
	if d := time.Duration(gap.Load()); d < time.Second {
		t.Fatalf("retried after %v, Retry-After said 1s", d)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestProducerFailsFast checks errors that are not retried: an unknown
// partition at Send, a topic deleted under the producer.
func TestProducerFailsFast(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	c := s.client()
	createTopic(t, c, "gone", 2)
	ctx := ctxT(t)
	if _, err := c.NewProducer(ctx, "missing"); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatalf("producer of a missing topic: %v", err)
	}
	p, err := c.NewProducer(ctx, "gone", client.WithLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, client.Record{Value: []byte("v"), Partition: client.Partition(2)}); err == nil {
		t.Fatal("partition 2 of 2 accepted")
	}
	if _, err := p.Send(ctx, client.Record{Value: make([]byte, client.MaxRecordBytes+1)}); !errors.Is(err, client.ErrTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
	if err := c.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Produce(ctx, client.Record{Value: []byte("v")})
	if !client.IsCode(err, client.CodeTopicNotFound) || time.Since(start) > 5*time.Second {
		t.Fatalf("produce to a deleted topic: %v after %v", err, time.Since(start))
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestProducerCloseTimeout closes a producer whose server never answers:
// Close returns when its context ends and every record has a result.
func TestProducerCloseTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := newServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/records") {
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	defer close(release)
	c := s.client()
	createTopic(t, c, "hang", 1)
	ctx := ctxT(t)
	p, err := c.NewProducer(ctx, "hang", client.WithLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	futs := make([]client.Future, 5)
	for i := range futs {
		if futs[i], err = p.Send(ctx, client.Record{Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := p.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	for i, f := range futs {
		select {
		case <-f.Done():
		default:
			t.Fatalf("record %d has no result after Close", i)
		}
		if _, err := f.Wait(ctx); err == nil {
			t.Fatalf("record %d succeeded against a server that never answers", i)
		}
	}
}
