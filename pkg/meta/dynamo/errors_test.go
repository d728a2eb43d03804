package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// reply answers one request of the canned server.
type reply func(w http.ResponseWriter, r *http.Request)

func ok(body string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, body)
	}
}

func apiError(status int, code string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"canned %s"}`, code, code)
	}
}

// hang answers nothing until the client gives up (the server notices once
// the body has been read) or the test ends.
func hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-testDone(r):
	}
}

type doneKey struct{}

func testDone(r *http.Request) <-chan struct{} {
	done, _ := r.Context().Value(doneKey{}).(chan struct{})
	return done
}

var (
	throttle    = apiError(400, "ProvisionedThroughputExceededException")
	condFailed  = apiError(400, "ConditionalCheckFailedException")
	serverError = apiError(500, "InternalServerError")
)

// cannedServer answers the n-th request with replies[n], repeating the
// last one, and records the operation of each request.
type cannedServer struct {
	*httptest.Server
	mu      sync.Mutex
	ops     []string
	replies []reply
}

func newCanned(t *testing.T, replies ...reply) *cannedServer {
	c := &cannedServer{replies: replies}
	done := make(chan struct{})
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		r = r.WithContext(context.WithValue(r.Context(), doneKey{}, done))
		c.mu.Lock()
		n := len(c.ops)
		c.ops = append(c.ops, r.Header.Get("X-Amz-Target")[strings.LastIndex(r.Header.Get("X-Amz-Target"), ".")+1:])
		c.mu.Unlock()
		c.replies[min(n, len(c.replies)-1)](w, r)
	}))
	t.Cleanup(c.Close)
	t.Cleanup(func() { close(done) }) // runs first: frees hung handlers
	return c
}

func (c *cannedServer) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ops...)
}

// cannedStore is a Store on c with fast retries.
func cannedStore(c *cannedServer, opts ...Option) *Store {
	return New(testClient(c.URL), "canned", append([]Option{WithRetry(4, time.Millisecond, 4*time.Millisecond)}, opts...)...)
}

var (
	pk0   = meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 0}
	held  = meta.Partition{Topic: "orders", TopicID: "id-1", Partition: 0, Epoch: 3, Owner: "A"}
	topic = meta.TopicConfig{Name: "orders", ID: "id-1", Partitions: 1}
)

func TestErrorMapping(t *testing.T) {
	commit := func(ctx context.Context, s *Store) error { return s.Commit(ctx, held, false, t0, ttl) }
	release := func(ctx context.Context, s *Store) error { return s.Commit(ctx, held, true, t0, ttl) }
	read := func(ctx context.Context, s *Store) error { _, err := s.Partition(ctx, pk0); return err }
	acquire := func(ctx context.Context, s *Store) error { _, err := s.Acquire(ctx, pk0, "B", t0, ttl); return err }
	for _, c := range []struct {
		name    string
		replies []reply
		op      func(context.Context, *Store) error
		opts    []Option
		want    []error // errors.Is each; none: success
		notWant error
		n       int // requests
	}{
		{name: "read/throttled then ok", replies: []reply{throttle, throttle, throttle, ok(`{}`)}, op: read, n: 4},
		{name: "read/ThrottlingException retried", replies: []reply{apiError(400, "ThrottlingException"), ok(`{}`)}, op: read, n: 2},
		{name: "read/RequestLimitExceeded retried", replies: []reply{apiError(400, "RequestLimitExceeded"), ok(`{}`)}, op: read, n: 2},
		{name: "read/throttled throughout", replies: []reply{throttle}, op: read, want: []error{meta.ErrUnavailable}, n: 4},
		{name: "read/5xx throughout", replies: []reply{apiError(503, "ServiceUnavailable")}, op: read, want: []error{meta.ErrUnavailable}, n: 4},
		{name: "read/validation error not retried", replies: []reply{apiError(400, "ValidationException")}, op: read, notWant: meta.ErrUnavailable, n: 1},
		{name: "read/hang times out", replies: []reply{hang}, op: read, opts: []Option{WithCallTimeout(150 * time.Millisecond)},
			want: []error{meta.ErrUnavailable, context.DeadlineExceeded}, n: 1},
		{name: "read/hung attempt abandoned", replies: []reply{hang, ok(`{}`)}, op: read,
			opts: []Option{WithAttemptTimeout(100 * time.Millisecond)}, n: 2},

		{name: "commit/condition failed", replies: []reply{condFailed}, op: commit, want: []error{meta.ErrFenced}, n: 1},
		{name: "commit/throttled then condition failed", replies: []reply{throttle, throttle, condFailed}, op: commit, want: []error{meta.ErrFenced}, n: 3},
		{name: "commit/throttled then ok", replies: []reply{throttle, ok(`{}`)}, op: commit, n: 2},
		{name: "commit/5xx then ok", replies: []reply{serverError, ok(`{}`)}, op: commit, n: 2},
		{name: "commit/5xx then condition failed is unknown", replies: []reply{serverError, condFailed}, op: release,
			want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 2},
		{name: "commit/hang times out", replies: []reply{hang}, op: commit, opts: []Option{WithCallTimeout(150 * time.Millisecond)},
			want: []error{meta.ErrUnavailable, context.DeadlineExceeded}, n: 1},
		{name: "commit/timed-out attempt then condition failed is unknown", replies: []reply{hang, condFailed}, op: release,
			opts: []Option{WithAttemptTimeout(100 * time.Millisecond)}, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 2},
		{name: "commit/throttled throughout", replies: []reply{throttle}, op: commit, want: []error{meta.ErrUnavailable}, n: 4},

		{name: "acquire/condition failed", replies: []reply{condFailed}, op: acquire, want: []error{meta.ErrLeaseHeld}, n: 1},
		{name: "create topic/condition failed", replies: []reply{condFailed},
			op: func(ctx context.Context, s *Store) error { return s.CreateTopic(ctx, topic) }, want: []error{meta.ErrTopicExists}, n: 1},
		{name: "create topic/5xx then condition failed, ours is there", replies: []reply{serverError, condFailed,
			ok(`{"Item":{"pk":{"S":"topics"},"sk":{"S":"t#orders"},"name":{"S":"orders"},"id":{"S":"id-1"},"partitions":{"N":"1"},` +
				`"retention_ms":{"N":"0"},"retention_bytes":{"N":"0"},"segment_bytes":{"N":"0"},"segment_ms":{"N":"0"},"cleanup_policy":{"S":""},"created_ms":{"N":"0"}}}`)},
			op: func(ctx context.Context, s *Store) error { return s.CreateTopic(ctx, topic) }, n: 3},
		{name: "delete topic/condition failed", replies: []reply{condFailed},
			op: func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders") }, want: []error{meta.ErrNotFound}, n: 1},
		{name: "delete topic/5xx then condition failed is unknown", replies: []reply{serverError, condFailed},
			op: func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders") }, want: []error{meta.ErrUnavailable}, n: 2},
		{name: "advance/condition failed, item missing", replies: []reply{condFailed, ok(`{}`)},
			op: func(ctx context.Context, s *Store) error { return s.AdvanceLogStart(ctx, pk0, 5) }, want: []error{meta.ErrNotFound}, n: 2},
		{name: "advance/condition failed, not greater", replies: []reply{condFailed,
			ok(`{"Item":{"pk":{"S":"p#orders#id-1#0"},"sk":{"S":"state"},"log_start_offset":{"N":"9"}}}`)},
			op: func(ctx context.Context, s *Store) error { return s.AdvanceLogStart(ctx, pk0, 5) }, n: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newCanned(t, c.replies...)
			s := cannedStore(srv, c.opts...)
			start := time.Now()
			err := c.op(t.Context(), s)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %v", took)
			}
			if len(c.want) == 0 && c.notWant == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
			if c.notWant != nil && (err == nil || errors.Is(err, c.notWant)) {
				t.Errorf("err = %v, want an error that is not %v", err, c.notWant)
			}
			if got := srv.requests(); len(got) != c.n {
				t.Errorf("%d requests %v, want %d", len(got), got, c.n)
			}
		})
	}
}

// The counters see every attempt: retries, throttles, and the conflict.
func TestRetryCounters(t *testing.T) {
	srv := newCanned(t, throttle, throttle, condFailed)
	s := cannedStore(srv)
	if err := s.Commit(t.Context(), held, false, t0, ttl); !errors.Is(err, meta.ErrFenced) {
		t.Fatalf("err = %v", err)
	}
	want := Stats{UpdateItem: 3, Retries: 2, Throttled: 2, ConditionalCheckFailed: 1, LeaseConflicts: 1}
	if got := s.Counters().Snapshot(); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	if got := srv.requests(); strings.Join(got, ",") != "UpdateItem,UpdateItem,UpdateItem" {
		t.Fatalf("requests %v", got)
	}
}

// A refused connection is retried (the request was not sent) and ends in
// ErrUnavailable.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := New(testClient("http://"+addr), "t", WithRetry(3, time.Millisecond, time.Millisecond))
	err = s.Commit(t.Context(), held, false, t0, ttl)
	if !errors.Is(err, meta.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if got := s.Counters().Snapshot(); got.UpdateItem != 3 || got.Retries != 2 {
		t.Fatalf("counters %+v", got)
	}
}

// The caller's cancellation ends the call with ErrUnavailable.
func TestCallerCancel(t *testing.T) {
	srv := newCanned(t, hang)
	s := cannedStore(srv)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := s.Commit(ctx, held, false, t0, ttl)
	if !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnavailable and context.Canceled", err)
	}
}

func TestClosed(t *testing.T) {
	srv := newCanned(t, ok(`{}`))
	s := cannedStore(srv)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Partition(t.Context(), pk0); err == nil {
		t.Fatal("Partition after Close succeeded")
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests after Close", n)
	}
}

// Commit without an owner is refused without a request.
func TestCommitNoOwnerSendsNothing(t *testing.T) {
	srv := newCanned(t, ok(`{}`))
	s := cannedStore(srv)
	p := held
	p.Owner = ""
	if err := s.Commit(t.Context(), p, true, t0, ttl); !errors.Is(err, meta.ErrFenced) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}
