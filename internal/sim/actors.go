package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
)

type cmdKind int

const (
	cmdAppend cmdKind = iota
	cmdRestart
	cmdRead
	cmdOffsetForTime
	cmdChurn  // admin: delete the topic and create it again
	cmdUpdate // admin: update the topic (n: what, as updateTopic takes it)
)

type cmd struct {
	kind     cmdKind
	p        int   // partition
	n        int   // records
	offset   int64 // read
	max      int
	maxBytes int
	ts       int64
	pad      int // append: pad each value to this many bytes (0: random)
	mode     batchMode
	// again: a broker asks the same read this many more times (the
	// second ask of an answer keeps it, the third is answered with it:
	// broker.FetchAnswer).
	again int
	// reask: a broker asks its last read again instead (as a consumer at
	// the tail asks the same offset until something new is committed),
	// so that a kept answer meets the commits after it.
	reask bool
	// client (1..simClients; 0: none) is the consumer a read is for: it
	// reads at the high watermark it was last told, by any process.
	client int
	// routed: a broker sends a keyed record on the topic route.
	routed bool
}

// opBackoff is where a client waits before it retries a batch.
const opBackoff = "backoff"

// AddWriter adds a writer: a server (HoldLease) or a Lambda container.
func (w *World) AddWriter(name string, server bool) *Actor {
	kind := "lambda"
	if server {
		kind = "server"
	}
	return w.s.addActor(name, kind, w.skew(), w.writerBody)
}

// AddReader adds a reader (a fetch container).
func (w *World) AddReader(name string) *Actor {
	return w.s.addActor(name, "reader", w.skew(), w.readerBody)
}

func (w *World) skew() time.Duration {
	if w.maxSkew <= 0 {
		return 0
	}
	return w.s.between(-w.maxSkew, w.maxSkew)
}

// opDetached is where an actor stands between an append that was
// answered and the work its Log handed to Config.Detach (runTails).
const opDetached = "detached"

// idle is the yield point between operations; it returns the next command.
func (w *World) idle(a *Actor) cmd {
	w.runTails(a)
	a.inOp = false
	a.enter(opIdle, "")
	a.inOp = true
	if w.script {
		q := w.cmds[a]
		if len(q) == 0 {
			panic("sim: scenario resumed " + a.Name + " with no command")
		}
		c := q[0]
		w.cmds[a] = q[1:]
		return c
	}
	return w.randomCmd(a)
}

// runTails runs what a's Logs handed to Config.Detach, oldest first: the
// process's other goroutine, after the append that was answered. Each
// stands behind a yield point, where the scheduler may crash the actor
// (the work never runs: its process is gone) or freeze it (the work runs
// when it thaws, after others wrote). The actor is still in its
// operation: a Lambda container still running its invocation.
func (w *World) runTails(a *Actor) {
	for len(w.tails[a]) > 0 {
		a.enter(opDetached, "")
		fn := w.tails[a][0]
		w.tails[a] = w.tails[a][1:]
		w.res.Detached++
		fn()
	}
}

func (w *World) randomCmd(a *Actor) cmd {
	r := w.s.rng
	p := r.IntN(w.nparts)
	var hw int64
	if p < len(w.parts) {
		hw = w.parts[p].maxHW
	}
	switch a.Kind {
	case "admin":
		return cmd{kind: cmdChurn}
	case "reader", "broker":
		if a.Kind == "broker" && r.IntN(2) == 0 {
			c := cmd{kind: cmdAppend, p: p, n: 1 + r.IntN(4), mode: w.randomMode()}
			c.routed = c.mode == modeKeyed && r.IntN(3) == 0
			return c
		}
		if r.IntN(6) == 0 && hw > 0 {
			return cmd{kind: cmdOffsetForTime, p: p, ts: w.s.base.UnixMilli() + r.Int64N(int64(w.s.now/time.Millisecond)+1)}
		}
		c := cmd{kind: cmdRead, p: p, offset: r.Int64N(hw + 1), max: 1 + r.IntN(20), maxBytes: 1 + r.IntN(2000), again: 2 * (r.IntN(4) / 3), reask: r.IntN(3) == 0}
		if r.IntN(3) == 0 {
			c.client = 1 + r.IntN(simClients)
			c.offset = w.clientAt(p, c.client).hw
		}
		return c
	}
	if !w.quiet && r.IntN(25) == 0 {
		return cmd{kind: cmdRestart}
	}
	return cmd{kind: cmdAppend, p: p, n: 1 + r.IntN(4), mode: w.randomMode()}
}

