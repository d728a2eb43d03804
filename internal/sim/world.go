package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
	objmem "github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/partition"
)

// Config is one simulation run.
type Config struct {
	Seed  uint64
	Steps int // steps with faults; then the faults stop and liveness is checked

	Servers    int // writers holding their lease between batches (HoldLease)
	Lambdas    int // writers that acquire and release per batch
	Readers    int
	Compactors int // -1: none

	LeaseTTL     time.Duration
	SegmentBytes int64 // 0: chosen by the seed
	IndexBytes   int   // 0: chosen by the seed
	MaxSkew      time.Duration

	FS   FSFaults
	Meta MetaFaults

	// Per-step rates of the scheduler's faults.
	Crash     float64 // crash an actor (its NFS client loses unsynced pages)
	Pause     float64 // pause an actor past the lease TTL (a zombie)
	ClockJump float64 // the clock jumps forward by about a lease TTL
	Writeback float64 // background writeback of some client's unsynced pages
	Deliver   float64 // an in-flight metadata request lands (or is lost)

	// FullCheckEvery is how often (steps) the whole log is read back.
	FullCheckEvery int
	// Liveness is how long (virtual time) after the faults stop some
	// append must succeed.
	Liveness time.Duration

	Trace    bool // keep the trace (the last 200 events)
	TraceAll bool // keep every event
	Logf     func(format string, args ...any)
}

// DefaultConfig is the configuration TestSimulate runs for seed: the seed
// also picks the number of actors of each kind and the segment size.
func DefaultConfig(seed uint64) Config {
	return Config{
		Seed:     seed,
		Steps:    400,
		LeaseTTL: 2 * time.Second,
		MaxSkew:  200 * time.Millisecond,
		FS: FSFaults{
			FsyncFail: 0.02, WriteFail: 0.01, ShortWrite: 0.01, NoSpace: 0.005,
			CreateFail: 0.03, CreateLostReply: 0.01, StaleHandle: 0.5, RemoveLostReply: 0.05,
		},
		Meta: MetaFaults{
			Refuse: 0.02, LostAnswer: 0.02, Delay: 0.02, Duplicate: 0.02, ReadFail: 0.01,
		},
		Crash:          0.003,
		Pause:          0.005,
		ClockJump:      0.01,
		Writeback:      0.03,
		Deliver:        0.05,
		FullCheckEvery: 100,
		Liveness:       8 * time.Second,
	}
}

// Scale multiplies every fault rate by f.
func (c *Config) Scale(f float64) {
	for _, p := range []*float64{
		&c.FS.FsyncFail, &c.FS.WriteFail, &c.FS.ShortWrite, &c.FS.NoSpace, &c.FS.CreateFail,
		&c.FS.CreateLostReply, &c.FS.RemoveLostReply,
		&c.Meta.Refuse, &c.Meta.LostAnswer, &c.Meta.Delay, &c.Meta.Duplicate, &c.Meta.ReadFail,
		&c.Crash, &c.Pause, &c.ClockJump, &c.Writeback, &c.Deliver,
	} {
		*p = min(*p*f, 0.5)
	}
}

// Violation is an invariant that failed.
type Violation struct {
	Seed  uint64
	Step  int
	Time  time.Duration
	Err   error
	Trace string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("seed %d step %d (t=%.3fs): %v", v.Seed, v.Step, v.Time.Seconds(), v.Err)
}

// Result is what a run did.
type Result struct {
	Steps     int
	Acked     int // records acknowledged
	Appends   int // appends attempted
	AppendOK  int
	Reads     int
	HW        int64
	Violation *Violation
	Trace     string
	Faults    map[string]int
}

// rec is a record as the model knows it.
type rec struct {
	value string
	ts    int64
}

