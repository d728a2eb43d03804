package tier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tierlog/tierlog/pkg/index"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/segment"
)

// Reader serves reads from artifacts. Request budget per fetch:
//   - cache disabled: 2 GETs (index sections, then a log window);
//   - cache enabled, index cached: 1 GET (the log window);
//   - read-ahead (cache enabled, ReadAhead > 0): 1 GET of the whole
//     artifact the first time, 0 while it stays cached, plus one GET per
//     segment read ahead.
//
// A store whose objects are files on this machine (objstore.Files: the
// local server's) is read in place instead, as the hot tier reads segment
// files: the indexes as above, then the window the limits allow, read
// into the caller's memory. No artifact is loaded whole, and ReadAhead is
// not used: the page cache keeps what was read, and the kernel reads
// ahead. (Loading a 16 MiB artifact, copying it and checking its CRC cost
// a reader catching up on a backlog more than its reads.)
//
// It is safe for concurrent use.
type Reader struct {
	objects objstore.Store
	cache   *Cache
	// OnDamage, if set, is told of damage a read went around (a damaged
	// index: the log is scanned instead).
	OnDamage func(key string, err error)
}

// NewReader reads artifacts from objects, caching in cache (nil: none).
func NewReader(objects objstore.Store, cache *Cache) *Reader {
	return &Reader{objects: objects, cache: cache}
}

// Cache returns the reader's cache.
func (r *Reader) Cache() *Cache { return r.cache }

// Options are a topic's read settings.
type Options struct {
	CacheEnabled bool
	// ReadAhead are the catalog entries after the one read; with the cache
	// enabled their whole artifacts are fetched into the cache (in parallel,
	// before Read returns: a Lambda container runs nothing after it answers).
	ReadAhead []meta.CatalogEntry
}

type indexes struct {
	offs  index.Offsets
	times index.Times
	// hdr is the artifact's log header verdict, once an in-place read
	// checked it: it never changes, and a fetch should not read it again.
	hdr atomic.Pointer[segment.HeaderVerdict]
}

func (ix *indexes) size() int64 {
	return int64(len(ix.offs))*index.OffsetEntrySize + int64(len(ix.times))*index.TimeEntrySize
}

// DamageError reports records of an artifact that cannot be served: its
// bytes fail their checks, or the object is shorter than its catalog
// entry. Next is the first offset after them that can be read: past the
// damage within the artifact when a later record passes every check, else
// the artifact's end (the next segment's base). It wraps ErrCorrupt.
type DamageError struct {
	Key         string
	First, Next int64
	Err         error
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("tier: %s: offsets %d to %d damaged: %v", e.Key, e.First, e.Next-1, e.Err)
}

