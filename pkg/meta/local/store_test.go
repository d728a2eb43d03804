package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

func TestConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store {
		return openT(t, t.TempDir())
	})
}

// The conformance suite again with a tiny threshold, so its mutations run
// through journal rotations and snapshots.
func TestConformanceRotating(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store {
		return openT(t, t.TempDir(), WithSnapshotBytes(512))
	})
}

var t0 = time.UnixMilli(1_700_000_000_000)

func openT(t testing.TB, dir string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// dump is the store's whole state in a canonical form.
func dump(s *Store) []*entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.st.entries()
}

func sameState(t *testing.T, what string, got, want []*entry) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: state differs\n got  %s\n want %s", what, entriesString(got), entriesString(want))
	}
}

func entriesString(es []*entry) string {
	var b []byte
	for _, e := range es {
		b = fmt.Appendf(b, "\n   %+v", *e)
		if e.Part != nil {
			b = fmt.Appendf(b, " part=%+v", *e.Part)
		}
	}
	return string(b)
}

func pkey(p int) meta.PartitionKey {
	return meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: p}
}

func committed(p meta.Partition, n int64, sealed int) meta.Partition {
	p.NextOffset = n
	p.LastTS = t0.UnixMilli() + n
	p.Active = &meta.SegmentInfo{Base: n - n%100, Epoch: p.Epoch, Size: 32 + n, NextOffset: n, FirstTS: -1, LastTS: -1, CreatedMs: t0.UnixMilli()}
	p.Sealed = nil
	for i := range sealed {
		p.Sealed = append(p.Sealed, meta.SegmentInfo{Base: int64(i) * 100, Epoch: 1, Size: 1 << 20, NextOffset: int64(i+1) * 100, FirstTS: int64(i), LastTS: int64(i) + 1, CreatedMs: 7})
	}
	return p
}

// populate runs every kind of mutation, leaving a state that has a bit of
// everything: live and released leases, deleted items, group offsets.
func populate(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for i, name := range []string{"orders", "audit", "gone"} {
		must(t, s.CreateTopic(ctx, meta.TopicConfig{Name: name, ID: fmt.Sprintf("id-%d", i), Partitions: 3, RetentionMs: -1, CleanupPolicy: "delete"}))
	}
	must(t, s.DeleteTopic(ctx, "gone", "id-2"))
	for p := range 3 {
		a, err := s.Acquire(ctx, pkey(p), fmt.Sprintf("owner-%d", p), t0, time.Minute)
		must(t, err)
		must(t, s.Commit(ctx, committed(a.Partition, int64(100*p+5), p), p == 1, t0, time.Minute))
	}
	a, err := s.Acquire(ctx, pkey(9), "doomed", t0, time.Minute)
	must(t, err)
	must(t, s.Commit(ctx, committed(a.Partition, 1, 0), false, t0, time.Minute))
	must(t, s.DeletePartition(ctx, pkey(9)))
	must(t, s.CommitOffsets(ctx, "g1", []meta.GroupOffset{{Topic: "orders", Partition: 1, Offset: 10, Metadata: "x"}, {Topic: "audit", Partition: 0, Offset: 3}}))
	must(t, s.CommitOffsets(ctx, "g2", []meta.GroupOffset{{Topic: "orders", Partition: 0, Offset: 4}}))
	must(t, s.CommitOffsets(ctx, "g1", []meta.GroupOffset{{Topic: "orders", Partition: 1, Offset: 12, Metadata: "y"}}))
}

func journalPath(dir string, seq uint64) string { return filepath.Join(dir, journalName(seq)) }

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	populate(t, s)
	want := dump(s)
	must(t, s.Close())

	s = openT(t, dir)
	sameState(t, "after reopen", dump(s), want)
	// Keep going on the reopened journal, then reopen again.
	ctx := context.Background()
	a, err := s.Acquire(ctx, pkey(1), "next", t0, time.Minute) // released above
	must(t, err)
	if a.TakenOver || a.Epoch != 2 || a.NextOffset != 105 {
		t.Fatalf("Acquire after reopen: %+v", a)
	}
	must(t, s.Commit(ctx, committed(a.Partition, 200, 3), false, t0, time.Minute))
	want = dump(s)
	must(t, s.Close())
	s = openT(t, dir)
	sameState(t, "after second reopen", dump(s), want)
}

