package sim

import (
	"fmt"
	"strings"
	"time"
)

// A Script drives a world step by step instead of the scheduler: a
// scenario names which actor runs, what it does, where it stops, which
// fault hits which operation and when time passes. Every step is checked
// like a step of a random run. The first violation is kept and every later
// call does nothing, so a scenario reads as a straight list of steps.
type Script struct {
	W   *World
	err error
}

// NewScript returns a scripted world: no random faults, no random
// scheduling, no clock skew.
func NewScript(segmentBytes int64) *Script {
	cfg := DefaultConfig(1)
	cfg.FS, cfg.Meta = FSFaults{}, MetaFaults{}
	cfg.MaxSkew = 0
	cfg.SegmentBytes = segmentBytes
	cfg.IndexBytes = 100
	cfg.Trace, cfg.TraceAll = true, true
	cfg.Compactors, cfg.Brokers, cfg.Churn = -1, -1, -1
	cfg.Partitions = 2
	cfg.RetryFor = 0
	cfg.Objects = ObjFaults{}
	cfg.Damage = 0
	cfg.Detach = -1 // a scenario turns it on (Script.Detach)
	w := NewWorld(cfg)
	w.script = true
	return &Script{W: w}
}

// Err is the first violation, with the trace.
func (sc *Script) Err() error {
	if sc.err == nil {
		return nil
	}
	return fmt.Errorf("%w\n\ntrace (step, virtual time, actor, what):\n%s", sc.err, sc.W.s.Trace())
}

// Close stops the actors.
func (sc *Script) Close() { sc.W.s.shutdown() }

func (sc *Script) stepActor(a *Actor) {
	w := sc.W
	w.s.step++
	w.s.now += time.Millisecond
	w.s.resume(a)
	if err := w.check(false); err != nil && sc.err == nil {
		sc.err = fmt.Errorf("step %d: %w", w.s.step, err)
	}
}

// start runs a new actor up to its first command.
func (sc *Script) start(a *Actor) {
	for !a.started || a.pendOp != opIdle {
		sc.stepActor(a)
	}
}

// Writer adds a writer (server: HoldLease) and starts it.
func (sc *Script) Writer(name string, server bool) *Actor {
	a := sc.W.AddWriter(name, server)
	sc.start(a)
	return a
}

// Reader adds a reader and starts it.
func (sc *Script) Reader(name string) *Actor {
	a := sc.W.AddReader(name)
	sc.start(a)
	return a
}

// Append has a append a batch of n records (each value padded to pad
// bytes) and runs it to the end.
func (sc *Script) Append(a *Actor, n, pad int) {
	sc.Until(a, cmd{kind: cmdAppend, n: n, pad: pad}, opIdle, "")
}

// AppendUntil starts an append and runs it until a is about to do op on a
// file whose name ends with suffix; the op is not done yet.
func (sc *Script) AppendUntil(a *Actor, n, pad int, op, suffix string) {
	sc.Until(a, cmd{kind: cmdAppend, n: n, pad: pad}, op, suffix)
}

// Read has a read from offset.
func (sc *Script) Read(a *Actor, offset int64) {
	sc.Until(a, cmd{kind: cmdRead, offset: offset, max: 1000, maxBytes: 1 << 20}, opIdle, "")
}

// Until gives a command c and runs a until it is about to do op on suffix
// (opIdle: until the command is done).
func (sc *Script) Until(a *Actor, c cmd, op, suffix string) {
	if sc.err != nil {
		return
	}
	if a.pendOp != opIdle {
		sc.err = fmt.Errorf("scenario: %s is not idle (before %s %s)", a.Name, a.pendOp, a.pendName)
		return
	}
	sc.W.cmds[a] = append(sc.W.cmds[a], c)
	sc.stepActor(a)
	sc.run(a, op, suffix)
}

// Continue runs a until it is idle again.
func (sc *Script) Continue(a *Actor) { sc.run(a, opIdle, "") }

// Next steps a past the operation it is paused at and runs it until it is
// about to do op on a name ending with suffix again.
func (sc *Script) Next(a *Actor, op, suffix string) {
	sc.stepActor(a)
	sc.run(a, op, suffix)
}

func (sc *Script) run(a *Actor, op, suffix string) {
	for i := 0; sc.err == nil; i++ {
		if a.pendOp == op && strings.HasSuffix(a.pendName, suffix) && (op != opIdle || len(sc.W.cmds[a]) == 0) {
			return
		}
		if a.pendOp == opIdle && op != opIdle {
			sc.err = fmt.Errorf("scenario: %s finished its command without reaching %s %s", a.Name, op, suffix)
			return
		}
		if i > 10000 {
			sc.err = fmt.Errorf("scenario: %s does not reach %s %s", a.Name, op, suffix)
			return
		}
		sc.stepActor(a)
	}
}

