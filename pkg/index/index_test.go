package index

import (
	"bytes"
	"errors"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func encodeOffsets(es []OffsetEntry) []byte {
	var b []byte
	for _, e := range es {
		b = AppendOffset(b, e)
	}
	return b
}

func encodeTimes(es []TimeEntry) []byte {
	var b []byte
	for _, e := range es {
		b = AppendTime(b, e)
	}
	return b
}

func TestOffsetEntryLayout(t *testing.T) {
	// The wire layout, computed by hand: | rel 4 LE | pos 4 LE |.
	got := AppendOffset([]byte{0xAA}, OffsetEntry{Rel: 0x01020304, Pos: 0xA0B0C0D0})
	want := []byte{0xAA, 0x04, 0x03, 0x02, 0x01, 0xD0, 0xC0, 0xB0, 0xA0}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendOffset = % x, want % x", got, want)
	}
}

func TestTimeEntryLayout(t *testing.T) {
	// | timestamp 8 LE | rel 4 LE |.
	got := AppendTime(nil, TimeEntry{Timestamp: -2, Rel: 7})
	want := []byte{0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 7, 0, 0, 0}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendTime = % x, want % x", got, want)
	}
}

func TestOffsetsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []OffsetEntry
	}{
		{"empty", nil},
		{"one", []OffsetEntry{{Rel: 0, Pos: 0}}},
		{"many", []OffsetEntry{{1, 100}, {2, 4200}, {17, 9000}, {18, 9001}}},
		{"extremes", []OffsetEntry{{0, 0}, {math.MaxUint32 - 1, math.MaxUint32 - 1}, {math.MaxUint32, math.MaxUint32}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeOffsets(tc.entries)
			if len(b) != len(tc.entries)*OffsetEntrySize {
				t.Fatalf("encoded %d bytes, want %d", len(b), len(tc.entries)*OffsetEntrySize)
			}
			got, err := ParseOffsets(b)
			if err != nil {
				t.Fatalf("ParseOffsets: %v", err)
			}
			if len(got) != len(tc.entries) || (len(got) > 0 && !reflect.DeepEqual([]OffsetEntry(got), tc.entries)) {
				t.Fatalf("ParseOffsets = %v, want %v", got, tc.entries)
			}
		})
	}
}

func TestTimesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []TimeEntry
	}{
		{"empty", nil},
		{"one", []TimeEntry{{Timestamp: 1700000000000, Rel: 3}}},
		{"equal timestamps", []TimeEntry{{5, 1}, {5, 2}, {5, 9}}},
		{"many", []TimeEntry{{-10, 1}, {0, 2}, {1 << 40, 100}, {math.MaxInt64, math.MaxUint32}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeTimes(tc.entries)
			if len(b) != len(tc.entries)*TimeEntrySize {
				t.Fatalf("encoded %d bytes, want %d", len(b), len(tc.entries)*TimeEntrySize)
			}
			got, err := ParseTimes(b)
			if err != nil {
				t.Fatalf("ParseTimes: %v", err)
			}
			if len(got) != len(tc.entries) || (len(got) > 0 && !reflect.DeepEqual([]TimeEntry(got), tc.entries)) {
				t.Fatalf("ParseTimes = %v, want %v", got, tc.entries)
			}
		})
	}
}

func TestParseOffsetsTornTail(t *testing.T) {
	entries := []OffsetEntry{{1, 100}, {2, 200}, {3, 300}}
	full := encodeOffsets(entries)
	for n := 0; n <= len(full); n++ {
		got, err := ParseOffsets(full[:n])
		whole := n / OffsetEntrySize
		if n%OffsetEntrySize == 0 {
			if err != nil {
				t.Errorf("len %d: err %v, want nil", n, err)
			}
		} else if !errors.Is(err, ErrTruncated) {
			t.Errorf("len %d: err %v, want ErrTruncated", n, err)
		}
		if len(got) != whole || (whole > 0 && !reflect.DeepEqual([]OffsetEntry(got), entries[:whole])) {
			t.Errorf("len %d: prefix %v, want %v", n, got, entries[:whole])
		}
	}
}

func TestParseTimesTornTail(t *testing.T) {
	entries := []TimeEntry{{10, 1}, {10, 2}, {30, 3}}
	full := encodeTimes(entries)
	for n := 0; n <= len(full); n++ {
		got, err := ParseTimes(full[:n])
		whole := n / TimeEntrySize
		if n%TimeEntrySize == 0 {
			if err != nil {
				t.Errorf("len %d: err %v, want nil", n, err)
			}
		} else if !errors.Is(err, ErrTruncated) {
			t.Errorf("len %d: err %v, want ErrTruncated", n, err)
		}
		if len(got) != whole || (whole > 0 && !reflect.DeepEqual([]TimeEntry(got), entries[:whole])) {
			t.Errorf("len %d: prefix %v, want %v", n, got, entries[:whole])
		}
	}
}

func TestParseOffsetsOutOfOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []OffsetEntry
		keep    int // entries in the valid prefix
	}{
		{"rel repeats", []OffsetEntry{{1, 100}, {1, 200}}, 1},
		{"rel goes back", []OffsetEntry{{1, 100}, {5, 200}, {4, 300}, {6, 400}}, 2},
		{"pos repeats", []OffsetEntry{{1, 100}, {2, 100}}, 1},
		{"pos goes back", []OffsetEntry{{1, 100}, {2, 200}, {3, 150}}, 2},
		{"zeros", []OffsetEntry{{0, 0}, {0, 0}, {0, 0}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeOffsets(tc.entries)
			for _, tail := range [][]byte{nil, {1, 2, 3}} { // corrupt wins over a torn tail
				got, err := ParseOffsets(append(b[:len(b):len(b)], tail...))
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("tail %d: err %v, want ErrCorrupt", len(tail), err)
				}
				if errors.Is(err, ErrTruncated) {
					t.Fatalf("tail %d: err %v also claims ErrTruncated", len(tail), err)
				}
				if !reflect.DeepEqual([]OffsetEntry(got), tc.entries[:tc.keep]) {
					t.Fatalf("tail %d: prefix %v, want %v", len(tail), got, tc.entries[:tc.keep])
				}
			}
		})
	}
}

func TestParseTimesOutOfOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []TimeEntry
		keep    int
	}{
		{"rel repeats", []TimeEntry{{1, 1}, {2, 1}}, 1},
		{"rel goes back", []TimeEntry{{1, 1}, {2, 5}, {3, 4}}, 2},
		{"timestamp goes back", []TimeEntry{{10, 1}, {20, 2}, {19, 3}}, 2},
		{"zeros", []TimeEntry{{0, 0}, {0, 0}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTimes(encodeTimes(tc.entries))
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			if !reflect.DeepEqual([]TimeEntry(got), tc.entries[:tc.keep]) {
				t.Fatalf("prefix %v, want %v", got, tc.entries[:tc.keep])
			}
		})
	}
}

var testOffsets = Offsets{{Rel: 3, Pos: 100}, {Rel: 10, Pos: 4200}, {Rel: 20, Pos: 8300}}

func TestOffsetsFloor(t *testing.T) {
	for _, tc := range []struct {
		rel  uint32
		want OffsetEntry
		ok   bool
	}{
		{0, OffsetEntry{}, false},
		{2, OffsetEntry{}, false},
		{3, testOffsets[0], true},
		{4, testOffsets[0], true},
		{9, testOffsets[0], true},
		{10, testOffsets[1], true},
		{19, testOffsets[1], true},
		{20, testOffsets[2], true},
		{math.MaxUint32, testOffsets[2], true},
	} {
		got, ok := testOffsets.Floor(tc.rel)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Floor(%d) = %v, %v; want %v, %v", tc.rel, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Offsets(nil).Floor(5); ok {
		t.Errorf("nil Offsets: Floor found an entry")
	}
}

func TestOffsetsBelow(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  int
	}{
		{-1, 0},
		{0, 0},
		{100, 0}, // an entry at the limit points at uncommitted bytes
		{101, 1},
		{4200, 1},
		{4201, 2},
		{8300, 2},
		{8301, 3},
		{1 << 40, 3},
	} {
		got := testOffsets.Below(tc.limit)
		if len(got) != tc.want || !reflect.DeepEqual(got, testOffsets[:tc.want]) {
			t.Errorf("Below(%d) = %v, want %v", tc.limit, got, testOffsets[:tc.want])
		}
	}
	if got := Offsets(nil).Below(100); len(got) != 0 {
		t.Errorf("nil Offsets: Below = %v", got)
	}
}

var testTimes = Times{{Timestamp: 100, Rel: 2}, {Timestamp: 200, Rel: 5}, {Timestamp: 200, Rel: 9}, {Timestamp: 300, Rel: 12}}

func TestTimesBefore(t *testing.T) {
	for _, tc := range []struct {
		ts   int64
		want TimeEntry
		ok   bool
	}{
		{math.MinInt64, TimeEntry{}, false},
		{99, TimeEntry{}, false},
		{100, TimeEntry{}, false}, // strictly before
		{101, testTimes[0], true},
		{200, testTimes[0], true},
		{201, testTimes[2], true}, // last of the equal timestamps
		{300, testTimes[2], true},
		{301, testTimes[3], true},
		{math.MaxInt64, testTimes[3], true},
	} {
		got, ok := testTimes.Before(tc.ts)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Before(%d) = %v, %v; want %v, %v", tc.ts, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Times(nil).Before(5); ok {
		t.Errorf("nil Times: Before found an entry")
	}
}

