package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sortedLines is s with its lines sorted.
func sortedLines(s string) string {
	l := strings.SplitAfter(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "")
}

// TestCLIKcat runs each kcat-style flag of consume and produce against
// the real server: one case per flag form.
func TestCLIKcat(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	u := "--url=" + s.url
	mustCLI(t, nil, "topics", "create", "k", "--partitions", "2", u)
	// Partition 0: v0..v5 in two runs (their timestamps differ); 1: w0..w2.
	mustCLI(t, []byte("v0\nv1\nv2\n"), "produce", "-t", "k", "-p", "0", u)
	var firstOfSecond struct {
		Timestamp int64 `json:"timestamp"`
	}
	for {
		// Wait out the millisecond of the first run, so s@T can tell
		// the runs apart.
		out := mustCLI(t, nil, "consume", "-t", "k", "-p", "0", "-o", "2", "-e", "--format", "json", u)
		if err := json.Unmarshal([]byte(out), &firstOfSecond); err != nil {
			t.Fatal(err)
		}
		if time.Now().UnixMilli() > firstOfSecond.Timestamp {
			break
		}
	}
	mustCLI(t, []byte("v3\nv4\nv5\n"), "produce", "-t", "k", "-p", "0", u)
	mustCLI(t, []byte("w0\nw1\nw2\n"), "produce", "-t", "k", "-p", "1", u)
	ts3 := func() int64 {
		var r struct {
			Timestamp int64 `json:"timestamp"`
		}
		json.Unmarshal([]byte(mustCLI(t, nil, "consume", "-t", "k", "-p", "0", "-o", "3", "-c", "1", "--format", "json", u)), &r)
		return r.Timestamp
	}()
	mustCLI(t, nil, "groups", "commit", "--group", "g", "--topic", "k", "--partition", "0", "--offset", "4", u)
	mustCLI(t, nil, "groups", "commit", "--group", "g", "--topic", "k", "--partition", "1", "--offset", "2", u)

	lines := func(vs ...string) string { return strings.Join(vs, "\n") + "\n" }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"-o beginning", []string{"-p", "0", "-o", "beginning"}, lines("v0", "v1", "v2", "v3", "v4", "v5")},
		{"-o earliest", []string{"-p", "1", "-o", "earliest"}, lines("w0", "w1", "w2")},
		{"-o end -e", []string{"-o", "end", "-e"}, ""},
		{"-o stored", []string{"-o", "stored", "-g", "g", "-e", "-f", `%p:%s\n`}, "0:v4\n0:v5\n1:w2\n"},
		{"-o N", []string{"-p", "0", "-o", "4"}, lines("v4", "v5")},
		{"-o -N", []string{"-p", "0", "-o", "-2"}, lines("v4", "v5")},
		{"-o -N every partition", []string{"-o", "-1", "-f", `%p:%s\n`}, "0:v5\n1:w2\n"},
		{"-o -N beyond the log start", []string{"-p", "1", "-o", "-100"}, lines("w0", "w1", "w2")},
		{"-o s@ms", []string{"-p", "0", "-o", fmt.Sprintf("s@%d", ts3)}, lines("v3", "v4", "v5")},
		{"-o s@RFC3339 in the future", []string{"-p", "0", "-e", "-o", "s@" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, ""},
		{"-o s@-1h (relative)", []string{"-p", "1", "-o", "s@-1h"}, lines("w0", "w1", "w2")},
		{"-o e@T stops before T", []string{"-p", "0", "-o", "beginning", "-o", fmt.Sprintf("e@%d", ts3)}, lines("v0", "v1", "v2")},
		{"-p -1 is every partition", []string{"-p", "-1", "-o", "-1", "-f", `%p:%s\n`}, "0:v5\n1:w2\n"},
		{"-q", []string{"-p", "1", "-q", "-c", "1"}, lines("w0")},
		{"-c", []string{"-p", "0", "-c", "2"}, lines("v0", "v1")},
		{"-c with -e stops at the end", []string{"-p", "1", "-c", "10", "-e"}, lines("w0", "w1", "w2")},
		{"-e", []string{"-p", "1", "-e"}, lines("w0", "w1", "w2")},
		{"-f template", []string{"-p", "1", "-c", "1", "-f", `%t|%p|%o|%k|%K|%s|%S|%h|%%\n`}, "k|1|0||-1|w0|2||%\n"},
		{"-f %T", []string{"-p", "0", "-o", "3", "-c", "1", "-f", `%T\n`}, fmt.Sprintf("%d\n", ts3)},
		{"-D output delimiter", []string{"-p", "1", "-D", ","}, "w0,w1,w2,"},
		{"-K output", []string{"-p", "1", "-c", "1", "-K", "="}, "=w0\n"},
		{"-Z output", []string{"-p", "1", "-c", "1", "-K", "=", "-Z"}, "NULL=w0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := mustCLI(t, nil, append([]string{"consume", "-t", "k", "-e", u}, c.args...)...)
			if !slices.Contains(c.args, "-p") || slices.Contains(c.args, "-1") {
				// Partitions interleave in any order; each in order.
				out, c.want = sortedLines(out), sortedLines(c.want)
			}
			if out != c.want {
				t.Errorf("consume %v:\n%q\nwant\n%q", c.args, out, c.want)
			}
		})
	}

	t.Run("-J", func(t *testing.T) {
		// kcat's envelope: jq .payload pipelines work unchanged.
		out := mustCLI(t, nil, "consume", "-t", "k", "-p", "1", "-c", "1", "-J", u)
		want := `{"topic":"k","partition":1,"offset":0,"tstype":"logappend","ts":` // then the time
		if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, `,"broker":-1,"key":null,"payload":"w0"}`+"\n") {
			t.Errorf("-J printed %s, want kcat's fields: %s...", out, want)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if len(r) != 8 || r["payload"] != "w0" {
			t.Errorf("-J line %s: want topic, partition, offset, tstype, ts, broker, key, payload", out)
		}
		// --format json is the HTTP API's record shape.
		out = mustCLI(t, nil, "consume", "-t", "k", "-p", "1", "-c", "1", "--format", "json", u)
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r["topic"] != "k" || r["value"] != "w0" || r["key"] != nil || r["timestamp"] == nil {
			t.Errorf("--format json line %s", out)
		}
	})

	t.Run("-b HOST:PORT and TIERLOG_URL=HOST:PORT", func(t *testing.T) {
		hostPort := strings.TrimPrefix(s.url, "http://")
		if out := mustCLI(t, nil, "consume", "-b", hostPort, "-t", "k", "-p", "1", "-e"); out != lines("w0", "w1", "w2") {
			t.Errorf("-b %s: %q", hostPort, out)
		}
		cmd := exec.Command(tierlogBinary(t), "consume", "k", "-p", "1", "-c", "1")
		cmd.Env = append(cliEnv(), "TIERLOG_URL="+hostPort)
		if out, err := cmd.Output(); err != nil || string(out) != "w0\n" {
			t.Errorf("TIERLOG_URL=%s consume k: %v %q", hostPort, err, out)
		}
	})

	t.Run("follows by default", func(t *testing.T) {
		// No -e and no -c: the records there, then new ones as they
		// come, until SIGINT (exit 0, as kcat).
		cmd := exec.Command(tierlogBinary(t), "consume", "-t", "k", "-p", "1", u)
		cmd.Env = cliEnv()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stuck := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		defer stuck.Stop()
		sc := bufio.NewScanner(stdout)
		var got []string
		for len(got) < 3 && sc.Scan() {
			got = append(got, sc.Text())
		}
		mustCLI(t, []byte("w3\n"), "produce", "-t", "k", "-p", "1", u)
		if sc.Scan() {
			got = append(got, sc.Text())
		}
		cmd.Process.Signal(syscall.SIGINT)
		err = cmd.Wait()
		if err != nil || strings.Join(got, ",") != "w0,w1,w2,w3" {
			t.Fatalf("consume without -e: %v, printed %q", err, got)
		}
	})

	t.Run("-o end waits for new records", func(t *testing.T) {
		cmd := exec.Command(tierlogBinary(t), "consume", "-t", "k", "-p", "1", "-o", "end", "-c", "1", "-v", u)
		cmd.Env = cliEnv()
		var out bytes.Buffer
		cmd.Stdout = &out
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The start position is fixed once its offsets request
		// answered (logged with -v); produce after that.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() && !strings.Contains(sc.Text(), "/offsets") {
		}
		go func() {
			for sc.Scan() {
			}
		}()
		mustCLI(t, []byte("late\n"), "produce", "-t", "k", "-p", "1", u)
		if err := cmd.Wait(); err != nil || out.String() != "late\n" {
			t.Fatalf("consume -o end -c 1: %v, printed %q", err, out.String())
		}
	})

	t.Run("produce -Z", func(t *testing.T) {
		mustCLI(t, nil, "topics", "create", "z", u)
		mustCLI(t, []byte("a\n\nk1\t\nk2\tv\n"), "produce", "-t", "z", "-Z", "-K", `\t`, u)
		out := mustCLI(t, nil, "consume", "-t", "z", "-e", "-f", `%k/%s/%S\n`, "-Z", u)
		if want := "NULL/a/1\nNULL/NULL/-1\nk1/NULL/-1\nk2/v/1\n"; out != want {
			t.Errorf("produce -Z:\n%q\nwant\n%q", out, want)
		}
		// Without -Z an empty line is an empty value.
		mustCLI(t, []byte("\n"), "produce", "-t", "z", u)
		if out := mustCLI(t, nil, "consume", "-t", "z", "-e", "-o", "-1", "-f", `%S\n`, u); out != "0\n" {
			t.Errorf("an empty line without -Z: length %q, want 0", out)
		}
	})

	t.Run("produce -D", func(t *testing.T) {
		mustCLI(t, nil, "topics", "create", "d", u)
		mustCLI(t, []byte("a|b||c"), "produce", "-t", "d", "-D", "|", u)
		mustCLI(t, []byte("line 1\nline 2\n--\nsecond\n--\n"), "produce", "-t", "d", "-D", `\n--\n`, u)
		out := mustCLI(t, nil, "consume", "-t", "d", "-e", "--format", "json", u)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r struct{ Value string }
			json.Unmarshal([]byte(l), &r)
			got = append(got, r.Value)
		}
		if want := []string{"a", "b", "", "c", "line 1\nline 2", "second"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("produce -D: %q, want %q", got, want)
		}
	})

	t.Run("produce FILE is one record, -l splits it", func(t *testing.T) {
		mustCLI(t, nil, "topics", "create", "files", u)
		bin := make([]byte, 3000)
		for i := range bin {
			bin[i] = byte(i * 7) // newlines, NULs and bytes that are not UTF-8
		}
		dir := t.TempDir()
		f := filepath.Join(dir, "blob.bin")
		txt := filepath.Join(dir, "lines.txt")
		os.WriteFile(f, bin, 0o644)
		os.WriteFile(txt, []byte("l1\nl2\n"), 0o644)
		if out := mustCLI(t, nil, "produce", "-t", "files", "-k", "blob", "-q", f, u); out != "" {
			t.Errorf("produce -q printed %q", out)
		}
		mustCLI(t, nil, "produce", "-t", "files", "-l", txt, u)
		out := mustCLI(t, nil, "consume", "-t", "files", "-e", "-f", `%k|%S\n`, u)
		if out != "blob|3000\n|2\n|2\n" {
			t.Errorf("a 3000-byte FILE, then -l with two lines: %q, want one record of 3000 bytes, then two", out)
		}
		raw := mustCLI(t, nil, "consume", "-t", "files", "-c", "1", "-D", "", u)
		if raw != string(bin) {
			t.Errorf("the file came back altered: %d bytes", len(raw))
		}
		// -T echoes what it sends; -p -1 routes as without -p.
		if out := mustCLI(t, []byte("t1\nt2\n"), "produce", "-t", "files", "-T", "-p", "-1", u); out != "t1\nt2\n" {
			t.Errorf("produce -T printed %q", out)
		}
	})

	t.Run("produce -K", func(t *testing.T) {
		mustCLI(t, nil, "topics", "create", "kk", u)
		mustCLI(t, []byte("a:1\nb:2\n"), "produce", "-t", "kk", "-K", ":", u)
		if out := mustCLI(t, nil, "consume", "-t", "kk", "-e", "-f", `%k=%s;`, u); out != "a=1;b=2;" {
			t.Errorf("produce -K: %q", out)
		}
	})

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"stored without a group", []string{"consume", "-t", "k", "-o", "stored", u}, "needs --group"},
		{"bad offset", []string{"consume", "-t", "k", "-o", "soon", u}, `--offset "soon"`},
		{"bad s@", []string{"consume", "-t", "k", "-o", "s@yesterday", u}, `--offset "s@yesterday"`},
		{"unknown template field", []string{"consume", "-t", "k", "-f", "%x", u}, "unknown field %x"},
		{"-e and --follow", []string{"consume", "-t", "k", "-e", "--follow", u}, "contradict"},
		{"-J and another format", []string{"consume", "-t", "k", "-J", "-f", "plain", u}, "give one"},
		{"empty delimiter", []string{"produce", "-t", "k", "-D", "", u}, "--delimiter is empty"},
		{"-k and -K", []string{"produce", "-t", "k", "-k", "a", "-K", ":", u}, "give one"},
		{"two starts", []string{"consume", "-t", "k", "-o", "1", "-o", "2", u}, "--offset given twice"},
		{"bad e@", []string{"consume", "-t", "k", "-o", "e@soon", u}, `--offset "e@soon"`},
		{"bad time ago", []string{"consume", "-t", "k", "-o", "s@-1fortnight", u}, "-DURATION ago"},
	} {
		t.Run("usage: "+c.name, func(t *testing.T) {
			r := cli(t, nil, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("tierlog %v: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
			}
		})
	}
}