// Fail makes a's next op on a file ending with suffix fail with err (a
// failed fsync also drops the unsynced pages).
func (sc *Script) Fail(a *Actor, op, suffix string, err error) {
	sc.W.inject = append(sc.W.inject, injection{actor: a, op: op, name: suffix, err: err})
}

// DuplicateNextCommit makes a's next commit land twice: now, and again when
// Deliver is called (a retried request whose first attempt was delayed).
func (sc *Script) DuplicateNextCommit(a *Actor) { sc.W.net.dupNext[a] = true }

// Deliver lands every in-flight metadata request, oldest first.
func (sc *Script) Deliver() {
	w := sc.W
	for len(w.net.queue) > 0 && sc.err == nil {
		w.s.step++
		w.s.eventf("%s", w.net.deliver(0, false))
		if err := w.check(false); err != nil {
			sc.err = fmt.Errorf("step %d: %w", w.s.step, err)
		}
	}
}

// Advance moves the clock.
func (sc *Script) Advance(d time.Duration) {
	sc.W.s.now += d
	sc.W.s.eventf("CLOCK +%v", d)
}

// Crash crashes a: its unsynced pages are lost and it starts again.
func (sc *Script) Crash(a *Actor) {
	sc.W.s.eventf("CRASH %s (before %s %s)", a.Name, a.pendOp, short(a.pendName))
	sc.W.s.crash(a)
	sc.start(a)
}

// Check reads the whole log back and checks it.
func (sc *Script) Check() {
	if sc.err != nil {
		return
	}
	if err := sc.W.check(true); err != nil {
		sc.err = fmt.Errorf("full check: %w", err)
	}
}

// Live has a append until one append succeeds, with time passing between
// tries, for at most bound of virtual time: a partition that stays
// unwritable after the faults stopped is a liveness violation.
func (sc *Script) Live(a *Actor, bound time.Duration) {
	w := sc.W
	start := w.s.now
	for sc.err == nil {
		ok := w.res.AppendOK
		sc.Append(a, 1, 0)
		if w.res.AppendOK > ok {
			return
		}
		if w.s.now-start > bound {
			sc.err = fmt.Errorf("liveness: no append by %s succeeded in %v after the faults stopped", a.Name, bound)
			return
		}
		sc.Advance(w.cfg.LeaseTTL / 2)
	}
}

// Acked reports whether a's last append was acknowledged.
func (sc *Script) Acked() int { return sc.W.res.AppendOK }

// Broker adds a broker process (release: ReleaseEachBatch) and starts it.
func (sc *Script) Broker(name string, release bool) *Actor {
	a := sc.W.AddBroker(name, release)
	sc.start(a)
	return a
}

// Admin adds the admin process (topic delete and create) and starts it.
func (sc *Script) Admin(name string) *Actor {
	sc.W.churn = true
	a := sc.W.AddAdmin(name)
	sc.start(a)
	return a
}

// Produce has broker b produce n records to partition p.
func (sc *Script) Produce(b *Actor, p, n int) {
	sc.Until(b, cmd{kind: cmdAppend, p: p, n: n}, opIdle, "")
}

// Fetch has broker b fetch partition p from offset.
func (sc *Script) Fetch(b *Actor, p int, offset int64) {
	sc.Until(b, cmd{kind: cmdRead, p: p, offset: offset, max: 1000, maxBytes: 1 << 20}, opIdle, "")
}

// Churn has the admin take its next step: delete the topic if it exists
// (or finish a delete that did not), else create it again.
func (sc *Script) Churn(adm *Actor) { sc.Until(adm, cmd{kind: cmdChurn}, opIdle, "") }

// ChurnUntil is Churn, stopped before the admin's op on name (suffix).
func (sc *Script) ChurnUntil(adm *Actor, op, suffix string) {
	sc.Until(adm, cmd{kind: cmdChurn}, op, suffix)
}

// DelayNext delays a's next metadata write whose description starts with
// prefix ("delete topic", "commit"...): a timeout for a, the request lands
// at Deliver.
func (sc *Script) DelayNext(a *Actor, prefix string) { sc.W.net.delayNext[a] = prefix }

// AppendKeyed has a append a keyed batch (a retry after an unknown outcome
// resends its key and records; cfg.RetryFor bounds the retries) and runs
// it to the end.
func (sc *Script) AppendKeyed(a *Actor, n, pad int) {
	sc.Until(a, cmd{kind: cmdAppend, n: n, pad: pad, mode: modeKeyed}, opIdle, "")
}