// World is one simulated deployment: one partition, its writers, readers,
// the NFS server, the metadata store, one scheduler and one clock.
type World struct {
	cfg   Config
	s     *Sched
	srv   *Server
	net   *MetaNet
	key   meta.PartitionKey
	root  string
	dir   string
	objs  *objmem.Store
	topic meta.TopicConfig
	// retention is the topic's retention_bytes (0: keep everything):
	// acknowledged records below the log start are gone legitimately.
	retention int64
	segB      int64
	idxB      int

	// Model.
	acked     map[int64]rec    // offset -> acknowledged record
	ackedAt   map[string]int64 // value -> acknowledged offset
	seen      map[int64]rec    // offset -> what a reader saw first
	attempted map[string]bool  // every value a writer tried to append
	newAcks   []int64          // acknowledged since the last check
	maxHW     int64
	maxAcked  int64 // highest acknowledged offset + 1
	oft       []oftResult
	checkErr  error

	// Liveness.
	quiet      bool          // the faults have stopped
	quietSince time.Duration // when
	okSince    bool          // an append succeeded after the faults stopped

	script  bool // steps are driven by a scenario, not the scheduler
	inject  []injection
	cmds    map[*Actor][]cmd
	res     Result
	batchNo int
}

type oftResult struct {
	ts, offset int64
	hw         int64
}

type injection struct {
	actor *Actor
	op    string
	name  string // suffix of the file name; "" any
	err   error
}

// scripted returns the error a scenario injected for actor a's op on name.
func (w *World) scripted(a *Actor, op, name string) error {
	for i, in := range w.inject {
		if in.actor == a && in.op == op && strings.HasSuffix(name, in.name) {
			w.inject = append(w.inject[:i], w.inject[i+1:]...)
			w.res.Faults["scripted "+op]++
			return in.err
		}
	}
	return nil
}

// NewWorld builds a world for cfg. Actors are added by Run (or a scenario).
func NewWorld(cfg Config) *World {
	w := &World{
		cfg:       cfg,
		s:         newSched(cfg.Seed, cfg.Trace || cfg.TraceAll),
		key:       meta.PartitionKey{Topic: "t", TopicID: "id1", Partition: 0},
		root:      "/efs",
		objs:      objmem.New(),
		acked:     map[int64]rec{},
		ackedAt:   map[string]int64{},
		seen:      map[int64]rec{},
		attempted: map[string]bool{},
		cmds:      map[*Actor][]cmd{},
	}
	w.s.keepAll = cfg.TraceAll
	w.res.Faults = map[string]int{}
	w.srv = newServer(w, cfg.FS)
	w.dir = partition.Dir(w.root, w.key)
	for d := w.dir; d != "/"; d = path.Dir(d) {
		w.srv.dirs[d] = true
	}
	w.net = newMetaNet(w, mem.New(), cfg.Meta)
	w.segB = cfg.SegmentBytes
	if w.segB == 0 {
		w.segB = 256 + w.s.rng.Int64N(1200)
	}
	w.idxB = cfg.IndexBytes
	if w.idxB == 0 {
		w.idxB = 40 + w.s.rng.IntN(400)
	}
	if w.s.rng.IntN(2) == 0 {
		w.retention = 200 + w.s.rng.Int64N(1500)
	}
	w.createTopic()
	return w
}

func (w *World) clock(t time.Time) string {
	return fmt.Sprintf("%.3fs", t.Sub(w.s.base).Seconds())
}

func (w *World) logf(format string, args ...any) {
	if w.cfg.Logf != nil {
		w.cfg.Logf(format, args...)
	}
}

// ---- actors ----

type cmdKind int

const (
	cmdAppend cmdKind = iota
	cmdRestart
	cmdRead
	cmdOffsetForTime
)

type cmd struct {
	kind     cmdKind
	n        int   // records
	offset   int64 // read
	max      int
	maxBytes int
	ts       int64
	pad      int // append: pad each value to this many bytes (0: random)
}

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
	if w.cfg.MaxSkew <= 0 {
		return 0
	}
	return w.s.between(-w.cfg.MaxSkew, w.cfg.MaxSkew)
}

