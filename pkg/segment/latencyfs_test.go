package segment

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeClock's time moves by step at each Now, and by what Sleep is asked.
type fakeClock struct {
	now   time.Time
	step  time.Duration
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time {
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
}

// TestLatencyFSCharges: each call waits the latency of its class on the
// injected clock (nothing is timed), and is counted by class.
func TestLatencyFSCharges(t *testing.T) {
	const read, durable = 3 * time.Millisecond, 7 * time.Millisecond
	p := LatencyProfile{Name: "test", Read: read, Durable: durable}
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	var c RoundTripCounters
	fsys := LatencyFS(OSFS{}, p, &c, clk)
	dir := filepath.Join(t.TempDir(), "a", "b")
	name := filepath.Join(dir, "f")
	var f File

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		what string
		do   func()
		want []time.Duration
	}{
		{"MkdirAll of a new directory", func() { must(fsys.MkdirAll(dir, 0o755)) }, []time.Duration{read + durable}},
		{"MkdirAll of an existing directory", func() { must(fsys.MkdirAll(dir, 0o755)) }, []time.Duration{read}},
		{"OpenFile that creates", func() {
			var err error
			f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
			must(err)
		}, []time.Duration{durable}},
		{"WriteAt", func() { _, err := f.WriteAt([]byte("hello"), 0); must(err) }, nil},
		{"Sync of a dirty file", func() { must(f.Sync()) }, []time.Duration{durable}},
		{"Sync of a clean file", func() { must(f.Sync()) }, nil},
		{"ReadAt", func() { var b [5]byte; _, err := f.ReadAt(b[:], 0); must(err) }, []time.Duration{read}},
		{"ReadAt of 0 bytes", func() { _, err := f.ReadAt(nil, 0); must(err) }, nil},
		{"Stat of an open file", func() { _, err := f.Stat(); must(err) }, nil},
		{"Truncate", func() { must(f.Truncate(3)) }, []time.Duration{durable}},
		{"Close of a clean file", func() { must(f.Close()) }, nil},
		{"OpenFile O_CREATE of an existing file", func() {
			var err error
			f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
			must(err)
		}, []time.Duration{read}},
		{"WriteAt again", func() { _, err := f.WriteAt([]byte("x"), 3); must(err) }, nil},
		{"Close of a dirty file", func() { must(f.Close()) }, []time.Duration{durable}},
		{"OpenFile O_EXCL of an existing file (fails)", func() {
			if _, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				t.Fatal("O_EXCL open of an existing file succeeded")
			}
		}, []time.Duration{read}},
		{"OpenFile O_EXCL that creates", func() {
			g, err := fsys.OpenFile(name+"2", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			must(err)
			must(g.Close())
		}, []time.Duration{durable}},
		{"OpenFile O_TRUNC of an existing file", func() {
			g, err := fsys.OpenFile(name+"2", os.O_RDWR|os.O_TRUNC, 0o644)
			must(err)
			must(g.Close())
		}, []time.Duration{durable}},
		{"OpenFile of a missing file (fails)", func() {
			if _, err := fsys.OpenFile(name+"3", os.O_RDONLY, 0); err == nil {
				t.Fatal("open of a missing file succeeded")
			}
		}, []time.Duration{read}},
		{"Stat", func() { _, err := fsys.Stat(name); must(err) }, []time.Duration{read}},
		{"ReadDir", func() { _, err := fsys.ReadDir(dir); must(err) }, []time.Duration{read}},
		{"SyncDir", func() { must(fsys.SyncDir(dir)) }, []time.Duration{read}},
		{"Remove", func() { must(fsys.Remove(name)) }, []time.Duration{durable}},
		{"RemoveAll", func() { must(fsys.RemoveAll(dir)) }, []time.Duration{durable}},
	}
	var total time.Duration
	counts := map[time.Duration]int64{read: 1, durable: 1} // MkdirAll's, in one wait
	sum := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	for _, s := range steps {
		clk.slept = nil
		s.do()
		// Waited in two parts (the way to the server, then the rest:
		// TestLatencyFSVisibility), adding up to the latency.
		if sum(clk.slept) != sum(s.want) {
			t.Errorf("%s: slept %v, want %v in all", s.what, clk.slept, s.want)
		}
		for _, d := range s.want {
			total += d
			if d != read+durable {
				counts[d]++
			}
		}
	}
	if c.Calls(RoundTripRead) != counts[read] || c.Calls(RoundTripDurable) != counts[durable] || c.Calls(RoundTripNone) != 0 {
		t.Errorf("counted read %d, durable %d, none %d; want %d, %d, 0",
			c.Calls(RoundTripRead), c.Calls(RoundTripDurable), c.Calls(RoundTripNone), counts[read], counts[durable])
	}
	if c.Charged() != total || c.Taken() != total {
		t.Errorf("charged %v, taken %v, want %v both", c.Charged(), c.Taken(), total)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the calls did not reach the disk: %s after RemoveAll: %v", dir, err)
	}
}