// Unwrap returns ErrCorrupt and the cause.
func (e *DamageError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// Read returns records of artifact e from offset from on, at most
// maxRecords and about maxBytes: at least one record if maxRecords > 0
// (from is within e), never an empty answer. Records before damage are
// returned; a read that starts at damaged records answers a *DamageError.
// A damaged index is reported to OnDamage and read around (the log is
// scanned), so the records stay readable.
func (r *Reader) Read(ctx context.Context, e meta.CatalogEntry, from int64, maxRecords, maxBytes int, o Options) ([]segment.Record, error) {
	return r.ReadWith(ctx, e, from, maxRecords, maxBytes, o, nil)
}

// ReadWith is Read for a caller that is done with the records before it
// reads again (segment.Scratch): a read of a whole artifact in the cache
// copies its records into memory from sc rather than into memory made
// for each read. (The cache keeps the artifact; its bytes are not handed
// out.)
func (r *Reader) ReadWith(ctx context.Context, e meta.CatalogEntry, from int64, maxRecords, maxBytes int, o Options, sc *segment.Scratch) ([]segment.Record, error) {
	if from < e.Base || from >= e.NextOffset {
		return nil, fmt.Errorf("tier: offset %d outside segment [%d, %d)", from, e.Base, e.NextOffset)
	}
	if maxRecords <= 0 {
		return nil, nil // as segment.Reader.Read
	}
	recs, err := r.read(ctx, e, from, maxRecords, maxBytes, o, sc)
	if errors.Is(err, ErrCorrupt) || errors.Is(err, objstore.ErrRange) {
		return r.readDamaged(ctx, e, from, maxRecords, maxBytes, err)
	}
	return recs, err
}

func (r *Reader) read(ctx context.Context, e meta.CatalogEntry, from int64, maxRecords, maxBytes int, o Options, sc *segment.Scratch) ([]segment.Record, error) {
	if files, ok := r.objects.(objstore.Files); ok {
		return r.readInPlace(ctx, files, e, from, maxRecords, maxBytes, o.CacheEnabled, sc)
	}
	if o.CacheEnabled {
		if len(o.ReadAhead) > 0 || r.cache.Contains(objKey(e)) {
			obj, err := r.whole(ctx, e, o.ReadAhead)
			if err != nil {
				return nil, err
			}
			return obj.read(from, maxRecords, maxBytes, sc)
		}
	}
	ix, err := r.indexes(ctx, e, o.CacheEnabled)
	if errors.Is(err, ErrCorrupt) || errors.Is(err, objstore.ErrRange) {
		r.damaged(e, err)
		ix, err = &indexes{}, nil // scan the log from its start
	}
	if err != nil {
		return nil, err
	}
	// The window starts at the last index entry at or before from. If
	// another entry follows, from's record starts before it, so the window
	// reaches that entry plus maxBytes. Past the last entry (or in a
	// segment without entries) nothing says where from lies: the window
	// runs to the end of the log, which is less than one index interval
	// plus one record away (Summarize puts an entry at the first record
	// an interval past the previous one). A window ending at a guessed
	// position could end exactly on a record boundary before from and
	// decode no records at all.
	pos, end := int64(segment.FileHeaderSize), e.LogLen
	if ent, ok := ix.offs.Floor(uint32(from - e.Base)); ok {
		pos = int64(ent.Pos)
	}
	if i := nextEntry(ix.offs, pos); i < len(ix.offs) {
		end = min(int64(ix.offs[i].Pos)+int64(maxBytes), e.LogLen)
	}
	for {
		win, err := r.objects.Get(ctx, e.Key, e.LogOff+pos, end-pos)
		if err != nil {
			return nil, fmt.Errorf("tier: read %s: %w", e.Key, err)
		}
		recs, _, err := segment.DecodeRecords(win, from, maxRecords, maxBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s at %d: %w", ErrCorrupt, e.Key, pos, err)
		}
		if err := checkDense(recs, from); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, e.Key, err)
		}
		if len(recs) > 0 {
			return recs, nil
		}
		if end >= e.LogLen {
			// from < NextOffset, yet no record of the whole rest of the
			// log holds it: the entry and the bytes disagree.
			return nil, fmt.Errorf("%w: %s: offset %d not found from position %d to the end of the log", ErrCorrupt, e.Key, from, pos)
		}
		// Only an index entry pointing past from's record gets here (the
		// index CRC passed, so a bug, not damage); never answer empty
		// below the segment's end.
		end = e.LogLen
	}
}

// readInPlace is read from a store whose objects are files: a segment
// reader over the artifact's log section, through its indexes (cached when
// useCache), reads what the limits allow into memory from sc. Records that
// fail their checks are ErrCorrupt, for Read to go around them.
func (r *Reader) readInPlace(ctx context.Context, files objstore.Files, e meta.CatalogEntry, from int64, maxRecords, maxBytes int, useCache bool, sc *segment.Scratch) ([]segment.Record, error) {
	ix, err := r.indexes(ctx, e, useCache)
	if errors.Is(err, ErrCorrupt) || errors.Is(err, objstore.ErrRange) {
		r.damaged(e, err)
		ix, err = &indexes{}, nil // scan the log from its start
	}
	if err != nil {
		return nil, err
	}
	obj, err := files.OpenObject(ctx, e.Key)
	if err != nil {
		return nil, fmt.Errorf("tier: read %s: %w", e.Key, err)
	}
	defer obj.Close()
	sr := segment.NewReaderChecked(io.NewSectionReader(obj, e.LogOff, e.LogLen), segment.ID{Base: e.Base, Epoch: e.Epoch}, e.LogLen, ix.offs, ix.times, ix.hdr.Load())
	recs, err := sr.ReadWith(from, maxRecords, maxBytes, sc)
	if v := sr.HeaderVerdict(); v != nil {
		ix.hdr.CompareAndSwap(nil, v)
	}
	switch {
	case errors.Is(err, segment.ErrCorrupt) || errors.Is(err, segment.ErrTruncated):
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, e.Key, err)
	case err != nil:
		return nil, fmt.Errorf("tier: read %s: %w", e.Key, err)
	case len(recs) == 0:
		// from < NextOffset, yet the log does not hold it: the entry and
		// the bytes disagree.
		return nil, fmt.Errorf("%w: %s: offset %d not found in the log", ErrCorrupt, e.Key, from)
	}
	return recs, nil
}

