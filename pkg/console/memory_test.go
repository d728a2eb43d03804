package console

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHistoryMemory fills the history at its bounds (every sample with
// MaxRequestSeries request series and MaxLagSeries lags of long, distinct
// names) and measures the heap it holds. docs/console.md quotes the
// figures this logs.
func TestHistoryMemory(t *testing.T) {
	for _, tc := range []struct {
		name           string
		requests, lags int
		limit          int64
	}{
		{"typical", 20, 16, 1 << 20},
		{"bounds", MaxRequestSeries, MaxLagSeries, 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var t0 time.Time
			s := newSampler(Sources{}, func() time.Time { t0 = t0.Add(DefaultInterval); return t0 }, int(DefaultWindow/DefaultInterval))
			groups := make([]string, tc.lags)
			for i := range groups {
				groups[i] = fmt.Sprintf("group-%03d-%s", i, strings.Repeat("g", 100))
			}
			intern := map[string]string{} // as Sample keeps names
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 2 * s.size { // twice round the ring
				if err := s.Sample(context.Background()); err != nil {
					t.Fatal(err)
				}
				s.mu.Lock()
				smp := &s.mu.ring[(s.mu.next+len(s.mu.ring)-1)%len(s.mu.ring)]
				smp.Requests = make([]RequestCount, tc.requests)
				for i := range smp.Requests {
					smp.Requests[i] = RequestCount{Route: "/v1/topics/{topic}", Method: "GET", Code: 200 + i, Count: 1}
				}
				smp.Lags = make([]Lag, tc.lags)
				for i := range smp.Lags {
					// names as a sample reads them: fresh strings, interned
					g := strings.Clone(groups[i])
					if w, ok := intern[g]; ok {
						g = w
					} else {
						intern[g] = g
					}
					smp.Lags[i] = Lag{Group: g, Topic: g, Partition: i, Lag: int64(i)}
				}
				s.mu.Unlock()
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("%d samples, %d request series and %d lags each: %d KiB held", s.size, tc.requests, tc.lags, held>>10)
			if held > tc.limit {
				t.Errorf("history holds %d bytes, over %d", held, tc.limit)
			}
			runtime.KeepAlive(s)
		})
	}
}
