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

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

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

// cannedRequestID is the request id every canned error carries: no error
// message may show it.
const cannedRequestID = "REQ-CANNED-0123456789"

func apiError(status int, code string) reply {
	return apiErrorWith(status, code, "")
}

// apiErrorWith answers an error whose body has extra JSON members (a
// ConditionalCheckFailedException's "Item").
func apiErrorWith(status int, code, extra string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", cannedRequestID)
		w.WriteHeader(status)
		if extra != "" {
			extra = "," + extra
		}
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"canned %s"%s}`, code, code, extra)
	}
}

// stateItem is a partition item as GetItem returns it, attributes given as
// JSON members.
func stateItem(attrs string) reply {
	return ok(`{"Item":{"pk":{"S":"p#orders#id-1#0"},"sk":{"S":"state"},` + attrs + `}}`)
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
	held  = meta.Partition{Topic: "orders", TopicID: "id-1", Partition: 0, Epoch: 3, Version: 7, Owner: "A", NextOffset: 40, LastTS: 9}
	topic = meta.TopicConfig{Name: "orders", ID: "id-1", Partitions: 1}
)

// Items as held's commit leaves them (version 8), or not quite.
const (
	heldLanded    = `"epoch":{"N":"3"},"version":{"N":"8"},"owner":{"S":"A"},"next_offset":{"N":"40"},"last_ts":{"N":"9"},"active":{"NULL":true},"sealed":{"NULL":true}`
	heldReleased  = `"epoch":{"N":"3"},"version":{"N":"8"},"owner":{"S":""},"next_offset":{"N":"40"},"last_ts":{"N":"9"},"active":{"NULL":true},"sealed":{"NULL":true}`
	heldOtherNext = `"epoch":{"N":"3"},"version":{"N":"8"},"owner":{"S":"A"},"next_offset":{"N":"45"},"last_ts":{"N":"9"},"active":{"NULL":true},"sealed":{"NULL":true}`
	heldLater     = `"epoch":{"N":"3"},"version":{"N":"9"},"owner":{"S":"A"},"next_offset":{"N":"40"},"last_ts":{"N":"9"},"active":{"NULL":true},"sealed":{"NULL":true}`
	heldTaken     = `"epoch":{"N":"4"},"version":{"N":"8"},"owner":{"S":"B"},"lease_until":{"N":"9999999999999"},"next_offset":{"N":"40"},"last_ts":{"N":"9"}`
	heldFenced    = `"epoch":{"N":"4"},"version":{"N":"9"},"owner":{"S":""},"deleted":{"BOOL":true},"next_offset":{"N":"40"},"last_ts":{"N":"9"}`
)

func TestErrorMapping(t *testing.T) {
	commit := func(ctx context.Context, s *Store) error { return s.Commit(ctx, held, false, t0, ttl) }
	release := func(ctx context.Context, s *Store) error { return s.Commit(ctx, held, true, t0, ttl) }
	read := func(ctx context.Context, s *Store) error { _, err := s.Partition(ctx, pk0); return err }
	acquire := func(ctx context.Context, s *Store) error { _, err := s.Acquire(ctx, pk0, "B", t0, ttl); return err }
	markCold := func(ctx context.Context, s *Store) error { return s.MarkSegmentCold(ctx, pk0, 10, 1) }
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
		// After an attempt of unknown outcome, a refusal is resolved by the
		// item: our own commit (next version, same lease and state) is
		// success, anything else unknown, never fenced.
		{name: "commit/5xx then condition failed, item missing, is unknown", replies: []reply{serverError, condFailed, ok(`{}`)}, op: release,
			want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/5xx then condition failed, our commit is there", replies: []reply{serverError, condFailed, stateItem(heldLanded)}, op: commit, n: 3},
		{name: "commit/5xx then condition failed, our release is there", replies: []reply{serverError, condFailed, stateItem(heldReleased)}, op: release, n: 3},
		{name: "commit/5xx then condition failed carrying our commit", replies: []reply{serverError,
			apiErrorWith(400, "ConditionalCheckFailedException", `"Item":{`+heldLanded+`}`)}, op: commit, n: 2},
		{name: "commit/5xx then condition failed, unreleased item for a release, is unknown", replies: []reply{serverError, condFailed, stateItem(heldLanded)},
			op: release, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/5xx then condition failed, other state at our version, is unknown", replies: []reply{serverError, condFailed, stateItem(heldOtherNext)},
			op: commit, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/5xx then condition failed, a later version, is unknown", replies: []reply{serverError, condFailed, stateItem(heldLater)},
			op: commit, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/5xx then condition failed, taken over, is unknown", replies: []reply{serverError, condFailed, stateItem(heldTaken)},
			op: commit, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/5xx then condition failed, the read fails, is unknown", replies: []reply{serverError, condFailed, apiError(400, "ValidationException")},
			op: commit, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/condition failed carrying what would be ours is fenced", replies: []reply{
			apiErrorWith(400, "ConditionalCheckFailedException", `"Item":{`+heldLanded+`}`)}, op: commit, want: []error{meta.ErrFenced}, n: 1},
		{name: "commit/hang times out", replies: []reply{hang}, op: commit, opts: []Option{WithCallTimeout(150 * time.Millisecond)},
			want: []error{meta.ErrUnavailable, context.DeadlineExceeded}, n: 1},
		{name: "commit/timed-out attempt then condition failed is unknown", replies: []reply{hang, condFailed, ok(`{}`)}, op: release,
			opts: []Option{WithAttemptTimeout(100 * time.Millisecond)}, want: []error{meta.ErrUnavailable}, notWant: meta.ErrFenced, n: 3},
		{name: "commit/timed-out attempt then condition failed, our commit is there", replies: []reply{hang, condFailed, stateItem(heldLanded)}, op: commit,
			opts: []Option{WithAttemptTimeout(100 * time.Millisecond)}, n: 3},
		{name: "commit/throttled throughout", replies: []reply{throttle}, op: commit, want: []error{meta.ErrUnavailable}, n: 4},

		// A refusal without the item (dynalite) costs a read: held or fenced?
		{name: "acquire/condition failed", replies: []reply{condFailed, stateItem(heldTaken)}, op: acquire, want: []error{meta.ErrLeaseHeld}, n: 2},
		{name: "acquire/condition failed carrying the item", replies: []reply{apiErrorWith(400, "ConditionalCheckFailedException", `"Item":{`+heldTaken+`}`)},
			op: acquire, want: []error{meta.ErrLeaseHeld}, n: 1},
		{name: "acquire/condition failed, fenced", replies: []reply{condFailed, stateItem(heldFenced)}, op: acquire,
			want: []error{meta.ErrNotFound}, notWant: meta.ErrLeaseHeld, n: 2},
		{name: "acquire/condition failed carrying a fenced item", replies: []reply{apiErrorWith(400, "ConditionalCheckFailedException", `"Item":{`+heldFenced+`}`)},
			op: acquire, want: []error{meta.ErrNotFound}, notWant: meta.ErrLeaseHeld, n: 1},
		{name: "mark cold/condition failed, entry missing", replies: []reply{condFailed, ok(`{}`)}, op: markCold, want: []error{meta.ErrNotFound}, n: 2},
		{name: "mark cold/condition failed, marked already", replies: []reply{condFailed,
			ok(`{"Item":{"pk":{"S":"s#orders#id-1#0"},"sk":{"S":"00000000000000000010"},"next_offset":{"N":"10"},"cold_ms":{"N":"5"}}}`)}, op: markCold, n: 2},
		{name: "mark cold/condition failed, put since", replies: []reply{condFailed,
			ok(`{"Item":{"pk":{"S":"s#orders#id-1#0"},"sk":{"S":"00000000000000000010"},"next_offset":{"N":"10"}}}`), ok(`{}`)}, op: markCold, n: 3},
		{name: "create topic/condition failed", replies: []reply{condFailed},
			op: func(ctx context.Context, s *Store) error { return s.CreateTopic(ctx, topic) }, want: []error{meta.ErrTopicExists}, n: 1},
		{name: "create topic/5xx then condition failed, ours is there", replies: []reply{serverError, condFailed,
			ok(`{"Item":{"pk":{"S":"topics"},"sk":{"S":"t#orders"},"name":{"S":"orders"},"id":{"S":"id-1"},"partitions":{"N":"1"},` +
				`"retention_ms":{"N":"0"},"retention_bytes":{"N":"0"},"segment_bytes":{"N":"0"},"segment_ms":{"N":"0"},"cleanup_policy":{"S":""},"created_ms":{"N":"0"}}}`)},
			op: func(ctx context.Context, s *Store) error { return s.CreateTopic(ctx, topic) }, n: 3},
		{name: "delete topic/condition failed", replies: []reply{condFailed},
			op: func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders", "id-1") }, want: []error{meta.ErrNotFound}, n: 1},
		{name: "delete topic/5xx then condition failed, the incarnation is gone", replies: []reply{serverError, condFailed, ok(`{}`)},
			op: func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders", "id-1") }, n: 3},
		{name: "delete topic/5xx then condition failed, a new incarnation is there", replies: []reply{serverError, condFailed,
			ok(`{"Item":{"pk":{"S":"topics"},"sk":{"S":"t#orders"},"name":{"S":"orders"},"id":{"S":"id-2"},"partitions":{"N":"1"}}}`)},
			op: func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders", "id-1") }, n: 3},
		{name: "delete topic/5xx then condition failed, still there is unknown", replies: []reply{serverError, condFailed,
			ok(`{"Item":{"pk":{"S":"topics"},"sk":{"S":"t#orders"},"name":{"S":"orders"},"id":{"S":"id-1"},"partitions":{"N":"1"}}}`)},
			op: func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders", "id-1") }, want: []error{meta.ErrUnavailable}, n: 3},
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
			if err != nil && strings.Contains(err.Error(), cannedRequestID) {
				t.Errorf("message shows the request id: %v", err)
			}
		})
	}
}

// Throttling, 5xx and timeouts are meta.ErrUnavailable on every method,
// the message shows no request id, and the SDK error stays in the chain
// (its request id for the logs that want it).
func TestUnavailableEveryMethod(t *testing.T) {
	offs := []meta.GroupOffset{{Topic: "orders", TopicID: "id-1", Partition: 0, Offset: 1}}
	ops := map[string]func(context.Context, *Store) error{
		"CreateTopic":     func(ctx context.Context, s *Store) error { return s.CreateTopic(ctx, topic) },
		"Topic":           func(ctx context.Context, s *Store) error { _, err := s.Topic(ctx, "orders"); return err },
		"Topics":          func(ctx context.Context, s *Store) error { _, err := s.Topics(ctx); return err },
		"DeleteTopic":     func(ctx context.Context, s *Store) error { return s.DeleteTopic(ctx, "orders", "id-1") },
		"Partition":       func(ctx context.Context, s *Store) error { _, err := s.Partition(ctx, pk0); return err },
		"Acquire":         func(ctx context.Context, s *Store) error { _, err := s.Acquire(ctx, pk0, "A", t0, ttl); return err },
		"Commit":          func(ctx context.Context, s *Store) error { return s.Commit(ctx, held, false, t0, ttl) },
		"FencePartition":  func(ctx context.Context, s *Store) error { return s.FencePartition(ctx, pk0) },
		"DeletePartition": func(ctx context.Context, s *Store) error { return s.DeletePartition(ctx, pk0) },
		"AdvanceLogStart": func(ctx context.Context, s *Store) error { return s.AdvanceLogStart(ctx, pk0, 1) },
		"AdvanceColdEnd":  func(ctx context.Context, s *Store) error { return s.AdvanceColdEnd(ctx, pk0, 1) },
		"PutSegment": func(ctx context.Context, s *Store) error {
			return s.PutSegment(ctx, pk0, meta.CatalogEntry{Base: 0, NextOffset: 10, Key: "k"})
		},
		"Segments":        func(ctx context.Context, s *Store) error { _, err := s.Segments(ctx, pk0, 0, 0); return err },
		"MarkSegmentCold": func(ctx context.Context, s *Store) error { return s.MarkSegmentCold(ctx, pk0, 10, 1) },
		"DeleteSegment": func(ctx context.Context, s *Store) error {
			return s.DeleteSegment(ctx, pk0, meta.CatalogEntry{NextOffset: 10})
		},
		"CommitOffsets": func(ctx context.Context, s *Store) error { return s.CommitOffsets(ctx, "g", offs) },
		"GroupOffsets":  func(ctx context.Context, s *Store) error { _, err := s.GroupOffsets(ctx, "g", "orders"); return err },
	}
	for _, fault := range []struct {
		name  string
		reply reply
		opts  []Option
		more  error // also errors.Is
	}{
		{"throttled", throttle, nil, nil},
		{"5xx", serverError, nil, nil},
		{"timeout", hang, []Option{WithCallTimeout(50 * time.Millisecond)}, context.DeadlineExceeded},
	} {
		for name, op := range ops {
			t.Run(fault.name+"/"+name, func(t *testing.T) {
				srv := newCanned(t, fault.reply)
				err := op(t.Context(), cannedStore(srv, fault.opts...))
				if !errors.Is(err, meta.ErrUnavailable) || (fault.more != nil && !errors.Is(err, fault.more)) {
					t.Fatalf("err = %v, want ErrUnavailable %v", err, fault.more)
				}
				if strings.Contains(err.Error(), cannedRequestID) {
					t.Fatalf("message shows the request id: %v", err)
				}
				var re *awshttp.ResponseError
				if fault.more == nil && (!errors.As(err, &re) || re.ServiceRequestID() != cannedRequestID) {
					t.Fatalf("the SDK's response error is not in the chain: %v", err)
				}
			})
		}
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
