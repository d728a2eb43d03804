package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
)

// Keyed, retried and conditional batches (docs/design.md "Invariants": I7
// at most once, I8 answered truthfully).
//
// A client sends each logical batch in one of four modes, chosen per batch
// by the seed:
//   - modePlain: no key (at-least-once). A retry after a 503 is a new
//     batch with its own values ("<actor>/b<n>.<try>/r<i>/"): the
//     duplicates an unknown outcome can cause are different values, which
//     the checker allows (it checks I1-I6 for them, not I7);
//   - modeKeyed: a key unique to the logical batch ("<actor>/b<n>") and a
//     hash of its records; every retry (after any error but a definite
//     refusal, and after a crash of the writer's process) sends the same
//     key and the same records, as a real client does;
//   - modeConditional: keyed, and Expected = the high watermark this
//     client last saw (from its last answer for the partition), as an
//     event-sourcing user appends; a MismatchError is final (not retried);
//   - modeReuse: the key of a batch acknowledged before (by any client, in
//     the same partition and incarnation) with other records: it must be
//     refused with ErrKeyReused and never appended.
type batchMode int

const (
	modePlain batchMode = iota
	modeKeyed
	modeConditional
	modeReuse
)

func (m batchMode) String() string {
	return [...]string{"plain", "keyed", "conditional", "reuse"}[m]
}

// idemWindow is the shortest idempotency window (docs/internals.md "The
// idempotency window", at least 10 minutes of the partition's clock): a key
// reused within it must be answered from the first commit.
const idemWindow = 10 * time.Minute

// batch is the model of one logical keyed batch.
type batch struct {
	key   string
	mode  batchMode
	actor string
	p     int // -1 until a routed batch is answered
	// routed: sent on the topic route without a partition (one record),
	// so the broker routes it by its key (Broker.ProduceWith).
	routed   bool
	id       string // incarnation it was first sent to
	vals     []string
	recs     []partition.Record
	hash     [16]byte
	expected int64 // -1: unconditional
	reuse    *batch
	first    time.Duration // when it was first sent
	tries    int           // attempts sent
	// The success answer, if any: the incarnation's model, offsets, when.
	okPart *part
	okBase int64
	okTS   int64
	okAt   time.Duration
	// forbidden, if not "", says why none of its records may ever be in
	// the committed log.
	forbidden string
	done      bool // answered definitely (success or refusal), or given up
}

// valRef names record i of batch b.
type valRef struct {
	b *batch
	i int
}

func batchHash(recs []partition.Record) [16]byte {
	h := fnv.New128a()
	for _, r := range recs {
		fmt.Fprintf(h, "%d:%s;%d:%s;%v:%d;", len(r.Key), r.Key, len(r.Value), r.Value, r.HasTimestamp, r.Timestamp)
		for _, hd := range r.Headers {
			fmt.Fprintf(h, "%d:%s;%d:%s;", len(hd.Key), hd.Key, len(hd.Value), hd.Value)
		}
	}
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

// attempt is what one try sends.
type attempt struct {
	p        int // -1: routed by the broker, which sets *to
	to       *int
	recs     []partition.Record
	key      string
	hash     [16]byte
	expected int64
}

// doFunc makes one attempt and reports the topic id of the incarnation
// its commit went to.
type doFunc func(attempt) (partition.Appended, string, error)

// makeRecords builds n records for values prefix+"r<i>/" padded, or
// prefix+"r<i>+" padded for a record keyed with its writer's name.
func (w *World) makeRecords(a *Actor, prefix string, n, padTo int) ([]partition.Record, []string) {
	recs := make([]partition.Record, n)
	vals := make([]string, n)
	for i := range recs {
		pad, keyed := 0, false
		if padTo == 0 {
			pad = w.s.rng.IntN(24)
			keyed = w.s.rng.IntN(2) == 0
		}
		// A keyed record says so in its value (simKey), so that every
		// read can check its key.
		sep := '/'
		if keyed {
			sep = '+'
			recs[i].Key = []byte(a.Name)
		}
		vals[i] = fmt.Sprintf("%sr%d%c", prefix, i, sep)
		if padTo > 0 {
			pad = max(0, padTo-len(vals[i]))
		}
		vals[i] += strings.Repeat("x", pad)
		w.attempted[vals[i]] = true
		recs[i].Value = []byte(vals[i])
		recs[i].Headers = w.simHeaders(vals[i])
		if w.createTime && w.s.rng.IntN(4) != 0 {
			// The producer's clock: behind, often by more than the
			// records before it.
			recs[i].Timestamp = max(0, a.Now().UnixMilli()-w.s.rng.Int64N(3000))
			recs[i].HasTimestamp = true
			w.prodTS[vals[i]] = recs[i].Timestamp
		}
	}
	return recs, vals
}

// simKey is the key a record with value v was sent with: its writer's
// name (what the value starts with) when the value marks it keyed
// ("<name>/b<n>/r<i>+"), else none.
func simKey(v string) []byte {
	name, rest, ok := strings.Cut(v, "/")
	if !ok {
		return nil
	}
	if _, rest, ok = strings.Cut(rest, "/"); !ok || !strings.HasPrefix(rest, "r") {
		return nil
	}
	i := 1
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i < len(rest) && rest[i] == '+' {
		return []byte(name)
	}
	return nil
}

// simHeaders are the headers a record with value v is sent with (none
// unless the seed's records carry headers): derived from the value, so
// every read can be checked against it.
func (w *World) simHeaders(v string) []segment.Header {
	if !w.headers || len(v)%3 == 0 {
		return nil
	}
	hs := []segment.Header{{Key: "src", Value: []byte(v[:min(len(v), 12)])}}
	if len(v)%3 == 2 {
		hs = append(hs, segment.Header{Key: "null"}, segment.Header{Key: "src", Value: []byte{}})
	}
	return hs
}

func sameHeaders(a, b []segment.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || (a[i].Value == nil) != (b[i].Value == nil) || string(a[i].Value) != string(b[i].Value) {
			return false
		}
	}
	return true
}

