package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The group and topic admin commands against a real server: list,
// describe, reset (refused while a member is joined), delete; topics
// alter and create --timestamp-type.
func TestCLIGroupsAndTopicsAlter(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "orders", "--partitions", "2", "--url", s.url)
	mustCLI(t, []byte("a\nb\nc\n"), "produce", "--url", s.url, "--topic", "orders", "--partition", "0")
	// A consumer of the group reads to the end and commits (it joins and
	// leaves the group on the way).
	if out := mustCLI(t, nil, "consume", "--url", s.url, "--topic", "orders", "--group", "billing", "-e"); out != "a\nb\nc\n" {
		t.Fatalf("consume --group printed %q", out)
	}
	if out := mustCLI(t, nil, "groups", "list", "--url", s.url); !strings.Contains(out, "billing  0") {
		t.Fatalf("groups list:\n%s", out)
	}
	out := mustCLI(t, nil, "groups", "describe", "billing", "--url", s.url)
	if !strings.Contains(out, "0 members") || !strings.Contains(out, "orders  0          3       0") {
		t.Fatalf("groups describe:\n%s", out)
	}
	out = mustCLI(t, nil, "groups", "reset", "billing", "--url", s.url, "--topic", "orders", "--to", "1", "--partitions", "0")
	if !strings.Contains(out, "0          1       2") {
		t.Fatalf("groups reset --to 1:\n%s", out)
	}
	if out := mustCLI(t, nil, "consume", "--url", s.url, "--topic", "orders", "--group", "billing", "-e"); out != "b\nc\n" {
		t.Fatalf("consume after the reset printed %q", out)
	}
	if r := cli(t, nil, "groups", "reset", "billing", "--url", s.url, "--topic", "orders", "--to", "9", "--partitions", "0"); r.code == 0 || !strings.Contains(r.stderr, "offset_out_of_range") && !strings.Contains(r.stderr, "out of range") {
		t.Fatalf("reset out of range: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := cli(t, nil, "groups", "reset", "billing", "--url", s.url, "--topic", "orders"); r.code == 0 {
		t.Fatalf("reset without --to: exit 0")
	}
	// GROUP or --group, on every subcommand.
	for _, args := range [][]string{
		{"groups", "describe", "--group", "billing"},
		{"groups", "show", "billing", "--topic", "orders"},
		{"groups", "show", "-g", "billing"},
	} {
		if out := mustCLI(t, nil, append(args, "--url", s.url)...); !strings.Contains(out, "orders") || !strings.Contains(out, "  1  ") {
			t.Errorf("tierlog %v:\n%s", args, out)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"groups", "show", "billing", "--group", "other"}, 2, `group "billing" and --group "other": give one`},
		{[]string{"groups", "show"}, 2, "a group is required"},
		{[]string{"groups", "delete"}, 2, "a group is required"},
		// An unknown group is an error the same way everywhere.
		{[]string{"groups", "show", "nosuchgroup"}, 1, `group "nosuchgroup" not found`},
		{[]string{"groups", "show", "--group", "nosuchgroup", "--topic", "orders"}, 1, `group "nosuchgroup" not found`},
		{[]string{"groups", "describe", "nosuchgroup"}, 1, `group "nosuchgroup" not found`},
		{[]string{"groups", "delete", "--group", "nosuchgroup"}, 1, `group "nosuchgroup" not found`},
	} {
		if r := cli(t, nil, append(c.args, "--url", s.url)...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("tierlog %v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
	mustCLI(t, nil, "groups", "delete", "billing", "--url", s.url)
	if r := cli(t, nil, "groups", "describe", "billing", "--url", s.url); r.code != 1 || !strings.Contains(r.stderr, `group "billing" not found`) {
		t.Fatalf("describe after delete: exit %d, stderr %s", r.code, r.stderr)
	}

	out = mustCLI(t, nil, "topics", "alter", "orders", "--partitions", "4", "--retention-ms", "1000", "--url", s.url, "--format", "json")
	if !strings.Contains(out, `"partitions":4`) || !strings.Contains(out, `"retention_ms":1000`) {
		t.Fatalf("topics alter:\n%s", out)
	}
	if r := cli(t, nil, "topics", "alter", "orders", "--partitions", "2", "--url", s.url); r.code == 0 || !strings.Contains(r.stderr, "grow") {
		t.Fatalf("shrinking alter: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := cli(t, nil, "topics", "alter", "orders", "--url", s.url); r.code == 0 {
		t.Fatal("alter with nothing to change: exit 0")
	}
	out = mustCLI(t, nil, "topics", "create", "events", "--timestamp-type", "create", "--url", s.url, "--format", "json")
	if !strings.Contains(out, `"timestamp_type":"create"`) {
		t.Fatalf("create --timestamp-type:\n%s", out)
	}
	if out := mustCLI(t, nil, "topics", "describe", "events", "--url", s.url); !strings.Contains(out, "TIMESTAMP_TYPE") || !strings.Contains(out, "1                    create") {
		t.Fatalf("topics describe shows no timestamp type:\n%s", out)
	}
	if r := cli(t, nil, "topics", "create", "x", "--timestamp-type", "log", "--url", s.url); r.code == 0 {
		t.Fatal("create --timestamp-type log: exit 0")
	}
}

// TestCLIGroupCommitsEachBatch: a following `consume --group` commits each
// batch it printed at once, not at its next batch or its exit: after a
// kill -9, the group's lag is 0 and nothing printed is delivered again.
func TestCLIGroupCommitsEachBatch(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	u := "--url=" + s.url
	mustCLI(t, nil, "topics", "create", "g1", u)
	cmd := exec.Command(tierlogBinary(t), "consume", "g1", "--group", "g", u)
	cmd.Env = cliEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Two batches, the second right after the first: each is committed
	// as soon as it is printed, not a second after the last commit.
	sc := bufio.NewScanner(stdout)
	printed := 0
	for _, batch := range []string{"a\n", "b\nc\nd\ne\n"} {
		mustCLI(t, []byte(batch), "produce", "-t", "g1", u)
		for n := strings.Count(batch, "\n"); n > 0; n-- {
			if !sc.Scan() {
				t.Fatalf("consume --group printed %d lines, then stopped", printed)
			}
			printed++
		}
	}
	start := time.Now()
	// Still running, following: the five records' commit must land now.
	type offsetLag struct {
		Offset int64 `json:"offset"`
		Lag    int64 `json:"lag"`
	}
	var lag []offsetLag
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out := mustCLI(t, nil, "groups", "show", "g", "--topic", "g1", "--format", "json", u)
		lag = lag[:0]
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r offsetLag
			if json.Unmarshal([]byte(l), &r) == nil {
				lag = append(lag, r)
			}
		}
		if len(lag) == 1 && lag[0].Offset == 5 && lag[0].Lag == 0 {
			t.Logf("committed %v after the last record was printed", time.Since(start))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the printed batch is not committed while consume follows: %s", out)
		}
	}
	// A kill -9 now loses no commit: the group resumes at offset 5.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if out := mustCLI(t, nil, "groups", "show", "g", "--topic", "g1", "--format", "json", u); !strings.Contains(out, `"offset":5`) {
		t.Fatalf("after kill -9: %s", out)
	}
}
