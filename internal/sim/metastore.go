package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// MetaFaults are the rates (per call) of the metadata store's faults.
type MetaFaults struct {
	Refuse     float64 // not applied; the caller gets ErrUnavailable
	LostAnswer float64 // applied; the caller gets ErrUnavailable
	Delay      float64 // the caller gets ErrUnavailable (timed out); the request lands later, after others
	Duplicate  float64 // applied and answered; a retried copy lands again later
	ReadFail   float64 // a read answers ErrUnavailable
	// Throttle: a request is throttled (ProvisionedThroughputExceeded):
	// the SDK backs off and retries, so the caller waits 50 ms to 1.5
	// lease TTLs, then the request is applied, or, half the time, refused
	// once the retries ran out.
	Throttle float64
	// LongDelay is the share of delayed requests held for 3-6 lease TTLs
	// instead of up to 2: a late commit lands after a takeover and more.
	LongDelay float64
	// NoTopicDeleteReplay: a topic delete is never delayed or duplicated
	// (while the replay bug it triggers is open: open_test.go).
	NoTopicDeleteReplay bool
	// NoLateAcquire: an acquire is never delayed or duplicated (while the
	// bug a late acquire of a deleted item triggers is open).
	NoLateAcquire bool
}

// inflight is a request the network still holds: it lands when the
// scheduler delivers it (or is lost at its deadline).
type inflight struct {
	what     string
	apply    func() error
	deadline time.Duration
}

// MetaNet is the simulated DynamoDB: the reference store (pkg/meta/mem)
// behind a network that delays, duplicates, loses answers and refuses.
type MetaNet struct {
	w      *World
	inner  meta.Store
	faults MetaFaults
	off    bool
	queue  []inflight
	// dupNext: the actor's next commit lands twice (scenarios).
	dupNext map[*Actor]bool
	// delayNext: the actor's next write whose description starts with
	// this is delayed until Deliver (scenarios).
	delayNext map[*Actor]string
	// loseNext: the actor's next write whose description starts with it
	// is applied and its answer lost (scenarios).
	loseNext map[*Actor]string

	// applied commit versions, for I4: (key, epoch, version) -> step
	applied   map[commitKey]int
	violation error

	// What each actor's last commit applied inline (answered) and last
	// partition read were of: which incarnation, at which step.
	lastCommit map[*Actor]stepOf
	lastRead   map[*Actor]stepOf
	// itemReads counts each actor's reads of partition items (Script.ItemReads).
	itemReads map[*Actor]int
}

type stepOf struct {
	id   string // topic id
	step int
}

type commitKey struct {
	k       meta.PartitionKey
	epoch   uint64
	version uint64
}

func newMetaNet(w *World, inner meta.Store, f MetaFaults) *MetaNet {
	return &MetaNet{w: w, inner: inner, faults: f, applied: map[commitKey]int{}, dupNext: map[*Actor]bool{}, delayNext: map[*Actor]string{}, loseNext: map[*Actor]string{},
		lastCommit: map[*Actor]stepOf{}, lastRead: map[*Actor]stepOf{}, itemReads: map[*Actor]int{}}
}

// Client returns the store as actor a sees it (nil: the checker, with no
// faults and no yields).
func (n *MetaNet) Client(a *Actor) *MetaClient { return &MetaClient{n: n, a: a} }

// deliver lands (or loses) one in-flight request.
func (n *MetaNet) deliver(i int, lose bool) string {
	r := n.queue[i]
	n.queue = append(n.queue[:i], n.queue[i+1:]...)
	if lose {
		return "lost in flight: " + r.what
	}
	err := r.apply()
	return fmt.Sprintf("late delivery: %s: %v", r.what, err)
}

// MetaClient is one process's connection to the simulated store. It
// implements meta.Store.
type MetaClient struct {
	n *MetaNet
	a *Actor
}

var _ meta.Store = (*MetaClient)(nil)

func (c *MetaClient) fault(p float64) bool {
	if c.a == nil || c.n.off {
		return false
	}
	return c.n.w.s.chance(p)
}

