package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/wire"
)

// wireClients is how many clients each wire-speed workload runs, each on
// its own partition (and, for the raw baseline, its own file).
const wireClients = 4

// fetchWindow is how many answers of each partition the fetch workloads
// read in turn: after the first turns the server answers them with the
// answers it kept, as it answers fan-out readers; the -first-read rows
// ask a broker that keeps none.
const fetchWindow = 4

// BenchmarkWireSpeed runs each HTTP workload beside the baseline it is
// judged against, in the same process and run (docs/benchmarks.md, "JSON
// at wire speed"), for 100 B and 1 KiB records in batches of 1000:
//
//	raw-fsync          one write+fsync of the batch's bytes on disk (RecordHeaderSize+size per record)
//	engine-produce     Broker.ProducePartition in process: the same batch, no HTTP
//	produce-json-utf8  POST of a pre-encoded JSON batch, utf8 values
//	produce-json-b64   the same with "encoding":"base64" (what pkg/client sends)
//	produce-binary     the same batch in the binary media type
//	plain-http-json    a plain net/http handler writing a pre-encoded JSON fetch answer of the same shape
//	fetch-json         GET of 1 MiB (or 10,000 records) from the server, JSON, asked again (kept answers)
//	fetch-json-first-read    the same from a broker that keeps no answers: each read and encoded
//	fetch-binary       the fetch in the binary media type, asked again
//	fetch-binary-first-read  the same from the broker that keeps none
//	engine-fetch       Broker.Fetch in process: the same read, no HTTP
//
// MB/s are of record values. Clients read answers to the end and throw
// them away; they do not decode them (that is the client's cost, not the
// server's).
func BenchmarkWireSpeed(b *testing.B) {
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
		topic := fmt.Sprint("wire-", size)
		parts := wireClients
		if _, err := br.CreateTopic(ctx, broker.TopicSpec{Name: topic, Partitions: &parts}); err != nil {
			b.Fatal(err)
		}
		value := bytes.Repeat([]byte{'v'}, size)
		bodies := map[string][]byte{
			"utf8": produceBody("utf8", batch, string(value)),
			"b64":  produceBody("base64", batch, base64.StdEncoding.EncodeToString(value)),
		}
		var err error
		if bodies["binary"], err = wire.AppendProduceRequest(nil, batch, func(int) wire.Record {
			return wire.Record{Value: value, Partition: -1}
		}); err != nil {
			b.Fatal(err)
		}
		name := func(w string) string { return fmt.Sprintf("value=%d/%s", size, w) }

		b.Run(name("raw-fsync"), func(b *testing.B) { rawFsync(b, b.TempDir(), batch*(segment.RecordHeaderSize+size), batch*size) })
		b.Run(name("engine-produce"), func(b *testing.B) {
			recs := make([]broker.ProduceRecord, batch)
			for i := range recs {
				recs[i] = broker.ProduceRecord{Value: value, Partition: -1}
			}
			b.SetBytes(int64(batch * size))
			runClients(b, func(c int) error {
				_, err := br.ProducePartition(ctx, topic, c, recs)
				return err
			})
		})
		for _, p := range []struct{ name, body, ct string }{
			{"produce-json-utf8", "utf8", "application/json"},
			{"produce-json-b64", "b64", "application/json"},
			{"produce-binary", "binary", wire.MediaType},
		} {
			b.Run(name(p.name), func(b *testing.B) {
				b.SetBytes(int64(batch * size))
				runClients(b, func(c int) error {
					url := fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records", srv.URL, topic, c)
					req, _ := http.NewRequest("POST", url, bytes.NewReader(bodies[p.body]))
					req.Header.Set("Content-Type", p.ct)
					return do(hc, req)
				})
			})
		}

		// Fetch the first fetchWindow answers of each partition (at
		// least 4 MiB of records), one answer's worth at a time, in turn.
		fill := make([]broker.ProduceRecord, batch)
		for i := range fill {
			fill[i] = broker.ProduceRecord{Value: value, Partition: -1}
		}
		for p := range wireClients {
			for {
				o, err := br.Offsets(ctx, topic, p)
				if err != nil {
					b.Fatal(err)
				}
				if o.HighWatermark*int64(size) >= 4<<20 {
					break
				}
				if _, err := br.ProducePartition(ctx, topic, p, fill); err != nil {
					b.Fatal(err)
				}
			}
		}
		first, err := br.Fetch(ctx, broker.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		perFetch := int64(len(first.Records))
		hws := make([]int64, wireClients)
		for p := range hws {
			o, err := br.Offsets(ctx, topic, p)
			if err != nil {
				b.Fatal(err)
			}
			hws[p] = min(o.HighWatermark-o.HighWatermark%perFetch, fetchWindow*perFetch)
			if hws[p] < perFetch {
				b.Fatalf("partition %d has %d records, less than one fetch (%d)", p, o.HighWatermark, perFetch)
			}
		}
		fetchBytes := perFetch * int64(size)
		offsets := make([]int64, wireClients)
		nextOffset := func(c int) int64 {
			o := offsets[c]
			if offsets[c] += perFetch; offsets[c] >= hws[c] {
				offsets[c] = 0
			}
			return o
		}
		fetchURLOf := func(base string) func(c int, off int64) string {
			return func(c int, off int64) string {
				return fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records?offset=%d&max_records=%d&max_bytes=%d", base, topic, c, off, broker.MaxFetchRecords, 1<<20)
			}
		}
		fetchURL, firstReadURL := fetchURLOf(srv.URL), fetchURLOf(srvUncached.URL)
		answer, err := get(hc, fetchURL(0, 0), "")
		if err != nil {
			b.Fatal(err)
		}
		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			_, _ = w.Write(answer)
		}))
		b.Run(name("plain-http-json"), func(b *testing.B) {
			b.SetBytes(fetchBytes)
			runClients(b, func(c int) error {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/?offset=%d", plain.URL, nextOffset(c)), nil)
				return do(hc, req)
			})
		})
		plain.Close()
		for _, f := range []struct {
			name   string
			url    func(int, int64) string
			accept string
		}{
			{"fetch-json", fetchURL, ""},
			{"fetch-json-first-read", firstReadURL, ""},
			{"fetch-binary", fetchURL, wire.MediaType},
			{"fetch-binary-first-read", firstReadURL, wire.MediaType},
		} {
			b.Run(name(f.name), func(b *testing.B) {
				b.SetBytes(fetchBytes)
				runClients(b, func(c int) error {
					req, _ := http.NewRequest("GET", f.url(c, nextOffset(c)), nil)
					if f.accept != "" {
						req.Header.Set("Accept", f.accept)
					}
					return do(hc, req)
				})
			})
		}
		b.Run(name("engine-fetch"), func(b *testing.B) {
			b.SetBytes(fetchBytes)
			runClients(b, func(c int) error {
				res, err := br.Fetch(ctx, broker.FetchRequest{Topic: topic, Partition: c, Offset: nextOffset(c), MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
				if err == nil && int64(len(res.Records)) != perFetch {
					err = fmt.Errorf("fetched %d records, want %d", len(res.Records), perFetch)
				}
				return err
			})
		})
	}
}

