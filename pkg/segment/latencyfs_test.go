package segment

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// LatencyFS charges each call its class: reads and lookups the read
// latency, syncs, truncates, creates and flushing closes the durable one,
// pwrites nothing.
func TestLatencyFSCharges(t *testing.T) {
	p, err := LatencyProfileByName("efs-regional")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var charged []time.Duration
	fsys := LatencyFS(OSFS{}, p, func(d time.Duration) { mu.Lock(); charged = append(charged, d); mu.Unlock() })
	take := func() []time.Duration { mu.Lock(); defer mu.Unlock(); c := charged; charged = nil; return c }
	name := filepath.Join(t.TempDir(), "f")
	r, d := p.Read, p.Durable
	steps := []struct {
		what string
		do   func(f *File) error
		want []time.Duration
	}{
		{"create", func(f *File) (err error) { *f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644); return }, []time.Duration{d}},
		{"pwrite", func(f *File) error { _, err := (*f).WriteAt([]byte("abc"), 0); return err }, nil},
		{"flushing close", func(f *File) error { return (*f).Close() }, []time.Duration{d}},
		{"open", func(f *File) (err error) { *f, err = fsys.OpenFile(name, os.O_RDWR, 0); return }, []time.Duration{r}},
		{"read", func(f *File) error { _, err := (*f).ReadAt(make([]byte, 3), 0); return err }, []time.Duration{r}},
		{"fstat", func(f *File) error { _, err := (*f).Stat(); return err }, nil},
		{"pwrite and sync", func(f *File) error { (*f).WriteAt([]byte("d"), 3); return (*f).Sync() }, []time.Duration{d}},
		{"truncate", func(f *File) error { return (*f).Truncate(2) }, []time.Duration{d}},
		{"clean close", func(f *File) error { return (*f).Close() }, []time.Duration{r}},
		{"readdir", func(*File) error { _, err := fsys.ReadDir(filepath.Dir(name)); return err }, []time.Duration{r}},
		{"remove", func(*File) error { return fsys.Remove(name) }, []time.Duration{d}},
	}
	var f File
	for _, s := range steps {
		if err := s.do(&f); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := take(); len(got) != len(s.want) || len(got) > 0 && got[0] != s.want[0] {
			t.Errorf("%s charged %v, want %v", s.what, got, s.want)
		}
	}
	if _, err := LatencyProfileByName("efs-nowhere"); err == nil {
		t.Error("an unknown profile was accepted")
	}
}