func (c *MetaClient) begin(op string, what ...string) error {
	name := ""
	if len(what) > 0 {
		name = what[0]
	}
	if !c.a.enter(op, name) {
		return fmt.Errorf("%w: sim: process crashed", meta.ErrUnavailable)
	}
	return nil
}

// throttled is the Throttle fault: it makes the caller wait, and reports
// whether the request is then refused.
func (c *MetaClient) throttled(what string) (bool, error) {
	if !c.fault(c.n.faults.Throttle) {
		return false, nil
	}
	w := c.n.w
	d := w.s.between(50*time.Millisecond, w.cfg.LeaseTTL*3/2)
	w.res.Faults["throttle"]++
	c.a.note("%s: throttled, retrying for %v", what, d)
	c.a.pausedUntil = w.s.now + d
	if !c.a.enter(opThrottled, what) {
		return true, fmt.Errorf("%w: sim: process crashed", meta.ErrUnavailable)
	}
	if w.s.chance(0.5) {
		c.a.note("%s: throttled, retries exhausted", what)
		return true, fmt.Errorf("%w: sim: throttled", meta.ErrUnavailable)
	}
	return false, nil
}

// write runs a mutation through the network's faults.
func (c *MetaClient) write(op, what string, apply func() error) error {
	if err := c.begin(op, what); err != nil {
		return err
	}
	if refused, err := c.throttled(what); refused {
		return err
	}
	f := c.n.faults
	var err error
	delayed := false
	if p, ok := c.n.delayNext[c.a]; ok && strings.HasPrefix(what, p) {
		delete(c.n.delayNext, c.a)
		delayed = true
	}
	lost := false
	if p, ok := c.n.loseNext[c.a]; ok && strings.HasPrefix(what, p) {
		delete(c.n.loseNext, c.a)
		lost = true
	}
	replayable := !(f.NoTopicDeleteReplay && strings.HasPrefix(what, "delete topic")) && !(f.NoLateAcquire && op == opAcquire)
	switch {
	case delayed:
		c.n.queue = append(c.n.queue, inflight{what: what, apply: apply, deadline: c.n.w.s.now + time.Hour})
		err = fmt.Errorf("%w: sim: timed out (request still in flight)", meta.ErrUnavailable)
		c.a.note("%s: timed out, in flight (scripted)", what)
	case lost:
		aerr := apply()
		err = fmt.Errorf("%w: sim: answer lost", meta.ErrUnavailable)
		c.a.note("%s: applied (%v), answer lost (scripted)", what, aerr)
	case c.fault(f.Refuse):
		err = fmt.Errorf("%w: sim: refused", meta.ErrUnavailable)
		c.a.note("%s: refused", what)
	case replayable && c.fault(f.Delay):
		deadline := c.n.w.s.now + c.n.w.cfg.LeaseTTL*2
		if c.n.w.s.chance(f.LongDelay) {
			deadline = c.n.w.s.now + c.n.w.s.between(3*c.n.w.cfg.LeaseTTL, 6*c.n.w.cfg.LeaseTTL)
		}
		c.n.queue = append(c.n.queue, inflight{what: what, apply: apply, deadline: deadline})
		err = fmt.Errorf("%w: sim: timed out (request still in flight)", meta.ErrUnavailable)
		c.a.note("%s: timed out, in flight", what)
	case c.fault(f.LostAnswer):
		aerr := apply()
		err = fmt.Errorf("%w: sim: answer lost", meta.ErrUnavailable)
		c.a.note("%s: applied (%v), answer lost", what, aerr)
	case op == opCommit && c.n.dupNext[c.a], replayable && c.fault(f.Duplicate):
		delete(c.n.dupNext, c.a)
		err = apply()
		c.n.queue = append(c.n.queue, inflight{what: "retry copy of " + what, apply: apply, deadline: c.n.w.s.now + c.n.w.cfg.LeaseTTL*2})
		c.a.note("%s: %v (a retried copy is in flight)", what, err)
	default:
		err = apply()
		c.a.note("%s: %v", what, err)
	}
	return err
}

func (c *MetaClient) read(what string) error {
	if err := c.begin(opMetaRead); err != nil {
		return err
	}
	if refused, err := c.throttled(what); refused {
		return err
	}
	if c.fault(c.n.faults.ReadFail) {
		c.a.note("%s: unavailable", what)
		return fmt.Errorf("%w: sim: read failed", meta.ErrUnavailable)
	}
	return nil
}