// randomMode picks a batch's mode by cfg.Modes (default: of 20 batches,
// 4 plain, 12 keyed, 3 conditional, 1 reusing a key).
func (w *World) randomMode() batchMode {
	m := w.cfg.Modes
	if m == ([4]int{}) {
		m = [4]int{4, 12, 3, 1}
	}
	x := w.s.rng.IntN(max(1, m[0]+m[1]+m[2]+m[3]))
	for i, n := range m {
		if x < n {
			return batchMode(i)
		}
		x -= n
	}
	return modePlain
}

func (w *World) partCfg(a *Actor, cli *Client, pm *part, owner string, hold bool) partition.Config {
	cfg := partition.Config{
		Dir: pm.dir, Key: pm.key, Meta: w.net.Client(a), Owner: owner,
		LeaseTTL: w.cfg.LeaseTTL, HoldLease: hold, SegmentBytes: w.segB,
		IndexIntervalBytes: w.idxB, FS: cli, Now: a.Now,
		Logger: slog.New(slog.DiscardHandler),
		Sleep:  w.sleeper(a), Rand: w.rand64, BusyWait: w.busyWait,
		Checkpoint: w.ckpt, CreateTime: w.createTime, SoloFor: w.soloFor,
		Parallel: w.inSomeOrder, // an actor does one operation at a time
	}
	if w.detach && !hold {
		cfg.Detach = func(fn func()) { w.tails[a] = append(w.tails[a], fn) }
	}
	return cfg
}

// proc is one process's partitions: one NFS client, a Log per partition
// opened on first use.
type proc struct {
	cli   *Client
	owner string
	hold  bool
	logs  map[int]*partition.Log
}

func (w *World) newProc(a *Actor, owner string, hold bool) *proc {
	cli := w.srv.NewClient(a)
	a.onCrash = cli.crash
	w.res.DetachedLost += len(w.tails[a]) // a process's goroutines end with it
	w.tails[a] = nil
	return &proc{cli: cli, owner: owner, hold: hold, logs: map[int]*partition.Log{}}
}

// log opens partition p for the process, or nil if the metadata store is
// unavailable (the command is dropped).
func (w *World) log(a *Actor, pr *proc, p int) *partition.Log {
	if l := pr.logs[p]; l != nil {
		return l
	}
	l, err := partition.Open(bg, w.partCfg(a, pr.cli, w.parts[p], pr.owner, pr.hold))
	if err != nil {
		a.note("open partition %d: %v", p, err)
		return nil
	}
	pr.logs[p] = l
	return l
}

func (w *World) writerBody(a *Actor) {
	hold := a.Kind == "server"
	container := 0
	owner := fmt.Sprintf("%s.%d.%d", a.Name, a.incarnation, container)
	pr := w.newProc(a, owner, hold)
	do := func(at attempt) (partition.Appended, string, error) {
		if at.p >= len(w.parts) {
			return partition.Appended{}, "", fmt.Errorf("%w: no topic", partition.ErrUnavailable)
		}
		l := w.log(a, pr, at.p)
		if l == nil {
			return partition.Appended{}, "", fmt.Errorf("%w: open", partition.ErrUnavailable)
		}
		app, err := l.AppendBatch(bg, partition.Batch{Records: at.recs, Key: at.key, Hash: at.hash, Expected: at.expected})
		return app, w.key(at.p).TopicID, err
	}
	w.resumePending(a, do)
	for {
		c := w.idle(a)
		switch c.kind {
		case cmdAppend:
			w.produce(a, c.p, c.n, c.pad, c.mode, do)
		case cmdRestart:
			// A clean shutdown: a server restarts under its owner name, a
			// Lambda container is replaced by a new one.
			for _, p := range sortedKeys(toInt64(pr.logs)) {
				err := pr.logs[int(p)].Close(bg)
				a.note("close partition %d: %v", p, err)
			}
			if !hold {
				container++
				owner = fmt.Sprintf("%s.%d.%d", a.Name, a.incarnation, container)
			}
			pr = w.newProc(a, owner, hold)
		}
	}
}

func toInt64[V any](m map[int]V) map[int64]V {
	out := make(map[int64]V, len(m))
	for k, v := range m {
		out[int64(k)] = v
	}
	return out
}

// retryable: the errors a client retries (503s).
func retryable(err error) bool {
	return errors.Is(err, partition.ErrUnavailable) || errors.Is(err, meta.ErrUnavailable) ||
		errors.Is(err, meta.ErrLeaseHeld) || errors.Is(err, broker.ErrUnavailable)
}