// readDamaged reads from offset from of e after a read failed its checks
// (cause): the whole log section, through a segment reader, which returns
// the records before damage and finds where good records resume.
func (r *Reader) readDamaged(ctx context.Context, e meta.CatalogEntry, from int64, maxRecords, maxBytes int, cause error) ([]segment.Record, error) {
	log, err := r.objects.Get(ctx, e.Key, e.LogOff, -1)
	if errors.Is(err, objstore.ErrRange) {
		log, err = nil, nil // shorter than its log section's start: nothing to read
	}
	if err != nil {
		return nil, fmt.Errorf("tier: read %s: %w", e.Key, err)
	}
	log = log[:min(int64(len(log)), e.LogLen)]
	recs, rerr := segment.NewReader(bytesReaderAt(log), segment.ID{Base: e.Base, Epoch: e.Epoch}, int64(len(log)), nil, nil).Read(from, maxRecords, maxBytes)
	if rerr == nil && len(recs) > 0 && checkDense(recs, from) == nil {
		r.damaged(e, cause) // past what this read needs, or in an index
		return recs, nil
	}
	next := e.NextOffset
	var de *segment.DamageError
	if errors.As(rerr, &de) && de.Next > from && de.Next < next {
		next = de.Next
	}
	if rerr == nil {
		rerr = cause
	}
	return nil, &DamageError{Key: e.Key, First: from, Next: next, Err: rerr}
}

// damaged reports damage that a read went around.
func (r *Reader) damaged(e meta.CatalogEntry, err error) {
	if r.OnDamage != nil {
		r.OnDamage(e.Key, err)
	}
}

func nextEntry(offs index.Offsets, pos int64) int {
	for i, e := range offs {
		if int64(e.Pos) > pos {
			return i
		}
	}
	return len(offs)
}

func checkDense(recs []segment.Record, from int64) error {
	for i, rec := range recs {
		if want := from + int64(i); rec.Offset != want {
			return fmt.Errorf("offset %d where %d expected", rec.Offset, want)
		}
	}
	return nil
}

// indexes returns e's parsed indexes, from the cache or with one GET.
func (r *Reader) indexes(ctx context.Context, e meta.CatalogEntry, useCache bool) (*indexes, error) {
	key := "idx:" + e.Key
	if useCache {
		if v, ok := r.cache.Get(key); ok {
			return v.(*indexes), nil
		}
	}
	n := e.IndexLen + e.TimeLen
	var b []byte
	if n > 0 {
		var err error
		if b, err = r.objects.Get(ctx, e.Key, e.IndexOff, n); err != nil {
			return nil, fmt.Errorf("tier: read index of %s: %w", e.Key, err)
		}
	}
	ix, err := parseIndexes(e, b)
	if err != nil {
		return nil, err
	}
	if useCache {
		r.cache.Put(key, ix, ix.size()+64)
	}
	return ix, nil
}

func parseIndexes(e meta.CatalogEntry, b []byte) (*indexes, error) {
	f := FooterOf(e)
	ib, tb := b[:f.Index.Len], b[f.Index.Len:]
	if err := CheckSection("index", ib, f.Index); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Key, err)
	}
	if err := CheckSection("time index", tb, f.Time); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Key, err)
	}
	offs, err := index.ParseOffsets(ib)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, e.Key, err)
	}
	times, err := index.ParseTimes(tb)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, e.Key, err)
	}
	if len(offs) != len(times) {
		return nil, fmt.Errorf("%w: %s: %d offset entries, %d time entries", ErrCorrupt, e.Key, len(offs), len(times))
	}
	return &indexes{offs: offs, times: times}, nil
}

// artifact is a whole artifact in memory.
type artifact struct {
	e   meta.CatalogEntry
	log []byte
	ix  *indexes
}

func (a *artifact) reader() *segment.Reader {
	return segment.NewReader(bytesReaderAt(a.log), segment.ID{Base: a.e.Base, Epoch: a.e.Epoch}, int64(len(a.log)), a.ix.offs, a.ix.times)
}