var bg = context.Background()

// CreateTopic implements meta.Store.
func (c *MetaClient) CreateTopic(ctx context.Context, t meta.TopicConfig) error {
	return c.write(opMetaW, "create topic "+t.Name+" "+t.ID, func() error {
		err := c.n.inner.CreateTopic(bg, t)
		if err == nil {
			c.n.w.onTopicCreated(t)
		}
		return err
	})
}

// Topic implements meta.Store.
func (c *MetaClient) Topic(ctx context.Context, name string) (meta.TopicConfig, error) {
	if err := c.read("topic " + name); err != nil {
		return meta.TopicConfig{}, err
	}
	return c.n.inner.Topic(bg, name)
}

// Topics implements meta.Store.
func (c *MetaClient) Topics(ctx context.Context) ([]meta.TopicConfig, error) {
	if err := c.read("topics"); err != nil {
		return nil, err
	}
	return c.n.inner.Topics(bg)
}

// DeleteTopic implements meta.Store. The check stays: a request applied
// late must never delete an incarnation it was not sent for.
func (c *MetaClient) DeleteTopic(ctx context.Context, name, id string) error {
	return c.write(opMetaW, "delete topic "+name+" "+id, func() error {
		cur, cerr := c.n.inner.Topic(bg, name)
		err := c.n.inner.DeleteTopic(bg, name, id)
		if err == nil && cerr == nil {
			if cur.ID != id && c.n.violation == nil {
				c.n.violation = fmt.Errorf("delete replay: a request to delete topic %s incarnation %s (sent before it was deleted and created again) deleted incarnation %s: its acknowledged writes are gone although nobody deleted it", name, id, cur.ID)
			}
			c.n.w.onTopicDeleted(cur)
		}
		return err
	})
}

// Partition implements meta.Store.
func (c *MetaClient) Partition(ctx context.Context, k meta.PartitionKey) (meta.Partition, error) {
	if err := c.read("get item"); err != nil {
		return meta.Partition{}, err
	}
	p, err := c.n.inner.Partition(bg, k)
	c.n.itemReads[c.a]++
	c.a.note("get item %d: %s", k.Partition, itemString(&p))
	if c.a != nil && err == nil && !itemDeleted(&p) && p.Epoch > 0 {
		c.n.lastRead[c.a] = stepOf{id: k.TopicID, step: c.n.w.s.step}
	}
	return p, err
}

// Acquire implements meta.Store.
func (c *MetaClient) Acquire(ctx context.Context, k meta.PartitionKey, owner string, now time.Time, ttl time.Duration) (meta.Acquired, error) {
	var got meta.Acquired
	var gotErr error
	err := c.write(opAcquire, fmt.Sprintf("acquire owner %s now %s", owner, c.n.w.clock(now)), func() error {
		a, err := c.n.inner.Acquire(bg, k, owner, now, ttl)
		got, gotErr = a, err
		return err
	})
	if err == nil {
		c.a.note("  acquired: %s takenOver=%v", itemString(&got.Partition), got.TakenOver)
	}
	if err != nil || gotErr != nil {
		return meta.Acquired{}, err
	}
	return got, nil
}

// Commit implements meta.Store. It also checks I4: no two commits applied
// from the same (epoch, version) of a partition.
func (c *MetaClient) Commit(ctx context.Context, p meta.Partition, release bool, now time.Time, ttl time.Duration) (err error) {
	p = clonePartition(p)
	n := c.n
	what := fmt.Sprintf("commit %d %s release=%v", p.Partition, itemString(&p), release)
	defer func() {
		if err == nil && c.a != nil {
			n.lastCommit[c.a] = stepOf{id: p.TopicID, step: n.w.s.step}
		}
	}()
	return c.write(opCommit, what, func() error {
		err := n.inner.Commit(bg, p, release, now, ttl)
		if parked := !release && now.UnixMilli() == 0 && ttl == 0; parked {
			// A parked lease (partition/park.go): applied, or fenced by
			// another writer's takeover since the parking.
			if err == nil {
				n.w.res.Faults["parked commit"]++
			} else {
				n.w.res.Faults["parked commit fenced"]++
			}
		}
		if err == nil {
			k := commitKey{k: meta.PartitionKey{Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition}, epoch: p.Epoch, version: commitVersion(&p)}
			if trackVersions {
				if at, dup := n.applied[k]; dup && n.violation == nil {
					n.violation = fmt.Errorf("I4: a second commit from epoch %d version %d applied (first at step %d): %s", k.epoch, k.version, at, what)
				}
				n.applied[k] = n.w.s.step
			}
			n.w.onCommitApplied(p)
		}
		return err
	})
}