// AppendKeyedUntil starts a keyed append and runs it until a is about to
// do op on a name ending with suffix (opSleep: until it waits for its
// turn; opBackoff: until it backs off before a retry).
func (sc *Script) AppendKeyedUntil(a *Actor, n, pad int, op, suffix string) {
	sc.Until(a, cmd{kind: cmdAppend, n: n, pad: pad, mode: modeKeyed}, op, suffix)
}

// LoseNextAnswer makes a's next metadata write whose description starts
// with prefix ("commit", "acquire"...) land, and its answer be lost.
func (sc *Script) LoseNextAnswer(a *Actor, prefix string) { sc.W.net.loseNext[a] = prefix }

// Retries lets clients retry a batch for d of virtual time (scenarios
// have no retries by default) and has a batch wait at most busy for a
// busy partition (0: the partition's default).
func (sc *Script) Retries(d, busy time.Duration) {
	sc.W.cfg.RetryFor = d
	sc.W.busyWait = busy
}

// Checkpoint makes writers write the committed checkpoint and readers read
// it (partition.Config.Checkpoint); call it before adding actors.
func (sc *Script) Checkpoint() { sc.W.ckpt = true }

// Detach has Lambda writers run with partition.Config.Detach: what
// follows a lone round's answers runs after the append returned, behind
// the yield point opDetached (AppendDetached). Before the writers' first
// append.
func (sc *Script) Detach() { sc.W.detach = true }

// AppendDetached has a append a batch of n records and runs it until its
// answer is out and the work it left to Detach is next: a is at
// opDetached. Fails the scenario when a's round left nothing (its lease
// was not parked before and after it).
func (sc *Script) AppendDetached(a *Actor, n int) {
	ok := sc.W.res.AppendOK
	sc.Until(a, cmd{kind: cmdAppend, n: n}, opDetached, "")
	if sc.err == nil && sc.W.res.AppendOK != ok+1 {
		sc.Failf("%s stands before its detached work, and its append was not acknowledged", a.Name)
	}
}

// ReadFor has a read from offset for consumer client (checkClient).
func (sc *Script) ReadFor(a *Actor, offset int64, client int) {
	sc.Until(a, cmd{kind: cmdRead, offset: offset, max: 1000, maxBytes: 1 << 20, client: client}, opIdle, "")
}

// Told records that consumer client of partition p was told high
// watermark hw now (by a process the script does not model).
func (sc *Script) Told(p, client int, hw int64) {
	cs := sc.W.clientAt(p, client)
	cs.hw, cs.at = hw, sc.W.s.now
}

// HW is the committed high watermark of partition p.
func (sc *Script) HW(p int) int64 { return sc.W.hw(p) }

// Grow has the admin give the topic one more partition.
func (sc *Script) Grow(adm *Actor) { sc.Until(adm, cmd{kind: cmdUpdate, n: 0}, opIdle, "") }

// Updates lets the admin update the topic (and not delete it unless told
// to churn); call it before adding the admin.
func (sc *Script) Updates() { sc.W.updates = true }

// ProduceRoutedUntil has broker b send a keyed record on the topic route
// (the broker picks the partition) and runs it until b is about to do op
// on a name ending with suffix (opBackoff: until it backs off to retry).
func (sc *Script) ProduceRoutedUntil(b *Actor, op, suffix string) {
	sc.Until(b, cmd{kind: cmdAppend, n: 1, pad: 8, mode: modeKeyed, routed: true}, op, suffix)
}

// Held reports whether partition p's lease is held (an owner, not
// expired) by the committed item.
func (sc *Script) Held(p int) bool {
	it := sc.W.committed(sc.W.parts[p])
	return it.Owner != "" && it.LeaseUntil > sc.W.s.Time().UnixMilli()
}

// ParallelLastFirst has every group of calls a write path makes at once
// (partition.Config.Parallel) run its last call first: the warm writer's
// acquire before its staging.
func (sc *Script) ParallelLastFirst() { sc.W.lastFirst = true }

// SoloFor sets the writers' partition.Config.SoloFor (how soon a writer
// alone parks its lease); call it before adding actors.
func (sc *Script) SoloFor(d time.Duration) { sc.W.soloFor = d }

// Now is the virtual time.
// ItemReads is how many times a has read a partition item so far.
func (sc *Script) ItemReads(a *Actor) int { return sc.W.net.itemReads[a] }

func (sc *Script) Now() time.Duration { return sc.W.s.now }

// Parked reports how many parked commits applied and were fenced so far.
func (sc *Script) Parked() (applied, fenced int) {
	return sc.W.res.Faults["parked commit"], sc.W.res.Faults["parked commit fenced"]
}

// Failf records a violation the script itself found.
func (sc *Script) Failf(format string, args ...any) {
	if sc.err == nil {
		sc.err = fmt.Errorf("scenario: "+format, args...)
	}
}
