package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// crashSignal is the panic value that unwinds a crashed actor's goroutine:
// a crashed process runs no more code, so nothing after the crash point
// (no release, no fsync, no commit) happens.
type crashSignal struct{}

// Actor is one simulated process or Lambda container. Its body runs in its
// own goroutine, but only while the scheduler has picked it: every call into
// the simulated file system or metadata store is a yield point.
type Actor struct {
	ID   int
	Name string
	Kind string // "server", "lambda", "reader", "compactor", "probe"

	s       *Sched
	wake    chan struct{}
	started bool
	exited  bool

	pausedUntil time.Duration // virtual time; 0: not paused
	crashed     bool          // set by the scheduler: the next yield unwinds
	unwinding   bool          // crashed and unwinding: ops fail, no yields
	skew        time.Duration // added to the virtual clock for this actor
	incarnation int           // bumped by every restart after a crash

	inOp     bool   // inside an operation (Append, Read...), not between two
	pendOp   string // the operation it is blocked before (at a yield point)
	pendName string // its file or item
	// onCrash is called by the scheduler when it crashes the actor (drop
	// the NFS client's unsynced pages, and so on).
	onCrash func()
	body    func(a *Actor)
}

// Now is the actor's clock: the virtual clock plus its skew.
func (a *Actor) Now() time.Time {
	if a == nil {
		return time.Time{}
	}
	return a.s.Time().Add(a.skew)
}

// enter is the yield point before an operation on the simulated world. It
// returns false when the actor is unwinding after a crash: the operation
// must then fail without any effect. A nil actor (the checker) never
// yields.
func (a *Actor) enter(op, name string) bool {
	if a == nil {
		return true
	}
	if a.unwinding {
		return false
	}
	a.pendOp, a.pendName = op, name
	a.s.back <- a
	<-a.wake
	if a.crashed || a.s.closing {
		a.unwinding = true
		panic(crashSignal{})
	}
	return true
}

// note records an operation's outcome in the trace (tracing runs only).
func (a *Actor) note(format string, args ...any) {
	if a == nil || !a.s.tracing {
		return
	}
	a.s.record(a.Name, fmt.Sprintf(format, args...))
}

func (a *Actor) main() {
	for {
		a.runBody()
		if a.s.closing {
			a.exited = true
			a.s.back <- a
			return
		}
		// Restarted after a crash: a new process, same actor slot.
		a.crashed, a.unwinding, a.inOp = false, false, false
		a.incarnation++
		a.onCrash = nil
	}
}

func (a *Actor) runBody() {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashSignal); !ok {
				panic(r)
			}
		}
	}()
	a.body(a)
	// A body returns only when the world is closing.
	for !a.s.closing {
		a.enter(opIdle, "")
	}
}

// Event is one line of the trace.
type Event struct {
	Step  int
	Time  time.Duration
	Actor string
	What  string
}

// Sched is the one seeded scheduler: it picks which actor runs next, when
// faults happen and how the virtual clock moves. Only one goroutine (the
// scheduler's or one actor's) runs at any time.
type Sched struct {
	rng     *rand.Rand
	now     time.Duration // virtual time since base
	base    time.Time
	step    int
	actors  []*Actor
	back    chan *Actor
	closing bool

	tracing bool
	trace   []Event // ring of the last traceLen events (tracing only)
	traceAt int
	full    []Event // every event, when keepAll
	keepAll bool
}

const traceLen = 200

// Operations an actor can be blocked before (Actor.pendOp).
const (
	opIdle     = "idle" // between two operations
	opOpen     = "open"
	opCreate   = "create"
	opRead     = "read"
	opWrite    = "pwrite"
	opSync     = "fsync"
	opTruncate = "truncate"
	opFstat    = "fstat"
	opClose    = "close"
	opRemove   = "remove"
	opDir      = "dir"
	opMetaRead = "meta.read"
	opAcquire  = "meta.acquire"
	opCommit   = "meta.commit"
	opMetaW    = "meta.write"
	// opThrottled: a metadata request waits out throttling.
	opThrottled = "meta.throttled"
)

func newSched(seed uint64, tracing bool) *Sched {
	return &Sched{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		base:    time.UnixMilli(1_800_000_000_000).UTC(),
		back:    make(chan *Actor),
		tracing: tracing,
	}
}

// Time is the virtual wall clock.
func (s *Sched) Time() time.Time { return s.base.Add(s.now) }

func (s *Sched) record(actor, what string) {
	if !s.tracing {
		return
	}
	e := Event{Step: s.step, Time: s.now, Actor: actor, What: what}
	if s.keepAll {
		s.full = append(s.full, e)
	}
	if len(s.trace) < traceLen {
		s.trace = append(s.trace, e)
		return
	}
	s.trace[s.traceAt] = e
	s.traceAt = (s.traceAt + 1) % traceLen
}

func (s *Sched) eventf(format string, args ...any) {
	if s.tracing {
		s.record("sched", fmt.Sprintf(format, args...))
	}
}

// Trace renders the last events, oldest first.
func (s *Sched) Trace() string {
	evs := s.trace
	if len(evs) == traceLen {
		evs = append(append([]Event(nil), s.trace[s.traceAt:]...), s.trace[:s.traceAt]...)
	}
	if s.keepAll {
		evs = s.full
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%6d %10.3fs %-10s %s\n", e.Step, e.Time.Seconds(), e.Actor, e.What)
	}
	return b.String()
}

func (s *Sched) addActor(name, kind string, skew time.Duration, body func(*Actor)) *Actor {
	a := &Actor{ID: len(s.actors), Name: name, Kind: kind, s: s, wake: make(chan struct{}), skew: skew, body: body}
	s.actors = append(s.actors, a)
	return a
}

// resume lets a run until its next yield point (or its exit).
func (s *Sched) resume(a *Actor) {
	if !a.started {
		a.started = true
		go a.main()
	} else {
		a.wake <- struct{}{}
	}
	if got := <-s.back; got != a {
		panic(fmt.Sprintf("sim: %s ran while %s was scheduled", got.Name, a.Name))
	}
}

// runnable reports whether a may be picked now.
func (s *Sched) runnable(a *Actor) bool {
	return !a.exited && (a.pausedUntil == 0 || s.now >= a.pausedUntil)
}

// crash crashes a (it must be blocked at a yield point or not started):
// its goroutine unwinds now and its body starts again as a new process.
func (s *Sched) crash(a *Actor) {
	if !a.started {
		return
	}
	a.crashed = true
	a.pausedUntil = 0
	if a.onCrash != nil {
		a.onCrash()
	}
	s.resume(a)
}

// shutdown unwinds every actor goroutine.
func (s *Sched) shutdown() {
	s.closing = true
	for _, a := range s.actors {
		if a.started && !a.exited {
			a.pausedUntil = 0
			s.resume(a)
		}
	}
}

// between returns a duration uniformly in [lo, hi).
func (s *Sched) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

func (s *Sched) chance(p float64) bool { return p > 0 && s.rng.Float64() < p }