// TestLatencyFSLocalTime: the time the inner call took counts toward the
// latency; only the rest is waited, and nothing when the call took longer.
func TestLatencyFSLocalTime(t *testing.T) {
	p := LatencyProfile{Name: "test", Read: time.Millisecond, Durable: 5 * time.Millisecond}
	clk := &fakeClock{now: time.Unix(1e9, 0), step: 2 * time.Millisecond} // each call takes 2 ms
	var c RoundTripCounters
	fsys := LatencyFS(OSFS{}, p, &c, clk)
	name := filepath.Join(t.TempDir(), "f")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644) // durable: 5 ms, 2 of them spent
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(name); err != nil { // read: 1 ms, less than the call took
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The create: half a read round trip to the server (0.5 ms), then 2.5
	// of the 5 ms left after the 2 its call and the clock read took; the
	// stat: the 0.5 ms, then nothing (its 1 ms spent).
	if want := []time.Duration{500 * time.Microsecond, 2500 * time.Microsecond, 500 * time.Microsecond}; !slices.Equal(clk.slept, want) {
		t.Errorf("slept %v, want %v", clk.slept, want)
	}
	if c.Charged() != 6*time.Millisecond {
		t.Errorf("charged %v, want the profile's 6ms", c.Charged())
	}
	// Taken, as this clock tells it: the create 2 ms on the clock read that
	// starts it, 0.5 + 2.5 waited and 2 more on the read that ends it; the
	// stat 2, 0.5 and 2.
	if want := 11500 * time.Microsecond; c.Taken() != want {
		t.Errorf("taken %v, want %v", c.Taken(), want)
	}
}

// noSleep fails the test if it is asked to wait.
type noSleep struct{ t *testing.T }

func (noSleep) Now() time.Time          { return time.Unix(1e9, 0) }
func (c noSleep) Sleep(d time.Duration) { c.t.Errorf("slept %v under profile none", d) }

// TestLatencyFSNone: the none profile counts round trips and sleeps not at
// all.
func TestLatencyFSNone(t *testing.T) {
	var c RoundTripCounters
	fsys := LatencyFS(OSFS{}, LatencyProfile{}, &c, noSleep{t})
	f, err := fsys.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Calls(RoundTripDurable) != 2 || c.Charged() != 0 {
		t.Errorf("durable %d, charged %v; want 2 (create, flushing close) and 0", c.Calls(RoundTripDurable), c.Charged())
	}
}