func TestClosed(t *testing.T) {
	s := openT(t, t.TempDir())
	must(t, s.Close())
	must(t, s.Close())
	ctx := context.Background()
	if _, err := s.Topic(ctx, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Topic after Close: %v", err)
	}
	if err := s.CreateTopic(ctx, meta.TopicConfig{Name: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateTopic after Close: %v", err)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	if s2, err := Open(dir); !errors.Is(err, ErrLocked) {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	must(t, s.Close())
	s2 := openT(t, dir)
	must(t, s2.Close())
}

// frames returns the start offset of every frame in a journal or snapshot,
// plus the end of the last one.
func frames(t *testing.T, b []byte) []int {
	t.Helper()
	offs := []int{FileHeaderSize}
	for pos := FileHeaderSize; ; {
		_, next, err := readFrame(b, pos)
		if err == io.EOF {
			return offs
		}
		must(t, err)
		offs = append(offs, next)
		pos = next
	}
}

// TestTornTail cuts the journal at every byte inside its last frame: Open
// must succeed with every earlier mutation, truncate the tail, and go on.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	populate(t, s)
	before := dump(s)
	ctx := context.Background()
	a, err := s.Acquire(ctx, pkey(1), "last", t0, time.Minute)
	must(t, err)
	must(t, s.Commit(ctx, committed(a.Partition, 500, 2), false, t0, time.Minute))
	after := dump(s)
	must(t, s.Close())
	b, err := os.ReadFile(journalPath(dir, 1))
	must(t, err)
	offs := frames(t, b)
	start, end := offs[len(offs)-2], offs[len(offs)-1]
	if end != len(b) {
		t.Fatalf("journal has %d bytes after its last frame", len(b)-end)
	}
	beforeLast := withoutLast(t, b, start) // after the Acquire, before the Commit
	work := t.TempDir()
	for cut := start; cut <= end; cut++ {
		must(t, os.WriteFile(journalPath(work, 1), b[:cut], 0o644))
		s, err := Open(work)
		if err != nil {
			t.Fatalf("cut at %d of [%d, %d]: Open: %v", cut, start, end, err)
		}
		got := dump(s)
		s.Close()
		fi, err := os.Stat(journalPath(work, 1))
		must(t, err)
		want, wantSize := beforeLast, int64(start)
		if cut == end {
			want, wantSize = after, int64(end)
		}
		sameState(t, fmt.Sprintf("cut at %d", cut), got, want)
		if fi.Size() != wantSize {
			t.Fatalf("cut at %d: journal is %d bytes after Open, want %d", cut, fi.Size(), wantSize)
		}
	}
	sameState(t, "populated then nothing", withoutLast(t, b, offs[len(offs)-3]), before)

	// After a torn tail is truncated, new mutations append and survive.
	must(t, os.WriteFile(journalPath(work, 1), b[:end-3], 0o644))
	s = openT(t, work)
	must(t, s.CreateTopic(ctx, meta.TopicConfig{Name: "new", ID: "n"}))
	want := dump(s)
	must(t, s.Close())
	s = openT(t, work)
	sameState(t, "mutation after repaired tail", dump(s), want)
}

// withoutLast is the state of journal b cut at its last frame start.
func withoutLast(t *testing.T, b []byte, start int) []*entry {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(journalPath(dir, 1), b[:start], 0o644))
	s := openT(t, dir)
	defer s.Close()
	return dump(s)
}