// idle is the yield point between operations; it returns the next command.
func (w *World) idle(a *Actor) cmd {
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

func (w *World) randomCmd(a *Actor) cmd {
	r := w.s.rng
	if a.Kind == "reader" {
		if r.IntN(8) == 0 && w.maxHW > 0 {
			return cmd{kind: cmdOffsetForTime, ts: w.s.base.UnixMilli() + r.Int64N(int64(w.s.now/time.Millisecond)+1)}
		}
		return cmd{kind: cmdRead, offset: r.Int64N(w.maxHW + 1), max: 1 + r.IntN(20), maxBytes: 1 + r.IntN(2000)}
	}
	if !w.quiet && r.IntN(25) == 0 {
		return cmd{kind: cmdRestart}
	}
	return cmd{kind: cmdAppend, n: 1 + r.IntN(4)}
}

func (w *World) partCfg(a *Actor, cli *Client, owner string, hold bool) partition.Config {
	return partition.Config{
		Dir: w.dir, Key: w.key, Meta: w.net.Client(a), Owner: owner,
		LeaseTTL: w.cfg.LeaseTTL, HoldLease: hold, SegmentBytes: w.segB,
		IndexIntervalBytes: w.idxB, FS: cli, Now: a.Now,
		Logger: slog.New(slog.DiscardHandler),
	}
}

// open opens the partition for actor a as a new process (a new NFS client),
// retrying while the metadata store is unavailable.
func (w *World) open(a *Actor, owner string, hold bool) (*partition.Log, *Client) {
	cli := w.srv.NewClient(a)
	a.onCrash = cli.crash
	for {
		l, err := partition.Open(bg, w.partCfg(a, cli, owner, hold))
		if err == nil {
			return l, cli
		}
		a.note("open partition: %v", err)
		w.idle(a) // the command is dropped: try again
	}
}

func (w *World) writerBody(a *Actor) {
	hold := a.Kind == "server"
	container := 0
	owner := fmt.Sprintf("%s.%d.%d", a.Name, a.incarnation, container)
	l, _ := w.open(a, owner, hold)
	for {
		c := w.idle(a)
		switch c.kind {
		case cmdAppend:
			w.append(a, l, c.n, c.pad)
		case cmdRestart:
			// A clean shutdown: a server restarts under its owner name, a
			// Lambda container is replaced by a new one.
			err := l.Close(bg)
			a.note("close partition: %v", err)
			if !hold {
				container++
				owner = fmt.Sprintf("%s.%d.%d", a.Name, a.incarnation, container)
			}
			l, _ = w.open(a, owner, hold)
		}
	}
}

func (w *World) append(a *Actor, l *partition.Log, n, padTo int) {
	w.batchNo++
	bn := w.batchNo
	recs := make([]partition.Record, n)
	vals := make([]string, n)
	for i := range recs {
		vals[i] = fmt.Sprintf("%s/b%d/r%d/", a.Name, bn, i)
		if padTo > 0 {
			vals[i] += strings.Repeat("x", max(0, padTo-len(vals[i])))
		} else {
			vals[i] += strings.Repeat("x", w.s.rng.IntN(24))
		}
		w.attempted[vals[i]] = true
		recs[i].Value = []byte(vals[i])
		if padTo == 0 && w.s.rng.IntN(2) == 0 {
			recs[i].Key = []byte(a.Name)
		}
	}
	a.note("APPEND b%d: %d records", bn, n)
	w.res.Appends++
	start := w.s.now
	app, err := l.Append(bg, recs)
	if err != nil {
		a.note("APPEND b%d failed: %v", bn, err)
		// The client backs off before its next request.
		a.pausedUntil = w.s.now + w.s.between(20*time.Millisecond, 300*time.Millisecond)
		return
	}
	w.res.AppendOK++
	a.note("APPEND b%d acked: offsets %d..%d ts %d", bn, app.BaseOffset, app.BaseOffset+int64(n)-1, app.Timestamp)
	if w.quiet && start >= w.quietSince {
		w.okSince = true
	}
	for i, v := range vals {
		off := app.BaseOffset + int64(i)
		r := rec{value: v, ts: app.Timestamp}
		if old, ok := w.acked[off]; ok && w.checkErr == nil {
			w.checkErr = fmt.Errorf("I1/I8: offset %d acknowledged twice: %q and now %q", off, old.value, v)
		}
		w.acked[off] = r
		w.ackedAt[v] = off
		w.newAcks = append(w.newAcks, off)
		w.maxAcked = max(w.maxAcked, off+1)
		w.res.Acked++
	}
}

func (w *World) readerBody(a *Actor) {
	l, _ := w.open(a, a.Name, false)
	for {
		c := w.idle(a)
		switch c.kind {
		case cmdRead:
			w.read(a, l, c)
		case cmdOffsetForTime:
			hw := w.maxHW
			off, found, err := offsetForTime(l, c.ts)
			a.note("OFFSET FOR TIME %d: %d found=%v %v", c.ts, off, found, err)
			if err == nil && found {
				w.oft = append(w.oft, oftResult{ts: c.ts, offset: off, hw: hw})
			}
		}
	}
}

func (w *World) read(a *Actor, l *partition.Log, c cmd) {
	a.note("READ from %d max %d/%dB", c.offset, c.max, c.maxBytes)
	recs, b, err := w.readAt(l, w.net.Client(a), objects{inner: w.objs, a: a}, c.offset, c.max, c.maxBytes)
	w.res.Reads++
	a.note("READ from %d: %d records, hw %d, %v", c.offset, len(recs), b.HighWatermark, err)
	if err != nil {
		var oor *partition.OutOfRangeError
		if errors.As(err, &oor) || errors.Is(err, partition.ErrUnavailable) || errors.Is(err, meta.ErrUnavailable) {
			return
		}
		if w.checkErr == nil {
			w.checkErr = fmt.Errorf("I3: read from %d (committed hw %d): %v", c.offset, w.maxHW, err)
		}
		return
	}
	if len(recs) > 0 && recs[0].Offset != c.offset && w.checkErr == nil {
		w.checkErr = fmt.Errorf("I1: read from %d returned first offset %d", c.offset, recs[0].Offset)
	}
	for i, r := range recs {
		if i > 0 && r.Offset != recs[i-1].Offset+1 && w.checkErr == nil {
			w.checkErr = fmt.Errorf("I1: read from %d: offset %d after %d", c.offset, r.Offset, recs[i-1].Offset)
		}
		if err := w.sawRecord(r.Offset, string(r.Value), r.Timestamp, "reader "+a.Name); err != nil && w.checkErr == nil {
			w.checkErr = err
		}
	}
}

// sawRecord checks one record a reader (or the checker) read against the
// model and remembers it.
func (w *World) sawRecord(off int64, value string, ts int64, who string) error {
	hw := w.committedHW()
	if off >= hw {
		return fmt.Errorf("I3: %s read offset %d (%q) at or past the committed high watermark %d", who, off, value, hw)
	}
	if !w.attempted[value] {
		return fmt.Errorf("I3: %s read offset %d = %q, which no writer ever appended", who, off, value)
	}
	if a, ok := w.acked[off]; ok && (a.value != value || a.ts != ts) {
		return fmt.Errorf("I2/I5: %s read offset %d = %q ts %d; acknowledged %q ts %d", who, off, value, ts, a.value, a.ts)
	}
	if at, ok := w.ackedAt[value]; ok && at != off {
		return fmt.Errorf("I1: %s read %q at offset %d; it was acknowledged at %d", who, value, off, at)
	}
	if s, ok := w.seen[off]; ok {
		if s.value != value || s.ts != ts {
			return fmt.Errorf("I3/I5: %s read offset %d = %q ts %d; it was read before as %q ts %d", who, off, value, ts, s.value, s.ts)
		}
	} else {
		w.seen[off] = rec{value: value, ts: ts}
	}
	return nil
}

// ---- checks ----

func (w *World) committedHW() int64 {
	p, _ := w.net.inner.Partition(bg, w.key)
	return p.NextOffset
}

// check runs after every step: the cheap invariants, the records
// acknowledged since the last check and one sampled offset; the whole log
// every FullCheckEvery steps.
func (w *World) check(full bool) error {
	if w.checkErr != nil {
		return w.checkErr
	}
	if w.net.violation != nil {
		return w.net.violation
	}
	p, _ := w.net.inner.Partition(bg, w.key)
	if p.NextOffset < w.maxHW {
		return fmt.Errorf("I1/I2: the committed high watermark went back from %d to %d: %s", w.maxHW, p.NextOffset, itemString(&p))
	}
	w.maxHW = p.NextOffset
	if w.maxAcked > p.NextOffset {
		return fmt.Errorf("I2: offset %d was acknowledged but the committed high watermark is %d", w.maxAcked-1, p.NextOffset)
	}
	if full {
		return w.fullCheck()
	}
	offs := w.newAcks
	w.newAcks = w.newAcks[:0]
	if w.maxHW > p.LogStartOffset && w.s.rng.IntN(4) == 0 {
		offs = append(offs, p.LogStartOffset+w.s.rng.Int64N(w.maxHW-p.LogStartOffset))
	}
	if len(offs) == 0 {
		return nil
	}
	l, err := w.checker()
	if err != nil {
		return err
	}
	for _, off := range offs {
		if off < p.LogStartOffset {
			continue // retention
		}
		recs, _, err := w.readAt(l, w.net.Client(nil), objects{inner: w.objs}, off, 1, 1)
		if err != nil {
			return fmt.Errorf("I2: offset %d (committed, hw %d) unreadable from durable state: %v", off, w.maxHW, err)
		}
		if len(recs) != 1 || recs[0].Offset != off {
			return fmt.Errorf("I1/I2: read of committed offset %d from durable state gave %d records", off, len(recs))
		}
		if err := w.sawRecord(off, string(recs[0].Value), recs[0].Timestamp, "checker"); err != nil {
			return err
		}
	}
	return nil
}

// checker opens the partition as a new process on a new NFS client: it
// sees only the durable server state and the committed item.
func (w *World) checker() (*partition.Log, error) {
	cli := w.srv.NewClient(nil)
	cfg := w.partCfg(nil, cli, "checker", false)
	cfg.Now = w.s.Time
	l, err := partition.Open(bg, cfg)
	if err != nil {
		return nil, fmt.Errorf("checker: open: %v", err)
	}
	return l, nil
}

// fullCheck reads the whole committed log from durable state: dense
// offsets, every acknowledged record with its bytes, what readers saw,
// unique values, non-decreasing timestamps (I1, I2, I3, I5, I6).
func (w *World) fullCheck() error {
	w.newAcks = w.newAcks[:0]
	l, err := w.checker()
	if err != nil {
		return err
	}
	b, err := l.Bounds(bg)
	if err != nil {
		return fmt.Errorf("checker: bounds: %v", err)
	}
	all := make([]rec, 0, b.HighWatermark)
	values := map[string]int64{}
	lastTS := int64(-1 << 62)
	for off := b.LogStartOffset; off < b.HighWatermark; {
		recs, _, err := w.readAt(l, w.net.Client(nil), objects{inner: w.objs}, off, 1000, 1<<20)
		if err != nil {
			return fmt.Errorf("I2: committed offset %d (hw %d) unreadable from durable state: %v", off, b.HighWatermark, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("I2: read at committed offset %d (hw %d) returned no records", off, b.HighWatermark)
		}
		for _, r := range recs {
			if r.Offset != off {
				return fmt.Errorf("I1: offset %d where %d was expected", r.Offset, off)
			}
			v := string(r.Value)
			if prev, dup := values[v]; dup {
				return fmt.Errorf("I1/I7: %q is at offsets %d and %d", v, prev, off)
			}
			values[v] = off
			if r.Timestamp < lastTS {
				return fmt.Errorf("I6: offset %d has timestamp %d, before %d", off, r.Timestamp, lastTS)
			}
			lastTS = r.Timestamp
			if err := w.sawRecord(off, v, r.Timestamp, "checker"); err != nil {
				return err
			}
			all = append(all, rec{value: v, ts: r.Timestamp})
			off++
		}
	}
	for off := range w.acked {
		if (off < b.LogStartOffset && w.retention == 0) || off >= b.HighWatermark {
			return fmt.Errorf("I2: acknowledged offset %d outside the log [%d, %d)", off, b.LogStartOffset, b.HighWatermark)
		}
	}
	for _, o := range w.oft {
		if o.offset <= b.LogStartOffset {
			continue
		}
		i := o.offset - b.LogStartOffset
		if o.offset >= b.HighWatermark || all[i].ts < o.ts || (i > 0 && all[i-1].ts >= o.ts) {
			return fmt.Errorf("I6: offset for time %d answered %d, which is not the first offset at or after it", o.ts, o.offset)
		}
	}
	w.oft = w.oft[:0]
	return nil
}

// ---- the run ----

// Run runs the world: cfg.Steps steps with faults, then the faults stop
// and some append must succeed within cfg.Liveness.
func Run(cfg Config) (res Result) {
	w := NewWorld(cfg)
	r := w.s.rng
	servers, lambdas, readers := cfg.Servers, cfg.Lambdas, cfg.Readers
	if servers+lambdas == 0 {
		n := 1 + r.IntN(3)
		for range n {
			if r.IntN(2) == 0 {
				servers++
			} else {
				lambdas++
			}
		}
		readers = 1 + r.IntN(2)
	}
	for i := range servers {
		w.AddWriter(fmt.Sprintf("s%d", i), true)
	}
	for i := range lambdas {
		w.AddWriter(fmt.Sprintf("l%d", i), false)
	}
	for i := range readers {
		w.AddReader(fmt.Sprintf("r%d", i))
	}
	compactors := cfg.Compactors
	if compactors == 0 {
		compactors = r.IntN(3)
	}
	for i := range max(compactors, 0) {
		w.AddCompactor(fmt.Sprintf("c%d", i))
	}
	w.logf("seed %d: %d servers, %d lambdas, %d readers, %d compactors, segment %d B, index every %d B",
		cfg.Seed, servers, lambdas, readers, max(compactors, 0), w.segB, w.idxB)
	defer w.s.shutdown()
	err := w.runSteps()
	return w.finish(err)
}

func (w *World) finish(err error) Result {
	w.res.Steps = w.s.step
	w.res.HW = w.maxHW
	if err != nil {
		w.res.Violation = &Violation{Seed: w.cfg.Seed, Step: w.s.step, Time: w.s.now, Err: err}
		if w.s.tracing {
			w.res.Violation.Trace = w.s.Trace()
		}
	}
	if w.s.tracing {
		w.res.Trace = w.s.Trace()
	}
	return w.res
}

func (w *World) runSteps() error {
	for w.s.step < w.cfg.Steps {
		if err := w.step(); err != nil {
			return err
		}
	}
	// The faults stop: in-flight requests land or are lost, paused actors
	// wake, and some append must succeed within the liveness bound.
	w.quiet, w.quietSince = true, w.s.now
	w.srv.off, w.net.off = true, true
	for len(w.net.queue) > 0 {
		w.s.eventf("%s", w.net.deliver(0, w.s.rng.IntN(2) == 0))
	}
	for _, a := range w.s.actors {
		a.pausedUntil = 0
	}
	w.s.eventf("faults stop")
	if err := w.check(true); err != nil {
		return err
	}
	for !w.okSince {
		if w.s.now-w.quietSince > w.cfg.Liveness {
			return fmt.Errorf("liveness: no append succeeded in %v after the faults stopped", w.cfg.Liveness)
		}
		if err := w.step(); err != nil {
			return err
		}
		if w.s.step > w.cfg.Steps*20 {
			return fmt.Errorf("liveness: no append succeeded in %d steps after the faults stopped", w.s.step-w.cfg.Steps)
		}
	}
	return w.check(true)
}

// step is one scheduling decision, then the checks.
func (w *World) step() error {
	s := w.s
	s.step++
	s.now += s.between(0, 10*time.Millisecond)
	w.decide()
	full := w.cfg.FullCheckEvery > 0 && s.step%w.cfg.FullCheckEvery == 0
	return w.check(full)
}

func (w *World) decide() {
	s, c := w.s, w.cfg
	// Requests past their deadline are lost.
	for i := 0; i < len(w.net.queue); i++ {
		if w.net.queue[i].deadline <= s.now {
			s.eventf("%s", w.net.deliver(i, true))
			i--
		}
	}
	if !w.quiet {
		x := s.rng.Float64()
		switch {
		case x < c.Crash:
			if a := w.pick(func(a *Actor) bool { return a.started && !a.exited }); a != nil {
				w.res.Faults["crash"]++
				s.eventf("CRASH %s (in op: %v, before %s %s)", a.Name, a.inOp, a.pendOp, short(a.pendName))
				s.crash(a)
				return
			}
		case x < c.Crash+c.Pause:
			if a := w.pick(func(a *Actor) bool { return a.started && a.pausedUntil == 0 && a.inOp && a.Kind != "reader" }); a != nil {
				a.pausedUntil = s.now + c.LeaseTTL + s.between(0, c.LeaseTTL)
				w.res.Faults["pause"]++
				s.eventf("PAUSE %s until %.3fs (before %s %s)", a.Name, a.pausedUntil.Seconds(), a.pendOp, short(a.pendName))
				return
			}
		case x < c.Crash+c.Pause+c.ClockJump:
			d := s.between(c.LeaseTTL/2, c.LeaseTTL*2)
			s.now += d
			w.res.Faults["clock jump"]++
			s.eventf("CLOCK +%v", d)
			return
		case x < c.Crash+c.Pause+c.ClockJump+c.Writeback:
			if len(w.srv.clients) > 0 {
				cl := w.srv.clients[s.rng.IntN(len(w.srv.clients))]
				if what := cl.writeback(); what != "" {
					w.res.Faults["writeback"]++
					s.eventf("%s", what)
					return
				}
			}
		case x < c.Crash+c.Pause+c.ClockJump+c.Writeback+c.Deliver:
			if len(w.net.queue) > 0 {
				w.res.Faults["late delivery"]++
				s.eventf("%s", w.net.deliver(s.rng.IntN(len(w.net.queue)), s.rng.IntN(5) == 0))
				return
			}
		}
	}
	a := w.pick(s.runnable)
	if a == nil {
		// Everyone is paused: time passes until the first wakes.
		next := time.Duration(1<<62 - 1)
		for _, b := range s.actors {
			if !b.exited && b.pausedUntil > 0 {
				next = min(next, b.pausedUntil)
			}
		}
		s.now = max(s.now, next)
		s.eventf("clock to %.3fs (everyone paused)", s.now.Seconds())
		return
	}
	if a.pausedUntil > 0 {
		a.pausedUntil = 0
		if a.inOp {
			s.eventf("RESUME %s (before %s %s)", a.Name, a.pendOp, short(a.pendName))
		}
	}
	s.resume(a)
}

// pick returns a random actor satisfying ok, or nil.
func (w *World) pick(ok func(*Actor) bool) *Actor {
	var c []*Actor
	for _, a := range w.s.actors {
		if ok(a) {
			c = append(c, a)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[w.s.rng.IntN(len(c))]
}

// ---- helpers ----

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

var _ = io.EOF
var _ = context.Background

// onCommitApplied is called when a commit lands in the store.
func (w *World) onCommitApplied(p meta.Partition) {}