func (a *artifact) read(from int64, maxRecords, maxBytes int, sc *segment.Scratch) ([]segment.Record, error) {
	recs, err := a.reader().ReadWith(from, maxRecords, maxBytes, sc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, a.e.Key, err)
	}
	return recs, nil
}

func objKey(e meta.CatalogEntry) string { return "obj:" + e.Key }

// whole returns e's artifact from the cache or with one GET, and fetches
// the read-ahead entries into the cache in parallel.
func (r *Reader) whole(ctx context.Context, e meta.CatalogEntry, ahead []meta.CatalogEntry) (*artifact, error) {
	var wg sync.WaitGroup
	for _, n := range ahead {
		if r.cache.Contains(objKey(n)) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.fetchWhole(ctx, n) // best effort: a failure is a later miss
		}()
	}
	defer wg.Wait()
	if v, ok := r.cache.Get(objKey(e)); ok {
		return v.(*artifact), nil
	}
	return r.fetchWhole(ctx, e)
}

func (r *Reader) fetchWhole(ctx context.Context, e meta.CatalogEntry) (*artifact, error) {
	b, err := r.objects.Get(ctx, e.Key, 0, e.Size)
	if err != nil {
		return nil, fmt.Errorf("tier: read %s: %w", e.Key, err)
	}
	f := FooterOf(e)
	if err := CheckSection("log", b[f.Log.Off:f.Log.Off+f.Log.Len], f.Log); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Key, err)
	}
	ix, err := parseIndexes(e, b[f.Index.Off:f.Time.Off+f.Time.Len])
	if err != nil {
		return nil, err
	}
	a := &artifact{e: e, log: b[f.Log.Off : f.Log.Off+f.Log.Len : f.Log.Off+f.Log.Len], ix: ix}
	r.cache.Put(objKey(e), a, e.Size)
	return a, nil
}

// OffsetForTime returns the first record of e with timestamp >= ts, or
// found=false if every record is older.
func (r *Reader) OffsetForTime(ctx context.Context, e meta.CatalogEntry, ts int64, o Options) (offset, at int64, found bool, err error) {
	if e.LastTS < ts || e.NextOffset == e.Base {
		return 0, 0, false, nil
	}
	if o.CacheEnabled && r.cache.Contains(objKey(e)) {
		a, err := r.whole(ctx, e, nil)
		if err != nil {
			return 0, 0, false, err
		}
		return a.reader().OffsetForTime(ts)
	}
	ix, err := r.indexes(ctx, e, o.CacheEnabled)
	if err != nil {
		return 0, 0, false, err
	}
	// Entry i of each index names the same record, and a time entry holds
	// the largest timestamp up to its record. Up to the last entry older
	// than ts every record is older; the next entry (if any) is not: the
	// answer is between the two, or is that next entry's record (whose
	// timestamp is then the entry's, the first to reach ts).
	pos, want, end := int64(segment.FileHeaderSize), e.Base, e.LogLen
	next := 0
	if te, ok := ix.times.Before(ts); ok {
		next = sortSearchRel(ix.times, te.Rel) + 1
		oe := ix.offs[next-1]
		pos, want = int64(oe.Pos), e.Base+int64(oe.Rel)
	}
	if next < len(ix.offs) {
		end = int64(ix.offs[next].Pos)
	}
	win, err := r.objects.Get(ctx, e.Key, e.LogOff+pos, end-pos)
	if err != nil {
		return 0, 0, false, fmt.Errorf("tier: read %s: %w", e.Key, err)
	}
	recs, _, err := segment.DecodeRecords(win, want, 1<<30, 1<<30)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, e.Key, err)
	}
	for _, rec := range recs {
		if rec.Timestamp >= ts {
			return rec.Offset, rec.Timestamp, true, nil
		}
	}
	if next < len(ix.offs) {
		return e.Base + int64(ix.offs[next].Rel), ix.times[next].Timestamp, true, nil
	}
	return 0, 0, false, fmt.Errorf("%w: %s: last timestamp %d but no record at or after %d", ErrCorrupt, e.Key, e.LastTS, ts)
}

// sortSearchRel returns the index of the time entry with Rel rel.
func sortSearchRel(t index.Times, rel uint32) int {
	return sort.Search(len(t), func(i int) bool { return t[i].Rel >= rel })
}
