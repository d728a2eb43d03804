package compactor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/tier"
)

// A key committed into a segment that was tiered and whose hot files were
// removed is still replayed (its batch file stays for the idempotency
// window), by a process that never saw it; after the window the batch files
// of gone segments are removed too.
func TestBatchKeysOutliveTieringForTheWindow(t *testing.T) {
	e := newEnv(t, broker.TopicSpec{})
	e.clock.ms.Store(time.Now().UnixMilli()) // files' mtimes are real
	var first broker.ProduceReply
	for i := range 40 {
		recs := []broker.ProduceRecord{{Value: []byte(fmt.Sprintf("keyed-%d-%s", i, strings.Repeat("x", 200)))}}
		r, err := e.b.ProducePartitionWith(e.ctx, e.topic.Name, 0, recs, broker.ProduceOptions{IdempotencyKey: fmt.Sprint("key-", i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r
		}
	}
	c := e.compactor(nil)
	dir := partition.Dir(e.dir, e.key())
	logs := func() (n int) {
		ms, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		return len(ms)
	}
	before := logs()
	if _, err := c.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(2 * time.Minute) // past the grace
	if _, err := c.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(e.ctx); err != nil { // a pass that finds the logs gone
		t.Fatal(err)
	}
	if after := logs(); after >= before || after > 2 {
		t.Fatalf("hot logs %d before tiering, %d after: the test needs the first segments gone", before, after)
	}
	if p, _ := e.store.Partition(e.ctx, e.key()); p.ColdEnd <= first.Results[0].Offset {
		t.Fatalf("cold end %d: the first batch is not tiered", p.ColdEnd)
	}
	// Another process: nothing cached.
	b2, err := broker.New(e.ctx, broker.Config{DataDir: e.dir, Meta: e.store, Objects: e.objects,
		Cache: tier.NewCache(1 << 20), Now: e.clock.now, Owner: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	recs := []broker.ProduceRecord{{Value: []byte(fmt.Sprintf("keyed-%d-%s", 0, strings.Repeat("x", 200)))}}
	again, err := b2.ProducePartitionWith(e.ctx, e.topic.Name, 0, recs, broker.ProduceOptions{IdempotencyKey: "key-0"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Results[0].Offset != first.Results[0].Offset {
		t.Fatalf("retry after tiering: %+v, want a replay at %d", again, first.Results[0].Offset)
	}
	batchFiles := func() (n int) {
		ms, _ := filepath.Glob(filepath.Join(dir, "*.batches"))
		return len(ms)
	}
	kept := batchFiles()
	// Past the window (and the grace): the batch files of gone segments go.
	e.clock.advance(partition.DefaultIdempotencyWindow + 2*time.Minute)
	if _, err := c.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	left := batchFiles()
	if left >= kept || left < logs() {
		t.Fatalf("batch files: %d before the window passed, %d after, %d logs", kept, left, logs())
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "*.batches"))
	for _, m := range ms {
		if _, err := os.Stat(strings.TrimSuffix(m, ".batches") + ".log"); err != nil {
			t.Fatalf("%s kept without its log past the window", filepath.Base(m))
		}
	}
}
