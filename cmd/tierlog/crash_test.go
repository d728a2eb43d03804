package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// skipShort skips a test that runs child processes (what) under -short,
// as make unit runs the tests; make test runs it.
func skipShort(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs %s: skipped with -short (make unit); make test runs it", what)
	}
}

// tierlogBinary builds the real tierlog binary once per test run. Under
// -short it fails: a test that runs the binary calls skipShort first.
func tierlogBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Fatal("tierlogBinary with -short: the test must call skipShort first")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tierlog-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tierlog")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is a running `tierlog serve` process.
type server struct {
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
	mu   *sync.Mutex
	done chan struct{}
}

var addrRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

func startServer(t *testing.T, dataDir string) *server {
	t.Helper()
	return startServerWith(t, nil, "--data-dir", dataDir, "--compact-interval", "300ms", "--compact-grace", "1s")
}

// startServerWith runs `tierlog serve --listen 127.0.0.1:0 ARGS...` with
// env added to the environment, and waits for its address.
func startServerWith(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(tierlogBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return startServerCmd(t, cmd)
}

// startServerCmd starts cmd, which runs `tierlog serve --listen
// 127.0.0.1:0 ...` (itself or through a wrapper that execs it), and waits
// for its address.
func startServerCmd(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, logs: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			s.mu.Unlock()
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
		s.url = "http://" + a
	case <-s.done:
		t.Fatalf("server exited before listening:\n%s", s.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not log its address:\n%s", s.logText())
	}
	return s
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

func (s *server) kill(t *testing.T, sig syscall.Signal) {
	t.Helper()
	s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not exit after %v", sig)
	}
}

var client = &http.Client{Timeout: 30 * time.Second}

func doJSON(method, url string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
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

type produceReq struct {
	Records []produceRec `json:"records"`
}
type produceRec struct {
	Value string `json:"value"`
}
type produceResp struct {
	Offsets []struct {
		Partition int   `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"offsets"`
}
type fetchResp struct {
	Records []struct {
		Offset    int64   `json:"offset"`
		Timestamp int64   `json:"timestamp"`
		Value     *string `json:"value"`
	} `json:"records"`
	HighWatermark int64 `json:"high_watermark"`
}

// ledger is what the clients know: every value sent, and the offset of
// every value acknowledged.
type ledger struct {
	mu    sync.Mutex
	sent  map[string]bool
	acked map[int]map[int64]string // partition -> offset -> value
	seen  map[int]map[int64]string // what earlier verifications read
}

// TestCrashKill9 runs the real binary, produces from concurrent clients,
// kills it with SIGKILL mid-load, restarts it, and checks I1-I3 (and I6)
// after every restart.
func TestCrashKill9(t *testing.T) {
	skipShort(t, "tierlog serve, killed with SIGKILL")
	const (
		partitions = 3
		clients    = 6
		kills      = 6
	)
	dataDir := t.TempDir()
	l := &ledger{sent: map[string]bool{}, acked: map[int]map[int64]string{}, seen: map[int]map[int64]string{}}
	for p := 0; p < partitions; p++ {
		l.acked[p] = map[int64]string{}
		l.seen[p] = map[int64]string{}
	}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	totalAcked := 0
	for round := 0; round <= kills; round++ {
		s := startServer(t, dataDir)
		if round == 0 {
			code, err := doJSON("POST", s.url+"/v1/topics", map[string]any{"name": "crash", "partitions": partitions, "segment_bytes": 64 << 10}, nil)
			if err != nil || code != 201 {
				t.Fatalf("create topic: %d %v", code, err)
			}
		}
		verify(t, s.url, "crash", partitions, l)
		if round == kills {
			s.kill(t, syscall.SIGTERM) // the last stop is graceful
			s = startServer(t, dataDir)
			verify(t, s.url, "crash", partitions, l)
			break
		}

		var stop atomic.Bool
		var wg sync.WaitGroup
		var acks atomic.Int64
		firstAck := make(chan struct{})
		var firstOnce sync.Once
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 0; !stop.Load(); seq++ {
					p := (c + seq) % partitions
					n := 1 + (c*7+seq)%20
					req := produceReq{}
					for i := 0; i < n; i++ {
						v := fmt.Sprintf("r%d-c%d-s%d-i%d-%s", round, c, seq, i, strings.Repeat("x", (c*31+i)%200))
						req.Records = append(req.Records, produceRec{Value: v})
					}
					l.mu.Lock()
					for _, r := range req.Records {
						l.sent[r.Value] = true
					}
					l.mu.Unlock()
					var resp produceResp
					code, err := doJSON("POST", fmt.Sprintf("%s/v1/topics/crash/partitions/%d/records", s.url, p), req, &resp)
					if err != nil || code != 200 {
						if stop.Load() {
							return
						}
						if code == 503 {
							continue // lease busy after restart: retry later
						}
						if err != nil {
							return // the server is gone
						}
						t.Errorf("produce: status %d", code)
						return
					}
					if len(resp.Offsets) != n {
						t.Errorf("produce: %d offsets for %d records", len(resp.Offsets), n)
						return
					}
					l.mu.Lock()
					for i, o := range resp.Offsets {
						if prev, ok := l.acked[p][o.Offset]; ok {
							t.Errorf("I1: offset %d of partition %d acknowledged twice (%q, %q)", o.Offset, p, prev, req.Records[i].Value)
						}
						l.acked[p][o.Offset] = req.Records[i].Value
					}
					l.mu.Unlock()
					acks.Add(int64(n))
					firstOnce.Do(func() { close(firstAck) })
				}
			}()
		}
		// The kill lands at a random point of a round that is writing: a
		// random time after its first acknowledgement (a restart's first
		// produce takes the leases over, which a loaded machine makes slow).
		select {
		case <-firstAck:
		case <-time.After(60 * time.Second):
		}
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond) // the random kill point is the behaviour under test
		s.kill(t, syscall.SIGKILL)
		stop.Store(true)
		wg.Wait()
		totalAcked += int(acks.Load())
		t.Logf("round %d: %d records acknowledged before SIGKILL", round, acks.Load())
		if acks.Load() == 0 {
			t.Fatalf("round %d acknowledged nothing:\n%s", round, s.logText())
		}
	}
	// The compactor ran between kills: reads above went through both tiers.
	var artifacts int
	filepath.WalkDir(filepath.Join(dataDir, "cold", "objects"), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".seg") {
			artifacts++
		}
		return nil
	})
	if artifacts == 0 {
		t.Fatal("no segment reached the cold tier")
	}
	// Every artifact the compactor wrote between kills verifies, CRCs and
	// indexes included; a flipped byte in one is caught.
	cold := filepath.Join(dataDir, "cold", "objects")
	if r := cli(t, nil, "segments", "verify", cold); r.code != 0 || strings.Count(r.stdout, "ok ") != artifacts {
		t.Fatalf("segments verify %s: exit %d, %d ok lines for %d artifacts\n%s%s", cold, r.code, strings.Count(r.stdout, "ok "), artifacts, r.stdout, r.stderr)
	}
	var one string
	filepath.WalkDir(cold, func(path string, d os.DirEntry, err error) error {
		if err == nil && one == "" && strings.HasSuffix(path, ".seg") {
			one = path
		}
		return nil
	})
	obj, err := os.ReadFile(one)
	if err != nil {
		t.Fatal(err)
	}
	obj[len(obj)/3] ^= 0x20
	bad := filepath.Join(t.TempDir(), filepath.Base(one))
	os.WriteFile(bad, obj, 0o644)
	if r := cli(t, nil, "segments", "verify", bad); r.code != 1 || !strings.Contains(r.stderr, "corrupt") {
		t.Fatalf("segments verify of a damaged artifact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, nil, "segments", "dump", "--format", "json", one); r.code != 0 || !strings.Contains(r.stdout, `"offset":`) {
		t.Fatalf("segments dump %s: exit %d\n%s", one, r.code, r.stderr)
	}
	t.Logf("%d kills, %d records acknowledged, %d segments in the cold tier, all verified", kills, totalAcked, artifacts)
}

