package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLITopicExtensions: topics create sets cache_enabled and
// read_ahead_segments (docs/api.md), and list and describe
// show them in both formats.
func TestCLITopicExtensions(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	type ext struct {
		Name              string `json:"name"`
		CacheEnabled      *bool  `json:"cache_enabled"`
		ReadAheadSegments *int   `json:"read_ahead_segments"`
	}
	decode := func(what, line string) ext {
		t.Helper()
		var e ext
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.CacheEnabled == nil || e.ReadAheadSegments == nil {
			t.Fatalf("%s: %q (%v): want cache_enabled and read_ahead_segments", what, line, err)
		}
		return e
	}
	check := func(what string, e ext, cache bool, ra int) {
		t.Helper()
		if *e.CacheEnabled != cache || *e.ReadAheadSegments != ra {
			t.Fatalf("%s: cache_enabled %v read_ahead_segments %d, want %v %d", what, *e.CacheEnabled, *e.ReadAheadSegments, cache, ra)
		}
	}
	check("create tuned", decode("create tuned", mustCLI(t, nil, "topics", "create", "tuned", "--cache-enabled=false", "--read-ahead-segments", "4", "--url", s.url, "--format", "json")), false, 4)
	check("create plain", decode("create plain", mustCLI(t, nil, "topics", "create", "plain", "--url", s.url, "--format", "json")), true, 1)
	check("create ra0", decode("create ra0", mustCLI(t, nil, "topics", "create", "ra0", "--read-ahead-segments", "0", "--url", s.url, "--format", "json")), true, 0)

	lines := strings.Split(strings.TrimSpace(mustCLI(t, nil, "topics", "list", "--url", s.url, "--format", "json")), "\n")
	if len(lines) != 3 {
		t.Fatalf("list --format json: %q", lines)
	}
	check("list plain", decode("list", lines[0]), true, 1)
	check("list ra0", decode("list", lines[1]), true, 0)
	check("list tuned", decode("list", lines[2]), false, 4)
	check("describe tuned", decode("describe", mustCLI(t, nil, "topics", "describe", "tuned", "--url", s.url, "--format", "json")), false, 4)

	rows := strings.Split(strings.TrimSpace(mustCLI(t, nil, "topics", "list", "--url", s.url)), "\n")
	head := strings.Fields(rows[0])
	if len(rows) != 4 || head[len(head)-3] != "CACHE_ENABLED" || head[len(head)-2] != "READ_AHEAD_SEGMENTS" || head[len(head)-1] != "TIMESTAMP_TYPE" {
		t.Fatalf("plain list:\n%s", strings.Join(rows, "\n"))
	}
	if f := strings.Fields(rows[3]); f[0] != "tuned" || f[len(f)-3] != "false" || f[len(f)-2] != "4" || f[len(f)-1] != "append" {
		t.Fatalf("plain list row of tuned: %q", rows[3])
	}
	if out := mustCLI(t, nil, "topics", "describe", "plain", "--url", s.url); !strings.Contains(out, "CACHE_ENABLED") || !strings.Contains(out, "true") {
		t.Fatalf("plain describe:\n%s", out)
	}
	for _, n := range []string{"17", "-1"} {
		if r := cli(t, nil, "topics", "create", "bad", "--read-ahead-segments", n, "--url", s.url); r.code != 2 || !strings.Contains(r.stderr, "--read-ahead-segments") {
			t.Fatalf("--read-ahead-segments %s: %+v, want exit 2", n, r)
		}
	}
}

