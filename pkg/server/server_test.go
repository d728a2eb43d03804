package server_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
)

// metric reads one unlabelled sample from a Prometheus text exposition.
func metric(t *testing.T, body, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in /metrics:\n%s", name, body)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// metricsText is the server's /metrics page.
func metricsText(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The local backend runs the compactor on rolls and exposes what every
// layer counted at /metrics.
func TestLocalServerMetricsAndCompaction(t *testing.T) {
	ctx := context.Background()
	s, err := server.Open(ctx, server.Config{DataDir: t.TempDir(), CompactInterval: time.Hour, CompactGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start()
	seg := int64(4096)
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "m", SegmentBytes: &seg}); err != nil {
		t.Fatal(err)
	}
	recs := batchOf(10, 200)
	for range 20 {
		if _, err := s.Broker.ProducePartition(ctx, "m", 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	scrape := func() string { return metricsText(t, ts) }
	// A roll kicks the compactor long before its hourly timer.
	testenv.Eventually(t, 10*time.Second, func() error {
		if metric(t, scrape(), "tierlog_segments_finalized_total") == 0 {
			return errors.New("no segment finalized after rolls")
		}
		return nil
	})
	body := scrape()
	if got := metric(t, body, "tierlog_flush_records_total"); got != 200 {
		t.Errorf("flush records %v, want 200", got)
	}
	if got := metric(t, body, "tierlog_flush_seconds_count"); got != 20 {
		t.Errorf("flush count %v, want 20", got)
	}
	// Reading from offset 0 now goes to the cold tier and counts GETs.
	f, err := s.Broker.Fetch(ctx, broker.FetchRequest{Topic: "m", Offset: 0, MaxRecords: 5})
	if err != nil || len(f.Records) != 5 {
		t.Fatalf("cold fetch: %v %d", err, len(f.Records))
	}
	if !regexp.MustCompile(`(?m)^tierlog_object_requests_total\{op="get"\} [1-9]`).MatchString(scrape()) {
		t.Errorf("no object GET counted after a cold fetch:\n%s", scrape())
	}
}
