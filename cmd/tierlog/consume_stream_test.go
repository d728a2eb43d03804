package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCLIFollowStream tails two partitions with --follow --stream: what
// was there and what is produced later is printed, each record once, and
// --count ends it.
func TestCLIFollowStream(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "st", "--partitions", "2", "--url", s.url)
	mustCLI(t, []byte("old-0\n"), "produce", "--url", s.url, "--topic", "st", "--partition", "0")
	mustCLI(t, []byte("old-1\n"), "produce", "--url", s.url, "--topic", "st", "--partition", "1")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--stream", "-e"}, "--stream follows the log: not with -e"},
		{[]string{"--stream", "--follow", "--group", "g"}, "nor with --group"},
	} {
		r := cli(t, nil, append([]string{"consume", "--url", s.url, "--topic", "st"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("%v: exit %d, stderr %q, want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}

	cmd := exec.Command(tierlogBinary(t), "consume", "--url", s.url, "--topic", "st", "--follow", "--stream",
		"-c", "6", "-f", "%p/%o %s\\n")
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
	done := make(chan error, 1)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	got := map[string]bool{}
	expect := func(want ...string) {
		t.Helper()
		for range want {
			select {
			case l := <-lines:
				if got[l] {
					t.Fatalf("printed twice: %q", l)
				}
				got[l] = true
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("tail did not print %q; got %v; stderr: %s", want, got, stderr.String())
			}
		}
		for _, w := range want {
			if !got[w] {
				t.Fatalf("tail did not print %q; got %v", w, got)
			}
		}
	}
	expect("0/0 old-0", "1/0 old-1")
	for round := range 2 {
		for p := range 2 {
			v := fmt.Sprintf("new-%d-%d", round, p)
			mustCLI(t, []byte(v+"\n"), "produce", "--url", s.url, "--topic", "st", "--partition", fmt.Sprint(p))
			expect(fmt.Sprintf("%d/%d %s", p, round+1, v))
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("consume --follow --stream -c 6: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("consume --follow --stream did not exit after --count")
	}
}
