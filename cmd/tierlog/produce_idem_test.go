package main

import (
	"strings"
	"testing"
)

// TestCLIProduceOnceFlags: --idempotency-key and --expected-offset are
// checked before anything is sent.
func TestCLIProduceOnceFlags(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "once", "--url", s.url)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--expected-offset", "0"}, "--expected-offset needs --partition"},
		{[]string{"-p", "0", "--expected-offset", "-1"}, "--expected-offset -1"},
		{[]string{"--idempotency-key", strings.Repeat("k", 256)}, "--idempotency-key"},
		{[]string{"--idempotency-key", ""}, "--idempotency-key"},
	} {
		r := cli(t, []byte("a\n"), append([]string{"produce", "--url", s.url, "-t", "once"}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want a failure saying %q", c.args, r.code, r.stderr, c.says)
		}
	}
}

// TestCLIProduceOnce: the whole input as one request; the same command
// with the same key again replays (nothing appended), a stale
// --expected-offset stores nothing. Fails until the broker implements
// idempotent and conditional produce.
func TestCLIProduceOnce(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "once", "--url", s.url)
	args := []string{"produce", "--url", s.url, "-t", "once", "-p", "0", "--expected-offset", "0", "--idempotency-key", "run-1"}
	first := cli(t, []byte("a\nb\n"), args...)
	if first.code != 0 || first.stdout != "0\t0\n0\t1\n" {
		t.Fatalf("first run: exit %d stdout %q stderr %q", first.code, first.stdout, first.stderr)
	}
	again := cli(t, []byte("a\nb\n"), args...)
	if again.code != 0 || again.stdout != first.stdout || !strings.Contains(again.stderr, "replayed") {
		t.Errorf("same command again: exit %d stdout %q stderr %q; want the first offsets, replayed", again.code, again.stdout, again.stderr)
	}
	stale := cli(t, []byte("c\n"), "produce", "--url", s.url, "-t", "once", "-p", "0", "--expected-offset", "0")
	if stale.code == 0 || !strings.Contains(stale.stderr, "high watermark is 2") {
		t.Errorf("stale --expected-offset: exit %d stderr %q; want a failure naming high watermark 2", stale.code, stale.stderr)
	}
	next := cli(t, []byte("c\n"), "produce", "--url", s.url, "-t", "once", "-p", "0", "--expected-offset", "2")
	if next.code != 0 || next.stdout != "0\t2\n" {
		t.Errorf("--expected-offset 2: exit %d stdout %q stderr %q", next.code, next.stdout, next.stderr)
	}
}
