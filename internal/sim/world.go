package sim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
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
	// Brokers are pkg/broker processes producing (ProducePartition) and
	// fetching (Fetch, OffsetForTime) through the broker's own cold-tier
	// path; -1: none, 0: chosen by the seed.
	Brokers int
	// Partitions per topic (0: 1-3, chosen by the seed).
	Partitions int
	// Churn: an admin process deletes the topic (Broker.DeleteTopic) and
	// creates it again under a new id, while brokers keep their cached
	// incarnation (0: chosen by the seed; -1: never).
	Churn int
	// RetryFor is how long (virtual time) a client retries a batch that
	// failed as unavailable before it gives up (0: no retries).
	RetryFor time.Duration
	// TimestampType is the topic's ("append" or "create"; "": chosen by
	// the seed, create in a third of the seeds). On a create-time topic
	// most records carry a producer timestamp, often older than the last.
	TimestampType string
	// Headers: records carry headers (0: chosen by the seed, in half of
	// them; -1: never; 1: always).
	Headers int
	// Modes weighs the modes of the batches writers and brokers send:
	// plain, keyed, conditional, reusing a key (batches.go; zero: 4, 12,
	// 3, 1).
	Modes [4]int
	// Updates: the admin updates the topic now and then (UpdateTopic):
	// one more partition (up to maxParts), another segment size or segment
	// age, while brokers route keyed requests by the topic's partition
	// count (0: chosen by the seed, in a third of them; -1: never).
	Updates int
	// OneChurnBroker: churn seeds run one broker besides the admin (while
	// the bug two stale brokers trigger is open: open_test.go).
	OneChurnBroker bool
	// Solo: the world is one Lambda container alone on its partitions,
	// with readers (otherwise an eighth of the seeds, chosen by the seed).
	Solo bool
	// Detach: Lambda writers hand what follows a lone round's answers (its
	// checkpoint, partition.Config.Detach) to work the actor runs after
	// the append it answered, behind a yield point where it may crash or
	// be frozen (0: chosen by the seed, in half of them; -1: never; 1:
	// always).
	Detach int

	LeaseTTL     time.Duration
	SegmentBytes int64 // 0: chosen by the seed
	IndexBytes   int   // 0: chosen by the seed
	// MaxSkew bounds each actor's clock offset; with WideSkew, a quarter
	// of the seeds take 3 s instead (more than a lease TTL).
	MaxSkew  time.Duration
	WideSkew bool
	// LongAttrCache: a quarter of the seeds trust NFS names and listings
	// for 30 s, another quarter for 60 s (EFS's acdirmin and acregmax),
	// far beyond the busy wait, unless FS.AttrTimeout is set.
	LongAttrCache bool

	FS      FSFaults
	Meta    MetaFaults
	Objects ObjFaults

	// Per-step rates of the scheduler's faults.
	Crash float64 // crash an actor (its NFS client loses unsynced pages)
	Pause float64 // pause an actor past the lease TTL (a zombie)
	// Freeze is the share of pauses that last 10-60 lease TTLs: a Lambda
	// container frozen mid-round (its invocation answered, a goroutine
	// still in flight) and thawed by a later invocation.
	Freeze    float64
	ClockJump float64 // the clock jumps forward by about a lease TTL
	// AtDetached: an actor standing between an answered append and the
	// work it left to Detach (opDetached) is crashed, or paused (a
	// freeze, at Freeze's share), at this rate per step.
	AtDetached float64
	Writeback  float64 // background writeback of some client's unsynced pages
	Deliver    float64 // an in-flight metadata request lands (or is lost)
	Damage     float64 // bit rot: a byte of a committed segment file flips, or the file loses its tail

	// FullCheckEvery is how often (steps) the whole log is read back.
	FullCheckEvery int
	// Liveness is how long (virtual time) after the faults stop some
	// append must succeed. It catches a deadlock or a livelock, not a
	// slow run: with up to eight actors taking turns, a handover after a
	// holder stalled past its lease costs the lease TTL plus a recovery of
	// the active segment at an eighth of the steps, and the slowest of
	// 10,000 seeds took 7.5 s (Result.Recovery; the sweep logs it), one
	// 8.5 s.
	Liveness time.Duration

	Trace    bool // keep the trace (the last 200 events)
	TraceAll bool // keep every event
	Logf     func(format string, args ...any)
}