// verify reads every partition from 0 and checks I1 (dense), I2 (every
// acknowledged record at its offset with identical bytes), I3 (only sent
// records; what was seen at an offset before is still there) and I6.
func verify(t *testing.T, url, topic string, partitions int, l *ledger) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := 0; p < partitions; p++ {
		var got []string
		var lastTS int64
		deadline := time.Now().Add(30 * time.Second)
		for off := int64(0); ; {
			var f fetchResp
			code, err := doJSON("GET", fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records?offset=%d&max_records=10000&max_bytes=4194304", url, topic, p, off), nil, &f)
			if code == 503 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // retry backoff, as a client's: a restarting server answers 503
				continue
			}
			if err != nil || code != 200 {
				t.Fatalf("fetch p%d@%d: %d %v", p, off, code, err)
			}
			for _, r := range f.Records {
				if r.Offset != off {
					t.Fatalf("I1: partition %d: offset %d where %d expected", p, r.Offset, off)
				}
				if r.Timestamp < lastTS {
					t.Fatalf("I6: partition %d: timestamp %d after %d at %d", p, r.Timestamp, lastTS, off)
				}
				lastTS = r.Timestamp
				if r.Value == nil {
					t.Fatalf("partition %d offset %d: null value never sent", p, off)
				}
				got = append(got, *r.Value)
				off++
			}
			if off >= f.HighWatermark {
				break
			}
			if len(f.Records) == 0 {
				t.Fatalf("partition %d: empty fetch at %d below hw %d", p, off, f.HighWatermark)
			}
		}
		seenValues := map[string]int64{}
		for off, v := range got {
			if !l.sent[v] {
				t.Fatalf("I3: partition %d offset %d holds %q, never sent", p, off, v)
			}
			if prev, dup := seenValues[v]; dup {
				t.Fatalf("partition %d: %q at offsets %d and %d", p, v, prev, off)
			}
			seenValues[v] = int64(off)
			if before, ok := l.seen[p][int64(off)]; ok && before != v {
				t.Fatalf("I3: partition %d offset %d was %q, now %q", p, off, before, v)
			}
			l.seen[p][int64(off)] = v
		}
		for off, v := range l.acked[p] {
			if off >= int64(len(got)) {
				t.Fatalf("I2: partition %d: acknowledged offset %d lost (hw %d)", p, off, len(got))
			}
			if got[off] != v {
				t.Fatalf("I2: partition %d offset %d holds %q, acknowledged %q", p, off, got[off], v)
			}
		}
	}
}