// produceBody is a produce body of n records, each with the JSON string
// body v as its value.
func produceBody(enc string, n int, v string) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"encoding":%q,"records":[`, enc)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"value":"%s"}`, v)
	}
	buf.WriteString("]}")
	return buf.Bytes()
}

// runClients runs op from wireClients goroutines (client c, op's
// argument) until b.N ops are done.
func runClients(b *testing.B, op func(c int) error) {
	b.ReportAllocs()
	var (
		n        atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	b.ResetTimer()
	for c := range wireClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= int64(b.N) {
				if err := op(c); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

// rawFsync is the raw disk baseline of tierlog bench: each client appends
// n bytes to its own file with one write and one fsync per op.
func rawFsync(b *testing.B, dir string, n, valueBytes int) {
	buf := bytes.Repeat([]byte{'r'}, n)
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
	b.SetBytes(int64(valueBytes))
	runClients(b, func(c int) error {
		if _, err := files[c].WriteAt(buf, pos[c]); err != nil {
			return err
		}
		pos[c] += int64(n)
		return files[c].Sync()
	})
}

func do(hc *http.Client, req *http.Request) error {
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", req.Method, req.URL, res.Status)
	}
	return nil
}

func get(hc *http.Client, url, accept string) ([]byte, error) {
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return body, err
}
