// Package compactor moves sealed hot segments to the cold tier and enforces
// retention. The compactor Lambda and the local server both call Run.
//
// For each partition, one pass does, in order:
//
//  1. Finalize: each sealed segment past the cold end (oldest first) is read
//     from the hot tier below its committed length, verified (every CRC,
//     dense offsets), turned into one artifact (log, index, time index,
//     footer), uploaded with put-if-absent, verified in the store (size and
//     footer), recorded with a conditional catalog put, and only then is
//     the partition's cold end advanced past it and the entry marked cold
//     (its ColdMs: when readers were switched to it). A segment already in
//     the catalog (an earlier pass's) is not read again.
//  2. Retention: whole segments, oldest first, by time (last timestamp
//     older than retention_ms) and by bytes (while the partition is over
//     retention_bytes by at least the segment's size); the log start offset
//     is advanced with a monotonic conditional write. Every offset range
//     counts once: its catalog entry, or else its hot segment.
//  3. Hot cleanup: files of tiered segments, a grace period after they
//     were marked cold; files below the log start; and files no committed
//     state names, once their epoch is older than the partition's (no
//     commit can ever name them).
//  4. Cold cleanup: artifacts and catalog entries below the log start.
//
// # Quarantine
//
// A sealed segment that cannot be read or verified (its hot file is shorter
// than its committed length, a CRC fails, the cold tier holds something
// else under its name) is quarantined: logged at ERROR with its topic,
// partition and segment, and counted in Stats.Quarantined, and the pass goes
// on. The segments after it are still finalized into the catalog, but the
// cold end stays below the quarantined one, so readers keep reading it and
// everything after it from the hot tier (whose reader reports the damaged
// records and serves the rest), and none of their hot files is deleted.
// Retention still runs, over the catalog and the hot segments. Every pass
// retries the quarantined segment (a transient read error heals, and the
// cold end then moves past it and the cataloged segments after it at once).
// If it stays bad, it stays hot until retention moves the log start past
// it; then the cold end passes it with nothing uploaded, as for any segment
// retention dropped, and hot cleanup removes its files. Errors of the stores
// (object store, metadata) are not quarantine: they stop the partition's
// pass, which the next pass retries.
//
// Each partition pass and each of its steps runs in a span of the context's
// tracer (package trace; none by default).
//
// Every step is idempotent and ordered so that a crash anywhere leaves
// state a re-run converges from: an uploaded artifact without a catalog
// entry is found again by put-if-absent; a catalog entry without the cold
// end advanced is put again (same key: success); a cold end is advanced
// only after its entry exists; a file is deleted only when nothing readable
// depends on it. Two compactors may run at once: put-if-absent and the
// catalog's conditional put make one artifact and one entry.
package compactor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
	"github.com/tierlog/tierlog/pkg/trace"
)

// Steps a test can crash at (Config.Hook).
const (
	StepUpload      = "upload"       // before put-if-absent
	StepUploaded    = "uploaded"     // after the artifact is stored
	StepCataloged   = "cataloged"    // after the catalog entry is put
	StepColdEnd     = "cold_end"     // after the cold end advanced
	StepColdMarked  = "cold_marked"  // after a catalog entry's ColdMs is set
	StepLogStart    = "log_start"    // after the log start advanced
	StepHotDeleted  = "hot_deleted"  // after a hot segment's files are removed
	StepColdDeleted = "cold_deleted" // after an artifact is deleted, before its entry
)

// Config configures a Compactor.
type Config struct {
	Meta    meta.Store
	Objects objstore.Store
	// HotDir is the hot tier root (the broker's data dir).
	HotDir string
	// FS is the file system of the hot tier: every read, listing, stat and
	// removal of hot files goes through it. Default segment.OSFS{}.
	FS segment.FS
	// Grace is how long the hot files of a tiered segment stay after
	// readers were switched to the cold tier (the entry's ColdMs), so
	// readers that saw it hot finish. Default 30s.
	Grace time.Duration
	// IdempotencyWindow is how long produce remembers batch keys: a
	// segment's batch file (partition's idempotency window) stays that long
	// after its last write, plus Grace, even once the segment's other hot
	// files are gone. Default partition.DefaultIdempotencyWindow.
	IdempotencyWindow time.Duration
	// IndexIntervalBytes is the sparse index spacing of artifacts.
	IndexIntervalBytes int
	Now                func() time.Time
	Logger             *slog.Logger
	// Hook, if set, is called after each step; an error stops the pass
	// there, as a crash would. For crash-point tests.
	Hook func(step string, k meta.PartitionKey, base int64) error
	// Metrics counts finalized segments. Nil: none.
	Metrics *metrics.Set
}

