package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// logRecords captures what a store logs, one decoded JSON record each.
type logRecords struct{ buf bytes.Buffer }

func (l *logRecords) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(&l.buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *logRecords) all(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		must(t, json.Unmarshal(line, &m))
		out = append(out, m)
	}
	return out
}

// one returns the only record, which must be at ERROR level with msg.
func (l *logRecords) one(t *testing.T, msg string) map[string]any {
	t.Helper()
	recs := l.all(t)
	if len(recs) != 1 || recs[0]["level"] != "ERROR" || recs[0]["msg"] != msg {
		t.Fatalf("log records %v, want one ERROR %q", recs, msg)
	}
	return recs[0]
}

// closedStore populates a store in a fresh directory and closes it
// cleanly; it returns the directory, the state and the journal's bytes.
func closedStore(t *testing.T) (string, []*entry, []byte) {
	t.Helper()
	dir := t.TempDir()
	s := openT(t, dir)
	populate(t, s)
	want := dump(s)
	must(t, s.Close())
	b, err := os.ReadFile(journalPath(dir, 1))
	must(t, err)
	return dir, want, b
}

func openLogged(t *testing.T, dir string, opts ...Option) (*Store, *logRecords, error) {
	t.Helper()
	var l logRecords
	s, err := Open(dir, append(opts, WithLogger(l.logger()))...)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, &l, err
}

// An intact journal, opened after a clean close: nothing to report.
func TestRecoveryIntact(t *testing.T) {
	dir, want, _ := closedStore(t)
	s, logs, err := openLogged(t, dir)
	must(t, err)
	sameState(t, "reopened", dump(s), want)
	if rec := s.Recovery(); rec != (Recovery{}) {
		t.Fatalf("Recovery %+v, want none", rec)
	}
	if recs := logs.all(t); len(recs) != 0 {
		t.Fatalf("logged %v", recs)
	}
}

// A torn tail (the process died mid-append, no clean close) is repaired as
// before, and reported: file, position, bytes dropped.
func TestRecoveryTornTailReported(t *testing.T) {
	_, _, b := closedStore(t)
	offs := frames(t, b)
	last := offs[len(offs)-2]
	cut := last + (len(b)-last)/2
	dir := t.TempDir() // no CLOSED: a crash, not a clean close
	must(t, os.WriteFile(journalPath(dir, 1), b[:cut], 0o644))
	s, logs, err := openLogged(t, dir)
	must(t, err)
	want := Recovery{Journal: journalName(1), Offset: int64(last), DroppedBytes: int64(cut - last)}
	rec := s.Recovery()
	rec.Cause = ""
	mustRecovery(t, rec, want)
	if !strings.Contains(s.Recovery().Cause, "torn tail") {
		t.Fatalf("cause %q", s.Recovery().Cause)
	}
	r := logs.one(t, "meta/local: journal torn tail dropped")
	if r["file"] != journalPath(dir, 1) || r["offset"] != float64(last) || r["dropped_bytes"] != float64(cut-last) {
		t.Fatalf("log record %v", r)
	}
}

func mustRecovery(t *testing.T, got, want Recovery) {
	t.Helper()
	if got != want {
		t.Fatalf("Recovery\n got  %+v\n want %+v", got, want)
	}
}

// F8: a journal truncated to half while the store was closed. The cut
// looks like a torn tail, but the close record knows how long the journal
// was: Open reports the committed frames it lost.
func TestRecoveryTruncatedJournalIsLostData(t *testing.T) {
	dir, _, b := closedStore(t)
	half := len(b) / 2
	must(t, os.Truncate(journalPath(dir, 1), int64(half)))
	offs := frames(t, b)
	valid := offs[0]
	for _, o := range offs {
		if o <= half {
			valid = o
		}
	}
	s, logs, err := openLogged(t, dir)
	must(t, err)
	rec := s.Recovery()
	if !rec.LostCommitted || rec.Journal != journalName(1) || rec.Offset != int64(valid) ||
		rec.DroppedBytes != int64(half-valid) || rec.MissingBytes != int64(len(b)-half) {
		t.Fatalf("Recovery %+v; want lost, offset %d, %d dropped, %d missing", rec, valid, half-valid, len(b)-half)
	}
	r := logs.one(t, "meta/local: journal lost committed data")
	if r["missing_bytes"] != float64(len(b)-half) || r["dropped_bytes"] != float64(half-valid) || r["file"] != journalPath(dir, 1) {
		t.Fatalf("log record %v", r)
	}
	// What is left is the state of the surviving frames, and the store
	// works from there.
	sameState(t, "after truncation", dump(s), withoutLast(t, b, valid))
	must(t, s.CreateTopic(context.Background(), meta.TopicConfig{Name: "after"}))
}

