package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
)

// The backlog BenchmarkBacklogRead reads: backlogBytes of values of
// backlogRecord bytes, written by backlogWriters producers at once in
// batches of backlogBatch to one partition of a topic with default
// settings (16 MiB segments), then read from offset 0 to the end in
// fetches of at most backlogFetch bytes.
const (
	backlogBytes   = 256 << 20
	backlogRecord  = 1024
	backlogBatch   = 1000
	backlogWriters = 4
	backlogFetch   = 4 << 20
	// backlogCache is the cold-tier cache of the server: a quarter of the
	// backlog, as the default 256 MiB is less than a backlog of GBs. (A
	// backlog the cache holds whole is read from memory after the first
	// pass.)
	backlogCache = backlogBytes / 4
)

// BenchmarkBacklogRead is a catch-up reader: one client reading a
// partition's backlog sequentially over HTTP, JSON, max_bytes 4 MiB
// (docs/benchmarks.md, "Reading a backlog over JSON"). Each op is a round
// of two passes over the whole backlog, in alternating order:
//
//	tierlog  the local server (server.Open's handler, as tierlog serve
//	         serves it) on 127.0.0.1, each fetch read and encoded
//	plain    a plain net/http handler on 127.0.0.1 writing the same
//	         answers, encoded beforehand (the bytes tierlog answered)
//
// Both clients do the same: send the fetch, read the answer whole, take
// next_offset from its end and ask for it next, until the high
// watermark. It reports the MB/s of record values of each, the ratio of
// all rounds (tierlog's MB/s over plain's) and the median round's, and
// cpu-ratio: the process's CPU time in plain's passes over that in
// tierlog's (client and servers share the process; on a busy machine it
// moves less than the ratio of wall-clock times).
//
//	hot     the backlog in the hot tier, as written
//	tiered  after a compactor pass, as tierlog serve's compactor leaves
//	        it (it runs at every roll): the sealed segments are read from
//	        the cold tier (the local object store), one artifact at a time
//
// The server keeps no answers (AnswerCacheBytes < 0): a catch-up reader
// asks for each answer once, while the rounds here ask for them again,
// which would make the default server keep them (broker.FetchAnswer).
func BenchmarkBacklogRead(b *testing.B) {
	bl := newBacklog(b)
	for _, tiered := range []bool{false, true} {
		name := map[bool]string{false: "hot", true: "tiered"}[tiered]
		var plainURL string // the plain server, from the first run on
		b.Run(fmt.Sprintf("%s/value=%d/max_bytes=%d", name, backlogRecord, backlogFetch), func(sb *testing.B) {
			if plainURL == "" {
				if tiered {
					bl.tier(sb)
				}
				plainURL = bl.plainServer(sb, b)
			}
			var ratios []float64
			var tl, pl passTime // totals
			for i := range sb.N {
				var t, p passTime
				if i%2 == 0 {
					t, p = bl.pass(sb, bl.url), bl.pass(sb, plainURL)
				} else {
					p, t = bl.pass(sb, plainURL), bl.pass(sb, bl.url)
				}
				ratios = append(ratios, p.wall.Seconds()/t.wall.Seconds())
				tl.wall, tl.cpu = tl.wall+t.wall, tl.cpu+t.cpu
				pl.wall, pl.cpu = pl.wall+p.wall, pl.cpu+p.cpu
			}
			sb.StopTimer()
			slices.Sort(ratios)
			mb := float64(sb.N) * float64(bl.hw*backlogRecord) / 1e6
			sb.ReportMetric(mb/tl.wall.Seconds(), "tierlog-MB/s")
			sb.ReportMetric(mb/pl.wall.Seconds(), "plain-MB/s")
			sb.ReportMetric(pl.wall.Seconds()/tl.wall.Seconds(), "ratio")
			sb.ReportMetric(ratios[len(ratios)/2], "median-ratio")
			if tl.cpu > 0 && pl.cpu > 0 {
				sb.ReportMetric(pl.cpu.Seconds()/tl.cpu.Seconds(), "cpu-ratio")
			}
		})
	}
}

// backlog is a server holding a backlog and the client it is read with.
type backlog struct {
	srv     *server.Server
	url     string // the fetch URL, but for the offset
	hc      *http.Client
	hw      int64 // where a pass ends
	fetches int   // answers a pass reads (of the plain server's answers)
	buf     []byte
}