// TestTornHeader: a journal created but whose header never became durable
// opens as empty and works.
func TestTornHeader(t *testing.T) {
	for cut := range FileHeaderSize + 1 {
		dir := t.TempDir()
		s := openT(t, dir)
		must(t, s.Close())
		b, err := os.ReadFile(journalPath(dir, 1))
		must(t, err)
		must(t, os.WriteFile(journalPath(dir, 1), b[:cut], 0o644))
		s = openT(t, dir)
		must(t, s.CreateTopic(context.Background(), meta.TopicConfig{Name: "t"}))
		must(t, s.Close())
		s = openT(t, dir)
		if _, err := s.Topic(context.Background(), "t"); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		must(t, s.Close())
	}
}

// TestDamage corrupts a journal in table-driven ways: torn tails recover
// with the earlier frames; anything else is ErrCorrupt.
func TestDamage(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	populate(t, s)
	ctx := context.Background()
	a, err := s.Acquire(ctx, pkey(7), "big", t0, time.Minute)
	must(t, err)
	// A last frame of several sectors, to zero one of them.
	must(t, s.Commit(ctx, committed(a.Partition, 900, 40), false, t0, time.Minute))
	full := dump(s)
	must(t, s.Close())
	b, err := os.ReadFile(journalPath(dir, 1))
	must(t, err)
	offs := frames(t, b)
	last, end := offs[len(offs)-2], offs[len(offs)-1]
	mid := offs[len(offs)/2]
	if end-last < 3*sectorSize {
		t.Fatalf("last frame is only %d bytes", end-last)
	}
	upToLast := withoutLast(t, b, last)

	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 0x40; return b }
	}
	zero := func(from, to int) func([]byte) []byte {
		return func(b []byte) []byte { clear(b[from:to]); return b }
	}
	setLen := func(at int, f func(uint32) uint32) func([]byte) []byte {
		return func(b []byte) []byte {
			n := uint32(b[at]) | uint32(b[at+1])<<8 | uint32(b[at+2])<<16 | uint32(b[at+3])<<24
			n = f(n)
			b[at], b[at+1], b[at+2], b[at+3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
			return b
		}
	}
	firstSector := (last/sectorSize + 1) * sectorSize
	cases := []struct {
		name     string
		corrupt  func([]byte) []byte
		want     []*entry // nil: want ErrCorrupt
		wantSize int
		lost     bool // Recovery.LostCommitted
	}{
		{"intact", func(b []byte) []byte { return b }, full, end, false},
		{"zeros appended", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, full, end, false},
		{"short junk appended", func(b []byte) []byte { return append(b, 0xff, 0xee, 0xdd) }, full, end, false},
		{"frame header appended, no payload", func(b []byte) []byte { return append(b, 100, 0, 0, 0, 1, 2, 3, 4, 'x') }, full, end, false},
		{"last frame zeroed", zero(last, end), upToLast, last, false},
		{"last frame payload sector zeroed", zero(firstSector, firstSector+sectorSize), upToLast, last, false},
		{"last frame last sector zeroed", zero((end-1)/sectorSize*sectorSize, end), upToLast, last, false},
		// Zeros past the end the frame's own header names: more than one
		// interrupted append writes.
		{"last frame cut then zero-extended", func(b []byte) []byte { return append(b[:last+40], make([]byte, 8192)...) }, upToLast, last, true},
		{"last frame bit flip", flip(last + 300), nil, 0, false},
		{"last frame crc flip", flip(last + 5), nil, 0, false},
		{"middle payload bit flip", flip(mid + 20), nil, 0, false},
		{"middle crc flip", flip(mid + 4), nil, 0, false},
		{"middle length high byte", setLen(mid, func(n uint32) uint32 { return n | 1<<24 }), nil, 0, false},
		{"middle length shorter", setLen(mid, func(n uint32) uint32 { return n - 1 }), nil, 0, false},
		{"middle length longer", setLen(mid, func(n uint32) uint32 { return n + 1 }), nil, 0, false},
		// Looks like a torn tail, but whole frames follow it.
		{"middle length past the end", setLen(mid, func(n uint32) uint32 { return uint32(len(b)) }), nil, 0, false},
		{"middle frame zeroed", zero(mid, offs[len(offs)/2+1]), nil, 0, false},
		{"middle sector zeroed", zero(mid+8, mid+12), nil, 0, false},
		{"zeros then data", func(b []byte) []byte { return append(append(b, make([]byte, 16)...), 1) }, nil, 0, false},
		{"header magic", flip(0), nil, 0, false},
		{"header crc", flip(17), nil, 0, false},
		{"header version", func(b []byte) []byte { b[4] = 9; return b }, nil, 0, false},
		{"header seq", func(b []byte) []byte { copy(b, appendFileHeader(nil, journalMagic, 2)); return b }, nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			damaged := tc.corrupt(slices.Clone(b))
			must(t, os.WriteFile(journalPath(work, 1), damaged, 0o644))
			s, err := Open(work)
			if tc.want == nil {
				if !errors.Is(err, ErrCorrupt) {
					if s != nil {
						s.Close()
					}
					t.Fatalf("Open: %v, want ErrCorrupt", err)
				}
				// Refusing changes nothing on disk.
				onDisk, err := os.ReadFile(journalPath(work, 1))
				must(t, err)
				if !slices.Equal(onDisk, damaged) {
					t.Fatal("a refused Open changed the journal")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			rec := s.Recovery()
			if rec.LostCommitted != tc.lost || rec.DroppedBytes != int64(len(damaged)-tc.wantSize) || (rec.DroppedBytes > 0) != (rec.Journal != "") {
				t.Errorf("Recovery %+v, want lost %v and %d bytes dropped", rec, tc.lost, len(damaged)-tc.wantSize)
			}
			got := dump(s)
			must(t, s.Close())
			sameState(t, "state", got, tc.want)
			fi, err := os.Stat(journalPath(work, 1))
			must(t, err)
			if fi.Size() != int64(tc.wantSize) {
				t.Fatalf("journal is %d bytes after Open, want %d", fi.Size(), tc.wantSize)
			}
		})
	}
}

// TestSnapshot drives many mutations through a tiny threshold and checks
// the result equals the same mutations without snapshots, before and after
// reopening.
func TestSnapshot(t *testing.T) {
	snapDir, plainDir := t.TempDir(), t.TempDir()
	snap := openT(t, snapDir, WithSnapshotBytes(2048))
	plain := openT(t, plainDir)
	run := func(f func(s *Store) error) error {
		t.Helper()
		e1, e2 := f(snap), f(plain)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("snapshotting store: %v, plain store: %v", e1, e2)
		}
		return e1
	}
	ctx := context.Background()
	populate(t, snap)
	populate(t, plain)
	acq := map[int]meta.Partition{}
	for i := range 300 {
		p := i % 5
		switch i % 7 {
		case 0:
			run(func(s *Store) error {
				a, err := s.Acquire(ctx, pkey(p), fmt.Sprintf("o%d", i), t0.Add(time.Duration(i)*time.Hour), time.Minute)
				acq[p] = a.Partition
				return err
			})
		case 3:
			run(func(s *Store) error {
				return s.CommitOffsets(ctx, fmt.Sprintf("g%d", i%3), []meta.GroupOffset{{Topic: "orders", Partition: p, Offset: int64(i)}})
			})
		case 5:
			run(func(s *Store) error {
				return s.CreateTopic(ctx, meta.TopicConfig{Name: fmt.Sprintf("t%d", i%11), ID: fmt.Sprint(i)})
			})
		case 6:
			run(func(s *Store) error {
				name := fmt.Sprintf("t%d", i%13)
				t, _ := s.Topic(ctx, name)
				return s.DeleteTopic(ctx, name, t.ID)
			})
		default:
			release := i%4 == 0
			err := run(func(s *Store) error {
				return s.Commit(ctx, committed(acq[p], int64(i), i%9), release, t0.Add(time.Duration(i)*time.Hour), time.Minute)
			})
			if err == nil && !release {
				next := acq[p]
				next.Version++ // the holder carries its version forward
				acq[p] = next
			}
		}
	}
	want := dump(plain)
	sameState(t, "live", dump(snap), want)
	seqs, err := journals(snapDir)
	must(t, err)
	if len(seqs) != 1 || seqs[0] < 3 {
		t.Fatalf("journals after rotations: %x, want one with seq >= 3", seqs)
	}
	if _, err := os.Stat(filepath.Join(snapDir, snapshotName)); err != nil {
		t.Fatal(err)
	}
	must(t, snap.Close())
	snap = openT(t, snapDir, WithSnapshotBytes(2048))
	sameState(t, "reopened", dump(snap), want)
}