// A cleanly closed journal whose last frame then loses its end looks like
// a torn tail, but the close record knows that frame was committed.
func TestRecoveryTornLookingCommittedFrame(t *testing.T) {
	dir, _, b := closedStore(t)
	offs := frames(t, b)
	last := offs[len(offs)-2]
	must(t, os.Truncate(journalPath(dir, 1), int64(len(b)-1)))
	s, logs, err := openLogged(t, dir)
	must(t, err)
	rec := s.Recovery()
	if !rec.LostCommitted || rec.Offset != int64(last) || rec.DroppedBytes != int64(len(b)-1-last) || rec.MissingBytes != 1 {
		t.Fatalf("Recovery %+v", rec)
	}
	logs.one(t, "meta/local: journal lost committed data")
}

// F9: an emptied journal forgets every topic; the close record makes it
// loud.
func TestRecoveryEmptiedJournalIsLostData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
	}{
		{"truncated to 0", func(p string) error { return os.Truncate(p, 0) }},
		{"deleted", os.Remove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, b := closedStore(t)
			must(t, tc.damage(journalPath(dir, 1)))
			s, logs, err := openLogged(t, dir)
			must(t, err)
			rec := s.Recovery()
			if !rec.LostCommitted || rec.Journal != journalName(1) || rec.MissingBytes != int64(len(b)) {
				t.Fatalf("Recovery %+v, want %d bytes missing", rec, len(b))
			}
			logs.one(t, "meta/local: journal lost committed data")
			if ts, err := s.Topics(context.Background()); err != nil || len(ts) != 0 {
				t.Fatalf("Topics %v %v", ts, err)
			}
		})
	}
}

// A tail of zeros longer than any one frame is not what an interrupted
// append leaves.
func TestRecoveryZeroedJournalIsLostData(t *testing.T) {
	_, _, b := closedStore(t)
	dir := t.TempDir()
	must(t, os.WriteFile(journalPath(dir, 1), make([]byte, len(b)), 0o644)) // header and frames zeroed
	s, logs, err := openLogged(t, dir)
	must(t, err)
	if rec := s.Recovery(); !rec.LostCommitted || rec.DroppedBytes != int64(len(b)) || rec.Offset != 0 {
		t.Fatalf("Recovery %+v", rec)
	}
	logs.one(t, "meta/local: journal lost committed data")
}

// F6: a flipped byte in the middle of the journal. Open refuses (the frames
// after the damage are still on disk and were committed), naming the
// damage; WithTruncateDamaged opens without them, saves them, and reports.
func TestRecoveryDamagedMiddle(t *testing.T) {
	_, _, b := closedStore(t)
	offs := frames(t, b)
	mid := offs[len(offs)/2]
	after := len(offs) - 1 - len(offs)/2 - 1 // whole frames after the damaged one
	for _, tc := range []struct {
		name    string
		corrupt func([]byte)
	}{
		{"payload byte", func(b []byte) { b[mid+FrameHeaderSize+3] ^= 0x20 }},
		{"length past the end", func(b []byte) { b[mid+1] = 0xff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			damaged := slices.Clone(b)
			tc.corrupt(damaged)
			must(t, os.WriteFile(journalPath(dir, 1), damaged, 0o644))

			_, logs, err := openLogged(t, dir)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "WithTruncateDamaged") {
				t.Fatalf("Open: %v, want ErrCorrupt naming the recovery option", err)
			}
			if recs := logs.all(t); len(recs) != 0 {
				t.Fatalf("refused Open logged %v", recs)
			}

			s, logs, err := openLogged(t, dir, WithTruncateDamaged())
			must(t, err)
			sameState(t, "recovered", dump(s), withoutLast(t, b, mid))
			rec := s.Recovery()
			want := Recovery{
				Journal: journalName(1), Offset: int64(mid), DroppedBytes: int64(len(b) - mid),
				DroppedFrames: after, LostCommitted: true, Cause: rec.Cause,
				Saved: journalName(1) + ".dropped-at-" + strconv.Itoa(mid),
			}
			mustRecovery(t, rec, want)
			r := logs.one(t, "meta/local: journal lost committed data")
			if r["dropped_frames"] != float64(after) || r["saved"] != want.Saved {
				t.Fatalf("log record %v", r)
			}
			saved, err := os.ReadFile(filepath.Join(dir, rec.Saved))
			must(t, err)
			if !bytes.Equal(saved, damaged[mid:]) {
				t.Fatal("saved bytes differ from the dropped tail")
			}
			// The store goes on; a plain reopen finds a clean journal.
			must(t, s.CreateTopic(context.Background(), meta.TopicConfig{Name: "after"}))
			w := dump(s)
			must(t, s.Close())
			s, _, err = openLogged(t, dir)
			must(t, err)
			sameState(t, "reopened", dump(s), w)
			if rec := s.Recovery(); rec != (Recovery{}) {
				t.Fatalf("Recovery after the repair: %+v", rec)
			}
		})
	}
}

