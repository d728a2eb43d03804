package dynamo

// Tests that a late copy of a commit, applied after the holder committed
// again, never rolls the partition back, and their control (a commit that
// lands and loses its answer), against both emulators through a proxy that
// models the network. They drive the Store as a lease holder does, carrying
// the commit version forward.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

type proxyMode int

const (
	passThrough proxyMode = iota
	// holdCommit: the next Commit request reaches the service's side of
	// the network but is not applied yet. The proxy keeps it and closes
	// the client's connection before any answer; deliver applies it later,
	// as DynamoDB may apply an attempt its client abandoned.
	holdCommit
	// loseAnswer: the next Commit request is applied and its answer lost
	// (the client gets a 500).
	loseAnswer
)

// commitProxy forwards DynamoDB requests to an emulator, with one fault
// armed at a time for the next Commit.
type commitProxy struct {
	*httptest.Server
	target string
	client *http.Client

	mu   sync.Mutex
	mode proxyMode
	held *heldRequest
}

type heldRequest struct {
	header http.Header
	body   []byte
}

// isCommit tells Commit's UpdateItem from the others by its condition.
func isCommit(r *http.Request, body []byte) bool {
	return strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") && bytes.Contains(body, []byte("#owner = :owner"))
}

func newCommitProxy(t *testing.T, target string) *commitProxy {
	p := &commitProxy{target: target, client: &http.Client{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *commitProxy) arm(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

func (p *commitProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	mode := passThrough
	if isCommit(r, body) {
		p.mu.Lock()
		mode, p.mode = p.mode, passThrough
		if mode == holdCommit {
			p.held = &heldRequest{header: r.Header.Clone(), body: body}
		}
		p.mu.Unlock()
	}
	switch mode {
	case holdCommit:
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	case loseAnswer:
		p.forward(r.Header, body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"answer lost"}`)
	default:
		status, hdr, rb := p.forward(r.Header, body)
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		w.Write(rb)
	}
}

func (p *commitProxy) forward(h http.Header, body []byte) (int, http.Header, []byte) {
	req, err := http.NewRequest(http.MethodPost, p.target, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadGateway, http.Header{}, []byte(err.Error())
	}
	for k, v := range h {
		if k != "Content-Length" {
			req.Header[k] = v
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return http.StatusBadGateway, http.Header{}, []byte(err.Error())
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	hdr := resp.Header.Clone()
	hdr.Del("Content-Length")
	return resp.StatusCode, hdr, rb
}

// deliver applies the held request now and returns the service's answer.
func (p *commitProxy) deliver(t *testing.T) (int, string) {
	t.Helper()
	p.mu.Lock()
	h := p.held
	p.held = nil
	p.mu.Unlock()
	if h == nil {
		t.Fatal("no commit request was held")
	}
	status, _, body := p.forward(h.header, h.body)
	return status, string(body)
}

// eachProxiedEmulator runs fn per emulator with a Store talking to it
// through a commitProxy, retrying fast.
func eachProxiedEmulator(t *testing.T, fn func(t *testing.T, px *commitProxy, s *Store)) {
	for _, em := range emulators {
		t.Run(em.name, func(t *testing.T) {
			px := newCommitProxy(t, em.endpoint(t))
			fn(t, px, newTableStore(t, testClient(px.URL), WithRetry(4, time.Millisecond, 4*time.Millisecond)))
		})
	}
}

// holderState is the committed state a holder writes after n records.
func holderState(p meta.Partition, n int64) meta.Partition {
	p.NextOffset = n
	p.LastTS = t0.UnixMilli() + n
	p.Active = &meta.SegmentInfo{Base: 0, Epoch: p.Epoch, Size: 20 + 34*n, NextOffset: n, FirstTS: t0.UnixMilli(), LastTS: p.LastTS, CreatedMs: t0.UnixMilli()}
	return p
}

// commitHeld commits p for a holder keeping its lease and returns the
// holder's next state: the version the commit left.
func commitHeld(t *testing.T, s *Store, p meta.Partition) meta.Partition {
	t.Helper()
	if err := s.Commit(t.Context(), p, false, t0, ttl); err != nil {
		t.Fatalf("Commit next_offset %d version %d: %v", p.NextOffset, p.Version, err)
	}
	p.Version++
	return p
}

// A holder keeping its lease commits b2, whose first attempt the network
// holds while the retry lands, then b3. DynamoDB applying b2's first
// attempt late must be refused: before commit versions it passed the same
// "epoch and owner are mine" condition and rolled next_offset back from
// 15 to 10, and the next owner reused offsets 10-14.
func TestDelayedCommitReplayIsRefused(t *testing.T) {
	eachProxiedEmulator(t, func(t *testing.T, px *commitProxy, s *Store) {
		ctx := t.Context()
		k := meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 0}
		a, err := s.Acquire(ctx, k, "A", t0, ttl)
		if err != nil {
			t.Fatal(err)
		}
		p := commitHeld(t, s, holderState(a.Partition, 5)) // b1
		px.arm(holdCommit)
		p = commitHeld(t, s, holderState(p, 10)) // b2: attempt 1 held, the retry lands
		if got := s.Counters().Snapshot().Retries; got != 1 {
			t.Fatalf("b2 took %d retries, want 1 (was its first attempt held?)", got)
		}
		b3 := holderState(p, 15)
		p = commitHeld(t, s, b3)

		status, body := px.deliver(t) // DynamoDB applies b2's first attempt now
		if status != http.StatusBadRequest || !strings.Contains(body, codeConditionalCheckFailed) {
			t.Errorf("late b2 attempt: HTTP %d %s, want a refused condition", status, body)
		}
		got, err := s.Partition(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got.NextOffset != 15 || got.Version != p.Version || *got.Active != *b3.Active {
			t.Fatalf("after the late attempt: next_offset %d version %d active %+v; want b3's: 15, %d, %+v",
				got.NextOffset, got.Version, *got.Active, p.Version, *b3.Active)
		}
		// The holder goes on from b3.
		commitHeld(t, s, holderState(p, 20))
	})
}

// A commit that lands and loses its answer: the retry's condition fails on
// the holder's own write (the version moved), and the item shows exactly
// that write, so the commit is reported as done, for a held lease and for
// a release alike. (Before commit versions a held lease's retry simply
// applied again; a release's retry was unknown, ErrUnavailable.) Never
// ErrFenced.
func TestLostCommitAnswerIsResolved(t *testing.T) {
	for _, release := range []bool{false, true} {
		name := "hold"
		if release {
			name = "release"
		}
		t.Run(name, func(t *testing.T) {
			eachProxiedEmulator(t, func(t *testing.T, px *commitProxy, s *Store) {
				ctx := t.Context()
				k := meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 0}
				a, err := s.Acquire(ctx, k, "A", t0, ttl)
				if err != nil {
					t.Fatal(err)
				}
				p := commitHeld(t, s, holderState(a.Partition, 5))
				px.arm(loseAnswer)
				b2 := holderState(p, 10)
				if err := s.Commit(ctx, b2, release, t0, ttl); err != nil {
					t.Fatalf("commit whose answer was lost: %v", err)
				}
				got, err := s.Partition(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				wantOwner := "A"
				if release {
					wantOwner = ""
				}
				if got.NextOffset != 10 || got.Version != b2.Version+1 || got.Owner != wantOwner || *got.Active != *b2.Active {
					t.Fatalf("item %+v, want b2's state at version %d owner %q", got, b2.Version+1, wantOwner)
				}
				if release {
					return
				}
				commitHeld(t, s, holderState(landedVersion(b2), 15))
			})
		})
	}
}

func landedVersion(p meta.Partition) meta.Partition {
	p.Version++
	return p
}
