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
	ws := newWireSetup(b)
	const batch = 1000
	for _, size := range []int{100, 1024} {
		topic := fmt.Sprint("wire-", size)
		ws.createTopic(b, topic)
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

		b.Run(name("raw-fsync"), func(b *testing.B) {
			b.SetBytes(int64(batch * size))
			runClients(b, rawFsyncOp(b, batch*(segment.RecordHeaderSize+size)))
		})
		b.Run(name("engine-produce"), func(b *testing.B) {
			recs := make([]broker.ProduceRecord, batch)
			for i := range recs {
				recs[i] = broker.ProduceRecord{Value: value, Partition: -1}
			}
			b.SetBytes(int64(batch * size))
			runClients(b, func(c int) error {
				_, err := ws.br.ProducePartition(ctx, topic, c, recs)
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
				runClients(b, ws.produceOp(topic, bodies[p.body], p.ct))
			})
		}

		fw := ws.fill(b, topic, value)
		fetchBytes := fw.perFetch * int64(size)
		plain := plainServer(b, ws.answer(b, fw.url(ws.url, 0, 0)))
		b.Run(name("plain-http-json"), func(b *testing.B) {
			b.SetBytes(fetchBytes)
			runClients(b, func(c int) error {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/?offset=%d", plain.URL, fw.next(c)), nil)
				return do(ws.hc, req)
			})
		})
		plain.Close()
		for _, f := range []struct {
			name, base, accept string
		}{
			{"fetch-json", ws.url, ""},
			{"fetch-json-first-read", ws.firstReadURL, ""},
			{"fetch-binary", ws.url, wire.MediaType},
			{"fetch-binary-first-read", ws.firstReadURL, wire.MediaType},
		} {
			b.Run(name(f.name), func(b *testing.B) {
				b.SetBytes(fetchBytes)
				runClients(b, ws.fetchOp(fw, f.base, f.accept))
			})
		}
		b.Run(name("engine-fetch"), func(b *testing.B) {
			b.SetBytes(fetchBytes)
			runClients(b, func(c int) error {
				res, err := ws.br.Fetch(ctx, broker.FetchRequest{Topic: topic, Partition: c, Offset: fw.next(c), MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
				if err == nil && int64(len(res.Records)) != fw.perFetch {
					err = fmt.Errorf("fetched %d records, want %d", len(res.Records), fw.perFetch)
				}
				return err
			})
		})
	}
}

// wireSetup is what the wire benchmarks run against: the server of a
// broker on the embedded store (url), a second server over the same data
// whose broker keeps no answers (firstReadURL), and a client. All of it
// stops when b ends.
type wireSetup struct {
	br                *broker.Broker
	url, firstReadURL string
	hc                *http.Client
}

func newWireSetup(b *testing.B) *wireSetup {
	br, uncached := benchBrokers(b)
	srv := httptest.NewServer(api.New(br))
	b.Cleanup(srv.Close)
	srvUncached := httptest.NewServer(api.New(uncached))
	b.Cleanup(srvUncached.Close)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * wireClients, DisableCompression: true}}
	b.Cleanup(hc.CloseIdleConnections)
	return &wireSetup{br: br, url: srv.URL, firstReadURL: srvUncached.URL, hc: hc}
}

// createTopic creates topic with a partition per client.
func (ws *wireSetup) createTopic(b *testing.B, topic string) {
	parts := wireClients
	if _, err := ws.br.CreateTopic(context.Background(), broker.TopicSpec{Name: topic, Partitions: &parts}); err != nil {
		b.Fatal(err)
	}
}

// produceOp POSTs body (of media type ct) to client c's partition.
func (ws *wireSetup) produceOp(topic string, body []byte, ct string) func(c int) error {
	return func(c int) error {
		url := fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records", ws.url, topic, c)
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		return do(ws.hc, req)
	}
}