func TestTimesUpTo(t *testing.T) {
	for _, tc := range []struct {
		rel  uint32
		want int
	}{
		{0, 0},
		{2, 0},
		{3, 1},
		{5, 1},
		{6, 2},
		{9, 2},
		{10, 3},
		{12, 3},
		{13, 4},
		{math.MaxUint32, 4},
	} {
		got := testTimes.UpTo(tc.rel)
		if len(got) != tc.want || !reflect.DeepEqual(got, testTimes[:tc.want]) {
			t.Errorf("UpTo(%d) = %v, want %v", tc.rel, got, testTimes[:tc.want])
		}
	}
}

// checkPrefix asserts the fuzz properties shared by both parsers: the
// returned prefix re-encodes to a prefix of the input, it is ordered, and the
// error says why parsing stopped.
func checkPrefix(t *testing.T, in, re []byte, n, size int, err error) {
	t.Helper()
	if !bytes.HasPrefix(in, re) {
		t.Fatalf("re-encoded prefix % x is not a prefix of the input % x", re, in)
	}
	switch {
	case err == nil:
		if len(re) != len(in) {
			t.Fatalf("nil error but only %d of %d bytes parsed", len(re), len(in))
		}
	case errors.Is(err, ErrCorrupt):
		if len(re)+size > len(in) || n == 0 {
			t.Fatalf("ErrCorrupt with no bad entry after %d entries in %d bytes", n, len(in))
		}
	case errors.Is(err, ErrTruncated):
		if len(in)-len(re) != len(in)%size {
			t.Fatalf("ErrTruncated with %d bytes left of %d", len(in)-len(re), len(in))
		}
	default:
		t.Fatalf("unexpected error %v", err)
	}
}

func FuzzParseOffsets(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeOffsets([]OffsetEntry{{1, 60}, {2, 4200}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		offs, err := ParseOffsets(b)
		for i := 1; i < len(offs); i++ {
			if offs[i].Rel <= offs[i-1].Rel || offs[i].Pos <= offs[i-1].Pos {
				t.Fatalf("entries %d and %d out of order: %v", i-1, i, offs)
			}
		}
		checkPrefix(t, b, encodeOffsets(offs), len(offs), OffsetEntrySize, err)
		// Parsing the valid prefix again gives the same entries and no error.
		again, err := ParseOffsets(encodeOffsets(offs))
		if err != nil || len(again) != len(offs) || (len(offs) > 0 && !reflect.DeepEqual(again, offs)) {
			t.Fatalf("prefix re-parses as %v, %v; want %v", again, err, offs)
		}
	})
}

func FuzzParseTimes(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeTimes([]TimeEntry{{1, 1}, {1, 2}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		times, err := ParseTimes(b)
		for i := 1; i < len(times); i++ {
			if times[i].Rel <= times[i-1].Rel || times[i].Timestamp < times[i-1].Timestamp {
				t.Fatalf("entries %d and %d out of order: %v", i-1, i, times)
			}
		}
		checkPrefix(t, b, encodeTimes(times), len(times), TimeEntrySize, err)
		again, err := ParseTimes(encodeTimes(times))
		if err != nil || len(again) != len(times) || (len(times) > 0 && !reflect.DeepEqual(again, times)) {
			t.Fatalf("prefix re-parses as %v, %v; want %v", again, err, times)
		}
	})
}

// readSeed reads a one-value []byte seed file of the go test fuzz corpus.
func readSeed(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" ||
		!strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
		t.Fatalf("%s: not a one-value go test fuzz v1 []byte file", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

// TestFuzzSeeds keeps the committed seed corpus honest: each target has its
// four kinds of seed and each seed is what its name says.
func TestFuzzSeeds(t *testing.T) {
	parsers := map[string]func([]byte) (int, error){
		"FuzzParseOffsets": func(b []byte) (int, error) { o, err := ParseOffsets(b); return len(o), err },
		"FuzzParseTimes":   func(b []byte) (int, error) { o, err := ParseTimes(b); return len(o), err },
	}
	for name, parse := range parsers {
		for _, tc := range []struct {
			seed      string
			minN      int
			maxN      int
			wantError bool
		}{
			{"empty", 0, 0, false},
			{"one-valid", 1, 1, false},
			{"many-valid", 2, 1 << 20, false},
			{"valid-plus-garbage", 1, 1 << 20, true},
		} {
			path := "testdata/fuzz/" + name + "/" + tc.seed
			n, err := parse(readSeed(t, path))
			if n < tc.minN || n > tc.maxN || (err != nil) != tc.wantError {
				t.Errorf("%s: %d entries, err %v; want %d..%d entries, error %v", path, n, err, tc.minN, tc.maxN, tc.wantError)
			}
		}
	}
}