// DeletePartition implements meta.Store.
func (c *MetaClient) DeletePartition(ctx context.Context, k meta.PartitionKey) error {
	return c.write(opMetaW, "delete partition", func() error {
		err := c.n.inner.DeletePartition(bg, k)
		if err == nil {
			// A stale process may create the item again (Acquire before
			// Verify): its epochs start over, which is no I4 violation.
			for ck := range c.n.applied {
				if ck.k == k {
					delete(c.n.applied, ck)
				}
			}
		}
		return err
	})
}

// AdvanceLogStart implements meta.Store.
func (c *MetaClient) AdvanceLogStart(ctx context.Context, k meta.PartitionKey, v int64) error {
	return c.write(opMetaW, fmt.Sprintf("advance log start %d", v), func() error { return c.n.inner.AdvanceLogStart(bg, k, v) })
}

// AdvanceColdEnd implements meta.Store.
func (c *MetaClient) AdvanceColdEnd(ctx context.Context, k meta.PartitionKey, v int64) error {
	return c.write(opMetaW, fmt.Sprintf("advance cold end %d", v), func() error { return c.n.inner.AdvanceColdEnd(bg, k, v) })
}

// PutSegment implements meta.Store.
func (c *MetaClient) PutSegment(ctx context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	return c.write(opMetaW, fmt.Sprintf("put segment [%d,%d)", e.Base, e.NextOffset), func() error { return c.n.inner.PutSegment(bg, k, e) })
}

// Segments implements meta.Store.
func (c *MetaClient) Segments(ctx context.Context, k meta.PartitionKey, from int64, limit int) ([]meta.CatalogEntry, error) {
	if err := c.read("segments"); err != nil {
		return nil, err
	}
	return c.n.inner.Segments(bg, k, from, limit)
}

// DeleteSegment implements meta.Store.
func (c *MetaClient) DeleteSegment(ctx context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	return c.write(opMetaW, fmt.Sprintf("delete segment [%d,%d)", e.Base, e.NextOffset), func() error { return c.n.inner.DeleteSegment(bg, k, e) })
}

// CommitOffsets implements meta.Store.
func (c *MetaClient) CommitOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error {
	return c.write(opMetaW, "commit offsets "+group, func() error { return c.n.inner.CommitOffsets(bg, group, offsets) })
}

// GroupOffsets implements meta.Store.
func (c *MetaClient) GroupOffsets(ctx context.Context, group, topic string) ([]meta.GroupOffset, error) {
	if err := c.read("group offsets " + group); err != nil {
		return nil, err
	}
	return c.n.inner.GroupOffsets(bg, group, topic)
}

// Close implements meta.Store.
func (c *MetaClient) Close() error { return nil }

func clonePartition(p meta.Partition) meta.Partition {
	if p.Active != nil {
		a := *p.Active
		p.Active = &a
	}
	p.Sealed = append([]meta.SegmentInfo(nil), p.Sealed...)
	return p
}

func segString(s *meta.SegmentInfo) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("(%d-%d size %d next %d)", s.Base, s.Epoch, s.Size, s.NextOffset)
}

func itemString(p *meta.Partition) string {
	sealed := ""
	for i := range p.Sealed {
		sealed += segString(&p.Sealed[i])
	}
	if sealed == "" {
		sealed = "-"
	}
	return fmt.Sprintf("{epoch %d%s owner %q next %d active %s sealed %s}", p.Epoch, versionString(p), p.Owner, p.NextOffset, segString(p.Active), sealed)
}
