package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	tlserver "github.com/tierlog/tierlog/pkg/server"
)

// parseServe parses args as `tierlog serve` would, environment included,
// without running it.
func parseServe(t *testing.T, args ...string) (*cobra.Command, error) {
	t.Helper()
	c := newServeCmd()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return c, c.PreRunE(c, nil)
}

// envSample is a value of each flag type, unlike every default, with the
// flag's String of it.
var envSample = map[string][2]string{
	"string":       {"from-env", "from-env"},
	"bool":         {"true", "true"},
	"duration":     {"7s", "7s"},
	"duration|off": {"7s", "7s"},
	"int64":        {"12345", "12345"},
	"level":        {"DEBUG", "debug"},
	"profile":      {"EFS-OneZone", "efs-onezone"},
}

// TestServeEnvEveryFlag: every flag of `tierlog serve` is read from its
// TIERLOG_* variable and says so in its usage. A flag added without an
// environment variable fails here.
func TestServeEnvEveryFlag(t *testing.T) {
	c := newServeCmd()
	n := 0
	c.Flags().VisitAll(func(f *pflag.Flag) {
		n++
		s, ok := envSample[f.Value.Type()]
		if !ok {
			t.Fatalf("--%s has type %s: add a sample to envSample", f.Name, f.Value.Type())
		}
		t.Setenv(envName(f.Name), s[0])
		if !strings.Contains(f.Usage, "(env "+envName(f.Name)+")") {
			t.Errorf("--%s: usage %q does not name %s", f.Name, f.Usage, envName(f.Name))
		}
	})
	c, err := parseServe(t)
	if err != nil {
		t.Fatal(err)
	}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if want := envSample[f.Value.Type()][1]; f.Value.String() != want {
			t.Errorf("--%s with %s=%s is %q, want %q", f.Name, envName(f.Name), envSample[f.Value.Type()][0], f.Value.String(), want)
		}
	})
	if n < 15 {
		t.Errorf("only %d serve flags", n)
	}
}