// DefaultConfig is the configuration TestSimulate runs for seed: the seed
// also picks the number of actors of each kind and the segment size.
func DefaultConfig(seed uint64) Config {
	return Config{
		Seed:          seed,
		Steps:         400,
		LeaseTTL:      2 * time.Second,
		MaxSkew:       200 * time.Millisecond,
		WideSkew:      true,
		LongAttrCache: true,
		Freeze:        0.25,
		FS: FSFaults{
			FsyncFail: 0.02, WriteFail: 0.01, ShortWrite: 0.01, NoSpace: 0.005,
			CreateFail: 0.03, CreateLostReply: 0.01, StaleHandle: 0.5, RemoveLostReply: 0.05,
			StaleList: 0.3, NegativeHit: 0.5,
		},
		Meta: MetaFaults{
			Refuse: 0.02, LostAnswer: 0.02, Delay: 0.02, Duplicate: 0.02, ReadFail: 0.01, LongDelay: 0.2, Throttle: 0.01,
		},
		Objects: ObjFaults{
			PutFail: 0.02, PutLostAnswer: 0.02, GetFail: 0.01, Slow: 0.1,
		},
		RetryFor:       5 * time.Second,
		Crash:          0.003,
		Pause:          0.005,
		ClockJump:      0.01,
		Writeback:      0.03,
		Deliver:        0.05,
		Damage:         0.001,
		FullCheckEvery: 100,
		Liveness:       12 * time.Second,
	}
}