// lastSeen is the high watermark client a last saw for partition p.
func (w *World) lastSeen(a *Actor, p int) int64 {
	return w.lastHW[a.Name][p]
}

func (w *World) sawHW(a *Actor, p int, hw int64) {
	m := w.lastHW[a.Name]
	if m == nil {
		m = map[int]int64{}
		w.lastHW[a.Name] = m
	}
	m[p] = hw
}

// produce appends a batch of n records to partition p as a client does
// (mode: see batchMode).
func (w *World) produce(a *Actor, p, n, padTo int, mode batchMode, do doFunc) {
	w.produceBatch(a, p, n, padTo, mode, false, do)
}

// produceRouted is a keyed batch of one record sent on the topic route: the
// broker picks its partition by the key, and every retry must be answered
// from the first commit, wherever a topic update since routes the key.
func (w *World) produceRouted(a *Actor, padTo int, do doFunc) {
	w.produceBatch(a, -1, 1, padTo, modeKeyed, true, do)
}

func (w *World) produceBatch(a *Actor, p, n, padTo int, mode batchMode, routed bool, do doFunc) {
	if mode == modePlain {
		w.producePlain(a, p, n, padTo, do)
		return
	}
	w.batchNo++
	bn := w.batchNo
	b := &batch{key: fmt.Sprintf("%s/b%d", a.Name, bn), mode: mode, actor: a.Name, p: p, expected: -1, first: w.s.now, routed: routed}
	if len(w.parts) > 0 {
		b.id = w.topic.ID
	}
	if mode == modeReuse {
		if o := w.reuseCandidate(); o != nil {
			b.reuse, b.key, b.p = o, o.key, o.p
			if o.id == b.id && w.s.now-o.okAt < idemWindow {
				b.forbidden = fmt.Sprintf("it reuses key %q, committed at %d with other records", o.key, o.okBase)
			}
		} else {
			b.mode = modeKeyed
		}
	}
	if mode == modeConditional {
		b.expected = w.lastSeen(a, p)
	}
	b.recs, b.vals = w.makeRecords(a, fmt.Sprintf("%s/b%d/", a.Name, bn), n, padTo)
	b.hash = batchHash(b.recs)
	for i, v := range b.vals {
		w.valBatch[v] = valRef{b: b, i: i}
	}
	w.sendBatch(a, b, do)
}

