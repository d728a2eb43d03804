package systest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
)

// startServer runs `tierlog serve` on dataDir, compacting every 300 ms
// with a grace of 1 s.
func startServer(t *testing.T, dataDir string) *testenv.Tierlog {
	t.Helper()
	return testenv.StartTierlog(t, nil, "--data-dir", dataDir, "--compact-interval", "300ms", "--compact-grace", "1s")
}

// buildLite builds the S3+DynamoDB emulator, used here as the S3 endpoint
// (gofakes3 in a helper process).
func buildLite(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "lite")
	cmd := exec.Command("go", "build", "-o", bin, ".") // localstack/lite is a module of its own
	cmd.Dir = filepath.Join(root, "localstack", "lite")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in localstack/lite: %v\n%s", err, out)
	}
	return bin
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
			code, err := testenv.DoJSON("GET", fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records?offset=%d&max_records=10000&max_bytes=4194304", url, topic, p, off), nil, &f)
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
