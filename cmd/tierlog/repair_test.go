package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta/local"
)

// journalFrames returns the start of every frame of the journal at path.
func journalFrames(t *testing.T, b []byte) []int {
	t.Helper()
	var out []int
	for p := local.FileHeaderSize; p+local.FrameHeaderSize <= len(b); {
		out = append(out, p)
		p += local.FrameHeaderSize + int(binary.LittleEndian.Uint32(b[p:]))
	}
	return out
}

// TestRepairDamagedJournal damages one byte of the metadata journal of a
// stopped server, near its end (the second to last frame) and in its
// middle: serve then refuses to start and names `tierlog repair`; repair
// --dry-run reports what it would drop and changes nothing; repair without
// --yes changes nothing either; repair --yes cuts the journal and serve
// starts, answers, and takes writes again where the repaired state ends.
func TestRepairDamagedJournal(t *testing.T) {
	skipShort(t, "tierlog serve and tierlog repair")
	for _, where := range []string{"near the end", "in the middle"} {
		t.Run(where, func(t *testing.T) {
			dataDir := t.TempDir()
			s := startServer(t, dataDir)
			if code, err := doJSON("POST", s.url+"/v1/topics", map[string]any{"name": "orders", "partitions": 1}, nil); code != 201 {
				t.Fatalf("create: %d %v", code, err)
			}
			for i := range 8 {
				if code, err := doJSON("POST", s.url+"/v1/topics/orders/partitions/0/records", map[string]any{"records": []map[string]any{{"value": fmt.Sprint("v", i)}}}, nil); code != 200 {
					t.Fatalf("produce: %d %v", code, err)
				}
			}
			s.kill(t, syscall.SIGTERM)

			journals, _ := filepath.Glob(filepath.Join(dataDir, "meta", "journal-*.log"))
			if len(journals) == 0 {
				t.Fatal("no journal")
			}
			path := journals[len(journals)-1]
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			frames := journalFrames(t, b)
			victim := frames[len(frames)-2]
			if where == "in the middle" {
				victim = frames[len(frames)/2]
			}
			b[victim+local.FrameHeaderSize+2] ^= 0xff
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}

			out, err := exec.Command(tierlogBinary(t), "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "tierlog repair --data-dir "+dataDir) {
				t.Fatalf("serve on a damaged journal: %v\n%s", err, out)
			}
			out, err = exec.Command(tierlogBinary(t), "repair", "--data-dir", dataDir, "--dry-run").CombinedOutput()
			if err != nil || !strings.Contains(string(out), fmt.Sprintf("at byte %d", victim)) || !strings.Contains(string(out), "committed metadata changes are lost") {
				t.Fatalf("repair --dry-run: %v\n%s", err, out)
			}
			t.Logf("repair --dry-run:\n%s", out)
			for _, args := range [][]string{{"--dry-run"}, {}} {
				exec.Command(tierlogBinary(t), append([]string{"repair", "--data-dir", dataDir}, args...)...).Run()
				if after, _ := os.ReadFile(path); string(after) != string(b) {
					t.Fatalf("repair %v changed the journal", args)
				}
			}
			out, err = exec.Command(tierlogBinary(t), "repair", "--data-dir", dataDir, "--yes").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "repaired:") {
				t.Fatalf("repair --yes: %v\n%s", err, out)
			}
			s = startServer(t, dataDir)
			var o struct {
				HW int64 `json:"high_watermark"`
			}
			if code, err := doJSON("GET", s.url+"/v1/topics/orders/partitions/0/offsets", nil, &o); code != 200 || o.HW >= 8 {
				t.Fatalf("offsets after the repair: %d %v, hw %d (8 records were committed, some after the damage)", code, err, o.HW)
			}
			if code, err := doJSON("POST", s.url+"/v1/topics/orders/partitions/0/records", map[string]any{"records": []map[string]any{{"value": "after"}}}, nil); code != 200 {
				t.Fatalf("produce after the repair: %d %v", code, err)
			}
			t.Logf("high watermark after the repair: %d of 8", o.HW)
		})
	}
}