// Stats count what a pass did.
type Stats struct {
	Partitions       int
	Finalized        int   // segments uploaded and cataloged
	BytesUploaded    int64 // artifact bytes
	FinalizeSeconds  float64
	HotFilesDeleted  int
	ObjectsDeleted   int
	LogStartAdvanced int
	// Quarantined counts sealed segments that failed verification in this
	// pass (see the package doc): nonzero is an alarm. A segment that stays
	// bad is counted again by every pass.
	Quarantined int
}

func (s *Stats) add(o Stats) {
	s.Partitions += o.Partitions
	s.Finalized += o.Finalized
	s.BytesUploaded += o.BytesUploaded
	s.FinalizeSeconds += o.FinalizeSeconds
	s.HotFilesDeleted += o.HotFilesDeleted
	s.ObjectsDeleted += o.ObjectsDeleted
	s.LogStartAdvanced += o.LogStartAdvanced
	s.Quarantined += o.Quarantined
}

// Compactor is safe for concurrent use; passes over one partition may
// overlap (as two Lambda invocations may).
type Compactor struct {
	cfg Config
}

// New returns a Compactor.
func New(cfg Config) (*Compactor, error) {
	if cfg.Meta == nil || cfg.Objects == nil || cfg.HotDir == "" {
		return nil, errors.New("compactor: Meta, Objects and HotDir are required")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.IdempotencyWindow <= 0 {
		cfg.IdempotencyWindow = partition.DefaultIdempotencyWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FS == nil {
		cfg.FS = segment.OSFS{}
	}
	return &Compactor{cfg: cfg}, nil
}

// Run makes one pass over every partition of every topic. It goes on past
// a failing partition and returns the errors joined.
func (c *Compactor) Run(ctx context.Context) (Stats, error) {
	topics, err := c.cfg.Meta.Topics(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("compactor: list topics: %w", err)
	}
	var total Stats
	var errs []error
	for _, t := range topics {
		for p := 0; p < t.Partitions; p++ {
			st, err := c.Partition(ctx, t, p)
			total.add(st)
			if err != nil {
				errs = append(errs, fmt.Errorf("compactor: %s/%d: %w", t.Name, p, err))
			}
			if ctx.Err() != nil {
				return total, errors.Join(append(errs, ctx.Err())...)
			}
		}
	}
	return total, errors.Join(errs...)
}

func (c *Compactor) hook(step string, k meta.PartitionKey, base int64) error {
	if c.cfg.Hook == nil {
		return nil
	}
	return c.cfg.Hook(step, k, base)
}

// Partition makes one pass over one partition.
func (c *Compactor) Partition(ctx context.Context, t meta.TopicConfig, p int) (st Stats, err error) {
	err = trace.Capture(ctx, trace.SpanCompactPart, func(ctx context.Context) error {
		st, err = c.partition(ctx, t, p)
		return err
	})
	return st, err
}

func (c *Compactor) partition(ctx context.Context, t meta.TopicConfig, p int) (Stats, error) {
	k := meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p}
	st := Stats{Partitions: 1}
	item, err := c.cfg.Meta.Partition(ctx, k)
	if err != nil {
		return st, err
	}
	if item.Epoch == 0 || item.Deleted {
		return st, nil // never written, or its topic is being deleted
	}
	dir := partition.Dir(c.cfg.HotDir, k)

	// 1. Finalize sealed segments in order.
	coldEnd, err := c.tierSealed(ctx, k, dir, item, &st)
	if err != nil {
		return st, err
	}

	// The catalog, then the item again: another pass may have tiered more,
	// and a producer rolled, since the item was read. Read in this order,
	// whatever the catalog holds is either in it or (newer) in the item;
	// retain counts a range found in both once.
	catalog, err := c.cfg.Meta.Segments(ctx, k, -1, 0)
	if err != nil {
		return st, fmt.Errorf("read catalog: %w", err)
	}
	if item, err = c.cfg.Meta.Partition(ctx, k); err != nil {
		return st, fmt.Errorf("read partition: %w", err)
	}
	if item.Epoch == 0 || item.Deleted {
		return st, nil
	}
	coldEnd = max(coldEnd, item.ColdEnd)
	if err := c.markCold(ctx, k, catalog, coldEnd); err != nil {
		return st, err
	}

	// 2. Retention.
	logStart := item.LogStartOffset
	if ns := c.retain(t, item, catalog); ns > logStart {
		err := trace.Capture(ctx, trace.SpanRetention, func(ctx context.Context) error {
			return c.cfg.Meta.AdvanceLogStart(ctx, k, ns)
		})
		if err != nil {
			return st, fmt.Errorf("advance log start: %w", err)
		}
		c.cfg.Logger.Info("retention advanced log start", "topic", t.Name, "partition", p, "from", logStart, "to", ns)
		logStart = ns
		st.LogStartAdvanced++
		if m := c.cfg.Metrics; m != nil {
			m.LogStartAdvances.Add(1)
		}
		if err := c.hook(StepLogStart, k, ns); err != nil {
			return st, err
		}
	}

	// 3. Hot cleanup.
	err = trace.Capture(ctx, trace.SpanHotCleanup, func(context.Context) error {
		n, err := c.cleanHot(k, dir, item, coldEnd, logStart, catalog)
		st.HotFilesDeleted += n
		return err
	})
	if err != nil {
		return st, err
	}

	// 4. Cold cleanup below the log start. It does not wait a grace: a
	// fetch that read the catalog just before and finds the artifact or
	// the entry gone re-reads the partition's bounds and answers out of
	// range (the broker's part), which is the right answer below the log
	// start. Waiting would need the time the log start passed the entry,
	// and no store records it.
	if len(catalog) == 0 || catalog[0].NextOffset > logStart {
		return st, nil // nothing to delete: no span
	}
	err = trace.Capture(ctx, trace.SpanColdCleanup, func(ctx context.Context) error {
		for _, e := range catalog {
			if e.NextOffset > logStart {
				break
			}
			if err := c.cfg.Objects.Delete(ctx, e.Key); err != nil {
				return fmt.Errorf("delete %s: %w", e.Key, err)
			}
			if err := c.hook(StepColdDeleted, k, e.Base); err != nil {
				return err
			}
			if err := c.cfg.Meta.DeleteSegment(ctx, k, e); err != nil {
				return fmt.Errorf("delete catalog entry %d: %w", e.Base, err)
			}
			st.ObjectsDeleted++
		}
		return nil
	})
	return st, err
}

// tierSealed finalizes item's sealed segments past its cold end, oldest
// first, quarantining any it cannot verify, and advances the cold end past
// each one in the catalog (or dropped by retention) up to the first
// quarantined one. It returns the cold end reached.
func (c *Compactor) tierSealed(ctx context.Context, k meta.PartitionKey, dir string, item meta.Partition, st *Stats) (int64, error) {
	coldEnd := item.ColdEnd
	var todo []meta.SegmentInfo
	for _, s := range item.Sealed {
		if s.NextOffset > coldEnd {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return coldEnd, nil
	}
	// Segments an earlier pass cataloged already (one that stopped before
	// the cold end advance, or the ones after a quarantined segment) are
	// not read and uploaded again.
	done, err := c.cfg.Meta.Segments(ctx, k, coldEnd, 0)
	if err != nil {
		return coldEnd, fmt.Errorf("read catalog: %w", err)
	}
	gap := false // a segment before this one is quarantined
	for _, s := range todo {
		cataloged := false
		switch {
		case s.NextOffset <= item.LogStartOffset:
			// Retention already dropped it: nothing to upload.
		case hasEntry(done, s):
			cataloged = true
		default:
			ok, err := c.finalizeOrQuarantine(ctx, k, dir, s, st)
			if err != nil {
				return coldEnd, err
			}
			if !ok {
				gap = true
				continue
			}
			cataloged = true
		}
		if gap {
			continue // cataloged, but readers stay hot until the gap heals
		}
		if err := c.cfg.Meta.AdvanceColdEnd(ctx, k, s.NextOffset); err != nil {
			return coldEnd, fmt.Errorf("advance cold end: %w", err)
		}
		coldEnd = s.NextOffset
		if err := c.hook(StepColdEnd, k, s.Base); err != nil {
			return coldEnd, err
		}
		if cataloged {
			// Readers go to the cold tier from now on: the hot files'
			// grace counts from here. A crash before this mark leaves
			// ColdMs 0, and the next pass marks it (markCold): deletion
			// is only delayed.
			if err := c.markSegmentCold(ctx, k, s.NextOffset, s.Base, c.cfg.Now().UnixMilli()); err != nil {
				return coldEnd, err
			}
		}
	}
	return coldEnd, nil
}

// finalizeOrQuarantine finalizes s and reports whether it is in the
// catalog now; false means it is quarantined (logged and counted). A
// store's error is returned.
func (c *Compactor) finalizeOrQuarantine(ctx context.Context, k meta.PartitionKey, dir string, s meta.SegmentInfo, st *Stats) (bool, error) {
	start := time.Now()
	var n int64
	err := trace.Capture(ctx, trace.SpanFinalize, func(ctx context.Context) (err error) {
		n, err = c.finalize(ctx, k, dir, s)
		return err
	})
	var bad *badSegmentError
	if errors.As(err, &bad) {
		// Another pass may have cataloged it meanwhile, and its files
		// may be gone after the grace: not damage.
		es, rerr := c.cfg.Meta.Segments(ctx, k, s.Base, 1)
		if rerr != nil {
			return false, fmt.Errorf("read catalog: %w", rerr)
		}
		if hasEntry(es, s) {
			return true, nil
		}
		st.Quarantined++
		if m := c.cfg.Metrics; m != nil {
			m.SegmentsQuarantined.Add(1)
		}
		id := segment.ID{Base: s.Base, Epoch: s.Epoch}
		c.cfg.Logger.ErrorContext(ctx, "compactor: segment quarantined: kept in the hot tier, not tiered, retried every pass",
			"topic", k.Topic, "topic_id", k.TopicID, "partition", k.Partition, "segment", id.String(),
			"base", s.Base, "next_offset", s.NextOffset, "size", s.Size, "err", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st.Finalized++
	st.BytesUploaded += n
	if m := c.cfg.Metrics; m != nil {
		m.SegmentsFinalized.Add(1)
		m.BytesFinalized.Add(n)
	}
	st.FinalizeSeconds += time.Since(start).Seconds()
	return true, nil
}

// hasEntry reports whether entries hold the catalog entry of hot segment s.
func hasEntry(entries []meta.CatalogEntry, s meta.SegmentInfo) bool {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].NextOffset >= s.NextOffset })
	return i < len(entries) && entries[i].NextOffset == s.NextOffset && entries[i].Base == s.Base && entries[i].Epoch == s.Epoch
}

// markCold sets ColdMs on every entry of catalog the cold end has passed
// that has none (a pass stopped between the cold end advance and the mark,
// or the entry predates marks), and in catalog too, so this pass keeps
// their hot files.
func (c *Compactor) markCold(ctx context.Context, k meta.PartitionKey, catalog []meta.CatalogEntry, coldEnd int64) error {
	for i := range catalog {
		e := &catalog[i]
		if e.NextOffset > coldEnd || e.ColdMs != 0 {
			continue
		}
		ms := c.cfg.Now().UnixMilli()
		if err := c.markSegmentCold(ctx, k, e.NextOffset, e.Base, ms); err != nil {
			return err
		}
		e.ColdMs = ms // the first mark wins in the store; ours is no earlier
	}
	return nil
}

func (c *Compactor) markSegmentCold(ctx context.Context, k meta.PartitionKey, next, base, ms int64) error {
	err := c.cfg.Meta.MarkSegmentCold(ctx, k, next, ms)
	if err != nil && !errors.Is(err, meta.ErrNotFound) { // not found: cold cleanup removed it
		return fmt.Errorf("mark segment %d cold: %w", base, err)
	}
	return c.hook(StepColdMarked, k, base)
}

// badSegmentError is a finalize failure that lies with the segment itself,
// not with the stores: its hot file cannot be read or verified, or the
// cold tier holds something else under its name. The segment is
// quarantined and the pass goes on.
type badSegmentError struct{ err error }

func (e *badSegmentError) Error() string { return e.err.Error() }
func (e *badSegmentError) Unwrap() error { return e.err }

// finalize uploads sealed segment s and records it in the catalog. It
// returns the artifact size.
func (c *Compactor) finalize(ctx context.Context, k meta.PartitionKey, dir string, s meta.SegmentInfo) (int64, error) {
	id := segment.ID{Base: s.Base, Epoch: s.Epoch}
	key := tier.ObjectKey(k, id)
	log, err := c.readPrefix(id.Path(dir, segment.KindLog), s.Size)
	if err != nil {
		return 0, &badSegmentError{fmt.Errorf("read sealed segment %s: %w", id, err)}
	}
	obj, f, err := tier.Build(log, id, c.cfg.IndexIntervalBytes)
	if err != nil {
		return 0, &badSegmentError{fmt.Errorf("build artifact of %s: %w", id, err)}
	}
	if f.NextOffset != s.NextOffset {
		return 0, &badSegmentError{fmt.Errorf("%w: %s holds offsets to %d, committed %d", segment.ErrCorrupt, id, f.NextOffset, s.NextOffset)}
	}
	if err := c.hook(StepUpload, k, s.Base); err != nil {
		return 0, err
	}
	size := int64(len(obj))
	err = c.cfg.Objects.PutIfAbsent(ctx, key, bytes.NewReader(obj), size)
	if err != nil && !errors.Is(err, objstore.ErrExists) {
		return 0, fmt.Errorf("upload %s: %w", key, err)
	}
	// Stored now, by us or by an earlier or concurrent pass: either way it
	// must be exactly this artifact.
	if err := c.verify(ctx, key, size, f); err != nil {
		if errors.Is(err, tier.ErrCorrupt) {
			// Put-if-absent kept an object that is not this artifact.
			return 0, &badSegmentError{err}
		}
		return 0, err
	}
	if err := c.hook(StepUploaded, k, s.Base); err != nil {
		return 0, err
	}
	if err := c.cfg.Meta.PutSegment(ctx, k, f.Entry(key, size, c.cfg.Now().UnixMilli())); err != nil {
		err = fmt.Errorf("catalog %s: %w", key, err)
		if errors.Is(err, meta.ErrConflict) {
			return 0, &badSegmentError{err} // another entry ends at this offset
		}
		return 0, err
	}
	if err := c.hook(StepCataloged, k, s.Base); err != nil {
		return 0, err
	}
	return size, nil
}

// verify checks the stored object's size and footer against what was built.
func (c *Compactor) verify(ctx context.Context, key string, size int64, want tier.Footer) error {
	info, err := c.cfg.Objects.Head(ctx, key)
	if err != nil {
		return fmt.Errorf("verify %s: %w", key, err)
	}
	if info.Size != size {
		return fmt.Errorf("%w: %s is %d bytes, built %d", tier.ErrCorrupt, key, info.Size, size)
	}
	b, err := c.cfg.Objects.Get(ctx, key, size-tier.FooterSize, tier.FooterSize)
	if err != nil {
		return fmt.Errorf("verify %s: %w", key, err)
	}
	got, err := tier.DecodeFooter(b, size)
	if err != nil {
		return fmt.Errorf("verify %s: %w", key, err)
	}
	if got != want {
		return fmt.Errorf("%w: %s footer %+v, built %+v", tier.ErrCorrupt, key, got, want)
	}
	return nil
}

func (c *Compactor) readPrefix(path string, n int64) ([]byte, error) {
	f, err := c.cfg.FS.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s is shorter than its committed %d bytes", segment.ErrCorrupt, path, n)
		}
		return nil, err
	}
	return b, nil
}