// reuseCandidate is a recently acknowledged keyed batch of the current
// incarnation, or nil.
func (w *World) reuseCandidate() *batch {
	var c []*batch
	for i := len(w.okBatches) - 1; i >= 0 && len(c) < 20; i-- {
		if o := w.okBatches[i]; o.id == w.topic.ID && len(w.parts) > 0 {
			c = append(c, o)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[w.s.rng.IntN(len(c))]
}

// resumePending retries the keyed batch a's previous process was sending
// when it crashed, as the client whose request failed with it does.
func (w *World) resumePending(a *Actor, do doFunc) {
	b := w.pending[a.Name]
	if b == nil || b.done || w.cfg.RetryFor <= 0 || w.s.now-b.first >= w.cfg.RetryFor {
		delete(w.pending, a.Name)
		return
	}
	a.note("RESUME %s batch %s after a crash", b.mode, b.key)
	w.sendBatch(a, b, do)
}

// definite reports whether err is a final refusal of a keyed batch (not
// retried): a mismatch, a reused key, a topic that is gone or a request
// that is invalid.
func definite(err error) bool {
	var me *partition.MismatchError
	return errors.As(err, &me) || errors.Is(err, partition.ErrKeyReused) ||
		errors.Is(err, broker.ErrTopicNotFound) || errors.Is(err, broker.ErrInvalid) ||
		errors.Is(err, partition.ErrDeleted)
}

func (w *World) sendBatch(a *Actor, b *batch, do doFunc) {
	w.pending[a.Name] = b
	defer func() {
		if w.pending[a.Name] == b {
			delete(w.pending, a.Name)
		}
	}()
	backoff := 20 * time.Millisecond
	for {
		try := b.tries
		b.tries++
		a.note("APPEND %s %s try %d to %d: %d records, expected %d", b.mode, b.key, try, b.p, len(b.recs), b.expected)
		w.res.Appends++
		start := w.s.now
		at := attempt{p: b.p, recs: b.recs, key: b.key, hash: b.hash, expected: b.expected}
		if b.routed {
			at.p, at.to = -1, new(int)
		}
		app, id, err := do(at)
		if err == nil {
			if b.routed {
				b.p = *at.to
			}
			w.res.AppendOK++
			b.done = true
			a.note("APPEND %s try %d acked: %d offsets %d..%d ts %d replayed %v (%s)", b.key, try, b.p, app.BaseOffset, app.BaseOffset+int64(len(b.recs))-1, app.Timestamp, app.Replayed, id)
			w.ackedSinceQuiet(start)
			w.batchAcked(a, b, try, id, app)
			return
		}
		a.note("APPEND %s try %d failed: %v", b.key, try, err)
		if definite(err) {
			b.done = true
			w.batchRefused(a, b, try, err)
			a.pausedUntil = w.s.now + w.s.between(20*time.Millisecond, 300*time.Millisecond)
			return
		}
		if w.cfg.RetryFor <= 0 || w.s.now-b.first >= w.cfg.RetryFor {
			// The client gives up: the outcome stays unknown.
			b.done = true
			a.pausedUntil = w.s.now + w.s.between(20*time.Millisecond, 300*time.Millisecond)
			return
		}
		a.pausedUntil = w.s.now + backoff/2 + w.s.between(0, backoff)
		backoff = min(backoff*2, 800*time.Millisecond)
		w.res.Faults["retry"]++
		w.res.Faults["retry keyed"]++
		a.enter(opBackoff, "")
	}
}

// batchAcked checks a success answer for keyed batch b (I8, conditional
// appends) and puts it into the model.
func (w *World) batchAcked(a *Actor, b *batch, try int, id string, app partition.Appended) {
	what := fmt.Sprintf("%s's %s batch %s (try %d) to %d", a.Name, b.mode, b.key, try, b.p)
	if b.forbidden != "" && id == b.id {
		w.fail(fmt.Errorf("I8: %s was answered success (offset %d, replayed %v), but %s: it must be refused with ErrKeyReused", what, app.BaseOffset, app.Replayed, b.forbidden))
		return
	}
	if b.reuse != nil && app.Replayed && id == b.reuse.id && b.reuse.okPart != nil {
		w.fail(fmt.Errorf("I8: %s (other records than key %q's first batch) was answered Replayed with offset %d", what, b.key, app.BaseOffset))
		return
	}
	if app.Replayed && try == 0 && b.reuse == nil {
		w.fail(fmt.Errorf("I8: %s was answered Replayed (offset %d) on its first attempt: its key was never sent before", what, app.BaseOffset))
		return
	}
	if b.expected >= 0 && app.BaseOffset != b.expected && id == b.id {
		w.fail(fmt.Errorf("conditional append: %s with expected offset %d was answered success at offset %d (replayed %v)", what, b.expected, app.BaseOffset, app.Replayed))
		return
	}
	w.sawHW(a, b.p, app.BaseOffset+int64(len(b.recs)))
	if len(w.parts) == 0 || w.topic.ID != id {
		w.acked(a, b.p, id, b.vals, b.recs, app)
		return
	}
	pm := w.parts[b.p]
	b.okPart, b.okBase, b.okTS, b.okAt = pm, app.BaseOffset, app.Timestamp, w.s.now
	if base, ok := pm.bbase[b]; ok && base != app.BaseOffset {
		w.fail(fmt.Errorf("I8: %s was answered offset %d (replayed %v); its records are at %d in the committed log", what, app.BaseOffset, app.Replayed, base))
		return
	}
	if b.reuse == nil {
		w.okBatches = append(w.okBatches, b)
	}
	w.acked(a, b.p, id, b.vals, b.recs, app)
}

// batchRefused checks a definite refusal of keyed batch b.
func (w *World) batchRefused(a *Actor, b *batch, try int, err error) {
	what := fmt.Sprintf("%s's %s batch %s (try %d) to %d", a.Name, b.mode, b.key, try, b.p)
	var me *partition.MismatchError
	switch {
	case errors.As(err, &me):
		w.sawHW(a, b.p, me.HighWatermark)
		if b.expected < 0 {
			w.fail(fmt.Errorf("I8: %s, unconditional, was refused with %v", what, err))
			return
		}
		if me.HighWatermark == b.expected || me.Expected != b.expected {
			w.fail(fmt.Errorf("I8: %s with expected offset %d was refused untruthfully: %v", what, b.expected, err))
			return
		}
		if len(w.parts) > 0 && w.topic.ID == b.id {
			if hw := w.hw(b.p); me.HighWatermark > hw {
				w.fail(fmt.Errorf("I8: %s was refused with high watermark %d, past the committed one (%d)", what, me.HighWatermark, hw))
				return
			}
		}
		if try == 0 && b.forbidden == "" {
			b.forbidden = fmt.Sprintf("its only attempt was refused (%v)", err)
			w.checkForbidden(b)
		}
	case errors.Is(err, partition.ErrKeyReused):
		if b.reuse == nil {
			w.fail(fmt.Errorf("I8: %s was refused with %v, but its key was only ever sent with these records", what, err))
			return
		}
		if b.forbidden == "" && try == 0 {
			b.forbidden = fmt.Sprintf("its only attempt was refused (%v)", err)
			w.checkForbidden(b)
		}
	}
}

// checkForbidden: a batch that became forbidden after the scanner saw it.
func (w *World) checkForbidden(b *batch) {
	for _, pm := range w.parts {
		if base, ok := pm.bbase[b]; ok && pm.key.TopicID == b.id {
			w.fail(fmt.Errorf("I8: %s's batch %s to %d is in the committed log at %d, but %s", b.actor, b.key, b.p, base, b.forbidden))
		}
	}
}

// producePlain is a batch with no key (at-least-once): every attempt has
// its own values, so a retry of an attempt whose outcome was unknown may
// duplicate it under other values, and every record read can be traced to
// one attempt.
func (w *World) producePlain(a *Actor, p, n, padTo int, do doFunc) {
	w.batchNo++
	bn := w.batchNo
	first := w.s.now
	backoff := 20 * time.Millisecond
	for try := 0; ; try++ {
		prefix := fmt.Sprintf("%s/b%d/", a.Name, bn)
		if try > 0 {
			prefix = fmt.Sprintf("%s/b%d.%d/", a.Name, bn, try)
		}
		recs, vals := w.makeRecords(a, prefix, n, padTo)
		a.note("APPEND b%d.%d to %d: %d records", bn, try, p, n)
		w.res.Appends++
		start := w.s.now
		app, id, err := do(attempt{p: p, recs: recs, expected: -1})
		if err == nil {
			w.res.AppendOK++
			a.note("APPEND b%d.%d acked: %d offsets %d..%d ts %d (%s)", bn, try, p, app.BaseOffset, app.BaseOffset+int64(n)-1, app.Timestamp, id)
			w.ackedSinceQuiet(start)
			if app.Replayed {
				w.fail(fmt.Errorf("I8: %s's batch b%d.%d to %d has no key and was answered Replayed (offset %d)", a.Name, bn, try, p, app.BaseOffset))
			}
			w.sawHW(a, p, app.BaseOffset+int64(n))
			w.acked(a, p, id, vals, recs, app)
			return
		}
		a.note("APPEND b%d.%d failed: %v", bn, try, err)
		if !retryable(err) || w.cfg.RetryFor <= 0 || w.s.now-first >= w.cfg.RetryFor {
			// The client gives up (or backs off before its next request).
			a.pausedUntil = w.s.now + w.s.between(20*time.Millisecond, 300*time.Millisecond)
			return
		}
		a.pausedUntil = w.s.now + backoff/2 + w.s.between(0, backoff)
		backoff = min(backoff*2, 800*time.Millisecond)
		w.res.Faults["retry"]++
		a.enter(opBackoff, "")
	}
}

// scanCommitted is the incremental I7/I8 check: it reads the offsets
// committed since the last step through a fresh reader (durable state
// only) and finds every value's place: a value at two offsets is a batch
// committed twice (I7); a keyed batch's records must be contiguous, where
// its success answer said, at its expected offset if conditional, and
// absent if it was refused.
func (w *World) scanCommitted(pm *part, start, hw int64, open func() (*partition.Log, error)) error {
	if pm.scanTo < start {
		pm.scanTo = start
	}
	if pm.scanTo >= hw {
		return nil
	}
	l, err := open()
	if err != nil {
		return err
	}
	for off := pm.scanTo; off < hw; {
		recs, _, err := w.readAt(pm, l, w.net.Client(nil), objects{inner: w.objs}, off, 1000, 1<<20)
		if err != nil {
			var oor *partition.OutOfRangeError
			if next, ok := damagedNext(err); ok && w.damageExplains(pm, err) && next > off {
				off = next
				pm.scanTo = off
				continue
			}
			if errors.As(err, &oor) && oor.LogStartOffset > off {
				off = oor.LogStartOffset
				pm.scanTo = off
				continue
			}
			// Unreadable now: the I2 checks judge it; scan again later.
			return nil
		}
		if len(recs) == 0 {
			return nil
		}
		for _, r := range recs {
			if r.Offset != off {
				return fmt.Errorf("I1: %d: scan from %d: offset %d where %d was expected", pm.p, pm.scanTo, r.Offset, off)
			}
			if err := w.placeValue(pm, off, string(r.Value)); err != nil {
				return err
			}
			off++
			pm.scanTo = off
		}
	}
	return nil
}

func (w *World) placeValue(pm *part, off int64, v string) error {
	if ref, ok := w.valBatch[v]; ok {
		if other := w.placed[v]; other != nil && other != pm && other.key.TopicID == pm.key.TopicID {
			return fmt.Errorf("I7: batch %s (%s, %d tries) is committed twice: record %d (%q) in partitions %d and %d", ref.b.key, ref.b.mode, ref.b.tries, ref.i, v, other.p, pm.p)
		}
		w.placed[v] = pm
	}
	if prev, ok := pm.at[v]; ok && prev != off {
		if ref, ok := w.valBatch[v]; ok {
			return fmt.Errorf("I7: %d: batch %s (%s, %d tries) is committed twice: record %d (%q) at offsets %d and %d", pm.p, ref.b.key, ref.b.mode, ref.b.tries, ref.i, v, prev, off)
		}
		return fmt.Errorf("I1/I7: %d: %q is at offsets %d and %d", pm.p, v, prev, off)
	}
	pm.at[v] = off
	ref, ok := w.valBatch[v]
	if !ok {
		return nil
	}
	b := ref.b
	base := off - int64(ref.i)
	if old, ok := pm.bbase[b]; ok && old != base {
		return fmt.Errorf("I7/I8: %d: batch %s is not one contiguous batch: record %d (%q) at %d, its record 0 at %d", pm.p, b.key, ref.i, v, off, old)
	}
	pm.bbase[b] = base
	if pm.key.TopicID != b.id {
		return nil // a retry after the topic was created again
	}
	if b.forbidden != "" {
		return fmt.Errorf("I8: %d: %s's batch %s is in the committed log at %d, but %s", pm.p, b.actor, b.key, base, b.forbidden)
	}
	if b.expected >= 0 && base != b.expected {
		return fmt.Errorf("conditional append: %d: %s's batch %s with expected offset %d is committed at %d", pm.p, b.actor, b.key, b.expected, base)
	}
	if b.okPart == pm && b.okBase != base {
		return fmt.Errorf("I8: %d: %s's batch %s was answered offset %d; its records are at %d", pm.p, b.actor, b.key, b.okBase, base)
	}
	return nil
}
