package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
)

// cliEnv is the environment of a CLI run (testenv.TierlogEnv).
func cliEnv() []string { return testenv.TierlogEnv() }

// cliResult is what one run of the built binary left.
type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs the built tierlog binary with args (and stdin if not nil).
func cli(t *testing.T, stdin []byte, args ...string) cliResult {
	t.Helper()
	r := testenv.RunTierlog(t, stdin, args...)
	return cliResult{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}
}

// mustCLI runs the binary and fails unless it exits 0.
func mustCLI(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	r := cli(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("tierlog %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// sampleLines is an input file of awkward lines: tabs, unicode, quotes,
// backslashes, carriage returns, empty lines, JSON-looking text, and
// bytes that are not UTF-8.
func sampleLines(n int) []byte {
	var b bytes.Buffer
	specials := []string{
		"tab\tseparated\tcolumns",
		"ünïcødé ✓ 日本語 🚀",
		`"quoted" and \backslash\ and {"json":true}`,
		"windows line\r",
		"",
		"   leading and trailing spaces   ",
		"\x00nul\x01and control\x7f",
		"not utf-8: \xff\xfe\xc3",
	}
	for i := range n {
		if i%10 < len(specials) && i%3 == 0 {
			b.WriteString(specials[i%len(specials)])
		} else {
			fmt.Fprintf(&b, "line %d %s", i, strings.Repeat("x", i%37))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestCLIRoundTrip produces a file with `tierlog produce` and reads it
// back with `tierlog consume --count`: the output must be the file, byte
// for byte, in JSON and in binary batches, from a file and from stdin.
func TestCLIRoundTrip(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	data := sampleLines(2500)
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n := fmt.Sprint(bytes.Count(data, []byte("\n")))
	mustCLI(t, nil, "topics", "create", "rt", "--partitions", "3", "--url", s.url)
	for p, mode := range [][]string{nil, {"--binary"}, {"--batch-records", "7", "--linger", "0s"}} {
		part := fmt.Sprint(p)
		args := append([]string{"produce", "--url", s.url, "--topic", "rt", "--partition", part}, mode...)
		if p == 2 {
			mustCLI(t, data, args...) // stdin
		} else {
			mustCLI(t, nil, append(args, "-l", file)...) // -l: a FILE's lines, not the FILE as one record
		}
		for _, fmtMode := range [][]string{nil, {"--binary"}} {
			out := mustCLI(t, nil, append([]string{"consume", "--url", s.url, "--topic", "rt", "--partition", part, "--offset", "0", "--count", n}, fmtMode...)...)
			if out != string(data) {
				t.Fatalf("partition %d %v: consumed %d bytes differ from the %d produced", p, fmtMode, len(out), len(data))
			}
		}
	}
	// Without --count or --follow, consume stops at the end of the log.
	out := mustCLI(t, nil, "consume", "--url", s.url, "--topic", "rt", "--partition", "1", "-e")
	if out != string(data) {
		t.Fatalf("consume to the end: %d bytes, want %d", len(out), len(data))
	}
	// Across partitions, from the start: every record once.
	out = mustCLI(t, nil, "consume", "--url", s.url, "--topic", "rt", "--format", "json", "-e")
	if lines := strings.Count(out, "\n"); lines != 3*2500 {
		t.Fatalf("consume all partitions: %d lines, want %d", lines, 3*2500)
	}
}

// TestCLIKeySeparator splits lines into key and value.
func TestCLIKeySeparator(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "keys", "--url", s.url)
	in := "k1\tv1\nno key here\nk2\tv2\twith a tab\n\tempty key\n"
	mustCLI(t, []byte(in), "produce", "--url", s.url, "--topic", "keys", "--key-separator", `\t`)
	out := mustCLI(t, nil, "consume", "--url", s.url, "--topic", "keys", "--format", "json", "-e")
	type rec struct {
		Key   *string `json:"key"`
		Value *string `json:"value"`
	}
	var got []rec
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r rec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("json line %q: %v", l, err)
		}
		got = append(got, r)
	}
	str := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return *p
	}
	want := [][2]string{{"k1", "v1"}, {"<null>", "no key here"}, {"k2", "v2\twith a tab"}, {"", "empty key"}}
	if len(got) != len(want) {
		t.Fatalf("%d records: %s", len(got), out)
	}
	for i, w := range want {
		if str(got[i].Key) != w[0] || str(got[i].Value) != w[1] {
			t.Errorf("record %d: key %q value %q, want %q %q", i, str(got[i].Key), str(got[i].Value), w[0], w[1])
		}
	}
	// Plain output with a separator prints key SEP value.
	out = mustCLI(t, nil, "consume", "--url", s.url, "--topic", "keys", "-K", "=", "-e")
	if want := "k1=v1\n=no key here\nk2=v2\twith a tab\n=empty key\n"; out != want {
		t.Errorf("plain with separator:\n%q\nwant\n%q", out, want)
	}
}

// TestCLIFollow tails a topic with --follow and --group: records produced
// later appear, SIGINT ends it with exit 0, and the group resumes after
// what was printed.
func TestCLIFollow(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "tail", "--url", s.url)
	mustCLI(t, []byte("old-1\nold-2\n"), "produce", "--url", s.url, "--topic", "tail")

	cmd := exec.Command(tierlogBinary(t), "consume", "--url", s.url, "--topic", "tail", "--follow", "--group", "g", "--binary")
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
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case got := <-lines:
				if got != w {
					t.Fatalf("tail printed %q, want %q", got, w)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("tail did not print %q; stderr: %s", w, stderr.String())
			}
		}
	}
	expect("old-1", "old-2")
	for round := range 3 {
		a, b := fmt.Sprintf("new-%d-a", round), fmt.Sprintf("new-%d-b", round)
		mustCLI(t, []byte(a+"\n"+b+"\n"), "produce", "--url", s.url, "--topic", "tail")
		expect(a, b)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("consume --follow after SIGINT: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("consume --follow did not exit after SIGINT")
	}
	out := mustCLI(t, nil, "groups", "show", "--url", s.url, "--group", "g", "--topic", "tail")
	if !strings.Contains(out, "0          8       0") {
		t.Fatalf("group after the tail:\n%s", out)
	}
	mustCLI(t, []byte("after\n"), "produce", "--url", s.url, "--topic", "tail")
	if out := mustCLI(t, nil, "consume", "--url", s.url, "--topic", "tail", "--group", "g", "-e"); out != "after\n" {
		t.Fatalf("the group resumed with %q, want only the new record", out)
	}
}

