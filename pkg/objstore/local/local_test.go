package local_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/local"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
)

func TestConformance(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objstore.Store {
		s, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func newStore(t *testing.T, dir string) *local.Store {
	t.Helper()
	s, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tmpFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestLayoutAndNoLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	ctx := t.Context()
	if err := s.Put(ctx, "a/b/c.seg", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "objects", "a", "b", "c.seg"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("object file = %q, %v", got, err)
	}
	if err := s.PutIfAbsent(ctx, "a/d", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "a/d", strings.NewReader("y"), 1); !errors.Is(err, objstore.ErrExists) {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/e", strings.NewReader("short"), 10); err == nil {
		t.Fatal("short body accepted")
	}
	if err := s.PutIfAbsent(ctx, "a/f", strings.NewReader("short"), 10); err == nil {
		t.Fatal("short body accepted")
	}
	if names := tmpFiles(t, dir); len(names) != 0 {
		t.Fatalf("temp files left behind: %v", names)
	}
	// The linked object is a file of its own, with one name.
	fi, err := os.Stat(filepath.Join(dir, "objects", "a", "d"))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		t.Fatalf("PutIfAbsent's object has %d links, want 1", st.Nlink)
	}
}

func TestBadKeysStayInsideRoot(t *testing.T) {
	parent := t.TempDir()
	s := newStore(t, filepath.Join(parent, "root"))
	for _, k := range objtest.BadKeys {
		_ = s.Put(t.Context(), k, strings.NewReader("x"), 1)
		_ = s.PutIfAbsent(t.Context(), k, strings.NewReader("x"), 1)
		_ = s.Delete(t.Context(), k)
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "root" {
		t.Fatalf("files appeared next to the root: %v", ents)
	}
}

func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	newStore(t, dir)
	old := filepath.Join(dir, "tmp", "put-old")
	fresh := filepath.Join(dir, "tmp", "put-fresh")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	newStore(t, dir)
	if names := tmpFiles(t, dir); len(names) != 1 || names[0] != "put-fresh" {
		t.Fatalf("tmp after reopen = %v, want only the fresh file", names)
	}
}

// A key cannot be both an object and a directory of keys here.
func TestKeyDirectoryConflict(t *testing.T) {
	s := newStore(t, t.TempDir())
	ctx := t.Context()
	if err := s.Put(ctx, "a/b", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Put over a directory":         s.Put(ctx, "a", strings.NewReader("y"), 1),
		"PutIfAbsent over a directory": s.PutIfAbsent(ctx, "a", strings.NewReader("y"), 1),
		"Put under an object":          s.Put(ctx, "a/b/c", strings.NewReader("y"), 1),
		"PutIfAbsent under an object":  s.PutIfAbsent(ctx, "a/b/c", strings.NewReader("y"), 1),
	} {
		if err == nil || errors.Is(err, objstore.ErrExists) {
			t.Errorf("%s: %v, want a conflict error other than ErrExists", name, err)
		}
	}
	if _, err := s.Head(ctx, "a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Head of a directory: %v", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete of a directory: %v", err)
	}
	if b, err := s.Get(ctx, "a/b", 0, -1); err != nil || string(b) != "x" {
		t.Errorf("a/b after conflicts = %q, %v", b, err)
	}
}

// Two Stores on one root, as two processes would have.
func TestPutIfAbsentAcrossStores(t *testing.T) {
	dir := t.TempDir()
	stores := []*local.Store{newStore(t, dir), newStore(t, dir), newStore(t, dir)}
	for round := range 20 {
		key := fmt.Sprintf("k/%d", round)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 {
			s := stores[i%len(stores)]
			wg.Go(func() {
				err := s.PutIfAbsent(t.Context(), key, strings.NewReader(fmt.Sprint(i)), 1)
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, objstore.ErrExists):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
	}
}

// helperEnv makes the test binary a PutIfAbsent worker process.
const helperEnv = "OBJSTORE_LOCAL_HELPER"

func TestPutIfAbsentAcrossProcesses(t *testing.T) {
	if dir := os.Getenv(helperEnv); dir != "" {
		helperProcess(dir)
		return
	}
	if testing.Short() {
		t.Skip("runs the test binary as child processes: skipped with -short (make unit); make test runs it")
	}
	dir := t.TempDir()
	newStore(t, dir)
	const procs, keys = 4, 30
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPutIfAbsentAcrossProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+dir, fmt.Sprintf("OBJSTORE_LOCAL_ID=%d", p))
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("worker %d: %v", p, err)
			}
			outs[p] = out
		})
	}
	wg.Wait()
	winners := map[string][]string{}
	for p, out := range outs {
		for line := range strings.Lines(string(out)) {
			if k, ok := strings.CutPrefix(strings.TrimSpace(line), "WON "); ok {
				winners[k] = append(winners[k], fmt.Sprint(p))
			}
		}
	}
	s := newStore(t, dir)
	for i := range keys {
		k := fmt.Sprintf("race/%d", i)
		w := winners[k]
		if len(w) != 1 {
			t.Fatalf("%s: winners %v, want exactly one", k, w)
		}
		b, err := s.Get(t.Context(), k, 0, -1)
		if err != nil || string(b) != "worker "+w[0] {
			t.Fatalf("%s = %q, %v; want the winner's bytes", k, b, err)
		}
	}
}