// seg is a segment as retention sees it, cold or hot.
type seg struct {
	next, size, lastTS int64
}

// retain returns the log start retention allows: it drops whole segments,
// oldest first, never the active one. It counts every offset range once:
// by its catalog entry if it has one, else by item's hot segment. item must
// be read after the catalog, so a segment tiered in between is in one of
// the two (a pass that counts a segment twice believes the partition is
// larger than it is and drops one segment too many).
func (c *Compactor) retain(t meta.TopicConfig, item meta.Partition, catalog []meta.CatalogEntry) int64 {
	var segs []seg
	for _, e := range catalog {
		if e.NextOffset > item.LogStartOffset {
			segs = append(segs, seg{next: e.NextOffset, size: e.LogLen, lastTS: e.LastTS})
		}
	}
	// cataloged reports whether an entry holds offset base (or starts at
	// it: an empty active segment).
	cataloged := func(base int64) bool {
		i := sort.Search(len(catalog), func(i int) bool { return catalog[i].NextOffset > base })
		return i < len(catalog) && catalog[i].Base <= base
	}
	for _, s := range item.Sealed {
		if s.NextOffset > item.LogStartOffset && !cataloged(s.Base) {
			segs = append(segs, seg{next: s.NextOffset, size: s.Size, lastTS: s.LastTS})
		}
	}
	// Hot segments past a quarantined one are cataloged while the
	// quarantined one is not: the order is by offset, not by tier.
	sort.Slice(segs, func(i, j int) bool { return segs[i].next < segs[j].next })
	total := int64(0)
	for _, s := range segs {
		total += s.size
	}
	if a := item.Active; a != nil && !cataloged(a.Base) {
		total += a.Size
	}
	start := item.LogStartOffset
	cutoff := c.cfg.Now().UnixMilli() - t.RetentionMs
	for _, s := range segs {
		byTime := t.RetentionMs > 0 && s.lastTS < cutoff
		byBytes := t.RetentionBytes > 0 && total-t.RetentionBytes >= s.size
		if !byTime && !byBytes {
			break
		}
		start = s.next
		total -= s.size
	}
	return start
}