// TestRotationCrash builds the directory states a crash during rotation
// can leave, and checks each opens to the same items.
func TestRotationCrash(t *testing.T) {
	src := t.TempDir()
	s := openT(t, src)
	populate(t, s)
	want := dump(s)
	st := s.mu.st
	must(t, s.Close())
	j1, err := os.ReadFile(journalPath(src, 1))
	must(t, err)
	hdr2 := appendFileHeader(nil, journalMagic, 2)

	type layout struct {
		name  string
		build func(t *testing.T, dir string)
		err   error
	}
	layouts := []layout{
		{"new journal empty", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 1), j1, 0o644))
			must(t, os.WriteFile(journalPath(dir, 2), nil, 0o644))
		}, nil},
		{"new journal header only", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 1), j1, 0o644))
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
		}, nil},
		{"snapshot tmp half written", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 1), j1, 0o644))
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
			must(t, os.WriteFile(filepath.Join(dir, snapshotTmpName), []byte("TLMS garbage"), 0o644))
		}, nil},
		{"snapshot in place, old journal not deleted", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 1), j1, 0o644))
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
			must(t, writeSnapshot(dir, 2, &st))
		}, nil},
		{"rotation done", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
			must(t, writeSnapshot(dir, 2, &st))
		}, nil},
		{"journal named by snapshot missing", func(t *testing.T, dir string) {
			must(t, writeSnapshot(dir, 2, &st))
		}, ErrCorrupt},
		{"journal gap", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 1), j1, 0o644))
			must(t, os.WriteFile(journalPath(dir, 3), appendFileHeader(nil, journalMagic, 3), 0o644))
		}, ErrCorrupt},
		{"first journal missing", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
		}, ErrCorrupt},
		{"torn tail in older journal", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 1), j1[:len(j1)-1], 0o644))
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
		}, ErrCorrupt},
		{"snapshot truncated", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
			must(t, writeSnapshot(dir, 2, &st))
			p := filepath.Join(dir, snapshotName)
			b, err := os.ReadFile(p)
			must(t, err)
			offs := frames(t, b)
			must(t, os.WriteFile(p, b[:offs[len(offs)-2]], 0o644)) // drop the end frame
		}, ErrCorrupt},
		{"snapshot bit flip", func(t *testing.T, dir string) {
			must(t, os.WriteFile(journalPath(dir, 2), hdr2, 0o644))
			must(t, writeSnapshot(dir, 2, &st))
			p := filepath.Join(dir, snapshotName)
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)/2] ^= 1
			must(t, os.WriteFile(p, b, 0o644))
		}, ErrCorrupt},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dir := t.TempDir()
			l.build(t, dir)
			s, err := Open(dir)
			if l.err != nil {
				if !errors.Is(err, l.err) {
					if s != nil {
						s.Close()
					}
					t.Fatalf("Open: %v, want %v", err, l.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			sameState(t, "state", dump(s), want)
			if _, err := os.Stat(filepath.Join(dir, snapshotTmpName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("snapshot tmp left: %v", err)
			}
			// It keeps working and the next reopen agrees.
			must(t, s.CreateTopic(context.Background(), meta.TopicConfig{Name: "after"}))
			w := dump(s)
			must(t, s.Close())
			s = openT(t, dir)
			sameState(t, "after reopen", dump(s), w)
		})
	}
}

