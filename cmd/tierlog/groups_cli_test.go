package main

import (
	"strings"
	"testing"
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
	mustCLI(t, nil, "groups", "delete", "billing", "--url", s.url)
	if r := cli(t, nil, "groups", "describe", "billing", "--url", s.url); r.code == 0 || !strings.Contains(r.stderr, "group") {
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
	if r := cli(t, nil, "topics", "create", "x", "--timestamp-type", "log", "--url", s.url); r.code == 0 {
		t.Fatal("create --timestamp-type log: exit 0")
	}
}
