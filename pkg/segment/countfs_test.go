package segment

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCountingFS(t *testing.T) {
	var c FSCounters
	fsys := CountingFS(OSFS{}, &c)
	dir := filepath.Join(t.TempDir(), "d")
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "f")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	var b [5]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.ReadDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(name); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.OpenFile(name, os.O_RDONLY, 0); err == nil {
		t.Fatal("open of a removed file succeeded")
	}
	if err := fsys.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	want := map[FSOp]int64{FSOpen: 2, FSRead: 1, FSWrite: 1, FSSync: 1, FSTruncate: 1, FSFstat: 1, FSClose: 1,
		FSRemove: 1, FSRemoveAll: 1, FSReadDir: 1, FSStat: 1, FSMkdirAll: 1, FSSyncDir: 1}
	var total int64
	for _, op := range FSOps {
		if got := c.Calls(op); got != want[op] {
			t.Errorf("%s: %d calls, want %d", op, got, want[op])
		}
		total += want[op]
		if op.String() == "" || op.String() == "unknown" {
			t.Errorf("op %d has no name", op)
		}
	}
	if c.Bytes(FSWrite) != 5 || c.Bytes(FSRead) != 5 || c.Bytes(FSSync) != 0 {
		t.Errorf("bytes: written %d, read %d, synced %d; want 5, 5, 0", c.Bytes(FSWrite), c.Bytes(FSRead), c.Bytes(FSSync))
	}
	if c.Total() != total {
		t.Errorf("total %d, want %d", c.Total(), total)
	}
}