// cleanHot removes hot files nothing readable depends on, and returns how
// many segments' files it removed.
func (c *Compactor) cleanHot(k meta.PartitionKey, dir string, item meta.Partition, coldEnd, logStart int64, catalog []meta.CatalogEntry) (int, error) {
	ents, err := c.cfg.FS.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	committed := map[segment.ID]meta.SegmentInfo{}
	for _, s := range item.Sealed {
		committed[segment.ID{Base: s.Base, Epoch: s.Epoch}] = s
	}
	if item.Active != nil {
		committed[segment.ID{Base: item.Active.Base, Epoch: item.Active.Epoch}] = *item.Active
	}
	tiered := map[segment.ID]meta.CatalogEntry{}
	for _, e := range catalog {
		tiered[segment.ID{Base: e.Base, Epoch: e.Epoch}] = e
	}
	now := c.cfg.Now()
	seen := map[segment.ID]bool{}
	removed := 0
	for _, de := range ents {
		if de.Name() == partition.StageDir && de.IsDir() {
			// Staged batches whose waiters crashed (nobody else
			// removes them on a partition no one writes again).
			if _, err := partition.RemoveExpiredStaged(c.cfg.FS, dir, now); err != nil {
				return removed, err
			}
			continue
		}
		if bid, ok := partition.ParseBatchFileName(de.Name()); ok {
			if c.batchFileExpired(dir, de.Name(), bid, now) {
				if err := c.cfg.FS.Remove(filepath.Join(dir, de.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return removed, err
				}
			}
			continue
		}
		id, _, ok := segment.ParseName(de.Name())
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		if !c.removable(id, item, committed, tiered, coldEnd, logStart, now, dir) {
			continue
		}
		for _, kind := range []segment.Kind{segment.KindLog, segment.KindIndex, segment.KindTimeIndex} {
			if err := c.cfg.FS.Remove(id.Path(dir, kind)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
		}
		removed++
		if err := c.hook(StepHotDeleted, k, id.Base); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// batchFileExpired reports whether a segment's batch file may go: its log
// is gone (the segment was tiered or retained away, or never committed) and
// its last write is older than the idempotency window and the grace.
func (c *Compactor) batchFileExpired(dir, name string, id segment.ID, now time.Time) bool {
	if _, err := c.cfg.FS.Stat(id.Path(dir, segment.KindLog)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fi, err := c.cfg.FS.Stat(filepath.Join(dir, name))
	return err == nil && now.Sub(fi.ModTime()) >= c.cfg.IdempotencyWindow+c.cfg.Grace
}

func (c *Compactor) removable(id segment.ID, item meta.Partition, committed map[segment.ID]meta.SegmentInfo,
	tiered map[segment.ID]meta.CatalogEntry, coldEnd, logStart int64, now time.Time, dir string) bool {
	if a := item.Active; a != nil && a.Base == id.Base && a.Epoch == id.Epoch {
		return false
	}
	if e, ok := tiered[id]; ok && e.NextOffset <= coldEnd {
		// A reader whose view predates the cold end advance may still be
		// reading the hot files: they stay Grace from when readers were
		// switched (ColdMs, set only after the advance), not from when
		// the entry was made, which may be much earlier.
		return e.ColdMs > 0 && now.Sub(time.UnixMilli(e.ColdMs)) >= c.cfg.Grace
	}
	// Below here no fresh view sends a reader to the file. Segments below
	// the log start: a reader whose view predates the log start advance,
	// and whose file disappears under it (ENOENT; ESTALE on NFS), retries
	// with a fresh view and answers out of range, which is the right answer
	// below the log start. So deleting at any time after the advance gives
	// correct answers, and nothing records when the advance happened (there
	// is no catalog entry to mark). The grace counts from the file's last
	// write (its mtime): it spares that retry to readers of a segment
	// written moments ago, such as the tail a caught-up consumer is reading
	// when a small retention_bytes drops a segment as soon as it is sealed.
	// Files no commit can name: no reader opens them; the grace gives a
	// zombie still writing one time to fail on its own.
	old := func() bool {
		fi, err := c.cfg.FS.Stat(id.Path(dir, segment.KindLog))
		return err == nil && now.Sub(fi.ModTime()) >= c.cfg.Grace
	}
	if s, ok := committed[id]; ok {
		// Committed and not tiered: only retention frees it.
		return s.NextOffset <= logStart && s.NextOffset <= coldEnd && old()
	}
	// No committed state names it. An epoch older than the item's can never
	// be committed (every commit is conditional on the current epoch); the
	// current epoch's holder may be about to commit a new roll.
	return id.Epoch < item.Epoch && old()
}

// PurgeTopic deletes the cold tier of a deleted topic: every artifact and
// catalog entry of its partitions.
func (c *Compactor) PurgeTopic(ctx context.Context, t meta.TopicConfig) error {
	var errs []error
	for p := 0; p < t.Partitions; p++ {
		k := meta.PartitionKey{Topic: t.Name, TopicID: t.ID, Partition: p}
		entries, err := c.cfg.Meta.Segments(ctx, k, -1, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if err := c.cfg.Objects.Delete(ctx, e.Key); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := c.cfg.Meta.DeleteSegment(ctx, k, e); err != nil {
				errs = append(errs, err)
			}
		}
		// Artifacts uploaded but never cataloged.
		infos, err := c.cfg.Objects.List(ctx, tier.PartitionPrefix(k))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, info := range infos {
			if err := c.cfg.Objects.Delete(ctx, info.Key); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
