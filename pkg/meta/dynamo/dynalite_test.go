package dynamo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

// dynalite is one dynalite process shared by this package's tests, started
// on first use and killed by TestMain.
var dynalite struct {
	once     sync.Once
	endpoint string
	err      error
	cmd      *exec.Cmd
	exited   chan struct{}
	out      lockedBuffer
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopDynalite()
	os.Exit(code)
}

func TestConformanceDynalite(t *testing.T) {
	metatest.Run(t, storeFactory(testClient(dynaliteEndpoint(t))))
}

// dynaliteEndpoint returns the URL of the shared dynalite, starting it
// (and installing it with npm ci) the first time. Missing node or npm is a
// failure, not a skip: CI installs them.
func dynaliteEndpoint(t *testing.T) string {
	t.Helper()
	dynalite.once.Do(func() { dynalite.endpoint, dynalite.err = startDynalite() })
	if dynalite.err != nil {
		t.Fatalf("dynalite: %v", dynalite.err)
	}
	return dynalite.endpoint
}

// repoRoot walks up from the working directory to the directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func startDynalite() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	prefix := filepath.Join(root, "tools", "dynalite")
	cli := filepath.Join(prefix, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		npm, lerr := exec.LookPath("npm")
		if lerr != nil {
			return "", fmt.Errorf("%s is missing and npm is not on PATH (install Node.js 20 and npm, or run `npm ci --prefix tools/dynalite`): %w", cli, lerr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, npm, "ci", "--prefix", prefix, "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("npm ci --prefix %s: %w\n%s", prefix, err, out)
		}
		if _, err := os.Stat(cli); err != nil {
			return "", fmt.Errorf("npm ci --prefix %s did not install %s: %w", prefix, cli, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("node is not on PATH (install Node.js 20): %w", err)
	}
	var lastErr error
	for range 3 { // a free port can be taken between probe and listen
		port, err := freePort()
		if err != nil {
			return "", err
		}
		endpoint, err := runDynalite(node, cli, port)
		if err == nil {
			return endpoint, nil
		}
		lastErr = err
	}
	return "", lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func runDynalite(node, cli string, port int) (string, error) {
	dynalite.out.Reset()
	cmd := exec.Command(node, cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Stdout, cmd.Stderr = &dynalite.out, &dynalite.out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", cli, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			return "", fmt.Errorf("dynalite exited before listening on %s:\n%s", addr, dynalite.out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			dynalite.cmd, dynalite.exited = cmd, exited
			return "http://" + addr, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return "", fmt.Errorf("dynalite not listening on %s after 20s:\n%s", addr, dynalite.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopDynalite kills the process this package started, if any.
func stopDynalite() {
	if dynalite.cmd == nil {
		return
	}
	_ = dynalite.cmd.Process.Kill()
	<-dynalite.exited
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
