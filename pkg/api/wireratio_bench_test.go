package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// ratioOps is how many ops the wireClients clients do together in one
// phase of BenchmarkWireRatio.
const ratioOps = 64

// BenchmarkWireRatio measures the two workloads of BenchmarkWireSpeed
// whose goals its rows judge least steadily, each against its baseline,
// in alternating phases of ratioOps ops each: one round of both per b.N,
// the order swapped every round (100 B and 1 KiB records, batches of
// 1000, wireClients clients on their own partitions):
//
//	produce-json-utf8-vs-raw-fsync     JSON produce against raw write+fsync of the batch's bytes
//	fetch-json-first-read-vs-plain     JSON fetch from a broker that keeps no answers against
//	                                   the plain handler writing a pre-encoded answer of the same shape
//
// BenchmarkWireSpeed runs each workload for the whole benchtime, one
// after the other, so a disk or a loopback that slows down or speeds up
// between two rows moves their ratio; here both see the same machine
// within a fraction of a second. It reports the median, lowest and
// highest ratio of a round (baseline time over workload time: the
// workload's MB/s over the baseline's) and the ratio of all rounds' time.
func BenchmarkWireRatio(b *testing.B) {
	ws := newWireSetup(b)
	const batch = 1000
	for _, size := range []int{100, 1024} {
		topic := fmt.Sprint("ratio-", size)
		ws.createTopic(b, topic)
		value := bytes.Repeat([]byte{'v'}, size)
		name := func(w string) string { return fmt.Sprintf("value=%d/%s", size, w) }
		b.Run(name("produce-json-utf8-vs-raw-fsync"), func(b *testing.B) {
			interleaved(b, rawFsyncOp(b, batch*(segment.RecordHeaderSize+size)),
				ws.produceOp(topic, produceBody("utf8", batch, string(value)), "application/json"))
		})
		fw := ws.fill(b, topic, value)
		plain := plainServer(b, ws.answer(b, fw.url(ws.firstReadURL, 0, 0)))
		b.Run(name("fetch-json-first-read-vs-plain"), func(b *testing.B) {
			interleaved(b, func(c int) error {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/?offset=%d", plain.URL, fw.next(c)), nil)
				return do(ws.hc, req)
			}, ws.fetchOp(fw, ws.firstReadURL, ""))
		})
		plain.Close()
	}
}

// interleaved runs a round of a phase of base and a phase of op per b.N
// (base first in even rounds) and reports their ratios.
func interleaved(b *testing.B, base, op func(c int) error) {
	var ratios []float64
	var baseTotal, opTotal time.Duration
	b.ResetTimer()
	for i := range b.N {
		var tb, to time.Duration
		if i%2 == 0 {
			tb, to = phase(b, base), phase(b, op)
		} else {
			to, tb = phase(b, op), phase(b, base)
		}
		ratios = append(ratios, tb.Seconds()/to.Seconds())
		baseTotal += tb
		opTotal += to
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(ratios[0], "min-ratio")
	b.ReportMetric(ratios[len(ratios)-1], "max-ratio")
	b.ReportMetric(baseTotal.Seconds()/opTotal.Seconds(), "ratio")
}

// phase runs ratioOps ops of op and returns how long they took.
func phase(b *testing.B, op func(c int) error) time.Duration {
	start := time.Now()
	if err := runOps(ratioOps, op); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
