package server_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/server"
)

// TestBacklogReadOpensIndexesOnce: a reader catching up on a backlog of
// many segments in small fetches opens each fetch's .log file, and each
// segment's two index files once (they are kept), not per fetch: counted
// by the hot tier's file-system counters.
func TestBacklogReadOpensIndexesOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := server.Open(ctx, server.Config{DataDir: dir, CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const topic = "backlog"
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: topic, SegmentBytes: ref(int64(64 << 10))}); err != nil {
		t.Fatal(err)
	}
	recs := make([]broker.ProduceRecord, 50)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: make([]byte, 1000), Partition: 0}
	}
	for range 20 { // 50 KB a batch: a segment each
		if _, err := s.Broker.ProducePartition(ctx, topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	o, err := s.Broker.Offsets(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	opens := s.HotFS.Calls(segment.FSOpen)
	fetches := int64(0)
	for off := int64(0); off < o.HighWatermark; fetches++ {
		f, err := s.Broker.Fetch(ctx, broker.FetchRequest{Topic: topic, Offset: off, MaxRecords: broker.MaxFetchRecords, MaxBytes: 8 << 10})
		if err != nil || len(f.Records) == 0 {
			t.Fatalf("fetch at %d: %d records, %v", off, len(f.Records), err)
		}
		off = f.NextOffset
	}
	logs, err := filepath.Glob(filepath.Join(dir, "topics", "*", "0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	segs := int64(len(logs))
	opens = s.HotFS.Calls(segment.FSOpen) - opens
	t.Logf("%d fetches over %d segments opened %d files", fetches, segs, opens)
	// A .log per fetch, a second for a fetch that crosses into the next
	// segment, and the two index files of each segment once.
	if max := fetches + segs + 2*segs; segs < 8 || opens > max {
		t.Errorf("%d fetches over %d segments opened %d files; want at most %d", fetches, segs, opens, max)
	}
}

func ref[T any](v T) *T { return &v }