// Damage outside the last journal is not covered by the recovery option.
func TestRecoveryOptionLastJournalOnly(t *testing.T) {
	_, _, b := closedStore(t)
	dir := t.TempDir()
	damaged := slices.Clone(b)
	damaged[len(b)/2] ^= 0x20
	must(t, os.WriteFile(journalPath(dir, 1), damaged, 0o644))
	must(t, os.WriteFile(journalPath(dir, 2), appendFileHeader(nil, journalMagic, 2), 0o644))
	if _, _, err := openLogged(t, dir, WithTruncateDamaged()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

// An unreadable close record is ignored with a warning: it is evidence,
// not state.
func TestRecoveryBadCloseRecord(t *testing.T) {
	dir, want, _ := closedStore(t)
	must(t, os.WriteFile(filepath.Join(dir, closedName), []byte("TLMC junk"), 0o644))
	s, logs, err := openLogged(t, dir)
	must(t, err)
	sameState(t, "reopened", dump(s), want)
	if recs := logs.all(t); len(recs) != 1 || recs[0]["level"] != "WARN" {
		t.Fatalf("log records %v, want one WARN", recs)
	}
}

// A full disk is meta.ErrUnavailable on every mutation, the error keeps
// its cause for errors.Is, and its message names no server path.
func TestUnavailableErrorsNameNoPath(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	populate(t, s)
	enospc := &fs.PathError{Op: "write", Path: journalPath(dir, 1), Err: syscall.ENOSPC}
	s.c.Lock()
	s.c.j = &pathFaultFile{file: s.c.j, err: enospc}
	s.c.Unlock()
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: %v, want ErrUnavailable and ENOSPC", what, err)
		}
		if strings.Contains(err.Error(), dir) {
			t.Fatalf("%s: message names the store's path: %v", what, err)
		}
	}
	check("CreateTopic", s.CreateTopic(ctx, meta.TopicConfig{Name: "x"}))
	// The store refuses mutations from then on, with the same cause.
	check("CommitOffsets", s.CommitOffsets(ctx, "g", []meta.GroupOffset{{Topic: "orders", Offset: 1}}))
	_, err := s.Acquire(ctx, pkey(0), "A", t0, time.Minute)
	check("Acquire", err)
	check("FencePartition", s.FencePartition(ctx, pkey(0)))

	// A deadline that passes is ErrUnavailable too, reads included.
	dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	s2 := openT(t, t.TempDir())
	for what, err := range map[string]error{
		"CreateTopic":   s2.CreateTopic(dctx, meta.TopicConfig{Name: "x"}),
		"CommitOffsets": s2.CommitOffsets(dctx, "g", []meta.GroupOffset{{Topic: "orders", Offset: 1}}),
		"Topics":        func() error { _, err := s2.Topics(dctx); return err }(),
	} {
		if !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s past its deadline: %v", what, err)
		}
	}
}

// pathFaultFile fails every write with err.
type pathFaultFile struct {
	file
	err error
}

func (f *pathFaultFile) WriteAt([]byte, int64) (int, error) { return 0, f.err }
