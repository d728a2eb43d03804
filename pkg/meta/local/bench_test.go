package local

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// BenchmarkCommit is one Commit per op: one journal frame, one fdatasync.
// Sub-benchmarks vary the sealed list, which is what makes an entry grow.
func BenchmarkCommit(b *testing.B) {
	for _, sealed := range []int{0, 16, 256} {
		b.Run(fmt.Sprintf("sealed=%d", sealed), func(b *testing.B) {
			s := openT(b, b.TempDir())
			ctx := context.Background()
			a, err := s.Acquire(ctx, pkey(0), "bench", t0, time.Hour)
			must(b, err)
			p := committed(a.Partition, 1, sealed)
			payload, err := json.Marshal(&entry{Op: opPutPart, Part: &p})
			must(b, err)
			b.SetBytes(int64(FrameHeaderSize + len(payload)))
			b.ReportAllocs()
			n := int64(0)
			for b.Loop() {
				n++
				p.NextOffset = n
				if err := s.Commit(ctx, p, false, t0, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPartition is a read: no disk.
func BenchmarkPartition(b *testing.B) {
	s := openT(b, b.TempDir())
	ctx := context.Background()
	a, err := s.Acquire(ctx, pkey(0), "bench", t0, time.Hour)
	must(b, err)
	must(b, s.Commit(ctx, committed(a.Partition, 1, 16), false, t0, time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Partition(ctx, pkey(0)); err != nil {
			b.Fatal(err)
		}
	}
}

var _ meta.Store = (*Store)(nil)