func helperProcess(dir string) {
	s, err := local.New(dir)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	body := "worker " + os.Getenv("OBJSTORE_LOCAL_ID")
	for i := range 30 {
		k := fmt.Sprintf("race/%d", i)
		err := s.PutIfAbsent(context.Background(), k, strings.NewReader(body), int64(len(body)))
		switch {
		case err == nil:
			fmt.Println("WON", k)
		case !errors.Is(err, objstore.ErrExists):
			fmt.Println("ERR", err)
			os.Exit(1)
		}
	}
}

// TestOpenObject reads an object in place (objstore.Files): ranges of it,
// a read past its end short with io.EOF, ErrNotFound for a missing key
// and ErrInvalidKey for a bad one; an object replaced by a Put while open
// reads as it was when opened. Counting keeps the method and counts each
// read as a Get.
func TestOpenObject(t *testing.T) {
	ctx := context.Background()
	s, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var c objstore.Counters
	files, ok := objstore.Counting(s, &c).(objstore.Files)
	if !ok {
		t.Fatal("Counting of a local store is not objstore.Files")
	}
	if err := s.Put(ctx, "a/b", strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	o, err := files.OpenObject(ctx, "a/b")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := s.Put(ctx, "a/b", strings.NewReader("abcdefghij"), 10); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if n, err := o.ReadAt(buf, 3); n != 4 || err != nil || string(buf) != "3456" {
		t.Errorf("ReadAt(4 at 3) = %d, %v, %q; want 4, nil, \"3456\" (the object as opened)", n, err, buf[:n])
	}
	if n, err := o.ReadAt(buf, 8); n != 2 || !errors.Is(err, io.EOF) || string(buf[:n]) != "89" {
		t.Errorf("ReadAt(4 at 8) = %d, %v, %q; want 2, EOF, \"89\"", n, err, buf[:n])
	}
	if got := c.Calls(objstore.OpGet); got != 2 || c.BytesDown() != 6 || c.Errors(objstore.OpGet) != 1 {
		t.Errorf("counted %d gets (%d failed), %d bytes down; want 2 (1), 6", got, c.Errors(objstore.OpGet), c.BytesDown())
	}
	if _, err := files.OpenObject(ctx, "a/missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("OpenObject of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := files.OpenObject(ctx, "a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("OpenObject of a directory of keys: %v, want ErrNotFound", err)
	}
	if _, err := files.OpenObject(ctx, "../x"); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Errorf("OpenObject of ../x: %v, want ErrInvalidKey", err)
	}
}
