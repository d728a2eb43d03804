package api_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/segment"
)

// BenchmarkOneRecordLatency: one client, one request in flight. Each
// iteration is one produce of one 100 B record (JSON over HTTP on
// 127.0.0.1, the embedded store, on this machine's disk), the same record
// through Broker.ProducePartition (no HTTP), the same request to a plain
// net/http handler that reads it and writes an answer of the produce's
// size (no store), and one raw write+fsync of the same bytes
// (RecordHeaderSize+100) to a file of its own, in an order that turns each
// iteration. It reports the p50 of each and p50-ratio, the produce's over
// the raw one's (docs/benchmarks.md, "One record, one request in flight").
func BenchmarkOneRecordLatency(b *testing.B) {
	ws := newWireSetup(b)
	ws.createTopic(b, "one")
	body := produceBody("utf8", 1, strings.Repeat("v", 100))
	produce := ws.produceOp("one", body, "application/json")
	raw := rawFsyncOp(b, segment.RecordHeaderSize+100)
	recs := []broker.ProduceRecord{{Value: []byte(strings.Repeat("v", 100)), Partition: -1}}
	engine := func(c int) error {
		_, err := ws.br.ProducePartition(context.Background(), "one", c, recs)
		return err
	}
	plain := plainServer(b, []byte(`{"offsets":[{"partition":0,"offset":123456,"timestamp":1764806400000}]}`+"\n"))
	plainHTTP := func(int) error {
		req, _ := http.NewRequest("POST", plain.URL+"/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return do(ws.hc, req)
	}
	ops := []func(c int) error{raw, produce, engine, plainHTTP}
	lat := [4][]time.Duration{}
	for i := 0; i < b.N; i++ {
		for k := range 4 {
			j := (k + i) % 4
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
	b.ReportMetric(float64(p50(lat[2]).Microseconds()), "engine-p50-µs")
	b.ReportMetric(float64(p50(lat[3]).Microseconds()), "plain-http-p50-µs")
	b.ReportMetric(float64(prodP50.Microseconds()), "produce-p50-µs")
	b.ReportMetric(float64(prodP50)/float64(rawP50), "p50-ratio")
	b.ReportMetric(0, "ns/op")
}
