package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/server"
)

// TestClientGoneIs499: a long-poll whose client goes away is counted under
// code 499 (client closed request), not 503, and logged at debug with that
// status, never at WARN.
func TestClientGoneIs499(t *testing.T) {
	var logged syncBuffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := newSSEServer(t, server.Config{StreamKeepAlive: 15 * time.Second, Logger: log}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)

	ctx, cancel := context.WithCancel(s.ctx())
	gone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/topics/t/partitions/0/records?offset=0&wait_ms=20000", nil)
		res, err := s.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		gone <- err
	}()
	waitForLongPolls(t, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("long-poll: %v, want the client's own cancel", err)
	}
	waitUntilNoneIn(t, "api.(*server).fetch(")

	const route = "/v1/topics/{topic}/partitions/{partition}/records"
	var codes map[int]uint64
	// The count lands as the handler's wrapper returns: wait for it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		codes = map[int]uint64{}
		s.s.Requests.Each(func(k metrics.HTTPKey, h *metrics.Histogram) {
			if k.Route == route && k.Method == "GET" {
				_, _, _, n := h.Snapshot()
				codes[k.Code] += n
			}
		})
		if len(codes) > 0 {
			break
		}
	}
	if codes[499] != 1 || codes[503] != 0 {
		t.Errorf("fetch requests by code: %v, want the one that went away under 499 and none under 503", codes)
	}
	l := logged.String()
	if strings.Contains(l, "level=WARN") || !strings.Contains(l, "status=499") || !strings.Contains(l, "code=client_closed_request") {
		t.Errorf("log of a client that went away:\n%s\nwant a debug line with status=499 code=client_closed_request, no WARN", l)
	}
}
