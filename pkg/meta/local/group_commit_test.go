package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// gateFile holds the first Sync it sees until release is closed, telling
// entered when it starts waiting; it counts syncs and can fail them.
type gateFile struct {
	file
	entered  chan struct{}
	release  chan struct{}
	released atomic.Bool // set just before release is closed
	syncs    atomic.Int64
	fail     atomic.Bool
	once     sync.Once
}

func newGateFile(f file) *gateFile {
	return &gateFile{file: f, entered: make(chan struct{}), release: make(chan struct{})}
}

func (f *gateFile) Sync() error {
	f.syncs.Add(1)
	f.once.Do(func() {
		close(f.entered)
		<-f.release
	})
	if f.fail.Load() {
		return errInjected
	}
	return f.file.Sync()
}

func (f *gateFile) open() {
	f.released.Store(true)
	close(f.release)
}

// gated opens a store whose journal holds its first sync, and a counter of
// decisions taken (stagedHook).
func gated(t *testing.T, dir string) (*Store, *gateFile, *atomic.Int64) {
	s := openT(t, dir)
	g := newGateFile(s.c.j)
	s.c.Lock()
	s.c.j = g
	s.c.Unlock()
	var decided atomic.Int64
	s.stagedHook = func() { decided.Add(1) }
	return s, g, &decided
}

// waitDecided waits until n decisions were taken. The goroutines it waits
// for are runnable or blocked on the store's commit lock; yielding until
// they have decided is the synchronization (no timing is assumed).
func waitDecided(t *testing.T, decided *atomic.Int64, n int64) {
	t.Helper()
	for decided.Load() < n {
		runtime.Gosched()
	}
}

// TestGroupCommit: mutations decided while a commit is in flight share the
// next frame and sync: one batch frame for all of them, every one durable
// and acknowledged, and the journal replays to the same state.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	s, g, decided := gated(t, dir)
	ctx := context.Background()

	const n = 8
	errs := make(chan error, n+1)
	go func() { errs <- s.CreateTopic(ctx, meta.TopicConfig{Name: "first", ID: "f"}) }()
	<-g.entered // the first commit is syncing
	for i := range n {
		go func() {
			errs <- s.CreateTopic(ctx, meta.TopicConfig{Name: fmt.Sprint("t", i), ID: fmt.Sprint("id", i)})
		}()
	}
	waitDecided(t, decided, n+1)
	g.open()
	for range n + 1 {
		must(t, <-errs)
	}
	if got := g.syncs.Load(); got != 2 {
		t.Fatalf("%d mutations took %d syncs, want 2 (one, then the other %d together)", n+1, got, n)
	}
	want := dump(s)
	if len(want) != n+1 {
		t.Fatalf("state holds %d items, want %d", len(want), n+1)
	}
	must(t, s.Close())

	b, err := os.ReadFile(journalPath(dir, 1))
	must(t, err)
	offs := frames(t, b)
	if len(offs) != 3 {
		t.Fatalf("journal holds %d frames, want 2", len(offs)-1)
	}
	payload, _, err := readFrame(b, offs[1])
	must(t, err)
	e, err := decodeEntry(payload, offs[1])
	must(t, err)
	if e.Op != opBatch || len(e.Batch) != n {
		t.Fatalf("second frame is %q with %d entries, want a batch of %d", e.Op, len(e.Batch), n)
	}
	s = openT(t, dir)
	sameState(t, "after reopen", dump(s), want)
	if r := s.Recovery(); r.LostCommitted || r.Journal != "" {
		t.Fatalf("clean journal reported %+v", r)
	}

	// A batch frame torn anywhere applies none of its mutations.
	must(t, s.Close())
	work := t.TempDir()
	for cut := offs[1] + 1; cut < offs[2]; cut += 7 {
		must(t, os.WriteFile(journalPath(work, 1), b[:cut], 0o644))
		s, err := Open(work)
		if err != nil {
			t.Fatalf("batch cut at %d: %v", cut, err)
		}
		if got := len(dump(s)); got != 1 {
			t.Fatalf("batch cut at %d: %d items after Open, want 1 (none of the batch)", cut, got)
		}
		s.Close()
	}
}

