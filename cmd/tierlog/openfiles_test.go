package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestOpenFilesBounded runs a server under a small descriptor limit and
// writes to many more one-partition topics than the limit would allow
// writers for (each keeps four files open while it holds its lease): every
// create, produce and fetch must be answered 200, and a partition written
// again after its writer was released continues where it was.
//
// TIERLOG_OPENFILES_PARTITIONS and TIERLOG_OPENFILES_NOFILE change the size
// (400 topics under 128 descriptors by default; 10000 under 1024 is the
// measured run of docs/benchmarks.md).
func TestOpenFilesBounded(t *testing.T) {
	skipShort(t, "tierlog serve under sh's ulimit")
	n, nofile := envOr("TIERLOG_OPENFILES_PARTITIONS", 400), envOr("TIERLOG_OPENFILES_NOFILE", 128)
	cmd := exec.Command("sh", "-c", `ulimit -n "$1" && exec "$0" serve --listen 127.0.0.1:0 --data-dir "$2"`,
		tierlogBinary(t), strconv.Itoa(nofile), t.TempDir())
	s := startServerCmd(t, cmd)
	start := time.Now()
	codes := map[string]map[int]int{"create": {}, "produce": {}, "fetch": {}}
	peak := 0
	record := func(what string, code int, err error) {
		if err != nil {
			code = -1
		}
		codes[what][code]++
		if code != http.StatusOK && code != http.StatusCreated && codes[what][code] <= 3 {
			t.Errorf("%s: %d %v", what, code, err)
		}
	}
	produce := func(i int) (int64, int, error) {
		var out struct {
			Offsets []struct {
				Offset int64 `json:"offset"`
			} `json:"offsets"`
		}
		code, err := doJSON("POST", fmt.Sprintf("%s/v1/topics/t%05d/partitions/0/records", s.url, i),
			map[string]any{"records": []map[string]any{{"value": fmt.Sprint("v", i)}}}, &out)
		if err != nil || len(out.Offsets) != 1 {
			return -1, code, err
		}
		return out.Offsets[0].Offset, code, nil
	}
	for i := range n {
		code, err := doJSON("POST", s.url+"/v1/topics", map[string]any{"name": fmt.Sprintf("t%05d", i), "partitions": 1}, nil)
		record("create", code, err)
		_, code, err = produce(i)
		record("produce", code, err)
		code, err = doJSON("GET", fmt.Sprintf("%s/v1/topics/t%05d/partitions/0/records?offset=0", s.url, i), nil, nil)
		record("fetch", code, err)
		if i%50 == 0 {
			peak = max(peak, openFDs(t, s.cmd.Process.Pid))
		}
	}
	for i := range min(n, 20) { // released long ago: acquired again, continued
		off, code, err := produce(i)
		record("produce", code, err)
		if err == nil && off != 1 {
			t.Errorf("topic t%05d written again at offset %d, want 1", i, off)
		}
	}
	peak = max(peak, openFDs(t, s.cmd.Process.Pid))
	t.Logf("%d one-partition topics under a limit of %d descriptors: %v; peak open descriptors %d; %v",
		n, nofile, codes, peak, time.Since(start).Round(time.Millisecond))
}

func envOr(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// openFDs counts the descriptors process pid has open.
func openFDs(t *testing.T, pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("open descriptors of %d: %v", pid, err)
	}
	return len(ents)
}