// acked puts an acknowledged batch into the model. id is the incarnation
// its commit went to: one that is not the current incarnation must have
// committed before its topic item was deleted (an acknowledged write is
// readable under the topic name, unless the topic was deleted after it).
func (w *World) acked(a *Actor, p int, id string, vals []string, recs []partition.Record, app partition.Appended) {
	if len(w.parts) == 0 || w.topic.ID != id {
		at, ok := w.gone[id]
		lc := w.net.lastCommit[a]
		if ok && lc.id == id && lc.step >= at {
			w.fail(fmt.Errorf("I2 (audit finding 3): %s's write at %s/%d offset %d was acknowledged (committed at step %d) into incarnation %s, whose topic item was deleted at step %d: it is not readable under the topic name",
				a.Name, w.topic.Name, p, app.BaseOffset, lc.step, id, at))
		}
		return // deleted with its topic after it was acknowledged
	}
	pm := w.parts[p]
	for i, v := range vals {
		off := app.BaseOffset + int64(i)
		r := rec{value: v, ts: app.Timestamp}
		if recs[i].HasTimestamp {
			r.ts = recs[i].Timestamp // the producer's, on a create-time topic
		}
		if old, ok := pm.acked[off]; ok && old == r && app.Replayed {
			continue // a replayed answer, the same as the first
		} else if ok {
			w.fail(fmt.Errorf("I1/I8: %d: offset %d acknowledged twice: %q and now %q", p, off, old.value, v))
		}
		pm.acked[off] = r
		pm.ackedAt[v] = off
		pm.newAcks = append(pm.newAcks, off)
		pm.maxAcked = max(pm.maxAcked, off+1)
		w.res.Acked++
	}
	// The process that was told of the commit reads it from then on: a
	// later read by it that reports a lower high watermark went back (a
	// kept fetch answer served after the commit it predates, say).
	k := readerKey(a, id, p)
	w.readerHW[k] = max(w.readerHW[k], app.BaseOffset+int64(len(vals)))
}

// readerKey names one process's view of one partition of one incarnation.
func readerKey(a *Actor, topicID string, p int) string {
	return fmt.Sprintf("%s#%d#%s#%d", a.Name, a.incarnation, topicID, p)
}

func (w *World) readerBody(a *Actor) {
	pr := w.newProc(a, a.Name, false)
	for {
		c := w.idle(a)
		l := w.log(a, pr, c.p)
		if l == nil {
			continue
		}
		pm := w.parts[c.p]
		switch c.kind {
		case cmdRead:
			w.read(a, pm, l, c)
		case cmdOffsetForTime:
			hw := pm.maxHW
			off, found, err := offsetForTime(l, c.ts)
			a.note("OFFSET FOR TIME %d of %d: %d found=%v %v", c.ts, c.p, off, found, err)
			if err == nil && found {
				pm.oft = append(pm.oft, oftResult{ts: c.ts, offset: off, hw: hw})
			}
		}
	}
}

func (w *World) read(a *Actor, pm *part, l *partition.Log, c cmd) {
	a.note("READ %d from %d max %d/%dB", pm.p, c.offset, c.max, c.maxBytes)
	start := w.readStart(c.p)
	recs, b, err := w.readAt(pm, l, w.net.Client(a), objects{inner: w.objs, a: a, w: w}, c.offset, c.max, c.maxBytes)
	w.res.Reads++
	a.note("READ %d from %d: %d records, hw %d, %v", pm.p, c.offset, len(recs), b.HighWatermark, err)
	if err != nil {
		var oor *partition.OutOfRangeError
		if errors.As(err, &oor) {
			w.checkOutOfRange(a, c, start, oor.HighWatermark)
			return
		}
		if errors.Is(err, partition.ErrUnavailable) || errors.Is(err, meta.ErrUnavailable) || w.damageExplains(pm, err) {
			return
		}
		w.fail(fmt.Errorf("I3: %d: read from %d (committed hw %d): %v", pm.p, c.offset, pm.maxHW, err))
		return
	}
	w.checkRecords(pm, c.offset, recs, "reader "+a.Name)
	w.checkReaderHW(a, pm, b.HighWatermark)
	w.checkClient(a, c, start, len(recs), b.HighWatermark)
}

// simClients is how many consumers of each partition read through any
// reader or broker process, as a consumer's fetches land on whichever
// warm container the platform picks.
const simClients = 3

