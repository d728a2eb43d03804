package server_test

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/server"
)

// TestMetricsHotFSOps: the hot tier's file-system calls reach /metrics as
// tierlog_hot_fs_ops_total{op}, and a produce adds a write and a sync.
func TestMetricsHotFSOps(t *testing.T) {
	s, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	post := func(path, body string) {
		t.Helper()
		resp, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	scrape := func(op string) int64 {
		t.Helper()
		resp, err := ts.Client().Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^tierlog_hot_fs_ops_total\{op="` + op + `"\} (\d+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no tierlog_hot_fs_ops_total{op=%q} in:\n%s", op, b)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	post("/v1/topics", `{"name":"t","partitions":1}`)
	post("/v1/topics/t/partitions/0/records", `{"records":[{"value":"a"}]}`)
	w0, s0 := scrape("write"), scrape("sync")
	post("/v1/topics/t/partitions/0/records", `{"records":[{"value":"b"}]}`)
	if w, sy := scrape("write"), scrape("sync"); w <= w0 || sy <= s0 {
		t.Errorf("a produce: writes %d -> %d, syncs %d -> %d; want both to grow", w0, w, s0, sy)
	}
}