// TestServeEnvPrecedence: the flag beats the variable, the variable beats
// the default, an empty variable is unset, and a variable that does not
// parse is a usage error naming it.
func TestServeEnvPrecedence(t *testing.T) {
	get := func(c *cobra.Command, name string) string { return c.Flags().Lookup(name).Value.String() }
	t.Setenv("TIERLOG_LEASE_TTL", "")
	c, err := parseServe(t)
	if err != nil || get(c, "lease-ttl") != "0s" || get(c, "listen") != defaultListen {
		t.Fatalf("defaults: %v, lease-ttl %s listen %s", err, get(c, "lease-ttl"), get(c, "listen"))
	}
	t.Setenv("TIERLOG_LEASE_TTL", "3s")
	if c, _ := parseServe(t); get(c, "lease-ttl") != "3s" {
		t.Errorf("from env: %s", get(c, "lease-ttl"))
	}
	if c, _ := parseServe(t, "--lease-ttl", "750ms"); get(c, "lease-ttl") != "750ms" {
		t.Errorf("flag over env: %s", get(c, "lease-ttl"))
	}
	t.Setenv("TIERLOG_LEASE_TTL", "soon")
	var ue usageError
	if _, err := parseServe(t); !errors.As(err, &ue) || !strings.Contains(err.Error(), "TIERLOG_LEASE_TTL") {
		t.Errorf("TIERLOG_LEASE_TTL=soon: %v, want a usage error naming the variable", err)
	}
	// Executed, the bad variable stops serve before it opens anything
	// (the address would fail at once otherwise).
	c = newServeCmd()
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SetArgs([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:-1"})
	if err := c.Execute(); !errors.As(err, &ue) {
		t.Errorf("serve with TIERLOG_LEASE_TTL=soon: %v, want a usage error", err)
	}
}

// TestServeZeroMeansDefault: a 0 duration is the server's default (as in
// pkg/server.Config) and "off" is negative, off, for the timers that can
// be off; --body-read-timeout shows the server's default.
func TestServeZeroMeansDefault(t *testing.T) {
	var c *cobra.Command
	cases := []struct {
		args []string
		flag string
		want time.Duration
	}{
		{nil, "body-read-timeout", tlserver.DefaultBodyReadTimeout},
		{[]string{"--body-read-timeout", "0"}, "body-read-timeout", 0},
		{[]string{"--body-read-timeout", "off"}, "body-read-timeout", -1},
		{[]string{"--body-read-timeout", "2s"}, "body-read-timeout", 2 * time.Second},
		{nil, "compact-interval", 0},
		{[]string{"--compact-interval", "off"}, "compact-interval", -1},
		{[]string{"--compact-interval", "-5s"}, "compact-interval", -1},
		{[]string{"--compact-interval", "300ms"}, "compact-interval", 300 * time.Millisecond},
	}
	for _, k := range cases {
		c = newServeCmd()
		if err := c.ParseFlags(k.args); err != nil {
			t.Fatal(err)
		}
		v := c.Flags().Lookup(k.flag).Value.(offDuration)
		if *v.d != k.want {
			t.Errorf("%v: --%s is %v, want %v", k.args, k.flag, *v.d, k.want)
		}
	}
	c = newServeCmd()
	if err := c.ParseFlags([]string{"--compact-interval", "soon"}); err == nil {
		t.Error("--compact-interval soon parsed")
	}
}

// TestServeHotFSLatency: --hot-fs-latency takes a profile name into the
// server's configuration, none by default, and refuses any other name.
func TestServeHotFSLatency(t *testing.T) {
	for _, k := range []struct {
		args          []string
		name          string
		read, durable time.Duration
	}{
		{nil, "none", 0, 0},
		{[]string{"--hot-fs-latency", "efs-regional"}, "efs-regional", time.Millisecond, 2700 * time.Microsecond},
		{[]string{"--hot-fs-latency", "efs-onezone"}, "efs-onezone", 250 * time.Microsecond, 1600 * time.Microsecond},
		{[]string{"--hot-fs-latency", "none"}, "none", 0, 0},
	} {
		c := newServeCmd()
		if err := c.ParseFlags(k.args); err != nil {
			t.Fatalf("%v: %v", k.args, err)
		}
		p := *c.Flags().Lookup("hot-fs-latency").Value.(latencyFlag).p
		if p.String() != k.name || p.Read != k.read || p.Durable != k.durable {
			t.Errorf("%v: profile %+v, want %s %v/%v", k.args, p, k.name, k.read, k.durable)
		}
	}
	if err := newServeCmd().ParseFlags([]string{"--hot-fs-latency", "nfs"}); err == nil || !strings.Contains(err.Error(), "efs-regional") {
		t.Errorf("--hot-fs-latency nfs: %v, want an error listing the profiles", err)
	}
	t.Setenv("TIERLOG_HOT_FS_LATENCY", "efs-regional")
	c, err := parseServe(t)
	if err != nil {
		t.Fatal(err)
	}
	if p := *c.Flags().Lookup("hot-fs-latency").Value.(latencyFlag).p; p.String() != "efs-regional" {
		t.Errorf("TIERLOG_HOT_FS_LATENCY=efs-regional: profile %s", p)
	}
}

// TestReadmeConfigTable: README.md's Configuration table lists every serve
// flag with its variable, and nothing else.
func TestReadmeConfigTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| `(TIERLOG_[A-Z_]+)` \\|")
	inTable := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		inTable[m[1]] = m[2]
	}
	newServeCmd().Flags().VisitAll(func(f *pflag.Flag) {
		env, ok := inTable[f.Name]
		switch {
		case !ok:
			t.Errorf("README.md's configuration table has no row for --%s", f.Name)
		case env != envName(f.Name):
			t.Errorf("README.md: --%s is read from %s, not %s", f.Name, envName(f.Name), env)
		}
		delete(inTable, f.Name)
	})
	for name := range inTable {
		t.Errorf("README.md lists --%s, which tierlog serve does not have", name)
	}
}

// TestVersion: --version and the version command print the module
// version and, when the build recorded it, the commit.
func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/tierlog/tierlog", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got := versionString(bi, true); !strings.HasPrefix(got, "v1.2.3, commit abc123+dirty (2026-01-02T03:04:05Z), go1.99, ") {
		t.Errorf("versionString: %q", got)
	}
	if got := versionString(&debug.BuildInfo{Main: debug.Module{}}, true); !strings.HasPrefix(got, "(devel), ") {
		t.Errorf("without a version: %q", got)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := "tierlog " + buildVersion() + "\n"; out.String() != want {
			t.Errorf("tierlog %v printed %q, want %q", args, out.String(), want)
		}
	}
}

