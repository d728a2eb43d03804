package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
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
	ctx := context.Background()
	br, uncached := benchBrokers(b)
	srv := httptest.NewServer(api.New(br))
	defer srv.Close()
	srvUncached := httptest.NewServer(api.New(uncached))
	defer srvUncached.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * wireClients, DisableCompression: true}}
	defer hc.CloseIdleConnections()

	const batch = 1000
	for _, size := range []int{100, 1024} {
		topic := fmt.Sprint("ratio-", size)
		parts := wireClients
		if _, err := br.CreateTopic(ctx, broker.TopicSpec{Name: topic, Partitions: &parts}); err != nil {
			b.Fatal(err)
		}
		value := bytes.Repeat([]byte{'v'}, size)
		body := produceBody("utf8", batch, string(value))
		raw := bytes.Repeat([]byte{'r'}, batch*(segment.RecordHeaderSize+size))
		name := func(w string) string { return fmt.Sprintf("value=%d/%s", size, w) }

		b.Run(name("produce-json-utf8-vs-raw-fsync"), func(b *testing.B) {
			dir := b.TempDir()
			files := make([]*os.File, wireClients)
			pos := make([]int64, wireClients)
			for c := range files {
				f, err := os.CreateTemp(dir, "raw-")
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				files[c] = f
			}
			interleaved(b, func(c int) error {
				if _, err := files[c].WriteAt(raw, pos[c]); err != nil {
					return err
				}
				pos[c] += int64(len(raw))
				return files[c].Sync()
			}, func(c int) error {
				url := fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records", srv.URL, topic, c)
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				return do(hc, req)
			})
		})

		// The fetch reads each partition's first answers in turn (at
		// most fetchWindow of them), as BenchmarkWireSpeed's do.
		fill := make([]broker.ProduceRecord, batch)
		for i := range fill {
			fill[i] = broker.ProduceRecord{Value: value, Partition: -1}
		}
		hw := make([]int64, wireClients)
		for p := range wireClients {
			for hw[p]*int64(size) < 4<<20 {
				if _, err := br.ProducePartition(ctx, topic, p, fill); err != nil {
					b.Fatal(err)
				}
				o, err := br.Offsets(ctx, topic, p)
				if err != nil {
					b.Fatal(err)
				}
				hw[p] = o.HighWatermark
			}
		}
		first, err := br.Fetch(ctx, broker.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		perFetch := int64(len(first.Records))
		window := min(fetchWindow, slices.Min(hw)/perFetch)
		if window < 1 {
			b.Fatalf("partitions hold %v records, less than one fetch (%d)", hw, perFetch)
		}
		fetchURL := func(c int, off int64) string {
			return fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records?offset=%d&max_records=%d&max_bytes=%d", srvUncached.URL, topic, c, off, broker.MaxFetchRecords, 1<<20)
		}
		answer, err := get(hc, fetchURL(0, 0), "")
		if err != nil {
			b.Fatal(err)
		}
		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			_, _ = w.Write(answer)
		}))
		offsets := make([]int64, wireClients)
		next := func(c int) int64 {
			o := offsets[c]
			offsets[c] = (offsets[c] + perFetch) % (window * perFetch)
			return o
		}
		b.Run(name("fetch-json-first-read-vs-plain"), func(b *testing.B) {
			interleaved(b, func(c int) error {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/?offset=%d", plain.URL, next(c)), nil)
				return do(hc, req)
			}, func(c int) error {
				req, _ := http.NewRequest("GET", fetchURL(c, next(c)), nil)
				return do(hc, req)
			})
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

// phase runs ratioOps ops of op from wireClients goroutines (client c,
// op's argument) and returns how long they took.
func phase(b *testing.B, op func(c int) error) time.Duration {
	var (
		n        atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	for c := range wireClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= ratioOps {
				if err := op(c); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return time.Since(start)
}