// faultFile fails writes or syncs on demand.
type faultFile struct {
	file
	failWrite, failSync bool
}

var errInjected = errors.New("injected fault")

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	if f.failWrite {
		return 0, errInjected
	}
	return f.file.WriteAt(b, off)
}

func (f *faultFile) Sync() error {
	if f.failSync {
		return errInjected
	}
	return f.file.Sync()
}

func TestWriteFaults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    faultFile
		maybeNew bool // the failed mutation may be found after reopen
	}{
		{"write", faultFile{failWrite: true}, false},
		{"sync", faultFile{failSync: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir)
			populate(t, s)
			before := dump(s)
			ff := tc.fault
			s.c.Lock()
			ff.file = s.c.j
			s.c.j = &ff
			s.c.Unlock()

			ctx := context.Background()
			err := s.CreateTopic(ctx, meta.TopicConfig{Name: "x"})
			if !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, errInjected) {
				t.Fatalf("CreateTopic with a failing journal: %v", err)
			}
			sameState(t, "reads after the failure", dump(s), before)
			ff.failWrite, ff.failSync = false, false
			if err := s.CreateTopic(ctx, meta.TopicConfig{Name: "y"}); !errors.Is(err, meta.ErrUnavailable) {
				t.Fatalf("mutation after a failed write: %v, want ErrUnavailable", err)
			}
			must(t, s.Close())
			s = openT(t, dir)
			_, errX := s.Topic(ctx, "x")
			if _, err := s.Topic(ctx, "y"); !errors.Is(err, meta.ErrNotFound) {
				t.Fatalf("refused mutation found after reopen: %v", err)
			}
			if errX == nil && !tc.maybeNew {
				t.Fatal("failed write found after reopen")
			}
			must(t, s.CreateTopic(ctx, meta.TopicConfig{Name: "z"}))
		})
	}
}

