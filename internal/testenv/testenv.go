// Package testenv starts the real servers tests run against: dynalite (a
// DynamoDB implementation on Node.js, pinned in tools/dynalite) and the
// tierlog binary itself (`tierlog serve`, and one-shot CLI runs), each as
// a separate process. Servers bind 127.0.0.1; dynalite is stopped by the
// caller, a tierlog server when its test ends. Eventually waits, with a
// deadline, for a state that no event announces.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// RepoRoot walks up from the working directory to the directory holding
// the root go.mod (the one whose module is github.com/tierlog/tierlog).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/tierlog/tierlog\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no tierlog go.mod above the working directory")
		}
		dir = parent
	}
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago,
// for a server the caller starts next.
//
// Where the kernel says which ports it hands out itself (Linux), the port
// is below that range: there, between this check and the server's bind,
// no outgoing connection's source port and no listener on port 0 (every
// other test's) can take it. The ports of one process run on from a
// random start, so two test processes rarely meet. Elsewhere it is a port
// the kernel picked.
func FreePort() (int, error) {
	freePorts.Lock()
	defer freePorts.Unlock()
	if freePorts.end == 0 {
		freePorts.end = -1
		if hi := ephemeralStart(); hi > minFreePort+1000 {
			freePorts.end = hi
			freePorts.next = minFreePort + rand.IntN(hi-minFreePort)
		}
	}
	for i := 0; freePorts.end > 0 && i < 100; i++ {
		p := freePorts.next
		if freePorts.next++; freePorts.next >= freePorts.end {
			freePorts.next = minFreePort
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			l.Close()
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// minFreePort is the lowest port FreePort returns below the kernel's range.
const minFreePort = 10000

// freePorts is where FreePort goes on: the next port to try, and the
// start of the kernel's range (end; -1: unknown, 0: not read yet).
var freePorts struct {
	sync.Mutex
	next, end int
}

// ephemeralStart is the first port of the range the kernel picks source
// and port-0 ports from, or 0 if it cannot be read.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0
	}
	return lo
}

// Process is a server process a test started.
type Process struct {
	Endpoint string // http://127.0.0.1:port
	cmd      *exec.Cmd
	exited   chan struct{}
	out      *LockedBuffer
}

// Stop kills the process and waits for it.
func (p *Process) Stop() {
	if p == nil || p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// State says whether the process is still running, and how it ended.
func (p *Process) State() string {
	select {
	case <-p.exited:
		return "exited: " + p.cmd.ProcessState.String()
	default:
		return "running"
	}
}

// Output is what the process printed so far.
func (p *Process) Output() string { return p.out.String() }

// StartDynalite installs dynalite with npm ci if needed, then runs it on a
// free port. Missing node or npm is an error, not a reason to skip: CI
// installs them.
func StartDynalite() (*Process, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(root, "tools", "dynalite")
	cli := filepath.Join(prefix, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		npm, lerr := exec.LookPath("npm")
		if lerr != nil {
			return nil, fmt.Errorf("testenv: %s is missing and npm is not on PATH (install Node.js 20 and npm, or run `npm ci --prefix tools/dynalite`): %w", cli, lerr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, npm, "ci", "--prefix", prefix, "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("testenv: npm ci --prefix %s: %w\n%s", prefix, err, out)
		}
		if _, err := os.Stat(cli); err != nil {
			return nil, fmt.Errorf("testenv: npm ci --prefix %s did not install %s: %w", prefix, cli, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("testenv: node is not on PATH (install Node.js 20): %w", err)
	}
	// dynalite dies when a client drops a request mid-body; the preload
	// keeps it alive through the kills the tests make on purpose.
	preload := filepath.Join(prefix, "survive-aborts.js")
	return StartListening(node, func(port int) []string {
		return []string{"-r", preload, cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
	})
}

// StartListening runs name with the arguments argsFor gives for a free
// loopback port and waits until it listens there. A free port can be taken
// between the probe and the bind, so it tries three ports.
func StartListening(name string, argsFor func(port int) []string) (*Process, error) {
	var lastErr error
	for range 3 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p, err := Start(name, argsFor(port)...)
		if err != nil {
			return nil, err
		}
		if err := p.WaitListening(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 60*time.Second); err == nil {
			return p, nil
		} else {
			lastErr = err
		}
	}
	return nil, lastErr
}

// Start runs a command with its output captured.
func Start(name string, args ...string) (*Process, error) {
	p := &Process{cmd: exec.Command(name, args...), exited: make(chan struct{}), out: &LockedBuffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: start %s: %w", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// WaitListening waits until addr accepts connections, and sets Endpoint.
// On failure it kills the process.
func (p *Process) WaitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("testenv: %s exited before listening on %s:\n%s", p.cmd.Path, addr, p.out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			// Something answers, but it may be another process that took
			// the port between FreePort and our bind (ours then exits with
			// "address in use"): make sure ours is still running.
			select {
			case <-p.exited:
				return fmt.Errorf("testenv: %s exited (port %s taken?):\n%s", p.cmd.Path, addr, p.out.String())
			case <-time.After(300 * time.Millisecond):
			}
			p.Endpoint = "http://" + addr
			return nil
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("testenv: %s not listening on %s after %v:\n%s", p.cmd.Path, addr, timeout, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LockedBuffer is a bytes.Buffer safe for concurrent writes.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
