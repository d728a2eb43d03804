package systest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	objs3 "github.com/tierlog/tierlog/pkg/objstore/s3"
)

// TestTorture runs three `tierlog serve --backend aws` processes sharing one
// hot dir, one dynalite and one S3 endpoint, like Lambda containers share
// EFS, DynamoDB and S3. Producers write to all three while servers are
// killed with SIGKILL and paused with SIGSTOP past their lease (zombies),
// and small segments keep the compactor tiering. Then every partition is
// read from offset 0 through both tiers, from every server, and I1-I6 are
// checked.
func TestTorture(t *testing.T) {
	testenv.SkipShort(t, "dynalite, an S3 endpoint and tierlog serve processes")
	const (
		servers    = 3
		partitions = 2
		producers  = 8
		chaosFor   = 15 * time.Second
	)
	ddb, err := testenv.StartDynalite()
	if err != nil {
		t.Fatal(err)
	}
	defer ddb.Stop()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dynalite at %s, %s; output:\n%s", ddb.Endpoint, ddb.State(), ddb.Output())
		}
	})
	lite := buildLite(t)
	s3p, err := testenv.StartListening(lite, func(port int) []string {
		return []string{"--listen", fmt.Sprintf("127.0.0.1:%d", port)}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s3p.Stop()
	hot := t.TempDir()
	env := []string{
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddb.Endpoint,
		"AWS_ENDPOINT_URL_S3=" + s3p.Endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
	}
	args := []string{"--backend", "aws", "--create-resources", "--hot-dir", hot, "--table", "torture", "--bucket", "torture",
		"--lease-ttl", "1s", "--compact-interval", "250ms", "--compact-grace", "1s"}

	procs := make([]atomic.Pointer[testenv.Tierlog], servers)
	for i := range procs {
		procs[i].Store(testenv.StartTierlog(t, env, args...))
	}
	code, err := testenv.DoJSON("POST", procs[0].Load().URL+"/v1/topics",
		map[string]any{"name": "torture", "partitions": partitions, "segment_bytes": 8 << 10}, nil)
	if err != nil || code != 201 {
		t.Fatalf("create topic: %d %v", code, err)
	}

	l := &ledger{sent: map[string]bool{}, acked: map[int]map[int64]string{}, seen: map[int]map[int64]string{}}
	for p := 0; p < partitions; p++ {
		l.acked[p], l.seen[p] = map[int64]string{}, map[int64]string{}
	}
	short := &http.Client{Timeout: 4 * time.Second}
	var stop atomic.Bool
	var acks, attempts atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < producers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for seq := 0; !stop.Load(); seq++ {
				p := rng.IntN(partitions)
				n := 1 + rng.IntN(12)
				var recs []produceRec
				for i := 0; i < n; i++ {
					recs = append(recs, produceRec{Value: fmt.Sprintf("c%d-s%d-i%d-%s", c, seq, i, strings.Repeat("z", rng.IntN(300)))})
				}
				l.mu.Lock()
				for _, r := range recs {
					l.sent[r.Value] = true
				}
				l.mu.Unlock()
				attempts.Add(1)
				srv := procs[rng.IntN(servers)].Load()
				body, _ := json.Marshal(produceReq{Records: recs})
				resp, err := short.Post(fmt.Sprintf("%s/v1/topics/torture/partitions/%d/records", srv.URL, p), "application/json", bytes.NewReader(body))
				if err != nil {
					time.Sleep(20 * time.Millisecond) // retry backoff: killed, paused or restarting, outcome unknown
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					if resp.StatusCode != 503 {
						t.Errorf("produce: %d %s", resp.StatusCode, b)
						return
					}
					time.Sleep(10 * time.Millisecond) // retry backoff, as a client's: a restarting server answers 503
					continue
				}
				var pr produceResp
				if err := json.Unmarshal(b, &pr); err != nil || len(pr.Offsets) != n {
					t.Errorf("produce answer %s: %v", b, err)
					return
				}
				l.mu.Lock()
				for i, o := range pr.Offsets {
					if prev, dup := l.acked[p][o.Offset]; dup {
						t.Errorf("I1/I4: offset %d of partition %d acknowledged twice (%q, %q)", o.Offset, p, prev, recs[i].Value)
					}
					l.acked[p][o.Offset] = recs[i].Value
				}
				l.mu.Unlock()
				acks.Add(int64(n))
			}
		}()
	}

	// Chaos: kill or pause a random server every few hundred milliseconds.
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	var kills, pauses int
	deadline := time.Now().Add(chaosFor)
	for time.Now().Before(deadline) {
		// The chaos's timing is the behaviour under test: a kill or pause
		// lands at a random point of the load, and a killed server stays
		// down, a paused one asleep past its lease, for a random time.
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		i := rng.IntN(servers)
		s := procs[i].Load()
		if rng.IntN(2) == 0 {
			s.Kill(t, syscall.SIGKILL)
			kills++
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
			procs[i].Store(testenv.StartTierlog(t, env, args...))
		} else {
			// Paused past its 1s lease: it wakes up as a zombie.
			s.Cmd.Process.Signal(syscall.SIGSTOP)
			pauses++
			time.Sleep(time.Duration(1200+rng.IntN(1500)) * time.Millisecond)
			s.Cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	stop.Store(true)
	wg.Wait()
	if acks.Load() == 0 {
		t.Fatal("nothing acknowledged")
	}

	for i := range procs {
		verify(t, procs[i].Load().URL, "torture", partitions, l)
	}
	// The compactors, tiering in the background (no event to wait on),
	// finalized segments: their counters say so.
	var artifacts, conflicts int
	testenv.Eventually(t, 30*time.Second, func() error {
		artifacts, conflicts = 0, 0
		for i := range procs {
			resp, err := http.Get(procs[i].Load().URL + "/metrics")
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(b), "\n") {
				var n int
				if _, err := fmt.Sscanf(line, "tierlog_segments_finalized_total %d", &n); err == nil {
					artifacts += n
				}
				if _, err := fmt.Sscanf(line, "tierlog_lease_conflicts_total %d", &n); err == nil {
					conflicts += n
				}
			}
		}
		if artifacts == 0 {
			return errors.New("the compactors finalized no segment")
		}
		return nil
	})
	// The CLI verifies the artifacts in the bucket through the S3 API.
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	s3c, err := objs3.NewClientFromEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := objs3.New(s3c, "torture", "")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := bucket.List(context.Background(), "")
	if err != nil || len(objs) == 0 {
		t.Fatalf("list the bucket: %d objects, %v", len(objs), err)
	}
	verifyArgs := []string{"segments", "verify"}
	for _, o := range objs[:min(len(objs), 5)] {
		verifyArgs = append(verifyArgs, "s3://torture/"+o.Key)
	}
	verifyCmd := exec.Command(testenv.TierlogBinary(t), verifyArgs...)
	verifyCmd.Env = append(os.Environ(), env...)
	if out, err := verifyCmd.CombinedOutput(); err != nil || strings.Count(string(out), "ok ") != len(verifyArgs)-2 {
		t.Fatalf("tierlog %v: %v\n%s", verifyArgs, err, out)
	}

	var hw int
	for p := 0; p < partitions; p++ {
		hw += len(l.seen[p])
	}
	t.Logf("torture: %d produce attempts, %d records acknowledged, %d records stored, %d SIGKILLs, %d SIGSTOP pauses; the surviving processes finalized %d segments and saw %d lease conflicts (busy or fenced); dynalite survived %d dropped requests; 0 violations",
		attempts.Load(), acks.Load(), hw, kills, pauses, artifacts, conflicts, strings.Count(ddb.Output(), "[survive-aborts]"))
}
