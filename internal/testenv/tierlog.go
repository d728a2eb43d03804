package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SkipShort skips a test that runs child processes (what) under -short,
// as make unit runs the tests; make test runs it.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs %s: skipped with -short (make unit); make test runs it", what)
	}
}

var tierlogBuild struct {
	once sync.Once
	path string
	err  error
}

// TierlogBinary builds the real tierlog binary (./cmd/tierlog, with the
// race detector) once per test binary and returns its path. Under -short
// it fails: a test that runs the binary calls SkipShort first.
func TierlogBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Fatal("TierlogBinary with -short: the test must call SkipShort first")
	}
	b := &tierlogBuild
	b.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "tierlog-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "tierlog")
		cmd := exec.Command("go", "build", "-race", "-o", b.path, "./cmd/tierlog")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/tierlog: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Tierlog is a running `tierlog serve` process.
type Tierlog struct {
	Cmd  *exec.Cmd
	URL  string // http://127.0.0.1:port
	logs LockedBuffer
	done chan struct{}
}

var addrRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// StartTierlog runs `tierlog serve --listen 127.0.0.1:0 ARGS...` with env
// added to the environment, and waits for its address. The process is
// killed when the test ends.
func StartTierlog(t testing.TB, env []string, args ...string) *Tierlog {
	t.Helper()
	cmd := exec.Command(TierlogBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return StartTierlogCmd(t, cmd)
}

// StartTierlogCmd starts cmd, which runs `tierlog serve --listen
// 127.0.0.1:0 ...` (itself or through a wrapper that execs it), and waits
// for the address it logs.
func StartTierlogCmd(t testing.TB, cmd *exec.Cmd) *Tierlog {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Tierlog{Cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.Write([]byte(line + "\n"))
			if m := addrRE.FindStringSubmatch(line); m != nil && strings.Contains(line, "listening") {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-s.done })
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.done:
		t.Fatalf("server exited before listening:\n%s", s.LogText())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not log its address:\n%s", s.LogText())
	}
	return s
}

// LogText is what the process logged so far.
func (s *Tierlog) LogText() string { return s.logs.String() }

// Done is closed when the process has exited.
func (s *Tierlog) Done() <-chan struct{} { return s.done }

// Kill sends sig and waits for the process to exit.
func (s *Tierlog) Kill(t testing.TB, sig syscall.Signal) {
	t.Helper()
	s.Cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not exit after %v", sig)
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// DoJSON sends method url with body as JSON (none if nil) and decodes a
// 2xx answer into out (if not nil). It returns the status.
func DoJSON(method, url string, body, out any) (int, error) {
	return DoJSONAuth(method, url, "", body, out)
}

// DoJSONAuth is DoJSON with an Authorization header (none for "").
func DoJSONAuth(method, url, authorization string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s: %w", b, err)
		}
	}
	return resp.StatusCode, nil
}

// Run is what one run of the tierlog binary left.
type Run struct {
	Code           int
	Stdout, Stderr string
}

// TierlogEnv is the environment of a CLI run: no $TIERLOG_URL from the
// developer's shell, and no race-detector pause at exit (1 s by default,
// which would make every successful command take a second).
func TierlogEnv() []string {
	race := "atexit_sleep_ms=0"
	if g := os.Getenv("GORACE"); g != "" {
		race = g + " " + race
	}
	return append(os.Environ(), "TIERLOG_URL=", "GORACE="+race)
}

// RunTierlog runs the tierlog binary with args (and stdin if not nil) in
// TierlogEnv, and kills it if it has not exited after 90 s.
func RunTierlog(t testing.TB, stdin []byte, args ...string) Run {
	t.Helper()
	cmd := exec.Command(TierlogBinary(t), args...)
	cmd.Env = TierlogEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("tierlog %v did not exit; stderr:\n%s", args, errb.String())
	}
	return Run{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errb.String()}
}
