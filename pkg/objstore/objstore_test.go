package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
)

func TestCheckKey(t *testing.T) {
	good := []string{
		"a", "a/b", "a/b/c.seg", "...", "a/.../b", ".a", "a.", "a/.b", "..a", "a..", "a b", "ü/€",
		"3fa1/orders~01H/7/00000000000000123456-0000000000000003.seg",
		strings.Repeat("k", objstore.MaxKeyLen),
	}
	for _, k := range good {
		if err := objstore.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%.40q) = %v, want nil", k, err)
		}
	}
	for _, k := range objtest.BadKeys {
		if err := objstore.CheckKey(k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("CheckKey(%.40q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestPrefixCanMatch(t *testing.T) {
	for p, want := range map[string]bool{
		"": true, "a": true, "a/": true, "a/b": true, "a/b/": true, "a/.": true, "a/..": true, "a/b.": true,
		"/": false, "/a": false, "a//": false, "../": false, "a/../b": false, "./": false, "a\x00": false,
	} {
		if got := objstore.PrefixCanMatch(p); got != want {
			t.Errorf("PrefixCanMatch(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestSpan(t *testing.T) {
	ok := []struct{ off, n, size, start, end int64 }{
		{0, -1, 10, 0, 10}, {3, -1, 10, 3, 10}, {10, -1, 10, 10, 10}, {0, 0, 0, 0, 0},
		{2, 3, 10, 2, 5}, {7, 3, 10, 7, 10}, {10, 0, 10, 10, 10}, {0, -1, 0, 0, 0},
	}
	for _, c := range ok {
		start, end, err := objstore.Span("k", c.off, c.n, c.size)
		if err != nil || start != c.start || end != c.end {
			t.Errorf("Span(%d, %d, size %d) = [%d, %d), %v; want [%d, %d)", c.off, c.n, c.size, start, end, err, c.start, c.end)
		}
	}
	bad := []struct{ off, n, size int64 }{
		{-1, -1, 10}, {11, -1, 10}, {11, 0, 10}, {8, 3, 10}, {0, 1, 0}, {1, -1, 0}, {5, 1 << 62, 10},
	}
	for _, c := range bad {
		if _, _, err := objstore.Span("k", c.off, c.n, c.size); !errors.Is(err, objstore.ErrRange) {
			t.Errorf("Span(%d, %d, size %d) = %v, want ErrRange", c.off, c.n, c.size, err)
		}
	}
}

func TestReadBody(t *testing.T) {
	src := []byte("0123456789")
	for _, r := range []io.Reader{
		bytes.NewReader(src), iotest.OneByteReader(bytes.NewReader(src)),
		iotest.HalfReader(bytes.NewReader(src)), iotest.DataErrReader(bytes.NewReader(src)),
	} {
		b, err := objstore.ReadBody(r, 7)
		if err != nil || string(b) != "0123456" {
			t.Errorf("ReadBody = %q, %v", b, err)
		}
	}
	if _, err := objstore.ReadBody(bytes.NewReader(src), 11); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short body: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := objstore.ReadBody(strings.NewReader(""), 1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("empty body: %v, want io.ErrUnexpectedEOF", err)
	}
	if b, err := objstore.ReadBody(nil, 0); err != nil || len(b) != 0 {
		t.Errorf("nil body, size 0: %q, %v", b, err)
	}
	if _, err := objstore.ReadBody(nil, 1); err == nil {
		t.Error("nil body, size 1: no error")
	}
	if _, err := objstore.ReadBody(bytes.NewReader(src), -1); err == nil {
		t.Error("negative size: no error")
	}
	boom := errors.New("boom")
	if _, err := objstore.ReadBody(iotest.ErrReader(boom), 1); !errors.Is(err, boom) {
		t.Errorf("failing reader: %v, want it wrapped", err)
	}
}

func TestOpString(t *testing.T) {
	want := []string{"put", "put_if_absent", "get", "head", "list", "delete"}
	for i, op := range objstore.Ops {
		if op.String() != want[i] {
			t.Errorf("Op(%d).String() = %q, want %q", op, op.String(), want[i])
		}
	}
	if s := objstore.Op(99).String(); s != "op?" {
		t.Errorf("Op(99).String() = %q", s)
	}
}

func TestCounting(t *testing.T) {
	var c objstore.Counters
	s := objstore.Counting(mem.New(), &c)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Put(ctx, "a", strings.NewReader("0123456789"), 10))
	must(s.PutIfAbsent(ctx, "b", strings.NewReader("abc"), 3))
	if err := s.PutIfAbsent(ctx, "b", strings.NewReader("abcd"), 4); !errors.Is(err, objstore.ErrExists) {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "a", 2, 5); err != nil || len(b) != 5 {
		t.Fatal(b, err)
	}
	if _, err := s.Get(ctx, "a", 0, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "missing", 0, -1); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	must(s.Delete(ctx, "a"))
	must(s.Delete(ctx, "a"))

	want := map[string]int64{
		"put": 1, "put_errors": 0,
		"put_if_absent": 2, "put_if_absent_errors": 1,
		"get": 3, "get_errors": 1,
		"head": 1, "head_errors": 0,
		"list": 1, "list_errors": 0,
		"delete": 2, "delete_errors": 0,
		"bytes_up":   10 + 3 + 4,
		"bytes_down": 5 + 10,
	}
	got := c.Snapshot()
	if len(got) != len(want) {
		t.Errorf("Snapshot has %d keys, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Snapshot[%q] = %d, want %d", k, got[k], v)
		}
	}
	if c.Calls(objstore.OpGet) != 3 || c.Errors(objstore.OpGet) != 1 || c.BytesUp() != 17 || c.BytesDown() != 15 {
		t.Errorf("accessors disagree with Snapshot: %v", got)
	}
	c.Reset()
	for k, v := range c.Snapshot() {
		if v != 0 {
			t.Errorf("after Reset %s = %d", k, v)
		}
	}
}

// Counters shared by many goroutines and two stores add up exactly.
func TestCountingConcurrent(t *testing.T) {
	var c objstore.Counters
	a, b := objstore.Counting(mem.New(), &c), objstore.Counting(mem.New(), &c)
	var wg sync.WaitGroup
	for g := range 8 {
		s := a
		if g%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range 100 {
				if err := s.Put(context.Background(), "k", strings.NewReader("xy"), 2); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Get(context.Background(), "k", 0, 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.Calls(objstore.OpPut) != 800 || c.Calls(objstore.OpGet) != 800 || c.BytesUp() != 1600 || c.BytesDown() != 800 {
		t.Errorf("counters = %v", c.Snapshot())
	}
}
