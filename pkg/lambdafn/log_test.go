package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	ids := &requestIDs{fallback: true}
	log := newLogger(&buf, slog.LevelInfo, "produce", ids)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "from-ctx"})

	log.InfoContext(ctx, "one", "k", 1)
	ids.set("current")
	log.Info("two") // no context: the invocation in flight
	log.InfoContext(ctx, "three")
	ids.clear()
	log.Info("four")
	log.Debug("hidden")
	log.With("a", "b").Warn("five")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []struct{ msg, id string }{{"one", "from-ctx"}, {"two", "current"}, {"three", "from-ctx"}, {"four", ""}, {"five", ""}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d not JSON: %q", i, line)
		}
		id, _ := m["requestId"].(string)
		if m["message"] != want[i].msg || id != want[i].id || m["function"] != "produce" || m["timestamp"] == nil || m["level"] == nil {
			t.Errorf("line %d: %v, want message %q requestId %q", i, m, want[i].msg, want[i].id)
		}
	}
	// With more than one invocation at a time, no fallback.
	buf.Reset()
	multi := &requestIDs{fallback: false}
	multi.set("current")
	newLogger(&buf, slog.LevelInfo, "fetch", multi).Info("x")
	if strings.Contains(buf.String(), "requestId") {
		t.Fatalf("fallback used with concurrency: %s", buf.String())
	}
}