func TestParseLatencyProfile(t *testing.T) {
	for _, k := range []struct {
		in            string
		name          string
		read, durable time.Duration
	}{
		{"", "none", 0, 0},
		{"none", "none", 0, 0},
		{"efs-regional", "efs-regional", time.Millisecond, 2700 * time.Microsecond},
		{"EFS-Regional", "efs-regional", time.Millisecond, 2700 * time.Microsecond},
		{"efs-onezone", "efs-onezone", 250 * time.Microsecond, 1600 * time.Microsecond},
	} {
		p, err := ParseLatencyProfile(k.in)
		if err != nil || p.String() != k.name || p.Read != k.read || p.Durable != k.durable {
			t.Errorf("ParseLatencyProfile(%q) = %+v, %v; want %s %v/%v", k.in, p, err, k.name, k.read, k.durable)
		}
		if p.Charges() != (k.read > 0) {
			t.Errorf("%q: Charges() = %v", k.in, p.Charges())
		}
	}
	for _, bad := range []string{"efs", "regional", "1ms"} {
		if _, err := ParseLatencyProfile(bad); err == nil || !strings.Contains(err.Error(), "efs-onezone") {
			t.Errorf("ParseLatencyProfile(%q): %v, want an error listing the profiles", bad, err)
		}
	}
	if (LatencyProfile{}).String() != "none" || (LatencyProfile{}).Charges() {
		t.Error("the zero profile is not none")
	}
	if RoundTripRead.String() != "read" || RoundTripDurable.String() != "durable" || RoundTripNone.String() != "none" {
		t.Error("round-trip class names")
	}
}

// visClock is a fakeClock that calls at at each Sleep, before time moves.
type visClock struct {
	fakeClock
	at func()
}

func (c *visClock) Sleep(d time.Duration) {
	c.at()
	c.fakeClock.Sleep(d)
}

// TestLatencyFSVisibility: what a client did shows to others (the inner
// file system) when its call reaches the server, half a read round trip
// in, and written bytes only with the flush that sends them.
func TestLatencyFSVisibility(t *testing.T) {
	p := LatencyProfile{Name: "test", Read: 2 * time.Millisecond, Durable: 6 * time.Millisecond}
	name := filepath.Join(t.TempDir(), "f")
	var seen []string // at each wait: the file's contents, or "absent"
	look := func() {
		b, err := os.ReadFile(name)
		switch {
		case os.IsNotExist(err):
			seen = append(seen, "absent")
		case err != nil:
			t.Fatal(err)
		default:
			seen = append(seen, strconv.Quote(string(b)))
		}
	}
	clk := &visClock{fakeClock: fakeClock{now: time.Unix(1e9, 0)}, at: look}
	fsys := LatencyFS(OSFS{}, p, nil, clk)
	check := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(seen, want) {
			t.Errorf("%s: others saw %v at its waits, want %v", what, seen, want)
		}
		if !slices.Equal(clk.slept, []time.Duration{time.Millisecond, 5 * time.Millisecond}) {
			t.Errorf("%s: waited %v, want the way there (1ms) and the rest (5ms)", what, clk.slept)
		}
		seen, clk.slept = nil, nil
	}
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	check("create", "absent", `""`)
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 0 || len(clk.slept) != 0 {
		t.Fatalf("WriteAt waited: %v", clk.slept)
	}
	if b, _ := os.ReadFile(name); len(b) != 0 {
		t.Fatalf("a write showed to others before its flush: %q", b)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	check("sync", `""`, `"hello"`)
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	var b [5]byte
	clk.at = func() {} // the read's own waits: not looked at
	if _, err := f.ReadAt(b[:], 0); err != nil || string(b[:]) != "Jello" {
		t.Fatalf("the writer read %q, %v: want its own write", b[:], err)
	}
	clk.at, clk.slept = look, nil
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	check("truncate", `"Jello"`, `"Je"`)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if len(clk.slept) != 0 {
		t.Errorf("the close of a flushed file waited %v", clk.slept)
	}
	seen, clk.slept = nil, nil
	if err := fsys.Remove(name); err != nil {
		t.Fatal(err)
	}
	check("remove", `"Je"`, "absent")
}
