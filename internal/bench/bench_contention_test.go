package bench

import (
	"github.com/tierlog/tierlog/internal/testenv"

	"context"
	"strings"
	"testing"
	"time"
)

// TestBenchContentionCounts runs `tierlog bench contention` for one and two
// writers without delay and checks its bookkeeping, not its speed: every
// request sent is counted once as 200, 503 or other; DynamoDB writes and
// hot-tier file-system operations were counted; the proxy's count of each
// DynamoDB operation equals the servers' own; the S3 stub saw nothing.
func TestBenchContentionCounts(t *testing.T) {
	testenv.SkipShort(t, "dynalite and tierlog serve processes")
	if _, err := dynaliteDir(""); err != nil {
		t.Fatal(err) // CI runs make test-deps: a missing dynalite is a failure
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cells, err := runContention(ctx, ContentionOpts{
		Writers: []int{1, 2}, Delays: []time.Duration{0}, Duration: time.Second,
		Records: 3, RecordBytes: 20, ServerBin: testenv.TierlogBinary(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	for _, c := range cells {
		t.Logf("%d writers: sent %d, ok %d, 503 %d, other %d; DynamoDB %v (servers %v); FS %v",
			c.Writers, c.Sent, c.OK, c.Unavailable, c.Other, c.DDBByOp, c.ServerDDB, c.FSByOp)
		if c.Sent == 0 || c.OK == 0 {
			t.Errorf("%d writers: %d sent, %d ok; want some of each", c.Writers, c.Sent, c.OK)
		}
		if c.OK+c.Unavailable+c.Other != c.Sent {
			t.Errorf("%d writers: ok %d + 503 %d + other %d != sent %d", c.Writers, c.OK, c.Unavailable, c.Other, c.Sent)
		}
		if c.DDBWrites == 0 || c.DDBWritesFailed > c.DDBWrites {
			t.Errorf("%d writers: %d DynamoDB writes, %d failed", c.Writers, c.DDBWrites, c.DDBWritesFailed)
		}
		var writes, reads, other int64
		for op, v := range c.DDBByOp {
			switch {
			case ddbWriteOps[op]:
				writes += v
			case ddbReadOps[op]:
				reads += v
			default:
				other += v
			}
			if got := c.ServerDDB[strings.ToLower(op)]; got != v {
				t.Errorf("%d writers: %s: the proxy counted %d, the servers %d", c.Writers, op, v, got)
			}
		}
		if writes != c.DDBWrites || reads != c.DDBReads || other != c.DDBOther {
			t.Errorf("%d writers: by op %d/%d/%d, totals %d/%d/%d", c.Writers, writes, reads, other, c.DDBWrites, c.DDBReads, c.DDBOther)
		}
		var fs int64
		for _, v := range c.FSByOp {
			fs += v
		}
		if fs != c.FSOps || c.FSByOp["write"] == 0 || c.FSByOp["sync"] == 0 {
			t.Errorf("%d writers: FS ops %d (by op %v); want writes and syncs", c.Writers, c.FSOps, c.FSByOp)
		}
		if c.S3Calls != 0 {
			t.Errorf("%d writers: %d S3 requests, want none", c.Writers, c.S3Calls)
		}
		if c.Elapsed < time.Second {
			t.Errorf("%d writers: elapsed %v, shorter than the cell", c.Writers, c.Elapsed)
		}
	}
	for _, render := range []func([]*contentionCell) string{renderContentionText, renderContentionMarkdown} {
		if out := render(cells); !strings.Contains(out, "ok req/s") || strings.Count(out, "\n") < 4 {
			t.Errorf("rendered table:\n%s", out)
		}
	}
}
