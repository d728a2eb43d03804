package main

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/tierlog/tierlog/internal/testenv"
)

// The CLI's tests run the built binary through internal/testenv, which the
// system tests (internal/systest) share; these are its names here.

func skipShort(t *testing.T, what string) { t.Helper(); testenv.SkipShort(t, what) }

func tierlogBinary(t *testing.T) string { t.Helper(); return testenv.TierlogBinary(t) }

func doJSON(method, url string, body, out any) (int, error) {
	return testenv.DoJSON(method, url, body, out)
}

// server is a running `tierlog serve` process.
type server struct {
	p   *testenv.Tierlog
	url string
	cmd *exec.Cmd
}

func (s *server) kill(t *testing.T, sig syscall.Signal) { t.Helper(); s.p.Kill(t, sig) }

// startServer runs `tierlog serve` on dataDir, compacting every 300 ms
// with a grace of 1 s.
func startServer(t *testing.T, dataDir string) *server {
	t.Helper()
	p := testenv.StartTierlog(t, nil, "--data-dir", dataDir, "--compact-interval", "300ms", "--compact-grace", "1s")
	return &server{p: p, url: p.URL, cmd: p.Cmd}
}

// startServerCmd starts cmd, which runs `tierlog serve --listen
// 127.0.0.1:0 ...` (itself or through a wrapper that execs it), and waits
// for its address.
func startServerCmd(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	p := testenv.StartTierlogCmd(t, cmd)
	return &server{p: p, url: p.URL, cmd: p.Cmd}
}

// startServerWith runs `tierlog serve --listen 127.0.0.1:0 ARGS...` with
// env added to the environment, and waits for its address.
func startServerWith(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	p := testenv.StartTierlog(t, env, args...)
	return &server{p: p, url: p.URL, cmd: p.Cmd}
}

// logText is what the server has logged so far.
func (s *server) logText() string { return s.p.LogText() }
