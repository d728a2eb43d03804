package broker

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// BenchmarkProducePartition is the direct-call baseline for the HTTP
// benchmarks: one batch per op through Broker.ProducePartition, fsync per
// batch, lease held (one in-memory metadata commit per batch).
func BenchmarkProducePartition(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("rec=%dB/batch=%d", size, n), func(b *testing.B) {
				ctx := context.Background()
				br, err := New(ctx, Config{DataDir: b.TempDir(), Meta: mem.New()})
				if err != nil {
					b.Fatal(err)
				}
				defer br.Close()
				br.CreateTopic(ctx, TopicSpec{Name: "bench", SegmentBytes: ptr(int64(64 << 20))})
				recs := make([]ProduceRecord, n)
				for i := range recs {
					recs[i] = ProduceRecord{Value: bytes.Repeat([]byte{'v'}, size)}
				}
				b.SetBytes(int64(n * size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := br.ProducePartition(ctx, "bench", 0, recs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkFetch reads a 32 MiB partition sequentially through
// Broker.Fetch in 1 MiB fetches.
func BenchmarkFetch(b *testing.B) {
	ctx := context.Background()
	br, err := New(ctx, Config{DataDir: b.TempDir(), Meta: mem.New()})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	br.CreateTopic(ctx, TopicSpec{Name: "bench"})
	recs := make([]ProduceRecord, 1000)
	for i := range recs {
		recs[i] = ProduceRecord{Value: bytes.Repeat([]byte{'v'}, 1024)}
	}
	for i := 0; i < 32; i++ {
		br.ProducePartition(ctx, "bench", 0, recs)
	}
	b.SetBytes(32 * 1000 * 1024)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := int64(0); off < 32000; {
			f, err := br.Fetch(ctx, FetchRequest{Topic: "bench", Offset: off, MaxRecords: MaxFetchRecords, MaxBytes: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			off = f.NextOffset
		}
	}
}
