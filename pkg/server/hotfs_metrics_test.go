package server_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/segment"
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
	post := func(path, body string) { t.Helper(); postOK(t, ts, path, body) }
	scrape := func(op string) int64 {
		t.Helper()
		return int64(metric(t, metricsText(t, ts), `tierlog_hot_fs_ops_total{op="`+op+`"}`))
	}
	post("/v1/topics", `{"name":"t","partitions":1}`)
	post("/v1/topics/t/partitions/0/records", `{"records":[{"value":"a"}]}`)
	w0, s0 := scrape("write"), scrape("sync")
	post("/v1/topics/t/partitions/0/records", `{"records":[{"value":"b"}]}`)
	if w, sy := scrape("write"), scrape("sync"); w <= w0 || sy <= s0 {
		t.Errorf("a produce: writes %d -> %d, syncs %d -> %d; want both to grow", w0, w, s0, sy)
	}
}

// TestMetricsHotFSLatency: with a latency profile the hot tier's round
// trips reach /metrics by class, with the latency charged; a produce (write,
// fsync, close) adds at least one durable round trip and its record bytes;
// without a profile there are no round-trip series.
func TestMetricsHotFSLatency(t *testing.T) {
	for _, profile := range []segment.LatencyProfile{{}, {Name: "tiny", Read: time.Microsecond, Durable: 2 * time.Microsecond}} {
		s, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1, HotFSLatency: profile})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		scrape := func() string { t.Helper(); return metricsText(t, ts) }
		value := func(text, series string) float64 { t.Helper(); return metric(t, text, series) }
		post := func(path, body string) { t.Helper(); postOK(t, ts, path, body) }
		post("/v1/topics", `{"name":"t","partitions":1}`)
		post("/v1/topics/t/partitions/0/records", `{"records":[{"value":"a"}]}`)
		before := scrape()
		post("/v1/topics/t/partitions/0/records", `{"records":[{"value":"0123456789"}]}`)
		after := scrape()
		if w0, w1 := value(before, `tierlog_hot_fs_bytes_total{direction="written"}`), value(after, `tierlog_hot_fs_bytes_total{direction="written"}`); w1-w0 < 10 {
			t.Errorf("%s: a produce of 10 bytes wrote %v bytes", profile, w1-w0)
		}
		if !profile.Charges() {
			if strings.Contains(after, "tierlog_hot_fs_round_trips_total") || strings.Contains(after, "tierlog_hot_fs_latency_seconds_total") {
				t.Errorf("round-trip series without a latency profile:\n%s", after)
			}
		} else {
			d0, d1 := value(before, `tierlog_hot_fs_round_trips_total{class="durable"}`), value(after, `tierlog_hot_fs_round_trips_total{class="durable"}`)
			r1 := value(after, `tierlog_hot_fs_round_trips_total{class="read"}`)
			if d1-d0 < 1 {
				t.Errorf("%s: a produce charged %v durable round trips, want >= 1", profile, d1-d0)
			}
			want := (r1*float64(profile.Read) + d1*float64(profile.Durable)) / float64(time.Second)
			if got := value(after, `tierlog_hot_fs_latency_seconds_total{kind="charged"}`); math.Abs(got-want) > 1e-9 {
				t.Errorf("%s: charged %v s, want %v s (%v read, %v durable round trips)", profile, got, want, r1, d1)
			}
			if got := value(after, `tierlog_hot_fs_latency_seconds_total{kind="taken"}`); got < want {
				t.Errorf("%s: the charged calls took %v s, less than the %v s charged", profile, got, want)
			}
		}
		ts.Close()
		s.Close()
	}
}

// TestMetricsAfterAnswer: with ReleaseEachBatch (Lambda mode) the work
// after a lone writer's answer runs on the server's goroutine and is timed
// in tierlog_after_answer_seconds_total; holding the lease, none runs after.
func TestMetricsAfterAnswer(t *testing.T) {
	for _, release := range []bool{true, false} {
		s, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1, ReleaseEachBatch: &release})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		after := func() float64 {
			t.Helper()
			return metric(t, metricsText(t, ts), "tierlog_after_answer_seconds_total")
		}
		produce := `{"records":[{"value":"a"}]}`
		// A writer alone parks its lease after a few rounds; from then on
		// its checkpoint follows its answers.
		postOK(t, ts, "/v1/topics", `{"name":"t","partitions":1}`)
		for range 5 {
			postOK(t, ts, "/v1/topics/t/partitions/0/records", produce)
		}
		if release {
			testenv.Eventually(t, 10*time.Second, func() error {
				if v := after(); v <= 0 {
					return fmt.Errorf("release each batch: tierlog_after_answer_seconds_total %v after a produce, want > 0", v)
				}
				return nil
			})
		} else if v := after(); v != 0 {
			t.Errorf("lease held: tierlog_after_answer_seconds_total %v, want 0 (nothing runs after the answer)", v)
		}
		ts.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// postOK posts body to path and fails the test unless it is answered 2xx.
func postOK(t *testing.T, ts *httptest.Server, path, body string) {
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