// TestMakeRunHonoursEnv: `make run` passes --listen and --data-dir only
// when LISTEN= or DATA_DIR= are given, so TIERLOG_LISTEN and
// TIERLOG_DATA_DIR reach tierlog serve.
func TestMakeRunHonoursEnv(t *testing.T) {
	skipShort(t, "make -n")
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	dry := func(env []string, args ...string) string {
		cmd := exec.Command(mk, append([]string{"-n", "-s", "-C", filepath.Join("..", ".."), "run"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run: %v\n%s", err, out)
		}
		return string(out)
	}
	env := []string{"LISTEN=", "DATA_DIR=", "TIERLOG_LISTEN=127.0.0.1:8082", "TIERLOG_DATA_DIR=/tmp/x"}
	if out := dry(env); strings.Contains(out, "--listen") || strings.Contains(out, "--data-dir") || !strings.Contains(out, "serve") {
		t.Errorf("make run with TIERLOG_LISTEN set runs %q: a flag would override the variable", out)
	}
	if out := dry(env, "LISTEN=127.0.0.1:9", "DATA_DIR=d"); !strings.Contains(out, "--listen 127.0.0.1:9") || !strings.Contains(out, "--data-dir d") {
		t.Errorf("make run LISTEN=... DATA_DIR=... runs %q", out)
	}
	// make cli builds bin/tierlog alone: no Lambda cross-compiling.
	cmd := exec.Command(mk, "-n", "-s", "-C", filepath.Join("..", ".."), "cli")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-o bin/tierlog ./cmd/tierlog") || strings.Contains(string(out), "GOOS") || strings.Contains(string(out), "functions") {
		t.Errorf("make -n cli: %v\n%s", err, out)
	}
}

// TestMakeRunStopsOnKill: `make run & ... kill $!` stops the server, not
// only make: the port is free again once make has exited.
func TestMakeRunStopsOnKill(t *testing.T) {
	skipShort(t, "make run")
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	cmd := exec.Command(mk, "-s", "-C", filepath.Join("..", ".."), "run",
		"LISTEN=127.0.0.1:0", "DATA_DIR="+filepath.Join(dir, "data"), "RUN_BIN="+filepath.Join(dir, "tierlog"))
	cmd.Env = append(os.Environ(), "TIERLOG_COMPACT_INTERVAL=off")
	s := startServerCmd(t, cmd)
	addr := strings.TrimPrefix(s.url, "http://")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { // kill $! of `make run &`
		t.Fatal(err)
	}
	select {
	case <-s.p.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("make run did not exit after SIGTERM:\n%s", s.logText())
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("after kill of make run, %s still accepts connections: the server outlived make", addr)
	}
	// The server got the signal itself and stopped cleanly.
	if !strings.Contains(s.logText(), `msg=stopped`) {
		t.Errorf("the server did not log a clean stop:\n%s", s.logText())
	}
}

// TestMakeLocalstackUpChecks: without the docker compose plugin, make
// localstack-up fails at once naming what to install, not with docker's
// usage text.
func TestMakeLocalstackUpChecks(t *testing.T) {
	skipShort(t, "make localstack-up against a stand-in docker")
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	bin := t.TempDir()
	// A docker without the compose plugin: `docker compose ...` is an
	// unknown command.
	fake := "#!/bin/sh\nif [ \"$1\" = compose ]; then echo \"docker: 'compose' is not a docker command.\" >&2; exit 1; fi\nexit 0\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mk, "-s", "-C", filepath.Join("..", ".."), "localstack-up", "LOCAL_HOT_DIR="+filepath.Join(bin, "hot"))
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the docker compose plugin is required") || time.Since(start) > 10*time.Second {
		t.Fatalf("make localstack-up without the compose plugin: %v after %v\n%s", err, time.Since(start), out)
	}
	if _, err := os.Stat(filepath.Join(bin, "hot")); err == nil {
		t.Error("the check ran after the first step: the hot dir was made")
	}
}