func TestTooLarge(t *testing.T) {
	s := openT(t, t.TempDir())
	ctx := context.Background()
	big := make([]meta.GroupOffset, 20)
	for i := range big {
		big[i] = meta.GroupOffset{Topic: "orders", Partition: i, Offset: int64(i), Metadata: strings.Repeat("m", 1<<20)}
	}
	if err := s.CommitOffsets(ctx, "g", big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("CommitOffsets of %d offsets: %v, want ErrTooLarge", len(big), err)
	}
	// Nothing was written and the store still works.
	must(t, s.CommitOffsets(ctx, "g", big[:10]))
	got, err := s.GroupOffsets(ctx, "g", "orders")
	must(t, err)
	if len(got) != 10 {
		t.Fatalf("got %d offsets", len(got))
	}
}

func TestContextAndArgs(t *testing.T) {
	s := openT(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Topic(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Topic with canceled ctx: %v", err)
	}
	if err := s.CreateTopic(ctx, meta.TopicConfig{Name: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateTopic with canceled ctx: %v", err)
	}
	if _, err := s.Acquire(ctx, pkey(0), "A", t0, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with canceled ctx: %v", err)
	}
	bg := context.Background()
	if _, err := s.Topic(bg, "x"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("canceled CreateTopic happened: %v", err)
	}
	if _, err := s.Acquire(bg, pkey(0), "", t0, time.Minute); err == nil {
		t.Fatal("Acquire with empty owner succeeded")
	}
	if p, err := s.Partition(bg, pkey(0)); err != nil || p.Epoch != 0 {
		t.Fatalf("after refused Acquires: %+v, %v", p, err)
	}
}

func TestOpenCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "meta")
	s := openT(t, dir)
	must(t, s.CreateTopic(context.Background(), meta.TopicConfig{Name: "t"}))
	must(t, s.Close())
	s = openT(t, dir)
	if _, err := s.Topic(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
}
