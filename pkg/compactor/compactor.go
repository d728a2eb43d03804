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
//     the partition's cold end advanced past it.
//  2. Retention: whole segments, oldest first, by time (last timestamp
//     older than retention_ms) and by bytes (while the partition is over
//     retention_bytes by at least the segment's size); the log start offset
//     is advanced with a monotonic conditional write.
//  3. Hot cleanup: files of tiered segments, after a grace period; files
//     below the log start; and files no committed state names, once their
//     epoch is older than the partition's (no commit can ever name them).
//  4. Cold cleanup: artifacts and catalog entries below the log start.
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
	"log/slog"
	"os"
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
	// Grace is how long the hot files of a tiered segment stay, so readers
	// that saw it hot finish. Default 30s.
	Grace time.Duration
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
}

func (s *Stats) add(o Stats) {
	s.Partitions += o.Partitions
	s.Finalized += o.Finalized
	s.BytesUploaded += o.BytesUploaded
	s.FinalizeSeconds += o.FinalizeSeconds
	s.HotFilesDeleted += o.HotFilesDeleted
	s.ObjectsDeleted += o.ObjectsDeleted
	s.LogStartAdvanced += o.LogStartAdvanced
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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
	if item.Epoch == 0 {
		return st, nil // never written
	}
	dir := partition.Dir(c.cfg.HotDir, k)

	// 1. Finalize sealed segments in order.
	coldEnd := item.ColdEnd
	for _, s := range item.Sealed {
		if s.NextOffset <= coldEnd {
			continue
		}
		if s.NextOffset > item.LogStartOffset {
			start := time.Now()
			var n int64
			err := trace.Capture(ctx, trace.SpanFinalize, func(ctx context.Context) (err error) {
				n, err = c.finalize(ctx, k, dir, s)
				return err
			})
			if err != nil {
				return st, err
			}
			st.Finalized++
			st.BytesUploaded += n
			if m := c.cfg.Metrics; m != nil {
				m.SegmentsFinalized.Add(1)
				m.BytesFinalized.Add(n)
			}
			st.FinalizeSeconds += time.Since(start).Seconds()
		} // else: retention already dropped it; nothing to upload
		if err := c.cfg.Meta.AdvanceColdEnd(ctx, k, s.NextOffset); err != nil {
			return st, fmt.Errorf("advance cold end: %w", err)
		}
		coldEnd = s.NextOffset
		if err := c.hook(StepColdEnd, k, s.Base); err != nil {
			return st, err
		}
	}

	catalog, err := c.cfg.Meta.Segments(ctx, k, -1, 0)
	if err != nil {
		return st, fmt.Errorf("read catalog: %w", err)
	}

	// 2. Retention.
	logStart := item.LogStartOffset
	if ns := c.retain(t, item, coldEnd, catalog); ns > logStart {
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

	// 4. Cold cleanup below the log start.
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

// finalize uploads sealed segment s and records it in the catalog. It
// returns the artifact size.
func (c *Compactor) finalize(ctx context.Context, k meta.PartitionKey, dir string, s meta.SegmentInfo) (int64, error) {
	id := segment.ID{Base: s.Base, Epoch: s.Epoch}
	key := tier.ObjectKey(k, id)
	log, err := readPrefix(id.Path(dir, segment.KindLog), s.Size)
	if err != nil {
		return 0, fmt.Errorf("read sealed segment %s: %w", id, err)
	}
	obj, f, err := tier.Build(log, id, c.cfg.IndexIntervalBytes)
	if err != nil {
		return 0, fmt.Errorf("build artifact of %s: %w", id, err)
	}
	if f.NextOffset != s.NextOffset {
		return 0, fmt.Errorf("%w: %s holds offsets to %d, committed %d", segment.ErrCorrupt, id, f.NextOffset, s.NextOffset)
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
		return 0, err
	}
	if err := c.hook(StepUploaded, k, s.Base); err != nil {
		return 0, err
	}
	if err := c.cfg.Meta.PutSegment(ctx, k, f.Entry(key, size, c.cfg.Now().UnixMilli())); err != nil {
		return 0, fmt.Errorf("catalog %s: %w", key, err)
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

func readPrefix(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
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
// oldest first, never the active one.
func (c *Compactor) retain(t meta.TopicConfig, item meta.Partition, coldEnd int64, catalog []meta.CatalogEntry) int64 {
	var segs []seg
	for _, e := range catalog {
		if e.NextOffset > item.LogStartOffset {
			segs = append(segs, seg{next: e.NextOffset, size: e.LogLen, lastTS: e.LastTS})
		}
	}
	for _, s := range item.Sealed {
		if s.NextOffset > coldEnd && s.NextOffset > item.LogStartOffset {
			segs = append(segs, seg{next: s.NextOffset, size: s.Size, lastTS: s.LastTS})
		}
	}
	total := int64(0)
	for _, s := range segs {
		total += s.size
	}
	if item.Active != nil {
		total += item.Active.Size
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
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
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
		id, _, ok := segment.ParseName(de.Name())
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		if !c.removable(id, item, committed, tiered, coldEnd, logStart, now, dir) {
			continue
		}
		for _, kind := range []segment.Kind{segment.KindLog, segment.KindIndex, segment.KindTimeIndex} {
			if err := os.Remove(id.Path(dir, kind)); err != nil && !errors.Is(err, os.ErrNotExist) {
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

func (c *Compactor) removable(id segment.ID, item meta.Partition, committed map[segment.ID]meta.SegmentInfo,
	tiered map[segment.ID]meta.CatalogEntry, coldEnd, logStart int64, now time.Time, dir string) bool {
	if a := item.Active; a != nil && a.Base == id.Base && a.Epoch == id.Epoch {
		return false
	}
	if e, ok := tiered[id]; ok && e.NextOffset <= coldEnd {
		return now.Sub(time.UnixMilli(e.CreatedMs)) >= c.cfg.Grace
	}
	old := func() bool {
		fi, err := os.Stat(id.Path(dir, segment.KindLog))
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