// clientState is what a consumer was told: the highest high watermark
// any process answered it, and when it was first told it.
type clientState struct {
	hw int64
	at time.Duration
}

// clientAt is consumer k of partition p of the current incarnation.
func (w *World) clientAt(p, k int) *clientState {
	key := fmt.Sprintf("%s#%d#%d", w.topic.ID, p, k)
	cs := w.clients[key]
	if cs == nil {
		cs = &clientState{}
		w.clients[key] = cs
	}
	return cs
}

// readStart is what a read needs to know of the world when it starts: the
// incarnation and the committed high watermark of partition p.
type readStart struct {
	id string
	hw int64
	at time.Duration
}

func (w *World) readStart(p int) readStart {
	return readStart{id: w.topic.ID, hw: w.hw(p), at: w.s.now}
}

// checkOutOfRange: an out-of-range answer names a high watermark below
// the offset asked; the offset must not have been committed when the read
// started (a checkpoint that lags the item is no excuse).
func (w *World) checkOutOfRange(a *Actor, c cmd, start readStart, hw int64) {
	if start.id == w.topic.ID && c.offset > hw && c.offset <= start.hw {
		w.fail(fmt.Errorf("I3: %d: %s was told offset %d is out of range (high watermark %d), but the committed high watermark was %d when the read started",
			c.p, a.Name, c.offset, hw, start.hw))
	}
}

// checkClient checks a consumer's read through any process: an answer
// with no records below a high watermark the consumer was told (by any
// process, committed then) is staleness, allowed only within
// partition.CheckpointStaleness of when it was told (and the clocks'
// skew): a process at the end of the log looks at the item that often.
func (w *World) checkClient(a *Actor, c cmd, start readStart, n int, hw int64) {
	if c.client == 0 || start.id != w.topic.ID {
		return
	}
	cs := w.clientAt(c.p, c.client)
	if n == 0 && c.offset < cs.hw && start.at-cs.at > partition.CheckpointStaleness+2*w.maxSkew {
		w.fail(fmt.Errorf("I3: %d: consumer %d, told high watermark %d %v before its read from %d through %s: no records (high watermark %d)",
			c.p, c.client, cs.hw, start.at-cs.at, c.offset, a.Name, hw))
	}
	if hw > cs.hw {
		cs.hw, cs.at = hw, w.s.now
	}
}

// checkReaderHW checks the high watermark a read reported: committed (I3:
// no reader is told of an offset before its commit), and never lower than
// what the same reader process was told before, by a read or by the
// acknowledgement of its own append (checkpoints may lag; a view may not
// go back).
func (w *World) checkReaderHW(a *Actor, pm *part, hw int64) {
	if c := w.committed(pm).NextOffset; hw > c {
		w.fail(fmt.Errorf("I3: %d: %s was told high watermark %d, committed %d", pm.p, a.Name, hw, c))
	}
	k := readerKey(a, pm.key.TopicID, pm.p)
	if last, ok := w.readerHW[k]; ok && hw < last {
		w.fail(fmt.Errorf("I1: %d: %s was told high watermark %d after %d", pm.p, a.Name, hw, last))
	}
	w.readerHW[k] = max(w.readerHW[k], hw)
}

// checkRecords checks what a read from offset returned: dense offsets from
// offset on, each record as the model knows it.
func (w *World) checkRecords(pm *part, offset int64, recs []segRecord, who string) {
	if len(recs) > 0 && recs[0].Offset != offset {
		w.fail(fmt.Errorf("I1: %d: %s read from %d returned first offset %d", pm.p, who, offset, recs[0].Offset))
	}
	for i, r := range recs {
		if i > 0 && r.Offset != recs[i-1].Offset+1 {
			w.fail(fmt.Errorf("I1: %d: %s read from %d: offset %d after %d", pm.p, who, offset, r.Offset, recs[i-1].Offset))
		}
		if err := w.sawRecord(pm, r.Offset, &recs[i], who); err != nil {
			w.fail(err)
		}
	}
}

// inSomeOrder is partition.Config.Parallel for the simulation: one call
// after another, on the actor's goroutine, in an order the seed picks (the
// calls are independent, and on a real system any of them may finish
// first).
func (w *World) inSomeOrder(n int, fn func(i int)) {
	if w.lastFirst && n > 0 {
		fn(n - 1)
		for i := range n - 1 {
			fn(i)
		}
		return
	}
	for _, i := range w.s.rng.Perm(n) {
		fn(i)
	}
}
