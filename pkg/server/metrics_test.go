package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/server"
)

// TestMetricsHTTPAndRuntime: /metrics has the Go, process and build
// collectors, and counts HTTP requests by route pattern (never the raw
// path: two topics are one series), method and status code, with a
// duration histogram.
func TestMetricsHTTPAndRuntime(t *testing.T) {
	s, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	do := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	scrape := func() string { return metricsText(t, ts) }
	scrape() // the first scrape finds the API's request counts
	do("POST", "/v1/topics", `{"name":"a"}`)
	do("POST", "/v1/topics", `{"name":"b"}`)
	do("GET", "/v1/topics/a", "")
	do("GET", "/v1/topics/b", "")
	do("HEAD", "/v1/topics/b", "")
	do("GET", "/v1/topics/nope", "")
	do("PUT", "/v1/topics/a", "")
	do("BREW", "/v1/topics/a", "")
	do("GET", "/no/such/route", "")
	body := scrape()
	for _, want := range []string{
		`tierlog_http_requests_total{code="201",method="POST",route="/v1/topics"} 2`,
		`tierlog_http_requests_total{code="200",method="GET",route="/v1/topics/{topic}"} 2`,
		`tierlog_http_requests_total{code="200",method="HEAD",route="/v1/topics/{topic}"} 1`,
		`tierlog_http_requests_total{code="404",method="GET",route="/v1/topics/{topic}"} 1`,
		`tierlog_http_requests_total{code="405",method="PUT",route="/v1/topics/{topic}"} 1`,
		`tierlog_http_requests_total{code="405",method="OTHER",route="/v1/topics/{topic}"} 1`,
		`tierlog_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`tierlog_http_requests_total{code="200",method="GET",route="/metrics"} 1`,
		`tierlog_http_request_duration_seconds_count{code="201",method="POST",route="/v1/topics"} 2`,
		`tierlog_http_request_duration_seconds_bucket{code="201",method="POST",route="/v1/topics",le="+Inf"} 2`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %s in /metrics", want)
		}
	}
	if strings.Contains(body, `route="/v1/topics/a"`) || strings.Contains(body, "/no/such/route") {
		t.Error("a raw path is a label value")
	}
	for _, re := range []string{`(?m)^go_goroutines \d+`, `(?m)^go_gc_duration_seconds_count \d+`, `(?m)^go_build_info\{`} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("no %s in /metrics", re)
		}
	}
	// The process collector reads /proc: Linux only.
	if runtime.GOOS == "linux" && !regexp.MustCompile(`(?m)^process_resident_memory_bytes \S+`).MatchString(body) {
		t.Error("no process_* series in /metrics")
	}
}

// Each partition this process has open is a pair of gauges (high
// watermark, log start) as it last saw them, and each group's lag as it
// last computed it: no I/O at scrape time.
func TestMetricsPartitionGauges(t *testing.T) {
	ctx := context.Background()
	s, err := server.Open(ctx, server.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Broker.ProducePartition(ctx, "g", 0, batchOf(7, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Broker.CommitGroupOffsets(ctx, "gg", []meta.GroupOffset{{Topic: "g", Partition: 0, Offset: 3}}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tierlog_group_lag{group="gg",partition="0",topic="g"} 4`,
		`tierlog_group_lag_keys_dropped_total 0`,
		`tierlog_partition_high_watermark{partition="0",topic="g"} 7`,
		`tierlog_partition_log_start_offset{partition="0",topic="g"} 0`,
		`tierlog_partition_series_dropped 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
