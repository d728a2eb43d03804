package api_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// BenchmarkOneRecordLatency: one client, one request in flight. Each
// iteration is one produce of one 100 B record (JSON over HTTP on
// 127.0.0.1, the embedded store, on this machine's disk) and one raw
// write+fsync of the same bytes (RecordHeaderSize+100) to a file of its
// own, the two in alternating order. It reports the p50 of each and
// p50-ratio, the produce's over the raw one's (docs/benchmarks.md, "One
// record, one request in flight").
func BenchmarkOneRecordLatency(b *testing.B) {
	ws := newWireSetup(b)
	ws.createTopic(b, "one")
	produce := ws.produceOp("one", produceBody("utf8", 1, strings.Repeat("v", 100)), "application/json")
	raw := rawFsyncOp(b, segment.RecordHeaderSize+100)
	ops := []func(c int) error{raw, produce}
	lat := [2][]time.Duration{}
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			j := (k + i) % 2
			start := time.Now()
			if err := ops[j](0); err != nil {
				b.Fatal(err)
			}
			lat[j] = append(lat[j], time.Since(start))
		}
	}
	p50 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	rawP50, prodP50 := p50(lat[0]), p50(lat[1])
	b.ReportMetric(float64(rawP50.Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(prodP50.Microseconds()), "produce-p50-µs")
	b.ReportMetric(float64(prodP50)/float64(rawP50), "p50-ratio")
	b.ReportMetric(0, "ns/op")
}
