package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestCLIFailFast: with no server at --url, every client command fails
// within seconds (the default --retry-timeout is 30s) with a message that
// names the URL and what to check.
func TestCLIFailFast(t *testing.T) {
	skipShort(t, "the tierlog binary")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	tierlogBinary(t) // built before the clock starts: a cold build takes longer than the bound
	for _, c := range []struct {
		stdin []byte
		args  []string
	}{
		{nil, []string{"topics", "list"}},
		{nil, []string{"consume", "--topic", "t"}},
		{[]byte("x\n"), []string{"produce", "--topic", "t"}},
		{nil, []string{"groups", "show", "--group", "g", "--topic", "t"}},
	} {
		start := time.Now()
		r := cli(t, c.stdin, append(c.args, "--url", dead)...)
		took := time.Since(start)
		want := "tierlog: cannot reach a tierlog server at " + dead + ": connection refused"
		if r.code != 1 || !strings.HasPrefix(r.stderr, want) || took > 10*time.Second {
			t.Errorf("tierlog %v: exit %d after %v; stderr %q, want exit 1 within seconds and %q", c.args, r.code, took.Round(time.Millisecond), r.stderr, want)
		}
	}
}