// TestDecisionWaitsForWhatItSaw: an answer decided on a staged mutation
// (here ErrTopicExists because of a create still syncing) is not given
// before that mutation is durable, and not at all if it fails.
func TestDecisionWaitsForWhatItSaw(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			s, g, decided := gated(t, t.TempDir())
			g.fail.Store(fail)
			ctx := context.Background()
			first := make(chan error, 1)
			go func() { first <- s.CreateTopic(ctx, meta.TopicConfig{Name: "x", ID: "1"}) }()
			<-g.entered
			type answer struct {
				err      error
				released bool
			}
			second := make(chan answer, 1)
			go func() {
				err := s.CreateTopic(ctx, meta.TopicConfig{Name: "x", ID: "2"})
				second <- answer{err, g.released.Load()}
			}()
			waitDecided(t, decided, 2)
			g.open()
			err1, a := <-first, <-second
			if !a.released {
				t.Fatalf("second create answered %v while the first was not durable", a.err)
			}
			if fail {
				if !errors.Is(err1, meta.ErrUnavailable) || !errors.Is(a.err, meta.ErrUnavailable) {
					t.Fatalf("failed sync: first %v, second %v; want ErrUnavailable for both", err1, a.err)
				}
				return
			}
			must(t, err1)
			if !errors.Is(a.err, meta.ErrTopicExists) {
				t.Fatalf("second create: %v, want ErrTopicExists", a.err)
			}
		})
	}
}

// TestGroupCommitFailure: a failed sync fails every mutation of its group
// and of groups after it, and reads keep the last durable state.
func TestGroupCommitFailure(t *testing.T) {
	dir := t.TempDir()
	s, g, decided := gated(t, dir)
	ctx := context.Background()
	g.open()
	must(t, s.CreateTopic(ctx, meta.TopicConfig{Name: "kept", ID: "k"}))
	before := dump(s)
	g2 := newGateFile(g.file)
	g2.fail.Store(true)
	s.c.Lock()
	s.c.j = g2
	s.c.Unlock()
	decided.Store(0)

	const n = 5
	errs := make(chan error, n+1)
	go func() { errs <- s.CreateTopic(ctx, meta.TopicConfig{Name: "lost", ID: "l"}) }()
	<-g2.entered
	for i := range n {
		go func() { errs <- s.CreateTopic(ctx, meta.TopicConfig{Name: fmt.Sprint("t", i), ID: fmt.Sprint(i)}) }()
	}
	waitDecided(t, decided, n+1)
	g2.open()
	for range n + 1 {
		if err := <-errs; !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, errInjected) {
			t.Fatalf("mutation with a failing sync: %v, want ErrUnavailable from the injected fault", err)
		}
	}
	sameState(t, "reads after the failure", dump(s), before)
	if err := s.CreateTopic(ctx, meta.TopicConfig{Name: "after", ID: "a"}); !errors.Is(err, meta.ErrUnavailable) {
		t.Fatalf("mutation after a failed sync: %v, want ErrUnavailable", err)
	}
}

// TestCloseCommitsStaged: a mutation staged while a commit is in flight
// and Close is called is committed by Close, not dropped.
func TestCloseCommitsStaged(t *testing.T) {
	dir := t.TempDir()
	s, g, decided := gated(t, dir)
	ctx := context.Background()
	errs := make(chan error, 2)
	go func() { errs <- s.CreateTopic(ctx, meta.TopicConfig{Name: "a", ID: "1"}) }()
	<-g.entered
	go func() { errs <- s.CreateTopic(ctx, meta.TopicConfig{Name: "b", ID: "2"}) }()
	waitDecided(t, decided, 2)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	g.open()
	must(t, <-errs)
	must(t, <-errs)
	must(t, <-closed)
	s = openT(t, dir)
	for _, name := range []string{"a", "b"} {
		if _, err := s.Topic(ctx, name); err != nil {
			t.Fatalf("topic %s after Close and reopen: %v", name, err)
		}
	}
}

func TestDecodeBatch(t *testing.T) {
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{`{"op":"batch","batch":[{"op":"del_topic","name":"a"},{"op":"del_group","group":"g"}]}`, true},
		{`{"op":"batch","batch":[]}`, false},
		{`{"op":"batch"}`, false},
		{`{"op":"batch","batch":[null]}`, false},
		{`{"op":"batch","batch":[{"op":"end","count":1}]}`, false},
		{`{"op":"batch","batch":[{"op":"closed","size":30}]}`, false},
		{`{"op":"batch","batch":[{"op":"batch","batch":[{"op":"del_topic","name":"a"}]}]}`, false},
		{`{"op":"batch","batch":[{"op":"put_part"}]}`, false},
	} {
		_, err := decodeEntry([]byte(tc.payload), 20)
		if (err == nil) != tc.ok {
			t.Errorf("decodeEntry(%s): %v, want ok=%v", tc.payload, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeEntry(%s): %v, want ErrCorrupt", tc.payload, err)
		}
	}
}
