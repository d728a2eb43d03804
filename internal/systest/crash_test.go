package systest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
)

// TestCrashKill9 runs the real binary, produces from concurrent clients,
// kills it with SIGKILL mid-load, restarts it, and checks I1-I3 (and I6)
// after every restart.
func TestCrashKill9(t *testing.T) {
	testenv.SkipShort(t, "tierlog serve, killed with SIGKILL")
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
			code, err := testenv.DoJSON("POST", s.URL+"/v1/topics", map[string]any{"name": "crash", "partitions": partitions, "segment_bytes": 64 << 10}, nil)
			if err != nil || code != 201 {
				t.Fatalf("create topic: %d %v", code, err)
			}
		}
		verify(t, s.URL, "crash", partitions, l)
		if round == kills {
			s.Kill(t, syscall.SIGTERM) // the last stop is graceful
			s = startServer(t, dataDir)
			verify(t, s.URL, "crash", partitions, l)
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
					code, err := testenv.DoJSON("POST", fmt.Sprintf("%s/v1/topics/crash/partitions/%d/records", s.URL, p), req, &resp)
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
		s.Kill(t, syscall.SIGKILL)
		stop.Store(true)
		wg.Wait()
		totalAcked += int(acks.Load())
		t.Logf("round %d: %d records acknowledged before SIGKILL", round, acks.Load())
		if acks.Load() == 0 {
			t.Fatalf("round %d acknowledged nothing:\n%s", round, s.LogText())
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
	if r := testenv.RunTierlog(t, nil, "segments", "verify", cold); r.Code != 0 || strings.Count(r.Stdout, "ok ") != artifacts {
		t.Fatalf("segments verify %s: exit %d, %d ok lines for %d artifacts\n%s%s", cold, r.Code, strings.Count(r.Stdout, "ok "), artifacts, r.Stdout, r.Stderr)
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
	if r := testenv.RunTierlog(t, nil, "segments", "verify", bad); r.Code != 1 || !strings.Contains(r.Stderr, "corrupt") {
		t.Fatalf("segments verify of a damaged artifact: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := testenv.RunTierlog(t, nil, "segments", "dump", "--format", "json", one); r.Code != 0 || !strings.Contains(r.Stdout, `"offset":`) {
		t.Fatalf("segments dump %s: exit %d\n%s", one, r.Code, r.Stderr)
	}
	t.Logf("%d kills, %d records acknowledged, %d segments in the cold tier, all verified", kills, totalAcked, artifacts)
}
