package lambdafn

import (
	"context"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
)

// TestHTTPNeverRedirects: the functions serve the server's handler, so
// literal "..", "." and "//" must be answered where they were sent, as on
// the local server, never with a 3xx (robustness.md 3.2). API Gateway's
// routes let some of these through (GET /v1/topics/.. matches {topic}).
func TestHTTPNeverRedirects(t *testing.T) {
	ctx := context.Background()
	s, err := server.Open(ctx, server.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "victim2"}); err != nil {
		t.Fatal(err)
	}
	produce := newAdapter("produce", WriteMethods, s.Handler())
	fetch := newAdapter("fetch", ReadMethods, s.Handler())
	for _, c := range []struct {
		write        bool
		method, path string
		body         string
		status       int
	}{
		{false, "GET", "/v1/topics/..", "", 400},
		{false, "GET", "/v1/topics/.", "", 400},
		{false, "HEAD", "/v1/topics/..", "", 400},
		{false, "GET", "/v1/topics/victim2/partitions/./offsets", "", 400},
		{false, "GET", "/v1/topics/../partitions/0/records?offset=0", "", 400},
		{false, "GET", "/v1/groups/../offsets?topic=victim2", "", 400},
		{false, "GET", "//v1/topics", "", 404},
		{false, "GET", "/v1/topics/victim2/partitions/0/records/..", "", 404},
		{false, "GET", "/metrics", "", 404},
		{true, "DELETE", "/v1/topics/..", "", 400},
		{true, "DELETE", "/v1/topics/victim2/partitions/..", "", 404},
		{true, "POST", "/v1/topics/victim2/partitions/../records", `{"records":[{"value":"x"}]}`, 400},
		{true, "POST", "/v1/topics/../records", `{"records":[{"value":"x"}]}`, 400},
		{true, "PUT", "/v1/groups/./offsets", `{"offsets":[{"topic":"victim2","partition":0,"offset":0}]}`, 400},
	} {
		a := fetch
		if c.write {
			a = produce
		}
		resp, err := a.ProxyWithContext(lambdaCtx(), event(c.method, c.path, c.body))
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		if resp.StatusCode != c.status || resp.Headers["Location"] != "" {
			t.Errorf("%s %s: %d (Location %q), want %d; body %s", c.method, c.path, resp.StatusCode, resp.Headers["Location"], c.status, resp.Body)
		}
	}
	if _, err := s.Broker.Topic(ctx, "victim2"); err != nil {
		t.Errorf("victim2: %v", err)
	}
}