// TestCLISegments verifies the server's own files, then a corrupted copy.
func TestCLISegments(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	dir := t.TempDir()
	s := startServer(t, dir)
	mustCLI(t, nil, "topics", "create", "seg", "--partitions", "2", "--url", s.url)
	mustCLI(t, sampleLines(300), "produce", "--url", s.url, "--topic", "seg", "--partition", "1")
	mustCLI(t, []byte("x\ny\n"), "produce", "--url", s.url, "--topic", "seg", "--partition", "0")
	s.kill(t, syscall.SIGTERM) // indexes synced on a clean stop

	topics := filepath.Join(dir, "topics")
	out := mustCLI(t, nil, "segments", "verify", topics)
	if strings.Count(out, "ok ") != 2 || !strings.Contains(out, "offsets 0..299 (300 records)") {
		t.Fatalf("verify:\n%s", out)
	}
	dump := mustCLI(t, nil, "segments", "dump", topics)
	if !strings.Contains(dump, `key=null value="ünïcødé ✓ 日本語 🚀"`) || !strings.Contains(dump, `value="x"`) || !strings.Contains(dump, "base64:") {
		t.Fatalf("dump:\n%.2000s", dump)
	}

	logs, _ := filepath.Glob(filepath.Join(topics, "seg~*", "1", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("log files: %v", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	bad := t.TempDir()
	base := strings.TrimSuffix(filepath.Base(logs[0]), ".log")
	for _, ext := range []string{".index", ".timeindex"} {
		b, _ := os.ReadFile(strings.TrimSuffix(logs[0], ".log") + ext)
		os.WriteFile(filepath.Join(bad, base+ext), b, 0o644)
	}
	data[len(data)/2] ^= 0x40 // a bit flip inside some record
	os.WriteFile(filepath.Join(bad, base+".log"), data, 0o644)
	r := cli(t, nil, "segments", "verify", filepath.Join(bad, base+".log"))
	if r.code != 1 || !strings.Contains(r.stderr, "corrupt") || !strings.Contains(r.stdout, "FAILED") {
		t.Fatalf("verify of a corrupted copy: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// A torn tail is a warning; --strict fails it.
	torn := t.TempDir()
	clean, _ := os.ReadFile(logs[0])
	os.WriteFile(filepath.Join(torn, base+".log"), clean[:len(clean)-5], 0o644)
	if r := cli(t, nil, "segments", "verify", torn); r.code != 0 || !strings.Contains(r.stderr, "torn tail") {
		t.Fatalf("torn tail: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := cli(t, nil, "segments", "verify", "--strict", torn); r.code != 1 {
		t.Fatalf("torn tail with --strict: exit %d", r.code)
	}
}

// TestCLIAdmin runs topics, offsets and groups commands.
func TestCLIAdmin(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	out := mustCLI(t, nil, "topics", "create", "adm", "--partitions", "2", "--retention-ms", "3600000", "--url", s.url, "--format", "json")
	var top struct {
		Name        string `json:"name"`
		Partitions  int    `json:"partitions"`
		RetentionMs int64  `json:"retention_ms"`
	}
	if err := json.Unmarshal([]byte(out), &top); err != nil || top.Partitions != 2 || top.RetentionMs != 3600000 {
		t.Fatalf("create: %s %v", out, err)
	}
	if r := cli(t, nil, "topics", "create", "adm", "--url", s.url); r.code != 1 || !strings.Contains(r.stderr, "topic_exists") {
		t.Fatalf("create twice: %+v", r)
	}
	mustCLI(t, nil, "topics", "create", "other", "--url", s.url)
	out = mustCLI(t, nil, "topics", "list", "--url", s.url)
	if rows := strings.Split(strings.TrimSpace(out), "\n"); len(rows) != 3 ||
		strings.Join(strings.Fields(rows[1])[:2], " ") != "adm 2" || strings.Fields(rows[2])[0] != "other" {
		t.Fatalf("list:\n%s", out)
	}
	mustCLI(t, []byte("a\nb\nc\n"), "produce", "--url", s.url, "--topic", "adm", "--partition", "1")
	out = mustCLI(t, nil, "topics", "describe", "adm", "--url", s.url)
	if !strings.Contains(out, "1          0                 3") {
		t.Fatalf("describe:\n%s", out)
	}
	out = mustCLI(t, nil, "offsets", "--url", s.url, "--topic", "adm", "--partition", "1", "--format", "json")
	if strings.TrimSpace(out) != `{"partition":1,"log_start_offset":0,"high_watermark":3}` {
		t.Fatalf("offsets: %s", out)
	}
	out = mustCLI(t, nil, "offsets", "--url", s.url, "--topic", "adm", "--partition", "1", "--timestamp", "0")
	if !strings.Contains(out, "1          0       ") {
		t.Fatalf("offsets --timestamp 0:\n%s", out)
	}
	out = mustCLI(t, nil, "offsets", "--url", s.url, "--topic", "adm", "--timestamp", time.Now().Add(time.Hour).Format(time.RFC3339))
	if !strings.Contains(out, "1          3       -") {
		t.Fatalf("offsets at a future time:\n%s", out)
	}
	mustCLI(t, nil, "groups", "commit", "--url", s.url, "--group", "g", "--topic", "adm", "--partition", "1", "--offset", "1", "--metadata", "m")
	out = mustCLI(t, nil, "groups", "show", "--url", s.url, "--group", "g", "--topic", "adm")
	if !strings.Contains(out, "1          1       2    \"m\"") {
		t.Fatalf("groups show:\n%s", out)
	}
	if r := cli(t, nil, "groups", "commit", "--url", s.url, "--group", "g", "--topic", "adm", "--partition", "1", "--offset", "9"); r.code != 1 || !strings.Contains(r.stderr, "offset_out_of_range") {
		t.Fatalf("commit past the end: %+v", r)
	}
	mustCLI(t, nil, "groups", "commit", "--url", s.url, "--group", "g", "--topic", "adm", "--partition", "1", "--offset", "latest")
	if out := mustCLI(t, nil, "groups", "show", "--url", s.url, "--group", "g", "--topic", "adm", "--format", "json"); !strings.Contains(out, `"offset":3`) || !strings.Contains(out, `"lag":0`) {
		t.Fatalf("after commit latest: %s", out)
	}
	mustCLI(t, nil, "topics", "delete", "other", "--url", s.url)
	if r := cli(t, nil, "topics", "describe", "other", "--url", s.url); r.code != 1 || !strings.Contains(r.stderr, `topic "other" not found`) {
		t.Fatalf("describe deleted: %+v", r)
	}
}

// TestCLIErrors: bad flags and arguments exit 2 with a message; bad input
// and failed operations exit 1 with the reason (the server's message for
// server errors).
func TestCLIErrors(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "e", "--url", s.url)
	mustCLI(t, []byte("one\n"), "produce", "--url", s.url, "--topic", "e")
	long := append(bytes.Repeat([]byte("x"), 1<<20+100), '\n')
	dead := "http://127.0.0.1:1" // nothing listens there
	cases := []struct {
		name  string
		stdin []byte
		args  []string
		code  int
		want  string
	}{
		{"unknown command", nil, []string{"bogus"}, 2, `unknown command "bogus"`},
		{"unknown subcommand", nil, []string{"topics", "bogus"}, 2, `unknown command "bogus" for "tierlog topics"`},
		{"unknown flag", nil, []string{"consume", "--nope"}, 2, "unknown flag: --nope"},
		{"bad flag value", nil, []string{"consume", "--topic", "e", "--count", "x"}, 2, `invalid argument "x"`},
		{"missing topic", nil, []string{"consume", "--url", s.url}, 2, "a topic is required: tierlog consume TOPIC, or --topic TOPIC"},
		{"missing name", nil, []string{"topics", "create", "--url", s.url}, 2, "accepts 1 arg(s), received 0"},
		{"extra args", nil, []string{"topics", "delete", "a", "b", "--url", s.url}, 2, "accepts 1 arg(s), received 2"},
		{"consume takes one topic", nil, []string{"consume", "--topic", "e", "stray"}, 2, `topic "stray" and --topic "e": give one`},
		{"segments needs a path", nil, []string{"segments", "verify"}, 2, "requires at least 1 arg(s)"},
		{"bad offset", nil, []string{"consume", "--topic", "e", "--offset", "soon", "--url", s.url}, 2, `--offset "soon"`},
		{"offset and timestamp", nil, []string{"consume", "--topic", "e", "--offset", "1", "--timestamp", "5", "--url", s.url}, 2, "give one"},
		{"bad timestamp", nil, []string{"offsets", "--topic", "e", "--timestamp", "yesterday", "--url", s.url}, 2, "RFC 3339"},
		{"bad format", nil, []string{"topics", "list", "--format", "xml", "--url", s.url}, 2, `--format "xml"`},
		{"negative partition", nil, []string{"produce", "--topic", "e", "--partition", "-2", "--url", s.url}, 2, "--partition -2"},
		{"bad batch", nil, []string{"produce", "--topic", "e", "--batch-records", "0", "--url", s.url}, 2, "--batch-records 0"},
		{"bad separator escape", nil, []string{"produce", "--topic", "e", "-K", `\q`, "--url", s.url}, 2, "unknown escape"},
		{"bad url", nil, []string{"topics", "list", "--url", "ftp://localhost:8080"}, 2, "--url"},
		{"bad port", nil, []string{"topics", "list", "-b", "localhost:http"}, 2, "--url"},
		{"s3 without a key", nil, []string{"segments", "verify", "s3://bucket/"}, 2, "want s3://bucket/key"},
		{"s3 prefix", nil, []string{"segments", "dump", "s3://bucket/topics/"}, 2, "want s3://bucket/key"},
		{"group commit without offset", nil, []string{"groups", "commit", "--group", "g", "--topic", "e", "--partition", "0", "--url", s.url}, 2, "--offset is required"},

		{"unknown topic", nil, []string{"consume", "--topic", "nope", "--url", s.url}, 1, `topic "nope" not found`},
		{"produce to unknown topic", []byte("x\n"), []string{"produce", "--topic", "nope", "--url", s.url}, 1, "topic_not_found"},
		{"unknown partition", nil, []string{"consume", "--topic", "e", "--partition", "5", "--url", s.url}, 1, "partition"},
		{"offset out of range", nil, []string{"consume", "--topic", "e", "--partition", "0", "--offset", "50", "--url", s.url}, 1, "out of range"},
		{"missing file", nil, []string{"produce", "--topic", "e", "--url", s.url, "/no/such/file"}, 1, "no such file"},
		{"line over 1 MiB", long, []string{"produce", "--topic", "e", "--url", s.url}, 1, "stdin: line 1 is longer than 1048576 bytes"},
		{"server down", nil, []string{"topics", "list", "--url", dead, "--retry-timeout", "300ms"}, 1, "connect"},
		{"not a segment file", nil, []string{"segments", "verify", "/etc/hostname"}, 1, "not a segment file"},
		{"no such segment path", nil, []string{"segments", "dump", "/no/such/dir"}, 1, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, c.stdin, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("tierlog %s: exit %d, want %d; stderr %q should contain %q", strings.Join(c.args, " "), r.code, c.code, r.stderr, c.want)
			}
			if !strings.HasPrefix(r.stderr, "tierlog: ") {
				t.Errorf("stderr %q does not start with the program name", r.stderr)
			}
			if m := goPackagePrefix.FindString(r.stderr); m != "" {
				t.Errorf("stderr %q names a Go package (%q)", r.stderr, m)
			}
		})
	}
	// Nothing bad was stored along the way.
	if out := mustCLI(t, nil, "consume", "--url", s.url, "--topic", "e", "-e"); out != "one\n" {
		t.Fatalf("topic e holds %q after the refused commands", out)
	}
}
