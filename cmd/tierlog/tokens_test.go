package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	tlserver "github.com/tierlog/tierlog/pkg/server"
)

// TestCheckListen: without --auth tokens only loopback addresses are
// served, unless --auth none is explicit.
func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		listen, auth string
		ok           bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.0.0.2:8080", "", true},
		{"[::1]:8080", "", true},
		{"localhost:8080", "", true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"[::]:8080", "", false},
		{"192.168.1.20:8080", "", false},
		{"tierlog.example:8080", "", false},
		{"0.0.0.0:8080", "none", true},
		{"0.0.0.0:8080", "tokens", true},
		{"127.0.0.1:8080", "maybe", false},
	} {
		err := checkListen(c.listen, c.auth)
		if (err == nil) != c.ok {
			t.Errorf("checkListen(%q, %q) = %v, want ok %v", c.listen, c.auth, err, c.ok)
		}
		var ue usageError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("checkListen(%q, %q): %v is not a usage error", c.listen, c.auth, err)
		}
		if err != nil && c.auth == "" && !strings.Contains(err.Error(), "--auth tokens") {
			t.Errorf("checkListen(%q): %q does not name --auth tokens", c.listen, err)
		}
	}
}

// TestServeRefusesNonLoopback: `tierlog serve --listen 0.0.0.0:0` stops
// before opening anything; TIERLOG_AUTH=none is as explicit as the flag.
func TestServeRefusesNonLoopback(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) error {
		c := newServeCmd()
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		c.SetArgs(append([]string{"--data-dir", dir}, args...))
		return c.Execute()
	}
	err := run("--listen", "0.0.0.0:0")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--auth tokens") {
		t.Fatalf("serve --listen 0.0.0.0:0: %v, want a usage error naming --auth tokens", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused serve created %d entries in its data dir", len(entries))
	}
	// An explicit none passes the check: a bad address then fails at
	// listen, after the check, which proves it was passed.
	t.Setenv("TIERLOG_AUTH", "none")
	if err := run("--listen", "0.0.0.0:-1", "--compact-interval", "off"); err == nil || errors.As(err, &ue) {
		t.Fatalf("serve with TIERLOG_AUTH=none: %v, want the listen error", err)
	}
}

// TestFirstToken: the first start with tokens on prints an admin token
// once; a start with a token already made prints nothing.
func TestFirstToken(t *testing.T) {
	ctx := context.Background()
	s, err := tlserver.Open(ctx, tlserver.Config{DataDir: t.TempDir(), CompactInterval: -1, Auth: tlserver.AuthTokens})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	if err := firstToken(ctx, s, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`export TIERLOG_TOKEN=(tl_[0-9a-f]{16}_[0-9a-f]{64})`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("first start printed %q, want an export line with a token", out.String())
	}
	tok, err := s.Tokens.Authenticate(ctx, "Bearer "+m[1])
	if err != nil || !strings.Contains(strings.Join(tok.Scope.Operations, ","), "admin") {
		t.Fatalf("the printed token: %v %+v", err, tok)
	}
	out.Reset()
	if err := firstToken(ctx, s, &out); err != nil || out.Len() != 0 {
		t.Fatalf("second start: %v, printed %q", err, out.String())
	}
}

// TestTokensCLI: the first admin token made with --data-dir while the
// server is stopped, then `serve --auth tokens`, client commands with
// TIERLOG_TOKEN and --token, and tokens create, list and revoke through
// the server.
func TestTokensCLI(t *testing.T) {
	skipShort(t, "the tierlog binary")
	dir := t.TempDir()
	admin := strings.TrimSpace(mustCLI(t, nil, "tokens", "create", "--data-dir", dir, "--admin", "--description", "first"))
	if !regexp.MustCompile(`^tl_[0-9a-f]{16}_[0-9a-f]{64}$`).MatchString(admin) {
		t.Fatalf("tokens create printed %q, want the token alone", admin)
	}
	srv := startServerWith(t, nil, "--data-dir", dir, "--auth", "tokens", "--compact-interval", "off")
	if strings.Contains(srv.logText(), admin[len(admin)-64:]) {
		t.Fatal("the server logged the secret")
	}
	r := cli(t, nil, "topics", "list", "--url", srv.url)
	if r.code != 1 || !strings.Contains(r.stderr, "unauthorized") || !strings.Contains(r.stderr, "TIERLOG_TOKEN") {
		t.Fatalf("topics list without a token: exit %d, stderr %q", r.code, r.stderr)
	}
	withToken := func(tok string, args ...string) cliResult {
		cmd := exec.Command(tierlogBinary(t), args...)
		cmd.Env = append(cliEnv(), "TIERLOG_URL="+srv.url, "TIERLOG_TOKEN="+tok)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return cliResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	}
	if r := withToken(admin, "topics", "create", "orders"); r.code != 0 {
		t.Fatalf("topics create with TIERLOG_TOKEN: %d %s", r.code, r.stderr)
	}
	r = withToken(admin, "tokens", "create", "--topics", "exact:orders", "--operations", "consume", "--expires", "720h", "--format", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"token":"tl_`) {
		t.Fatalf("tokens create through the server: %d %s %s", r.code, r.stdout, r.stderr)
	}
	reader := regexp.MustCompile(`"token":"(tl_[0-9a-f]+_[0-9a-f]+)"`).FindStringSubmatch(r.stdout)[1]
	id := reader[3:19]
	if r := cli(t, nil, "offsets", "--url", srv.url, "--token", reader, "--topic", "orders", "--partition", "0"); r.code != 0 {
		t.Fatalf("offsets with --token: %d %s", r.code, r.stderr)
	}
	if r := withToken(reader, "topics", "delete", "orders"); r.code != 1 || !strings.Contains(r.stderr, "forbidden") {
		t.Fatalf("topics delete with a consume token: %d %s", r.code, r.stderr)
	}
	r = withToken(admin, "tokens", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "exact:orders") || strings.Contains(r.stdout, reader[20:]) {
		t.Fatalf("tokens list: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := withToken(admin, "tokens", "revoke", id); r.code != 0 {
		t.Fatalf("tokens revoke: %d %s", r.code, r.stderr)
	}
	if r := withToken(reader, "topics", "list"); r.code != 1 || !strings.Contains(r.stderr, "unauthorized") {
		t.Fatalf("revoked token: %d %s", r.code, r.stderr)
	}
	// While the server runs, --data-dir cannot open its metadata.
	if r := cli(t, nil, "tokens", "list", "--data-dir", dir); r.code == 0 || !strings.Contains(r.stderr, "manage tokens through it") {
		t.Fatalf("tokens list --data-dir of a running server: %d %s", r.code, r.stderr)
	}
	req, _ := http.NewRequest("GET", srv.url+"/v1/health", nil)
	if res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("health without a token: %v %v", res, err)
	} else {
		res.Body.Close()
	}
}
