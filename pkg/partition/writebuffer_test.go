package partition

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
)

// countingStore counts the metadata writes (acquires and commits) and
// reads of the partition item.
type countingStore struct {
	meta.Store
	writes atomic.Int64
	reads  atomic.Int64
}

func (s *countingStore) Partition(ctx context.Context, k meta.PartitionKey) (meta.Partition, error) {
	s.reads.Add(1)
	return s.Store.Partition(ctx, k)
}

func (s *countingStore) Acquire(ctx context.Context, k meta.PartitionKey, owner string, now time.Time, ttl time.Duration) (meta.Acquired, error) {
	s.writes.Add(1)
	return s.Store.Acquire(ctx, k, owner, now, ttl)
}

func (s *countingStore) Commit(ctx context.Context, p meta.Partition, release bool, now time.Time, ttl time.Duration) error {
	s.writes.Add(1)
	return s.Store.Commit(ctx, p, release, now, ttl)
}

// openWith opens a Log of owner with cfg's hooks applied.
func (e *env) openWith(owner string, hold bool, edit func(*Config)) *Log {
	e.t.Helper()
	cfg := Config{
		Dir: e.dir, Key: e.key, Meta: e.store, Owner: owner, HoldLease: hold,
		LeaseTTL: 10 * time.Second, SegmentBytes: 4096, IndexIntervalBytes: 100,
		FS: e.fs, Now: e.clock.now,
	}
	if edit != nil {
		edit(&cfg)
	}
	l, err := Open(context.Background(), cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// A writer that finds the lease held stages its batch and waits; the holder's
// next round appends it with its own, under one commit, and the waiter
// answers the offsets that commit gave it.
func TestBusyPartitionWaitsAndIsGroupCommitted(t *testing.T) {
	e := newEnv(t)
	cs := &countingStore{Store: e.store}
	e.store = cs
	ctx := context.Background()
	holder := e.open("holder", true)
	if _, err := holder.Append(ctx, batch("h0", 2)); err != nil {
		t.Fatal(err)
	}
	polling := make(chan struct{}, 1)
	waiter := e.openWith("waiter", false, func(c *Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case polling <- struct{}{}:
			default:
			}
			return sleep(ctx, time.Millisecond)
		}
	})
	type res struct {
		app Appended
		err error
	}
	done := make(chan res, 1)
	go func() {
		app, err := waiter.AppendBatch(ctx, Batch{Records: batch("w", 3), Key: "wk", Expected: -1})
		done <- res{app, err}
	}()
	<-polling // staged, and watching the item
	before := cs.writes.Load()
	app, err := holder.Append(ctx, batch("h1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if app.BaseOffset != 2 {
		t.Fatalf("holder's batch at %d, want 2", app.BaseOffset)
	}
	if w := cs.writes.Load() - before; w != 1 {
		t.Fatalf("the holder's round made %d metadata writes, want 1 commit", w)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	if r.app.BaseOffset != 4 || r.app.Replayed {
		t.Fatalf("the waiter's batch at %+v, want offset 4, not replayed", r.app)
	}
	recs := readAll(t, holder)
	if len(recs) != 7 {
		t.Fatalf("%d records, want 7", len(recs))
	}
	for i := 4; i < 7; i++ {
		if want := fmt.Sprintf("w-%d-", i-4); string(recs[i].Value[:len(want)]) != want {
			t.Fatalf("offset %d holds %q, want the waiter's record %d", i, recs[i].Value, i-4)
		}
	}
	// The holder released at that commit (another writer was waiting). The
	// waiter's staged file stays until its next staging or its Release,
	// off the answer's path, and no longer.
	p, _ := e.store.Partition(ctx, e.key)
	if p.Owner != "" {
		t.Fatalf("lease still held by %q after a commit that others waited for", p.Owner)
	}
	if names, _ := waiter.listStaged(); len(names) != 1 {
		t.Fatalf("staged files after the answer: %v, want the waiter's", names)
	}
	if _, err := waiter.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if names, _ := waiter.listStaged(); len(names) != 0 {
		t.Fatalf("staged files left after the waiter's Release: %v", names)
	}
}

// A batch whose key was committed is answered with the first commit's
// offsets by any process, after the writer that committed it is gone and the
// segment rolled; other contents under the key are refused; nothing is
// appended twice.
func TestKeyedBatchAtMostOnceAcrossProcessesAndRolls(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := e.open("a", false)
	app, err := first.AppendBatch(ctx, Batch{Records: batch("k1", 3), Key: "key-1", Hash: [16]byte{1}, Expected: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Roll several segments past it (4 KiB segments).
	for i := range 12 {
		if _, err := first.AppendBatch(ctx, Batch{Records: batch(fmt.Sprint("f", i), 20), Key: fmt.Sprint("fill-", i), Expected: -1}); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := e.store.Partition(ctx, e.key)
	if len(p.Sealed) < 3 {
		t.Fatalf("only %d sealed segments: the test needs the key several rolls back", len(p.Sealed))
	}
	hw := p.NextOffset
	// The compactor drops the sealed segments from the item as if tiered:
	// the window must walk back through the batch files' links.
	if err := e.store.AdvanceColdEnd(ctx, e.key, p.Sealed[len(p.Sealed)-1].NextOffset); err != nil {
		t.Fatal(err)
	}
	second := e.open("b", false) // another process, nothing cached
	again, err := second.AppendBatch(ctx, Batch{Records: batch("k1", 3), Key: "key-1", Hash: [16]byte{1}, Expected: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.BaseOffset != app.BaseOffset || again.Timestamp != app.Timestamp {
		t.Fatalf("retry answered %+v, want a replay of %+v", again, app)
	}
	_, err = second.AppendBatch(ctx, Batch{Records: batch("other", 3), Key: "key-1", Hash: [16]byte{2}, Expected: -1})
	if !errors.Is(err, ErrKeyReused) {
		t.Fatalf("same key, other contents: %v, want ErrKeyReused", err)
	}
	if b, _ := second.Bounds(ctx); b.HighWatermark != hw {
		t.Fatalf("high watermark %d after a replay and a refusal, want %d", b.HighWatermark, hw)
	}
	if _, found, err := second.Committed(ctx, Batch{Records: batch("k1", 3), Key: "key-1", Hash: [16]byte{1}}); err != nil || !found {
		t.Fatalf("Committed: found %v, %v", found, err)
	}
}

// A conditional batch lands only where it expects; otherwise nothing is
// appended and the error names the high watermark.
func TestConditionalAppend(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := e.open("a", false)
	if _, err := l.AppendBatch(ctx, Batch{Records: batch("a", 2), Expected: 0}); err != nil {
		t.Fatal(err)
	}
	_, err := l.AppendBatch(ctx, Batch{Records: batch("b", 1), Expected: 0})
	var m *MismatchError
	if !errors.As(err, &m) || m.HighWatermark != 2 || m.Expected != 0 {
		t.Fatalf("append expecting 0 at 2: %v", err)
	}
	app, err := l.AppendBatch(ctx, Batch{Records: batch("c", 1), Expected: 2})
	if err != nil || app.BaseOffset != 2 {
		t.Fatalf("append expecting 2: %+v %v", app, err)
	}
	if b, _ := l.Bounds(ctx); b.HighWatermark != 3 {
		t.Fatalf("high watermark %d, want 3", b.HighWatermark)
	}
}

// Two appends with one key at once in one process: the second is refused
// while the first is in flight.
func TestKeyInUse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	holder := e.open("holder", true)
	if _, err := holder.Append(ctx, batch("h", 1)); err != nil {
		t.Fatal(err)
	}
	polling := make(chan struct{}, 1)
	l := e.openWith("w", false, func(c *Config) {
		c.BusyWait = 200 * time.Millisecond
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case polling <- struct{}{}:
			default:
			}
			e.clock.advance(d) // the waiter's deadline is on the fake clock
			return sleep(ctx, time.Millisecond)
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := l.AppendBatch(ctx, Batch{Records: batch("x", 1), Key: "same", Expected: -1})
		done <- err
	}()
	<-polling
	if _, err := l.AppendBatch(ctx, Batch{Records: batch("x", 1), Key: "same", Expected: -1}); !errors.Is(err, ErrKeyInUse) {
		t.Fatalf("second append with the key in flight: %v, want ErrKeyInUse", err)
	}
	// The holder never runs a round: the waiter gives up at its deadline,
	// with the outcome unknown, and takes its staged file back.
	if err := <-done; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("waiter past its deadline: %v, want ErrUnavailable", err)
	}
	if names, _ := l.listStaged(); len(names) != 0 {
		t.Fatalf("staged files left: %v", names)
	}
}

// A conditional batch that finds its partition fenced for a topic delete
// answers ErrDeleted, not the deleted incarnation's high watermark.
func TestConditionalOnDeletedIncarnation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := e.open("a", false)
	if _, err := l.Append(ctx, batch("a", 2)); err != nil {
		t.Fatal(err)
	}
	// Another writer is waiting (a staged batch), so l joins the write
	// buffer instead of acquiring; then the topic delete fences the item.
	other := e.open("b", false)
	if err := other.writeStaged(&staged{created: e.clock.now().UnixMilli(), expected: -1, origin: 1, key: "b:1", recs: batch("b", 1)}); err != nil {
		t.Fatal(err)
	}
	l.contended = e.clock.now().Add(time.Minute)
	if err := e.store.FencePartition(ctx, e.key); err != nil {
		t.Fatal(err)
	}
	_, err := l.AppendBatch(ctx, Batch{Records: batch("c", 1), Expected: 5})
	if !errors.Is(err, ErrDeleted) {
		t.Fatalf("conditional append on a fenced partition: %v, want ErrDeleted", err)
	}
}

// A contended writer stages its batch first. The one that led the last
// round it knows of (warm: it released the lease with its files open) then
// tries the lease at once, without a look at the item, and continues the
// segment. One that has seen another writer's commit since is warm no
// longer: it waits its turn.
func TestWarmWriterLeadsAtOnce(t *testing.T) {
	e := newEnv(t)
	cs := &countingStore{Store: e.store}
	e.store = cs
	ctx := context.Background()
	var sleeps atomic.Int64
	looked := make(chan struct{}, 1) // a waiter's second sleep: after its first look at the item
	a := e.openWith("a", false, func(c *Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			if sleeps.Add(1) == 2 {
				looked <- struct{}{}
			}
			return sleep(ctx, time.Millisecond)
		}
	})
	if _, err := a.Append(ctx, batch("a0", 2)); err != nil {
		t.Fatal(err)
	}
	a.contended = e.clock.now().Add(time.Minute) // it met other writers a moment ago
	reads, writes := cs.reads.Load(), cs.writes.Load()
	app, err := a.Append(ctx, batch("a1", 1))
	if err != nil || app.BaseOffset != 2 {
		t.Fatalf("the warm writer's batch: %+v, %v; want offset 2", app, err)
	}
	if r, w := cs.reads.Load()-reads, cs.writes.Load()-writes; r != 0 || w != 2 {
		t.Fatalf("the warm writer's turn: %d item reads, %d writes; want none and an acquire and a commit", r, w)
	}
	if names, _ := a.listStaged(); len(names) != 1 {
		t.Fatalf("staged files: %v, want its own (removed with its next staging)", names)
	}

	// Another writer holds the lease; a stages, fails to take it at once,
	// and waits. Its look at the item shows a newer version.
	h := e.open("h", true)
	if _, err := h.Append(ctx, batch("h0", 1)); err != nil {
		t.Fatal(err)
	}
	a.contended = e.clock.now().Add(time.Minute)
	done := make(chan error, 1)
	go func() {
		app, err := a.Append(ctx, batch("a2", 1))
		if err == nil && app.BaseOffset != 5 {
			err = fmt.Errorf("at offset %d, want 5", app.BaseOffset)
		}
		done <- err
	}()
	select {
	case <-looked:
	case err := <-done:
		t.Fatalf("a's batch answered before it looked at the item: %v", err)
	}
	if names, _ := a.listStaged(); len(names) != 1 {
		t.Fatalf("staged files while a waits: %v, want a2's only (a1's removed with its staging)", names)
	}
	if _, err := h.Append(ctx, batch("h1", 1)); err != nil { // takes a2 and releases
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if a.warm {
		t.Fatal("a still warm after it saw another writer's commit: its next contended turn would race the leader for the lease")
	}
	checkAcks(t, readAll(t, a), nil)
}

// acquireSignalStore closes acquired at its first Acquire once armed.
type acquireSignalStore struct {
	meta.Store
	armed    atomic.Bool
	acquired chan struct{}
}

func (s *acquireSignalStore) Acquire(ctx context.Context, k meta.PartitionKey, owner string, now time.Time, ttl time.Duration) (meta.Acquired, error) {
	a, err := s.Store.Acquire(ctx, k, owner, now, ttl)
	if s.armed.CompareAndSwap(true, false) {
		close(s.acquired)
	}
	return a, err
}

// stageGateFS holds the creation of a staged file, once armed, until gate
// is closed; after timeout it gives up and records that it did.
type stageGateFS struct {
	segment.OSFS
	armed   atomic.Bool
	gate    chan struct{}
	timeout time.Duration
	gaveUp  atomic.Bool
	ckptRW  atomic.Int64 // opens of the checkpoint for writing
}

func (f *stageGateFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	if flag&os.O_EXCL != 0 && strings.HasSuffix(name, stageExt) && f.armed.CompareAndSwap(true, false) {
		select {
		case <-f.gate:
		case <-time.After(f.timeout):
			f.gaveUp.Store(true)
		}
	}
	if filepath.Base(name) == ckptName && flag&(os.O_RDWR|os.O_WRONLY) != 0 {
		f.ckptRW.Add(1)
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// The warm writer's acquire runs beside its staging, not after it: its
// staged file is not created until the acquire has been made. Its round is
// still a warm one: the checkpoint goes through the file it kept open.
func TestWarmWriterAcquiresBesideStaging(t *testing.T) {
	e := newEnv(t)
	st := &acquireSignalStore{Store: e.store, acquired: make(chan struct{})}
	e.store = st
	fsys := &stageGateFS{gate: st.acquired, timeout: 5 * time.Second}
	ctx := context.Background()
	a := e.openWith("a", false, func(c *Config) { c.FS = fsys; c.Checkpoint = true })
	if _, err := a.Append(ctx, batch("a0", 2)); err != nil {
		t.Fatal(err)
	}
	opens := fsys.ckptRW.Load()
	a.contended = e.clock.now().Add(time.Minute) // it met other writers a moment ago
	st.armed.Store(true)
	fsys.armed.Store(true)
	app, err := a.Append(ctx, batch("a1", 1))
	if err != nil || app.BaseOffset != 2 {
		t.Fatalf("the warm writer's batch: %+v, %v; want offset 2", app, err)
	}
	if fsys.gaveUp.Load() {
		t.Fatal("the staged file was created with no acquire made: the acquire waited for the staging")
	}
	if n := fsys.ckptRW.Load() - opens; n != 0 {
		t.Fatalf("the warm round opened the checkpoint %d times to write it, want none (the kept file)", n)
	}
	if names, _ := a.listStaged(); len(names) != 1 {
		t.Fatalf("staged files: %v, want its own", names)
	}
	checkAcks(t, readAll(t, a), nil)
}

// A warm leader whose last round took others' batches waits briefly
// (lingerFor) for as many to be staged again before it lists the write
// buffer for good: a batch staged during that wait joins its round.
func TestWarmLeaderLingersForItsLastRoundsWriters(t *testing.T) {
	e := newEnv(t)
	cs := &countingStore{Store: e.store}
	e.store = cs
	ctx := context.Background()
	b := e.open("b", false)
	var armed atomic.Bool
	var stageErr error
	a := e.openWith("a", false, func(c *Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			if d == lingerStep && armed.CompareAndSwap(true, false) {
				// b's writer stages while a lingers.
				recs := batch("b1", 1)
				s := &staged{created: e.clock.now().UnixMilli(), expected: -1, origin: 7, key: "k:b1", recs: recs, size: recordSize(recs[0])}
				stageErr = b.writeStaged(s)
			}
			return sleep(ctx, time.Microsecond)
		}
	})
	if _, err := a.Append(ctx, batch("a0", 2)); err != nil {
		t.Fatal(err)
	}
	a.contended = e.clock.now().Add(time.Minute)
	a.lastTook = 1 // its last round took one other writer's batch
	armed.Store(true)
	writes := cs.writes.Load()
	app, err := a.Append(ctx, batch("a1", 1))
	if err != nil || app.BaseOffset != 2 {
		t.Fatalf("a's batch: %+v, %v; want offset 2", app, err)
	}
	if stageErr != nil {
		t.Fatal(stageErr)
	}
	if armed.Load() {
		t.Fatal("a did not wait for the writer its last round took")
	}
	if w := cs.writes.Load() - writes; w != 2 {
		t.Fatalf("%d metadata writes, want an acquire and one commit (b's batch in a's round)", w)
	}
	got := readAll(t, a)
	if len(got) != 4 || string(got[3].Key) != "b1" {
		t.Fatalf("records after a's round: %d, want a0 x2, a1, b1", len(got))
	}
}
