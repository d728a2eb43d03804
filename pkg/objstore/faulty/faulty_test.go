package faulty_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/faulty"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
)

var ctx = context.Background()

func put(s objstore.Store, key string) error {
	return s.Put(ctx, key, strings.NewReader("v"), 1)
}

func exists(t *testing.T, f *faulty.Store, key string) bool {
	t.Helper()
	_, err := f.Inner().Head(ctx, key)
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestFailNext(t *testing.T) {
	f := faulty.New(mem.New())
	f.FailNext(objstore.OpPut, 2)
	for i, key := range []string{"a", "b"} {
		if err := put(f, key); !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("put %d: %v, want ErrInjected", i, err)
		}
		if exists(t, f, key) {
			t.Fatalf("a Before fault stored %q", key)
		}
	}
	if err := put(f, "c"); err != nil {
		t.Fatalf("third put: %v", err)
	}
	// Other operations were never affected.
	if _, err := f.Get(ctx, "c", 0, -1); err != nil {
		t.Fatal(err)
	}
	if f.Injected() != 2 {
		t.Fatalf("Injected = %d, want 2", f.Injected())
	}
}

func TestAfterWritesThenFails(t *testing.T) {
	f := faulty.New(mem.New())
	f.Add(faulty.Rule{Op: objstore.OpPutIfAbsent, When: faulty.After, Times: 1})
	err := f.PutIfAbsent(ctx, "k", strings.NewReader("v"), 1)
	if !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("PutIfAbsent: %v, want ErrInjected", err)
	}
	if !exists(t, f, "k") {
		t.Fatal("an After fault did not let the write happen")
	}
	// The caller retries, as after a timeout, and learns it is there.
	if err := f.PutIfAbsent(ctx, "k", strings.NewReader("v"), 1); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("retry: %v, want ErrExists", err)
	}
	// After on a read returns no data.
	f.Add(faulty.Rule{Op: objstore.OpGet, When: faulty.After, Times: 1})
	if b, err := f.Get(ctx, "k", 0, -1); err == nil || b != nil {
		t.Fatalf("Get with an After fault = %q, %v", b, err)
	}
}

func TestRuleSelection(t *testing.T) {
	f := faulty.New(mem.New())
	boom := errors.New("boom")
	remove := f.Add(faulty.Rule{Op: faulty.AnyOp, KeyPrefix: "bad/", Skip: 1, Times: 2, Err: boom})
	if err := put(f, "bad/1"); err != nil { // skipped
		t.Fatalf("first matching call should pass: %v", err)
	}
	if err := put(f, "good/1"); err != nil { // does not match
		t.Fatal(err)
	}
	if _, err := f.Head(ctx, "bad/1"); !errors.Is(err, boom) {
		t.Fatalf("Head: %v, want boom", err)
	}
	if _, err := f.List(ctx, "bad/"); !errors.Is(err, boom) {
		t.Fatalf("List: %v, want boom", err)
	}
	if _, err := f.Head(ctx, "bad/1"); err != nil { // rule spent
		t.Fatalf("after Times: %v", err)
	}
	remove() // removing a spent rule is harmless

	// Times 0 fails forever, until removed.
	remove = f.Add(faulty.Rule{Op: objstore.OpDelete})
	for range 3 {
		if err := f.Delete(ctx, "good/1"); !errors.Is(err, faulty.ErrInjected) {
			t.Fatalf("Delete: %v", err)
		}
	}
	remove()
	if err := f.Delete(ctx, "good/1"); err != nil {
		t.Fatal(err)
	}

	// Clear drops everything.
	f.FailNext(objstore.OpGet, 5)
	f.Clear()
	if _, err := f.Get(ctx, "bad/1", 0, -1); err != nil {
		t.Fatal(err)
	}
	if f.Injected() != 5 {
		t.Fatalf("Injected = %d, want 5", f.Injected())
	}
}

func TestErrorNamesCall(t *testing.T) {
	f := faulty.New(mem.New())
	f.FailNext(objstore.OpPut, 1)
	err := put(f, "x/y")
	if err == nil || !strings.Contains(err.Error(), "put") || !strings.Contains(err.Error(), "x/y") {
		t.Fatalf("error %v does not name the call", err)
	}
}
