package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
)

// keyRecorder is in front of the real handler: it records the
// Idempotency-Key of every produce attempt and fails the first `fail`
// attempts of each key in the way `how` says, before the handler sees
// them (so nothing is appended by a failed attempt).
type keyRecorder struct {
	next http.Handler
	fail int
	how  string // "503", "408", "in_use", "drop"

	mu       sync.Mutex
	attempts []string       // keys in arrival order
	per      map[string]int // attempts per key
}

func (k *keyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/records") {
		k.next.ServeHTTP(w, r)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	k.mu.Lock()
	k.attempts = append(k.attempts, key)
	k.per[key]++
	n := k.per[key]
	k.mu.Unlock()
	if n > k.fail {
		k.next.ServeHTTP(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	answer := func(status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":"injected"}}`, code)
	}
	switch k.how {
	case "503":
		answer(http.StatusServiceUnavailable, "unavailable")
	case "408":
		answer(http.StatusRequestTimeout, "request_timeout")
	case "in_use":
		answer(http.StatusConflict, "idempotency_key_in_use")
	case "drop":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

func (k *keyRecorder) snapshot() ([]string, map[string]int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	per := map[string]int{}
	for key, n := range k.per {
		per[key] = n
	}
	return append([]string(nil), k.attempts...), per
}

var hexKey = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestProduceRetriesReuseKey: every produce call carries an
// Idempotency-Key, a fresh random one per call; its retries (after a
// 503, a 408, a key in use, a dropped connection) carry the same key.
// Client calls and Producer batches alike, in both formats.
func TestProduceRetriesReuseKey(t *testing.T) {
	for _, how := range []string{"503", "408", "in_use", "drop"} {
		for _, f := range formats() {
			t.Run(how+"/"+f.String(), func(t *testing.T) {
				rec := &keyRecorder{fail: 2, how: how, per: map[string]int{}}
				s := newServer(t, func(h http.Handler) http.Handler { rec.next = h; return rec })
				c := s.client(client.WithFormat(f))
				createTopic(t, c, "keys", 2)
				ctx := ctxT(t)
				if _, err := c.ProduceTo(ctx, "keys", 0, []client.Record{{Value: []byte("a")}}); err != nil {
					t.Fatalf("ProduceTo: %v", err)
				}
				if _, err := c.ProduceTo(ctx, "keys", 0, []client.Record{{Value: []byte("a")}}); err != nil {
					t.Fatalf("ProduceTo again: %v", err)
				}
				if _, err := c.Produce(ctx, "keys", []client.Record{{Value: []byte("b"), Partition: client.Partition(1)}}); err != nil {
					t.Fatalf("Produce: %v", err)
				}
				p, err := c.NewProducer(ctx, "keys", client.WithLinger(0))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.Produce(ctx, client.Record{Value: []byte("c"), Partition: client.Partition(1)}); err != nil {
					t.Fatalf("Producer: %v", err)
				}
				if err := p.Close(ctx); err != nil {
					t.Fatal(err)
				}
				attempts, per := rec.snapshot()
				if len(per) != 4 || len(attempts) != 4*3 {
					t.Fatalf("%d keys over %d attempts %q, want 4 keys of 3 attempts each", len(per), len(attempts), attempts)
				}
				for key, n := range per {
					if !hexKey.MatchString(key) || n != 3 {
						t.Errorf("key %q: %d attempts; want a 128-bit hex key sent 3 times", key, n)
					}
				}
				// Each call's attempts are consecutive: the calls ran one
				// after the other, retries before the next call.
				for i := 0; i < len(attempts); i += 3 {
					if attempts[i] != attempts[i+1] || attempts[i] != attempts[i+2] {
						t.Errorf("call %d: attempts carried keys %q", i/3, attempts[i:i+3])
					}
				}
				// Nothing failed reached the broker: 2 records at 0, 2 at 1.
				for part, want := range []int{2, 2} {
					if got := len(readAll(t, c, "keys", part)); got != want {
						t.Errorf("partition %d: %d records, want %d", part, got, want)
					}
				}
			})
		}
	}
}

// TestProduceCallerKey: a key given in ProduceOptions is sent as is on
// every attempt and reported back; an illegal one is refused before
// anything is sent.
func TestProduceCallerKey(t *testing.T) {
	rec := &keyRecorder{fail: 1, how: "503", per: map[string]int{}}
	s := newServer(t, func(h http.Handler) http.Handler { rec.next = h; return rec })
	c := s.client()
	createTopic(t, c, "keys", 1)
	ctx := ctxT(t)
	rep, err := c.ProduceToWith(ctx, "keys", 0, []client.Record{{Value: []byte("a")}}, client.ProduceOptions{IdempotencyKey: "order 42/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.IdempotencyKey != "order 42/v1" || len(rep.Results) != 1 || rep.Results[0].Offset != 0 {
		t.Errorf("reply %+v", rep)
	}
	if _, per := rec.snapshot(); len(per) != 1 || per["order 42/v1"] != 2 {
		t.Errorf("attempts per key %v, want the caller's key twice", per)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "a\nb", "caf\xc3\xa9", "\x7f"} {
		if _, err := c.ProduceWith(ctx, "keys", []client.Record{{Value: []byte("a")}}, client.ProduceOptions{IdempotencyKey: bad}); err == nil ||
			!strings.Contains(err.Error(), "Idempotency-Key") {
			t.Errorf("key %q: %v, want a refusal naming Idempotency-Key", bad, err)
		}
	}
	if _, per := rec.snapshot(); len(per) != 1 {
		t.Errorf("an illegal key was sent: %v", per)
	}
}

// conditionStub answers every produce itself, as a server that
// implements docs/api.md's additions would, recording how expected_offset
// arrived: 409 offset_mismatch (high watermark 17) for a condition, 422
// for the key "reused", 200 with Idempotent-Replayed for "replay".
type conditionStub struct {
	mu      sync.Mutex
	queries []string
	bodies  []string
	n       int
}

func (s *conditionStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.n++
	s.queries = append(s.queries, r.URL.RawQuery)
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch key := r.Header.Get("Idempotency-Key"); {
	case key == "reused":
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":{"code":"idempotency_key_reused","message":"Idempotency-Key \"reused\" was used before for a request with other contents"}}`)
	case key == "replay":
		w.Header().Set("Idempotent-Replayed", "true")
		fmt.Fprint(w, `{"offsets":[{"partition":0,"offset":5,"timestamp":1000}],"failed_record_count":0}`)
	case strings.Contains(r.URL.RawQuery, "expected_offset") || strings.Contains(string(body), "expected_offset"):
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"error":{"code":"offset_mismatch","message":"expected_offset 3 does not match the partition's high watermark 17"},"high_watermark":17}`)
	default:
		fmt.Fprint(w, `{"offsets":[{"partition":0,"offset":5,"timestamp":1000}],"failed_record_count":0}`)
	}
}

// TestProduceOffsetMismatch: a conditional append sends expected_offset
// (JSON: in the body; binary: in the query) and an offset_mismatch answer
// is an *OffsetMismatchError with the high watermark, not retried.
func TestProduceOffsetMismatch(t *testing.T) {
	for _, f := range formats() {
		t.Run(f.String(), func(t *testing.T) {
			stub := &conditionStub{}
			s := newServer(t, func(http.Handler) http.Handler { return stub })
			c := s.client(client.WithFormat(f))
			three := int64(3)
			_, err := c.ProduceToWith(ctxT(t), "t", 0, []client.Record{{Value: []byte("a")}}, client.ProduceOptions{ExpectedOffset: &three})
			var om *client.OffsetMismatchError
			if !errors.As(err, &om) {
				t.Fatalf("error %v (%T), want an *OffsetMismatchError", err, err)
			}
			if om.Expected != 3 || om.HighWatermark != 17 || om.Err == nil || om.Err.Status != 409 {
				t.Errorf("mismatch %+v", om)
			}
			if !errors.Is(err, client.ErrOffsetMismatch) || !client.IsCode(err, client.CodeOffsetMismatch) || client.IsRetriable(err) {
				t.Errorf("errors.Is %v, IsCode %v, retriable %v", errors.Is(err, client.ErrOffsetMismatch),
					client.IsCode(err, client.CodeOffsetMismatch), client.IsRetriable(err))
			}
			stub.mu.Lock()
			defer stub.mu.Unlock()
			if stub.n != 1 {
				t.Errorf("%d attempts, want 1 (a mismatch is not retried)", stub.n)
			}
			if f == client.JSON {
				var body map[string]json.RawMessage
				if err := json.Unmarshal([]byte(stub.bodies[0]), &body); err != nil || string(body["expected_offset"]) != "3" || stub.queries[0] != "" {
					t.Errorf("JSON request: query %q body %s, want expected_offset 3 in the body", stub.queries[0], stub.bodies[0])
				}
			} else if stub.queries[0] != "expected_offset=3" {
				t.Errorf("binary request: query %q, want expected_offset=3", stub.queries[0])
			}
		})
	}
}

// TestProduceKeyErrors: 422 idempotency_key_reused is ErrIdempotencyKeyReused
// and not retried; a replayed answer is reported as Replayed.
func TestProduceKeyErrors(t *testing.T) {
	stub := &conditionStub{}
	s := newServer(t, func(http.Handler) http.Handler { return stub })
	c := s.client()
	ctx := ctxT(t)
	recs := []client.Record{{Value: []byte("a")}}
	_, err := c.ProduceWith(ctx, "t", recs, client.ProduceOptions{IdempotencyKey: "reused"})
	var e *client.Error
	if !errors.Is(err, client.ErrIdempotencyKeyReused) || !errors.As(err, &e) || e.Status != 422 || errors.Is(err, client.ErrIdempotencyKeyInUse) {
		t.Errorf("reused key: %v", err)
	}
	if stub.n != 1 {
		t.Errorf("%d attempts for a reused key, want 1", stub.n)
	}
	rep, err := c.ProduceToWith(ctx, "t", 0, recs, client.ProduceOptions{IdempotencyKey: "replay"})
	if err != nil || !rep.Replayed || !rep.Results[0].Replayed || rep.Results[0].Offset != 5 {
		t.Errorf("replay: %+v, %v; want Replayed at offset 5", rep, err)
	}
	rep, err = c.ProduceToWith(ctx, "t", 0, recs, client.ProduceOptions{})
	if err != nil || rep.Replayed || rep.Results[0].Replayed {
		t.Errorf("first attempt: %+v, %v; want not Replayed", rep, err)
	}
	if _, err := c.ProduceWith(ctx, "t", recs, client.ProduceOptions{ExpectedOffset: new(int64)}); err == nil {
		t.Error("ExpectedOffset on the multi-partition call was accepted")
	}
}

// TestProduceGivesUpWithLastError: when the retries give up, the call
// fails with the last attempt's error, as before keys existed.
func TestProduceGivesUpWithLastError(t *testing.T) {
	rec := &keyRecorder{fail: 1 << 30, how: "503", per: map[string]int{}}
	s := newServer(t, func(h http.Handler) http.Handler { rec.next = h; return rec })
	c := s.client(client.WithBackoff(client.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: 50 * time.Millisecond}))
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	_, err := c.ProduceTo(ctx, "t", 0, []client.Record{{Value: []byte("a")}})
	if !client.IsCode(err, client.CodeUnavailable) {
		t.Fatalf("error %v, want the last 503", err)
	}
	if attempts, per := rec.snapshot(); len(per) != 1 || len(attempts) < 2 {
		t.Errorf("%d attempts over keys %v, want retries of one key", len(attempts), per)
	}
}
