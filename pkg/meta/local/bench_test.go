package local

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
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

// BenchmarkCommitConcurrent is Commit from many writers at once, each on
// its own partition, as a broker's producers commit: a commit that finds
// one in flight waits for it and then shares the next frame and fdatasync
// with every commit queued behind it (group commit). syncs/op is
// fdatasyncs per Commit.
func BenchmarkCommitConcurrent(b *testing.B) {
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openT(b, b.TempDir(), WithSnapshotBytes(1<<40)) // no rotation: it would replace the counting file
			var syncs atomic.Int64
			s.c.Lock()
			s.c.j = &countingFile{file: s.c.j, syncs: &syncs}
			s.c.Unlock()
			ctx := context.Background()
			parts := make([]meta.Partition, writers)
			for w := range parts {
				a, err := s.Acquire(ctx, pkey(w), "bench", t0, time.Hour)
				must(b, err)
				parts[w] = committed(a.Partition, 1, 16)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			b.ReportAllocs()
			b.ResetTimer()
			syncs.Store(0)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := parts[w]
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						p.NextOffset++
						if err := s.Commit(ctx, p, false, t0, time.Hour); err != nil {
							errs <- err
							return
						}
						p.Version++
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "syncs/op")
		})
	}
}

// countingFile counts a journal's syncs.
type countingFile struct {
	file
	syncs *atomic.Int64
}

func (f *countingFile) Sync() error {
	f.syncs.Add(1)
	return f.file.Sync()
}
