package compactor

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
)

// logBuffer collects a compactor's log lines as JSON objects.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) errors(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "ERROR" {
			out = append(out, m)
		}
	}
	return out
}

// failFS fails reads of one file with EIO: a segment the hot tier cannot
// hand back. It counts the operations that reach it.
type failFS struct {
	segment.OSFS
	bad string

	mu  sync.Mutex
	ops map[string]int
}

func (f *failFS) count(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ops == nil {
		f.ops = map[string]int{}
	}
	f.ops[op]++
}

func (f *failFS) calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops[op]
}

func (f *failFS) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	f.count("open")
	if name == f.bad {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

func (f *failFS) ReadDir(name string) ([]os.DirEntry, error) {
	f.count("readdir")
	return f.OSFS.ReadDir(name)
}

func (f *failFS) Stat(name string) (os.FileInfo, error) {
	f.count("stat")
	return f.OSFS.Stat(name)
}

func (f *failFS) Remove(name string) error {
	f.count("remove")
	return f.OSFS.Remove(name)
}

// One sealed segment the compactor cannot verify is quarantined: an ERROR
// names it, the pass counts it, and the segments after it are still
// cataloged. The cold end stays below it, so readers keep reading it and
// everything after it from the hot tier, whose files stay. Each pass
// retries it; once it reads back, the cold end catches up without
// re-reading the segments cataloged meanwhile.
func TestBadSegmentIsQuarantined(t *testing.T) {
	for _, damage := range []string{"short file", "read error"} {
		t.Run(damage, func(t *testing.T) {
			e := newEnv(t, broker.TopicSpec{})
			e.produce(100)
			p, err := e.store.Partition(e.ctx, e.key())
			if err != nil || len(p.Sealed) < 5 {
				t.Fatalf("want several sealed segments: %d, %v", len(p.Sealed), err)
			}
			sealed := p.Sealed
			bad := sealed[2]
			dir := partition.Dir(e.dir, e.key())
			badID := segment.ID{Base: bad.Base, Epoch: bad.Epoch}
			path := badID.Path(dir, segment.KindLog)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fsys := &failFS{}
			switch damage {
			case "short file": // an fsync that lied, a lost write-back
				if err := os.Truncate(path, bad.Size-10); err != nil {
					t.Fatal(err)
				}
			case "read error":
				fsys.bad = path
			}
			logs := &logBuffer{}
			c := e.compactor(nil)
			c.cfg.FS = fsys
			c.cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))

			for pass := 0; pass < 2; pass++ {
				st, err := c.Run(e.ctx)
				if err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
				// The second pass reads none of the segments the first
				// cataloged, and deletes the hot files of the two before
				// the gap, a grace after the first moved readers off them.
				wantFinalized, wantDeleted := len(sealed)-1, 0
				if pass > 0 {
					wantFinalized, wantDeleted = 0, 2
				}
				if st.Quarantined != 1 || st.Finalized != wantFinalized || st.HotFilesDeleted != wantDeleted {
					t.Fatalf("pass %d: %+v, want 1 quarantined, %d finalized, %d segments' hot files deleted", pass, st, wantFinalized, wantDeleted)
				}
				p, _ := e.store.Partition(e.ctx, e.key())
				if p.ColdEnd != bad.Base {
					t.Fatalf("pass %d: cold end %d, want %d: not past the quarantined segment", pass, p.ColdEnd, bad.Base)
				}
				e.clock.advance(2 * time.Minute) // past the grace
			}
			errs := logs.errors(t)
			if len(errs) != 2 {
				t.Fatalf("%d ERROR lines for 2 passes over one bad segment: %v", len(errs), errs)
			}
			for _, m := range errs {
				if m["topic"] != e.topic.Name || m["partition"] != float64(0) || m["segment"] != badID.String() {
					t.Fatalf("ERROR line does not name topic %s partition 0 segment %s: %v", e.topic.Name, badID, m)
				}
			}
			if fsys.calls("open") == 0 || fsys.calls("readdir") == 0 || fsys.calls("remove") == 0 {
				t.Fatalf("hot tier not used through Config.FS: %v", fsys.ops)
			}
			entries, err := e.store.Segments(e.ctx, e.key(), -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(sealed)-1 {
				t.Fatalf("%d catalog entries, want every sealed segment but the bad one (%d)", len(entries), len(sealed)-1)
			}
			for _, en := range entries {
				if en.Base == bad.Base {
					t.Fatalf("quarantined segment cataloged: %+v", en)
				}
			}
			// Hot files of the segments before the gap went after the grace;
			// those of the bad one and every one after it stay.
			for i, s := range sealed {
				_, err := os.Stat(segment.ID{Base: s.Base, Epoch: s.Epoch}.Path(dir, segment.KindLog))
				if gone := errors.Is(err, os.ErrNotExist); gone != (i < 2) {
					t.Fatalf("segment %d..%d: hot file gone=%v (%v)", s.Base, s.NextOffset, gone, err)
				}
			}
			// Readers: below the gap from the cold tier, the rest hot.
			for off := int64(0); off < int64(len(e.acked)); {
				if off == bad.Base && damage == "short file" {
					off = bad.NextOffset // its last record is torn: the partition's to report
					continue
				}
				f, err := e.b.Fetch(e.ctx, broker.FetchRequest{Topic: e.topic.Name, Offset: off, MaxRecords: 50})
				if err != nil || len(f.Records) == 0 || f.Records[0].Offset != off || !bytes.Equal(f.Records[0].Value, e.acked[off]) {
					t.Fatalf("fetch %d: %d records, %v", off, len(f.Records), err)
				}
				off += int64(len(f.Records))
			}

			// The damage heals (the file reads back): the cold end moves to
			// the end in one pass, finalizing only the healed segment.
			fsys.bad = ""
			if err := os.WriteFile(path, good, 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := c.Run(e.ctx)
			if err != nil || st.Quarantined != 0 || st.Finalized != 1 {
				t.Fatalf("pass after healing: %+v %v, want the one segment finalized", st, err)
			}
			e.clock.advance(2 * time.Minute)
			if st, err = c.Run(e.ctx); err != nil || st.HotFilesDeleted != len(sealed)-2 {
				t.Fatalf("pass a grace later: %+v %v, want %d segments' hot files deleted", st, err, len(sealed)-2)
			}
			e.readAll()
			e.checkConverged()
		})
	}
}

// A bad segment does not stop retention: it runs over the catalog and the
// hot segments, counting each range once (the segments past the gap are
// both cataloged and still in the item's sealed list). Once the log start
// passes the bad segment, the cold end passes it with nothing uploaded, the
// partition converges, and its hot files go like any segment retention
// dropped.
func TestRetentionPastQuarantinedSegment(t *testing.T) {
	const limit = 10_000
	e := newEnv(t, broker.TopicSpec{RetentionBytes: ptr(int64(limit))})
	e.produce(100)
	p, _ := e.store.Partition(e.ctx, e.key())
	if len(p.Sealed) < 5 {
		t.Fatalf("want several sealed segments, have %d", len(p.Sealed))
	}
	bad := p.Sealed[0]
	dir := partition.Dir(e.dir, e.key())
	path := segment.ID{Base: bad.Base, Epoch: bad.Epoch}.Path(dir, segment.KindLog)
	if err := os.Truncate(path, bad.Size-10); err != nil {
		t.Fatal(err)
	}
	// File times are real time; the test clock is years behind.
	if err := os.Chtimes(path, e.clock.now(), e.clock.now()); err != nil {
		t.Fatal(err)
	}
	c := e.compactor(nil)
	st, err := c.Run(e.ctx)
	if err != nil || st.Quarantined != 1 || st.LogStartAdvanced != 1 {
		t.Fatalf("first pass: %+v %v, want the bad segment quarantined and the log start advanced", st, err)
	}
	p, _ = e.store.Partition(e.ctx, e.key())
	if p.ColdEnd != bad.Base || p.LogStartOffset <= bad.NextOffset {
		t.Fatalf("cold end %d (want %d), log start %d (want past %d)", p.ColdEnd, bad.Base, p.LogStartOffset, bad.NextOffset)
	}
	if got := e.retainedBytes(); got < limit || got > limit+4096 {
		t.Fatalf("retention kept %d bytes, want %d plus less than a segment", got, limit)
	}
	e.readAll()

	st, err = c.Run(e.ctx)
	if err != nil || st.Quarantined != 0 {
		t.Fatalf("pass after the log start passed the bad segment: %+v %v", st, err)
	}
	e.checkConverged()
	e.readAll()
	e.clock.advance(2 * time.Minute)
	if _, err := c.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("quarantined segment below the log start still hot a grace later: %v", err)
	}
	if got := e.retainedBytes(); got < limit {
		t.Fatalf("retention kept %d bytes, less than %d", got, limit)
	}
	e.readAll()
	e.checkConverged()
}