// fetchWindows is what the fetch workloads read: the first answers of
// each partition (of perFetch records each, at most fetchWindow of them),
// one answer's worth at a time, in turn.
type fetchWindows struct {
	topic    string
	perFetch int64
	ends     []int64 // per partition: the offset the window ends at
	offsets  []int64 // per client: the offset it asks next
}

// fill produces batches of 1000 records of value to every partition of
// topic until each holds at least 4 MiB of values, and returns the
// windows the fetch workloads read.
func (ws *wireSetup) fill(b *testing.B, topic string, value []byte) *fetchWindows {
	ctx := context.Background()
	recs := make([]broker.ProduceRecord, 1000)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: value, Partition: -1}
	}
	hws := make([]int64, wireClients)
	for p := range hws {
		for hws[p]*int64(len(value)) < 4<<20 {
			if _, err := ws.br.ProducePartition(ctx, topic, p, recs); err != nil {
				b.Fatal(err)
			}
			o, err := ws.br.Offsets(ctx, topic, p)
			if err != nil {
				b.Fatal(err)
			}
			hws[p] = o.HighWatermark
		}
	}
	first, err := ws.br.Fetch(ctx, broker.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	fw := &fetchWindows{topic: topic, perFetch: int64(len(first.Records)), ends: hws, offsets: make([]int64, wireClients)}
	for p, hw := range hws {
		fw.ends[p] = min(hw-hw%fw.perFetch, fetchWindow*fw.perFetch)
		if fw.ends[p] < fw.perFetch {
			b.Fatalf("partition %d has %d records, less than one fetch (%d)", p, hw, fw.perFetch)
		}
	}
	return fw
}

// next is the offset client c asks next.
func (fw *fetchWindows) next(c int) int64 {
	o := fw.offsets[c]
	if fw.offsets[c] += fw.perFetch; fw.offsets[c] >= fw.ends[c] {
		fw.offsets[c] = 0
	}
	return o
}

// url is the fetch of 1 MiB (or MaxFetchRecords) of partition c from off
// on the server at base.
func (fw *fetchWindows) url(base string, c int, off int64) string {
	return fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records?offset=%d&max_records=%d&max_bytes=%d", base, fw.topic, c, off, broker.MaxFetchRecords, 1<<20)
}

// fetchOp fetches client c's next answer from the server at base.
func (ws *wireSetup) fetchOp(fw *fetchWindows, base, accept string) func(c int) error {
	return func(c int) error {
		req, _ := http.NewRequest("GET", fw.url(base, c, fw.next(c)), nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		return do(ws.hc, req)
	}
}

// answer is the body the server answers url with.
func (ws *wireSetup) answer(b *testing.B, url string) []byte {
	body, err := get(ws.hc, url, "")
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// plainServer is a plain net/http handler writing answer, the
// pre-encoded JSON of a fetch, to every request: the baseline of the
// JSON fetch workloads.
func plainServer(b *testing.B, answer []byte) *httptest.Server {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil { // a POST's body, read as a server reads it
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = w.Write(answer)
	}))
	b.Cleanup(plain.Close)
	return plain
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
	b.ResetTimer()
	err := runOps(int64(b.N), op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
}

// runOps runs n ops of op from wireClients goroutines (client c, op's
// argument) and returns the first error.
func runOps(n int64, op func(c int) error) error {
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for c := range wireClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Add(1) <= n {
				if err := op(c); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// rawFsyncOp is the raw disk baseline of tierlog bench: client c appends
// n bytes to its own file with one write and one fsync per op.
func rawFsyncOp(b *testing.B, n int) func(c int) error {
	buf := bytes.Repeat([]byte{'r'}, n)
	dir := b.TempDir()
	files := make([]*os.File, wireClients)
	pos := make([]int64, wireClients)
	for c := range files {
		f, err := os.CreateTemp(dir, "raw-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		files[c] = f
	}
	return func(c int) error {
		if _, err := files[c].WriteAt(buf, pos[c]); err != nil {
			return err
		}
		pos[c] += int64(n)
		return files[c].Sync()
	}
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