// newBacklog writes the backlog through the engine of a local server
// (no compactor timer) and serves it on 127.0.0.1 until b ends.
func newBacklog(b *testing.B) *backlog {
	ctx := context.Background()
	s, err := server.Open(ctx, server.Config{DataDir: b.TempDir(), CompactInterval: -1, AnswerCacheBytes: -1, CacheBytes: backlogCache})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	const topic = "backlog"
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: topic}); err != nil {
		b.Fatal(err)
	}
	if err := writeBacklog(ctx, s.Broker, topic); err != nil {
		b.Fatal(err)
	}
	o, err := s.Broker.Offsets(ctx, topic, 0)
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	b.Cleanup(hc.CloseIdleConnections)
	return &backlog{
		srv: s,
		url: fmt.Sprintf("%s/v1/topics/%s/partitions/0/records?max_records=%d&max_bytes=%d&offset=", srv.URL, topic, broker.MaxFetchRecords, backlogFetch),
		hc:  hc,
		hw:  o.HighWatermark,
	}
}

// writeBacklog produces backlogBytes of values to partition 0 of topic
// from backlogWriters goroutines at once.
func writeBacklog(ctx context.Context, br *broker.Broker, topic string) error {
	value := make([]byte, backlogRecord)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	recs := make([]broker.ProduceRecord, backlogBatch)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: value, Partition: -1}
	}
	var (
		mu   sync.Mutex
		left = backlogBytes / (backlogBatch * backlogRecord) // batches
		errs = make([]error, backlogWriters)
		wg   sync.WaitGroup
	)
	claim := func() bool {
		mu.Lock()
		defer mu.Unlock()
		left--
		return left >= 0
	}
	for w := range backlogWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claim() {
				if _, err := br.ProducePartition(ctx, topic, 0, recs); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// tier runs a compactor pass: every sealed segment goes to the cold tier
// and reads below the active segment go there.
func (bl *backlog) tier(b *testing.B) {
	st, err := bl.srv.Compactor.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if st.Finalized == 0 {
		b.Fatal("the compactor tiered no segment")
	}
}

// plainServer reads every answer of a pass from the tierlog server once
// and serves them from a plain handler on 127.0.0.1 until parent ends. It
// returns the plain server's fetch URL, but for the offset.
func (bl *backlog) plainServer(b, parent *testing.B) string {
	answers := map[string][]byte{} // by offset
	bl.fetches = 0
	for off := int64(0); off < bl.hw; bl.fetches++ {
		body, next, err := bl.fetch(bl.url, off)
		if err != nil {
			b.Fatal(err)
		}
		answers[strconv.FormatInt(off, 10)] = bytes.Clone(body)
		off = next
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer, ok := answers[r.URL.Query().Get("offset")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = w.Write(answer)
	}))
	parent.Cleanup(plain.Close)
	return plain.URL + "/?offset="
}

// passTime is what a pass took: wall-clock time, and the CPU time of the
// whole process (client and servers), which the other
// processes of a busy machine move less.
type passTime struct{ wall, cpu time.Duration }

// pass reads the backlog from offset 0 to the end from the server at
// base and returns how long it took.
func (bl *backlog) pass(b *testing.B, base string) passTime {
	cpu, start := processCPU(), time.Now()
	n := 0
	for off := int64(0); off < bl.hw; n++ {
		_, next, err := bl.fetch(base, off)
		if err != nil {
			b.Fatal(err)
		}
		off = next
	}
	t := passTime{wall: time.Since(start), cpu: processCPU() - cpu}
	if n != bl.fetches {
		b.Fatalf("%s: %d fetches, want %d", base, n, bl.fetches)
	}
	return t
}

// fetch asks base for offset, reads the answer whole into bl.buf and
// returns it with its next_offset.
func (bl *backlog) fetch(base string, offset int64) (body []byte, next int64, err error) {
	res, err := bl.hc.Get(base + strconv.FormatInt(offset, 10))
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	buf := bytes.NewBuffer(bl.buf[:0])
	_, err = io.Copy(buf, res.Body)
	bl.buf = buf.Bytes()
	if err != nil {
		return nil, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s%d: %s: %.200s", base, offset, res.Status, bl.buf)
	}
	next = nextOffset(bl.buf)
	if next <= offset {
		return nil, 0, fmt.Errorf("GET %s%d: next_offset %d in %.100q", base, offset, next, bl.buf[max(0, len(bl.buf)-100):])
	}
	return bl.buf, next, nil
}

// nextOffset is the next_offset of a JSON fetch answer, read from its end
// (-1 if it has none).
func nextOffset(answer []byte) int64 {
	const field = `],"next_offset":`
	i := bytes.LastIndex(answer, []byte(field))
	if i < 0 {
		return -1
	}
	rest := answer[i+len(field):]
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return -1
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
