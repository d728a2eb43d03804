package partition

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A long-lived writer's idempotency window holds state for the segments
// that can still hold live keys, not for every segment it ever saw, and
// still answers a retry of a key inside the window from the first commit.
func TestWindowStateBoundedBySpan(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := e.openWith("lambda", false, func(c *Config) { c.SegmentBytes = 256 })
	const n = 300
	first := map[string]Appended{}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("req-%d", i)
		app, err := l.AppendBatch(ctx, Batch{Records: batch("k", 2), Key: key, Expected: -1})
		if err != nil {
			t.Fatal(err)
		}
		first[key] = app
		e.clock.advance(time.Minute) // keys expire after 2 x 10 minutes
	}
	l.win.mu.Lock()
	keys, files := len(l.win.keys), len(l.win.files)
	l.win.mu.Unlock()
	t.Logf("after %d keyed batches over %d minutes: %d keys remembered, %d segment states kept", n, n, keys, files)
	if files > 4*keys+8 {
		t.Errorf("the window keeps %d segment states for %d live keys: states of segments past the window are never dropped", files, keys)
	}
	// A retry of a key committed 5 minutes ago is a replay, from a Log
	// that must read the window afresh (another container).
	other := e.openWith("other", false, func(c *Config) { c.SegmentBytes = 256 })
	key := fmt.Sprintf("req-%d", n-5)
	app, err := other.AppendBatch(ctx, Batch{Records: batch("k", 2), Key: key, Expected: -1})
	if err != nil || app.BaseOffset != first[key].BaseOffset {
		t.Fatalf("retry of %s: %+v %v, want offset %d", key, app, err, first[key].BaseOffset)
	}
	app, err = l.AppendBatch(ctx, Batch{Records: batch("k", 2), Key: key, Expected: -1})
	if err != nil || app.BaseOffset != first[key].BaseOffset {
		t.Fatalf("retry of %s on the first writer: %+v %v, want offset %d", key, app, err, first[key].BaseOffset)
	}
}