// TestCLIFlagsPerCommand: --binary only where records are produced or
// fetched; --retry-timeout only where requests are retried (not topics
// create and delete, which are sent once).
func TestCLIFlagsPerCommand(t *testing.T) {
	skipShort(t, "the tierlog binary")
	for _, args := range [][]string{
		{"topics", "delete", "x", "--binary"},
		{"topics", "delete", "x", "--retry-timeout", "1s"},
		{"topics", "create", "x", "--binary"},
		{"topics", "create", "x", "--retry-timeout", "1s"},
		{"topics", "list", "--binary"},
		{"groups", "show", "--group", "g", "--topic", "x", "--binary"},
		{"groups", "commit", "--group", "g", "--topic", "x", "--partition", "0", "--offset", "0", "--binary"},
		{"offsets", "--topic", "x", "--binary"},
	} {
		if r := cli(t, nil, append(args, "--url", "http://127.0.0.1:1")...); r.code != 2 || !strings.Contains(r.stderr, "unknown flag") {
			t.Errorf("tierlog %s: exit %d, stderr %q; want a usage error (exit 2)", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	for _, c := range []struct {
		cmd           []string
		binary, retry bool
	}{
		{[]string{"topics", "create"}, false, false},
		{[]string{"topics", "delete"}, false, false},
		{[]string{"topics", "list"}, false, true},
		{[]string{"topics", "describe"}, false, true},
		{[]string{"groups", "show"}, false, true},
		{[]string{"groups", "commit"}, false, true},
		{[]string{"offsets"}, false, true},
		{[]string{"produce"}, true, true},
		{[]string{"consume"}, true, true},
	} {
		out := mustCLI(t, nil, append(c.cmd, "--help")...)
		if got := strings.Contains(out, "--binary"); got != c.binary {
			t.Errorf("tierlog %s --help lists --binary: %v, want %v", strings.Join(c.cmd, " "), got, c.binary)
		}
		if got := strings.Contains(out, "--retry-timeout duration"); got != c.retry {
			t.Errorf("tierlog %s --help lists --retry-timeout: %v, want %v", strings.Join(c.cmd, " "), got, c.retry)
		}
	}
}

// TestCLIConsumeCountInterrupted: SIGINT or SIGTERM before --count is
// reached is a failure (130, 143) that says how far it got; --follow's
// SIGINT stays exit 0 (TestCLIFollow).
func TestCLIConsumeCountInterrupted(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "short", "--url", s.url)
	mustCLI(t, []byte("a\nb\n"), "produce", "--url", s.url, "--topic", "short")
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(tierlogBinary(t), "consume", "--url", s.url, "--topic", "short", "-c", "5")
		cmd.Env = cliEnv()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Both records printed: the consumer is polling for the third.
		sc := bufio.NewScanner(stdout)
		for _, want := range []string{"a", "b"} {
			if !sc.Scan() || sc.Text() != want {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("consume printed %q, want %q; stderr: %s", sc.Text(), want, stderr.String())
			}
		}
		if err := cmd.Process.Signal(c.sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("consume -c 5 did not exit on %v", c.sig)
		}
		if got := cmd.ProcessState.ExitCode(); got != c.code || !strings.Contains(stderr.String(), "interrupted after 2 of 5 records") {
			t.Fatalf("consume -c 5 after %v: exit %d, stderr %q; want %d and how far it got", c.sig, got, stderr.String(), c.code)
		}
	}
}

// TestCLICountGrammar: one record is "1 record".
func TestCLICountGrammar(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	dir := t.TempDir()
	s := startServer(t, dir)
	mustCLI(t, nil, "topics", "create", "one", "--url", s.url)
	if r := cli(t, []byte("x\n"), "produce", "--url", s.url, "--topic", "one"); r.code != 0 || !strings.Contains(r.stderr, "produced 1 record to") {
		t.Fatalf("produce one: %+v", r)
	}
	mustCLI(t, []byte("y\n"), "produce", "--url", s.url, "--topic", "one") // a second batch
	s.kill(t, syscall.SIGTERM)

	logs, _ := filepath.Glob(filepath.Join(dir, "topics", "one~*", "0", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("log files: %v", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	torn := t.TempDir()
	if err := os.WriteFile(filepath.Join(torn, filepath.Base(logs[0])), data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, nil, "segments", "verify", torn); r.code != 0 || !strings.Contains(r.stderr+r.stdout, "torn tail after 1 good record:") {
		t.Fatalf("verify of a torn second batch: %+v", r)
	}
}