// Scale multiplies every fault rate by f.
func (c *Config) Scale(f float64) {
	for _, p := range []*float64{
		&c.FS.FsyncFail, &c.FS.WriteFail, &c.FS.ShortWrite, &c.FS.NoSpace, &c.FS.CreateFail,
		&c.FS.CreateLostReply, &c.FS.RemoveLostReply, &c.FS.StaleList,
		&c.Meta.Refuse, &c.Meta.LostAnswer, &c.Meta.Delay, &c.Meta.Duplicate, &c.Meta.ReadFail, &c.Meta.Throttle,
		&c.FS.SilentWriteback,
		&c.Objects.PutFail, &c.Objects.PutLostAnswer, &c.Objects.GetFail,
		&c.Crash, &c.Pause, &c.AtDetached, &c.ClockJump, &c.Writeback, &c.Deliver, &c.Damage,
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
	Steps    int
	Acked    int // records acknowledged
	Appends  int // appends attempted
	AppendOK int
	Reads    int
	// KeptAnswers counts brokers' reads answered with an answer kept
	// from an earlier one (broker.FetchAnswer).
	KeptAnswers int
	// Detached counts the work Lambda writers' Logs handed to
	// Config.Detach that ran (runTails); DetachedLost, the work a crash
	// dropped before it ran.
	Detached, DetachedLost int
	// Recovery is how long after the faults stopped the first append
	// that started after them succeeded (what Liveness bounds).
	Recovery  time.Duration
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

// part is the model of one partition of one topic incarnation.
type part struct {
	p          int
	key        meta.PartitionKey
	dir        string
	acked      map[int64]rec    // offset -> acknowledged record
	ackedAt    map[string]int64 // value -> acknowledged offset
	seen       map[int64]rec    // offset -> what a reader saw first
	newAcks    []int64          // acknowledged since the last check
	maxHW      int64
	maxAcked   int64 // highest acknowledged offset + 1
	maxStart   int64 // highest log start seen
	oft        []oftResult
	damaged    map[int64]bool // offsets whose committed bytes were damaged (bit rot): excluded from I2
	dmgFiles   map[string]bool
	dmgSpan    map[string][2]int64 // per file: first and last damaged offset
	maxColdEnd int64
	// I7/I8 (batches.go): the committed log below scanTo has been read,
	// each value's offset, each keyed batch's base offset.
	scanTo int64
	at     map[string]int64
	bbase  map[*batch]int64
}

func newPart(key meta.PartitionKey, root string) *part {
	return &part{
		p: key.Partition, key: key, dir: partition.Dir(root, key),
		acked: map[int64]rec{}, ackedAt: map[string]int64{}, seen: map[int64]rec{},
		damaged: map[int64]bool{}, dmgFiles: map[string]bool{}, dmgSpan: map[string][2]int64{},
		at: map[string]int64{}, bbase: map[*batch]int64{},
	}
}

// World is one simulated deployment: one topic of 1-3 partitions (deleted
// and created again under a new id in churn seeds), its writers, brokers,
// readers and compactors, the NFS server, the metadata store, the object
// store, one scheduler and one clock.
type World struct {
	cfg   Config
	s     *Sched
	srv   *Server
	net   *MetaNet
	root  string
	objs  *objmem.Store
	topic meta.TopicConfig // the current incarnation
	// retention is the topic's retention_bytes (0: keep everything):
	// acknowledged records below the log start are gone legitimately.
	retention int64
	segB      int64
	idxB      int
	nparts    int
	cacheOn   bool // the topic's cache_enabled (the tier reader's index-only path when off)
	inc       int  // incarnations created
	deleting  bool // the admin started a delete that has not finished

	// Model.
	parts     []*part         // of the current incarnation
	gone      map[string]int  // topic id -> step its topic item was deleted
	attempted map[string]bool // every value a writer tried to append
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
	// Keyed batches (batches.go).
	valBatch  map[string]valRef        // value -> its keyed batch
	lastHW    map[string]map[int]int64 // client -> partition -> high watermark it last saw
	okBatches []*batch                 // acknowledged keyed batches (keys to reuse)
	pending   map[string]*batch
	busyWait  time.Duration // partition.Config.BusyWait (0: its default)
	soloFor   time.Duration // partition.Config.SoloFor (0: its default)
	lastFirst bool          // a Parallel group runs its last call first, then the others in order (scripts); else in a seeded order
	// ckpt: writers write the committed checkpoint and readers read it
	// (partition.Config.Checkpoint), per seed.
	ckpt bool
	// detach: Lambda writers run with partition.Config.Detach (Config.Detach);
	// tails: what each actor's Logs handed to it, run before its next
	// command (runTails).
	detach   bool
	tails    map[*Actor][]func()
	readerHW map[string]int64        // reader process and partition -> high watermark it last saw
	lastAsk  map[*Actor]cmd          // a broker's last read, which it may ask again later
	clients  map[string]*clientState // consumers (checkClient), by incarnation, partition and number
	maxSkew  time.Duration           // Config.MaxSkew, or 3 s in a quarter of the seeds (WideSkew)
	// churn, updates: what the admin does (Config.Churn, Config.Updates).
	churn, updates bool
	// placed: where the scan found each value of a keyed batch (I7
	// across partitions: a request routed by the topic lands on one).
	placed map[string]*part

	// createTime: the topic takes producer timestamps (I6 does not hold);
	// headers: records carry headers, derived from their values
	// (simHeaders). prodTS: the producer timestamp each value was sent with.
	createTime bool
	headers    bool
	prodTS     map[string]int64
	stepFrom   time.Duration // the clock before this step's advance        // client -> the keyed batch it is sending
}

// key is partition p of the current incarnation.
func (w *World) key(p int) meta.PartitionKey { return w.parts[p].key }

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
		root:      "/efs",
		objs:      objmem.New(),
		gone:      map[string]int{},
		attempted: map[string]bool{},
		cmds:      map[*Actor][]cmd{},
		valBatch:  map[string]valRef{},
		lastHW:    map[string]map[int]int64{},
		pending:   map[string]*batch{},
	}
	w.s.keepAll = cfg.TraceAll
	w.res.Faults = map[string]int{}
	w.srv = newServer(w, cfg.FS)
	w.srv.dirs[w.root] = true
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
	w.nparts = cfg.Partitions
	if w.nparts == 0 {
		w.nparts = 1 + w.s.rng.IntN(3)
	}
	w.cacheOn = w.s.rng.IntN(2) == 0
	// How long a batch waits for a busy partition: shorter than a lease
	// TTL (waiters give up while a leader may hold their staged copy),
	// about one, or the default.
	w.busyWait = [...]time.Duration{300 * time.Millisecond, 2 * time.Second, 0}[w.s.rng.IntN(3)]
	// Lambda-mode writers park their lease when alone (partition/park.go):
	// by default after 10 s without another writer, which seeds with
	// several writers rarely give; so most seeds park sooner, and some never.
	// (From the seed, not the source: the other draws stay as they were.)
	w.soloFor = [...]time.Duration{0, 100 * time.Millisecond, time.Second, -1}[cfg.Seed%4]
	if cfg.Solo {
		w.soloFor = [...]time.Duration{100 * time.Millisecond, time.Second}[cfg.Seed%2]
	}
	w.ckpt = w.s.rng.IntN(2) == 0
	w.lastAsk = map[*Actor]cmd{}
	w.readerHW = map[string]int64{}
	w.clients = map[string]*clientState{}
	w.placed = map[string]*part{}
	// The record kinds come from a generator of their own, so the main
	// one (and what every seed did before) is unchanged.
	kinds := rand.New(rand.NewPCG(cfg.Seed, 0x5eed4ead))
	switch cfg.TimestampType {
	case "":
		w.createTime = kinds.IntN(3) == 0
	default:
		w.createTime = cfg.TimestampType == "create"
	}
	w.headers = cfg.Headers > 0 || cfg.Headers == 0 && kinds.IntN(2) == 0
	w.detach = cfg.Detach > 0 || cfg.Detach == 0 && rand.New(rand.NewPCG(cfg.Seed, 0xde7ac4)).IntN(2) == 0
	w.tails = map[*Actor][]func(){}
	// The harsher environment, also from a generator of its own.
	env := rand.New(rand.NewPCG(cfg.Seed, 0xe4f1c0de))
	w.maxSkew = cfg.MaxSkew
	if cfg.WideSkew && env.IntN(4) == 0 {
		w.maxSkew = 3 * time.Second
	}
	if cfg.LongAttrCache && cfg.FS.AttrTimeout == 0 {
		w.srv.faults.AttrTimeout = [...]time.Duration{0, 0, 30 * time.Second, 60 * time.Second}[env.IntN(4)]
	}
	w.prodTS = map[string]int64{}
	if err := w.createTopic(nil); err != nil {
		panic(err)
	}
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

func (w *World) fail(err error) {
	if w.checkErr == nil {
		w.checkErr = err
	}
}

// ---- checks ----

func (w *World) committed(pm *part) meta.Partition {
	p, _ := w.net.inner.Partition(bg, pm.key)
	return p
}

// check runs after every step: the cheap invariants, the records
// acknowledged since the last check and one sampled offset per partition;
// the whole log every FullCheckEvery steps.
func (w *World) check(full bool) error {
	if w.checkErr != nil {
		return w.checkErr
	}
	if w.net.violation != nil {
		return w.net.violation
	}
	for _, pm := range w.parts {
		if err := w.checkPart(pm, full); err != nil {
			return err
		}
	}
	return nil
}

func (w *World) checkPart(pm *part, full bool) error {
	p := w.committed(pm)
	if itemDeleted(&p) {
		return nil // the admin is deleting the topic
	}
	if p.NextOffset < pm.maxHW {
		return fmt.Errorf("I1/I2: %d: the committed high watermark went back from %d to %d: %s", pm.p, pm.maxHW, p.NextOffset, itemString(&p))
	}
	pm.maxHW = p.NextOffset
	if pm.maxAcked > p.NextOffset {
		return fmt.Errorf("I2: %d: offset %d was acknowledged but the committed high watermark is %d", pm.p, pm.maxAcked-1, p.NextOffset)
	}
	if p.LogStartOffset > pm.maxStart || p.ColdEnd > pm.maxColdEnd {
		pm.maxStart, pm.maxColdEnd = max(pm.maxStart, p.LogStartOffset), max(pm.maxColdEnd, p.ColdEnd)
		if err := w.checkRetention(pm, &p); err != nil {
			return err
		}
	}
	var l *partition.Log
	open := func() (*partition.Log, error) {
		if l != nil {
			return l, nil
		}
		var err error
		l, err = w.checker(pm)
		return l, err
	}
	if err := w.scanCommitted(pm, p.LogStartOffset, p.NextOffset, open); err != nil {
		return err
	}
	if full {
		return w.fullCheck(pm)
	}
	offs := pm.newAcks
	pm.newAcks = pm.newAcks[:0]
	if pm.maxHW > p.LogStartOffset && w.s.rng.IntN(4) == 0 {
		offs = append(offs, p.LogStartOffset+w.s.rng.Int64N(pm.maxHW-p.LogStartOffset))
	}
	if len(offs) == 0 {
		return nil
	}
	l, err := open()
	if err != nil {
		return err
	}
	for _, off := range offs {
		if off < p.LogStartOffset || pm.damaged[off] {
			continue // retention; bit rot
		}
		recs, _, err := w.readAt(pm, l, w.net.Client(nil), objects{inner: w.objs}, off, 1, 1)
		if err != nil {
			if w.damageExplains(pm, err) {
				continue
			}
			return fmt.Errorf("I2: %d: offset %d (committed, hw %d) unreadable from durable state: %v", pm.p, off, pm.maxHW, err)
		}
		if len(recs) != 1 || recs[0].Offset != off {
			return fmt.Errorf("I1/I2: %d: read of committed offset %d from durable state gave %d records", pm.p, off, len(recs))
		}
		if err := w.sawRecord(pm, off, &recs[0], "checker"); err != nil {
			return err
		}
	}
	return nil
}

// checkRetention: retention never drops a segment inside the retention
// bound. Retention by bytes drops the oldest segment only
// while what stays is at least retention_bytes, so whenever the log start
// has moved, the segments from it on (each offset range counted once: the
// catalog and the item may both name a segment) hold at least
// retention_bytes; they only grow after.
func (w *World) checkRetention(pm *part, p *meta.Partition) error {
	if w.retention <= 0 || p.LogStartOffset == 0 {
		return nil
	}
	cat, _ := w.net.inner.Segments(bg, pm.key, 0, 0)
	type rng struct{ base, next, size int64 }
	var segs []rng
	for _, e := range cat {
		segs = append(segs, rng{e.Base, e.NextOffset, e.LogLen})
	}
	covered := func(base int64) bool {
		for _, e := range cat {
			if e.Base <= base && base < e.NextOffset {
				return true
			}
		}
		return false
	}
	hot := append([]meta.SegmentInfo(nil), p.Sealed...)
	if p.Active != nil {
		hot = append(hot, *p.Active)
	}
	for _, s := range hot {
		if !covered(s.Base) && (s.NextOffset > s.Base || s.Base >= p.NextOffset) {
			segs = append(segs, rng{s.Base, s.NextOffset, s.Size})
		}
	}
	total := int64(0)
	for _, s := range segs {
		if s.base >= p.LogStartOffset {
			total += s.size
		}
	}
	if total < w.retention {
		return fmt.Errorf("retention (audit finding 4): %d: log start %d keeps %d bytes, less than retention_bytes %d (catalog %d entries, item %s)",
			pm.p, p.LogStartOffset, total, w.retention, len(cat), itemString(p))
	}
	return nil
}

// sawRecord checks one record a reader (or the checker) read against the
// model and remembers it.
func (w *World) sawRecord(pm *part, off int64, r *segRecord, who string) error {
	value, ts := string(r.Value), r.Timestamp
	hw := w.committed(pm).NextOffset
	if off >= hw {
		return fmt.Errorf("I3: %d: %s read offset %d (%q) at or past the committed high watermark %d", pm.p, who, off, value, hw)
	}
	if !w.attempted[value] {
		return fmt.Errorf("I3: %d: %s read offset %d = %q, which no writer ever appended", pm.p, who, off, value)
	}
	if a, ok := pm.acked[off]; ok && (a.value != value || a.ts != ts) {
		return fmt.Errorf("I2/I5: %d: %s read offset %d = %q ts %d; acknowledged %q ts %d", pm.p, who, off, value, ts, a.value, a.ts)
	}
	if at, ok := pm.ackedAt[value]; ok && at != off {
		return fmt.Errorf("I1/I7: %d: %s read %q at offset %d; it was acknowledged at %d", pm.p, who, value, off, at)
	}
	if pt, ok := w.prodTS[value]; ok && pt != ts {
		return fmt.Errorf("I2/I5: %d: %s read offset %d = %q with timestamp %d; its producer sent %d", pm.p, who, off, value, ts, pt)
	}
	if want := simKey(value); (r.Key == nil) != (want == nil) || string(r.Key) != string(want) {
		return fmt.Errorf("I2/I5: %d: %s read offset %d = %q with key %q (nil %v); it was sent with %q", pm.p, who, off, value, r.Key, r.Key == nil, want)
	}
	if want := w.simHeaders(value); !sameHeaders(r.Headers, want) {
		return fmt.Errorf("I2/I5: %d: %s read offset %d = %q with headers %v; it was sent with %v", pm.p, who, off, value, r.Headers, want)
	}
	if s, ok := pm.seen[off]; ok {
		if s.value != value || s.ts != ts {
			return fmt.Errorf("I3/I5: %d: %s read offset %d = %q ts %d; it was read before as %q ts %d", pm.p, who, off, value, ts, s.value, s.ts)
		}
	} else {
		pm.seen[off] = rec{value: value, ts: ts}
	}
	return nil
}

// checker opens the partition as a new process on a new NFS client: it
// sees only the durable server state and the committed item.
func (w *World) checker(pm *part) (*partition.Log, error) {
	cli := w.srv.NewClient(nil)
	cfg := w.partCfg(nil, cli, pm, "checker", false)
	cfg.Now = w.s.Time
	cfg.Checkpoint = false // the item's bounds: a checkpoint's log start may lag retention
	l, err := partition.Open(bg, cfg)
	if err != nil {
		return nil, fmt.Errorf("checker: open: %v", err)
	}
	return l, nil
}

// fullCheck reads the whole committed log from durable state: dense
// offsets, every acknowledged record with its bytes, what readers saw,
// unique values, non-decreasing timestamps (I1, I2, I3, I5, I6). Damaged
// records (bit rot) must be refused, never served; the read goes on where
// good records resume.
func (w *World) fullCheck(pm *part) error {
	pm.newAcks = pm.newAcks[:0]
	l, err := w.checker(pm)
	if err != nil {
		return err
	}
	b, err := l.Bounds(bg)
	if err != nil {
		return fmt.Errorf("checker: %d: bounds: %v", pm.p, err)
	}
	all := map[int64]rec{}
	values := map[string]int64{}
	lastTS := int64(-1 << 62)
	for off := b.LogStartOffset; off < b.HighWatermark; {
		recs, _, err := w.readAt(pm, l, w.net.Client(nil), objects{inner: w.objs}, off, 1000, 1<<20)
		if err != nil {
			if next, ok := damagedNext(err); ok && w.damageExplains(pm, err) && next > off {
				w.s.eventf("checker: %d: read from %d: %v", pm.p, off, err)
				off = next
				continue
			}
			return fmt.Errorf("I2: %d: committed offset %d (hw %d) unreadable from durable state: %v", pm.p, off, b.HighWatermark, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("I2: %d: read at committed offset %d (hw %d) returned no records", pm.p, off, b.HighWatermark)
		}
		for _, r := range recs {
			if r.Offset != off {
				return fmt.Errorf("I1: %d: offset %d where %d was expected", pm.p, r.Offset, off)
			}
			v := string(r.Value)
			if prev, dup := values[v]; dup {
				return fmt.Errorf("I1/I7: %d: %q is at offsets %d and %d", pm.p, v, prev, off)
			}
			values[v] = off
			if r.Timestamp < lastTS && !w.createTime {
				return fmt.Errorf("I6: %d: offset %d has timestamp %d, before %d", pm.p, off, r.Timestamp, lastTS)
			}
			lastTS = r.Timestamp
			if err := w.sawRecord(pm, off, &r, "checker"); err != nil {
				return err
			}
			all[off] = rec{value: v, ts: r.Timestamp}
			off++
		}
	}
	for off := range pm.acked {
		if (off < b.LogStartOffset && w.retention == 0) || off >= b.HighWatermark {
			return fmt.Errorf("I2: %d: acknowledged offset %d outside the log [%d, %d)", pm.p, off, b.LogStartOffset, b.HighWatermark)
		}
		if _, ok := all[off]; !ok && off >= b.LogStartOffset && !pm.damaged[off] {
			return fmt.Errorf("I2: %d: acknowledged offset %d not readable (and not damaged)", pm.p, off)
		}
	}
	for _, o := range pm.oft {
		if o.offset <= b.LogStartOffset {
			continue
		}
		r, ok := all[o.offset]
		prev, pok := all[o.offset-1]
		if o.offset >= b.HighWatermark || (ok && r.ts < o.ts) || (pok && prev.ts >= o.ts) {
			return fmt.Errorf("I6: %d: offset for time %d answered %d, which is not the first offset at or after it", pm.p, o.ts, o.offset)
		}
		if w.createTime {
			// Timestamps go back: no record before the answer (above
			// the log start) may be at or after the time.
			for off := b.LogStartOffset; off < o.offset; off++ {
				if e, ok := all[off]; ok && e.ts >= o.ts {
					return fmt.Errorf("offset for time: %d: offset for time %d answered %d; offset %d before it has timestamp %d", pm.p, o.ts, o.offset, off, e.ts)
				}
			}
		}
	}
	pm.oft = pm.oft[:0]
	return nil
}

// ---- the run ----

// Run runs the world: cfg.Steps steps with faults, then the faults stop
// and some append must succeed within cfg.Liveness.
func Run(cfg Config) (res Result) {
	w := NewWorld(cfg)
	r := w.s.rng
	servers, lambdas, readers := cfg.Servers, cfg.Lambdas, cfg.Readers
	brokers, churn := cfg.Brokers, cfg.Churn
	if churn == 0 {
		churn = -1
		if r.IntN(4) == 0 {
			churn = 1
		}
	}
	solo := servers+lambdas == 0 && churn < 0 && brokers == 0 && (cfg.Solo || cfg.Seed%8 == 1)
	if solo {
		// One Lambda container alone on its partitions, as most are:
		// it parks its lease (partition/park.go), and its crashes,
		// pauses and restarts take the parked lease over.
		lambdas, readers, brokers = 1, 1+r.IntN(2), -1
	}
	if servers+lambdas == 0 && churn < 0 {
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
	if brokers == 0 {
		brokers = r.IntN(3)
		if churn > 0 {
			brokers = 2 + r.IntN(2)
			if cfg.OneChurnBroker {
				brokers = 1
			}
		}
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
	for i := range max(brokers, 0) {
		// In churn seeds brokers release after each batch: a stale
		// incarnation is closed in the background (Broker.acquire), which
		// must not do I/O outside the scheduler.
		w.AddBroker(fmt.Sprintf("b%d", i), churn > 0 || r.IntN(2) == 0)
	}
	updates := cfg.Updates
	if updates == 0 {
		updates = -1
		if r.IntN(3) == 0 {
			updates = 1
		}
	}
	w.churn, w.updates = churn > 0, updates > 0
	if w.churn || w.updates {
		w.AddAdmin("admin")
	}
	compactors := cfg.Compactors
	if compactors == 0 {
		compactors = r.IntN(3)
	}
	for i := range max(compactors, 0) {
		w.AddCompactor(fmt.Sprintf("c%d", i))
	}
	w.logf("seed %d: %d servers, %d lambdas, %d readers, %d brokers, churn %v, updates %v, %d compactors, %d partitions, segment %d B, index every %d B, retention %d B",
		cfg.Seed, servers, lambdas, readers, max(brokers, 0), w.churn, w.updates, max(compactors, 0), w.nparts, w.segB, w.idxB, w.retention)
	defer w.s.shutdown()
	err := w.runSteps()
	return w.finish(err)
}

// ackedSinceQuiet notes an append that started at start and succeeded:
// the first that started after the faults stopped ends the liveness wait.
func (w *World) ackedSinceQuiet(start time.Duration) {
	if w.quiet && start >= w.quietSince && !w.okSince {
		w.okSince = true
		w.res.Recovery = w.s.now - w.quietSince
	}
}

func (w *World) finish(err error) Result {
	w.res.Steps = w.s.step
	for _, pm := range w.parts {
		w.res.HW += pm.maxHW
	}
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
	if err := w.check(true); err != nil {
		return err
	}
	if err := w.finalTiering(); err != nil {
		return err
	}
	return w.check(true)
}

// step is one scheduling decision, then the checks.
func (w *World) step() error {
	s := w.s
	s.step++
	w.stepFrom = s.now
	s.now += s.between(0, 10*time.Millisecond)
	w.decide()
	full := w.cfg.FullCheckEvery > 0 && s.step%w.cfg.FullCheckEvery == 0
	return w.check(full)
}

// crash crashes a: its process ends, and it starts again as a new one.
func (w *World) crash(a *Actor) {
	w.res.Faults["crash"]++
	w.s.eventf("CRASH %s (in op: %v, before %s %s)", a.Name, a.inOp, a.pendOp, short(a.pendName))
	w.s.crash(a)
}

// pause pauses a past the lease TTL, or, at Config.Freeze's share,
// freezes it for 10-60 TTLs.
func (w *World) pause(a *Actor) {
	s, c := w.s, w.cfg
	a.pausedUntil = s.now + c.LeaseTTL + s.between(0, c.LeaseTTL)
	if s.chance(c.Freeze) {
		a.pausedUntil = s.now + s.between(10*c.LeaseTTL, 60*c.LeaseTTL)
		w.res.Faults["freeze"]++
	}
	w.res.Faults["pause"]++
	s.eventf("PAUSE %s until %.3fs (before %s %s)", a.Name, a.pausedUntil.Seconds(), a.pendOp, short(a.pendName))
}

func (w *World) decide() {
	s, c := w.s, w.cfg
	// Requests past their deadline are lost.
	queued := len(w.net.queue)
	for i := 0; i < len(w.net.queue); i++ {
		if w.net.queue[i].deadline <= s.now {
			s.eventf("%s", w.net.deliver(i, true))
			i--
		}
	}
	if !w.quiet && c.AtDetached > 0 {
		at := w.pick(func(a *Actor) bool { return a.pendOp == opDetached && a.pausedUntil == 0 })
		if at != nil && s.chance(c.AtDetached) {
			w.res.Faults["at detached"]++
			if s.rng.IntN(2) == 0 {
				w.crash(at)
			} else {
				w.pause(at)
			}
			return
		}
	}
	if !w.quiet {
		x := s.rng.Float64()
		switch {
		case x < c.Crash:
			if a := w.pick(func(a *Actor) bool { return a.started && !a.exited }); a != nil {
				w.crash(a)
				return
			}
		case x < c.Crash+c.Pause:
			if a := w.pick(func(a *Actor) bool { return a.started && a.pausedUntil == 0 && a.inOp && a.Kind != "reader" }); a != nil {
				w.pause(a)
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
		case x < c.Crash+c.Pause+c.ClockJump+c.Writeback+c.Deliver+c.Damage:
			if what := w.damage(); what != "" {
				w.res.Faults["damage"]++
				s.eventf("%s", what)
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
	if a.pendOp == opSleep && len(w.net.queue) == queued {
		// The end of a sleep does no I/O: it takes no time (else many
		// waiters polling would slow everyone else's operations in
		// virtual time). The sleeper wakes when its sleep ends.
		s.now = max(w.stepFrom, a.pausedUntil)
	}
	if a.pausedUntil > 0 {
		a.pausedUntil = 0
		if a.inOp && a.pendOp != opSleep {
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
