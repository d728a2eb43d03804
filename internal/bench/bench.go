package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	tlclient "github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/segment"
	tlserver "github.com/tierlog/tierlog/pkg/server"

	"github.com/tierlog/tierlog/pkg/broker"
)

// Opts configures `tierlog bench`; each field is the flag of its name.
type Opts struct {
	URL         string
	RecordSizes []int
	BatchSizes  []int
	Partitions  int
	Clients     int
	Duration    time.Duration
	Formats     []string
	Out         string
	CPUProfile  string
}

// benchRow is one workload's result.
type benchRow struct {
	workload        string
	recSize, batch  int
	records, bytes  int64
	elapsed         time.Duration
	lat             []time.Duration
	awsPerMB        float64 // < 0: not counted
	vsRaw, vsEngine float64 // 0: not applicable
	recordsPS, mbPS float64
	p50, p99, p999  time.Duration
}

func (r *benchRow) finish() {
	secs := r.elapsed.Seconds()
	r.recordsPS = float64(r.records) / secs
	r.mbPS = float64(r.bytes) / secs / 1e6
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
	}
	r.p50, r.p99, r.p999 = pct(0.50), pct(0.99), pct(0.999)
}

// Run runs `tierlog bench`: the workloads of o, progress to stderr, the
// table to stdout (and into o.Out when set).
func Run(ctx context.Context, stdout, stderr io.Writer, o Opts) error {
	if o.Partitions < 1 || o.Clients < 1 || o.Duration <= 0 {
		return usagef("--partitions and --clients must be >= 1 and --duration positive")
	}
	for _, f := range o.Formats {
		if f != "json" && f != "binary" {
			return usagef("--format %q: want json or binary", f)
		}
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	tmp, err := os.MkdirTemp("", "tierlog-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	url := o.URL
	if url == "" {
		srv, addr, err := startBenchServer(ctx, filepath.Join(tmp, "server"))
		if err != nil {
			return err
		}
		defer srv.Close()
		url = "http://" + addr
	}
	engine, err := tlserver.Open(ctx, tlserver.Config{DataDir: filepath.Join(tmp, "engine"), CompactInterval: -1})
	if err != nil {
		return err
	}
	defer engine.Close()

	var rows []*benchRow
	for _, size := range o.RecordSizes {
		for _, batch := range o.BatchSizes {
			fmt.Fprintf(stderr, "bench: %d B records, batches of %d\n", size, batch)
			// Each workload starts with no dirty pages left by the one
			// before: what it wrote is deleted and the page cache flushed,
			// so no workload pays for another's writeback.
			settle()
			raw, err := benchRaw(filepath.Join(tmp, "raw"), size, batch, o)
			if err != nil {
				return err
			}
			settle()
			eng, engFetch, err := benchEngine(ctx, engine.Broker, size, batch, o)
			if err != nil {
				return err
			}
			rows = append(rows, raw, eng, engFetch)
			for _, format := range o.Formats {
				settle()
				prod, topic, err := benchHTTPProduce(ctx, url, format, size, batch, o)
				if err != nil {
					return err
				}
				prod.vsRaw, prod.vsEngine = prod.mbPS/raw.mbPS, prod.mbPS/eng.mbPS
				fetch, err := benchHTTPFetch(ctx, url, topic, format, size, batch, o)
				if err != nil {
					return err
				}
				fetch.vsEngine = fetch.mbPS / engFetch.mbPS
				rows = append(rows, prod, fetch)
				if cl, err := benchClient(url, "json"); err == nil {
					cl.DeleteTopic(ctx, topic)
				}
			}
		}
	}
	table := renderBench(rows)
	fmt.Fprint(stdout, table)
	if o.Out != "" {
		if err := writeBenchDoc(o.Out, table); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", o.Out)
	}
	return nil
}

// startBenchServer serves a local-backend server on a free loopback port.
func startBenchServer(ctx context.Context, dir string) (io.Closer, string, error) {
	s, err := tlserver.Open(ctx, tlserver.Config{DataDir: dir, CompactInterval: -1})
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		return nil, "", err
	}
	hs := &http.Server{Handler: s.Handler()}
	go hs.Serve(ln)
	return closerFunc(func() error { hs.Close(); return s.Close() }), ln.Addr().String(), nil
}

// settle writes back dirty pages so the next workload starts from a quiet
// disk.
func settle() {
	syscall.Sync()
	time.Sleep(200 * time.Millisecond)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// runFor runs op from o.Clients goroutines until o.Duration passes, and
// collects every op's latency. op gets the client index and returns the
// records and bytes it moved.
func runFor(o Opts, op func(client int) (int, int, error)) (*benchRow, error) {
	var mu sync.Mutex
	row := &benchRow{awsPerMB: -1}
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.Duration)
	for c := 0; c < o.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var recs, bytes int64
			for time.Now().Before(deadline) {
				t0 := time.Now()
				n, b, err := op(c)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				if n == 0 {
					break
				}
				lat = append(lat, time.Since(t0))
				recs += int64(n)
				bytes += int64(b)
			}
			mu.Lock()
			row.lat = append(row.lat, lat...)
			row.records += recs
			row.bytes += bytes
			mu.Unlock()
		}()
	}
	wg.Wait()
	row.elapsed = time.Since(start)
	row.finish()
	return row, firstErr
}

// benchRaw writes the bytes a batch takes on disk with one write and one
// fsync per batch: the floor any log with fsync per batch stands on.
func benchRaw(dir string, size, batch int, o Opts) (*benchRow, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n := batch * (segment.RecordHeaderSize + size)
	buf := bytes.Repeat([]byte{'r'}, n)
	// Append to fresh files, rolling every 64 MiB like the engine's
	// segments, and keep them until the workload ends: both then pay for
	// allocating new blocks and for the page cache's writeback of what
	// they wrote (deleting a file early would drop its dirty pages).
	files := make([]*os.File, o.Clients)
	pos := make([]int64, o.Clients)
	roll := func(c int) error {
		if files[c] != nil {
			files[c].Close()
		}
		f, err := os.CreateTemp(dir, "raw-")
		files[c], pos[c] = f, 0
		return err
	}
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
		os.RemoveAll(dir)
	}()
	for c := range files {
		if err := roll(c); err != nil {
			return nil, err
		}
	}
	row, err := runFor(o, func(c int) (int, int, error) {
		if pos[c] > 64<<20 {
			if err := roll(c); err != nil {
				return 0, 0, err
			}
		}
		if _, err := files[c].WriteAt(buf, pos[c]); err != nil {
			return 0, 0, err
		}
		pos[c] += int64(n)
		return batch, batch * size, files[c].Sync()
	})
	if row != nil {
		row.workload, row.recSize, row.batch = "raw write+fsync", size, batch
	}
	return row, err
}

func benchRecords(size, batch int) []broker.ProduceRecord {
	recs := make([]broker.ProduceRecord, batch)
	v := bytes.Repeat([]byte{'v'}, size)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: v}
	}
	return recs
}

// benchEngine calls the broker directly: no HTTP, no JSON.
// benchEngine produces with direct broker calls, then reads what it wrote
// back in 1 MiB fetches: the baselines of the HTTP produce and fetch rows.
func benchEngine(ctx context.Context, b *broker.Broker, size, batch int, o Opts) (*benchRow, *benchRow, error) {
	topic := fmt.Sprintf("engine-%d-%d", size, batch)
	seg := int64(64 << 20)
	if _, err := b.CreateTopic(ctx, broker.TopicSpec{Name: topic, Partitions: &o.Partitions, SegmentBytes: &seg}); err != nil {
		return nil, nil, err
	}
	defer b.DeleteTopic(ctx, topic)
	recs := benchRecords(size, batch)
	prod, err := runFor(o, func(c int) (int, int, error) {
		_, err := b.ProducePartition(ctx, topic, c%o.Partitions, recs)
		return batch, batch * size, err
	})
	if err != nil {
		return nil, nil, err
	}
	prod.workload, prod.recSize, prod.batch = "engine produce", size, batch
	next := make([]int64, o.Clients)
	fetch, err := runFor(o, func(c int) (int, int, error) {
		p := c % o.Partitions
		f, err := b.Fetch(ctx, broker.FetchRequest{Topic: topic, Partition: p, Offset: next[c], MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
		if err != nil {
			return 0, 0, err
		}
		if f.NextOffset >= f.HighWatermark {
			next[c] = 0 // read the partition again from the start
		} else {
			next[c] = f.NextOffset
		}
		n := 0
		for _, r := range f.Records {
			n += len(r.Key) + len(r.Value)
		}
		return len(f.Records), n, nil
	})
	if err != nil {
		return nil, nil, err
	}
	fetch.workload, fetch.recSize, fetch.batch = "engine fetch", size, batch
	return prod, fetch, nil
}

func benchClient(url, format string) (*tlclient.Client, error) {
	f := tlclient.JSON
	if format == "binary" {
		f = tlclient.Binary
	}
	return tlclient.New(url, tlclient.WithFormat(f))
}

func benchHTTPProduce(ctx context.Context, url, format string, size, batch int, o Opts) (*benchRow, string, error) {
	cl, err := benchClient(url, format)
	if err != nil {
		return nil, "", err
	}
	topic := fmt.Sprintf("bench-%s-%d-%d-%d", format, size, batch, time.Now().UnixNano())
	seg := int64(64 << 20)
	if _, err := cl.CreateTopic(ctx, tlclient.TopicSpec{Name: topic, Partitions: o.Partitions, SegmentBytes: &seg}); err != nil {
		return nil, "", err
	}
	recs := make([]tlclient.Record, batch)
	v := bytes.Repeat([]byte{'v'}, size)
	for i := range recs {
		recs[i] = tlclient.Record{Value: v}
	}
	before := awsRequests(ctx, url)
	row, err := runFor(o, func(c int) (int, int, error) {
		_, err := cl.ProduceTo(ctx, topic, c%o.Partitions, recs)
		return batch, batch * size, err
	})
	if row != nil {
		row.workload, row.recSize, row.batch = "http produce "+format, size, batch
		if after := awsRequests(ctx, url); before >= 0 && after >= 0 && row.bytes > 0 {
			row.awsPerMB = float64(after-before) / (float64(row.bytes) / 1e6)
		}
	}
	return row, topic, err
}

func benchHTTPFetch(ctx context.Context, url, topic, format string, size, batch int, o Opts) (*benchRow, error) {
	cl, err := benchClient(url, format)
	if err != nil {
		return nil, err
	}
	next := make([]int64, o.Clients)
	hws := make([]int64, o.Partitions)
	for p := range hws {
		off, err := cl.Offsets(ctx, topic, p)
		if err != nil {
			return nil, err
		}
		hws[p] = off.HighWatermark
	}
	before := awsRequests(ctx, url)
	row, err := runFor(o, func(c int) (int, int, error) {
		p := c % o.Partitions
		if next[c] >= hws[p] {
			next[c] = 0 // read the partition again from the start
		}
		res, err := cl.Fetch(ctx, topic, p, next[c], tlclient.FetchOptions{MaxRecords: 10000, MaxBytes: 1 << 20})
		if err != nil {
			return 0, 0, err
		}
		n := 0
		for _, m := range res.Messages {
			n += len(m.Value) + len(m.Key)
		}
		next[c] = res.NextOffset
		return len(res.Messages), n, nil
	})
	if row != nil {
		row.workload, row.recSize, row.batch = "http fetch "+format, size, batch
		if after := awsRequests(ctx, url); before >= 0 && after >= 0 && row.bytes > 0 {
			row.awsPerMB = float64(after-before) / (float64(row.bytes) / 1e6)
		}
	}
	return row, err
}

// awsRequests sums the server's S3 and DynamoDB request counters from
// /metrics, or -1 when the backend does not count AWS requests.
func awsRequests(ctx context.Context, url string) int64 {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var total int64
	counted := false
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "tierlog_metadata_requests_total{") && !strings.HasPrefix(line, "tierlog_object_requests_total{") {
			continue
		}
		if strings.HasPrefix(line, "tierlog_metadata_requests_total{") {
			counted = true
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			v, _ := strconv.ParseFloat(line[i+1:], 64)
			total += int64(v)
		}
	}
	if !counted {
		return -1 // the local backend: no AWS requests to count
	}
	return total
}

func renderBench(rows []*benchRow) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\trecord\tbatch\trecords/s\tMB/s\tp50 ms\tp99 ms\tp999 ms\tvs raw\tvs engine\tAWS req/MB\t")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	ratio := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, r := range rows {
		aws := "-"
		if r.awsPerMB >= 0 {
			aws = fmt.Sprintf("%.2f", r.awsPerMB)
		}
		fmt.Fprintf(tw, "%s\t%d B\t%d\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.workload, r.recSize, r.batch,
			r.recordsPS, r.mbPS, ms(r.p50), ms(r.p99), ms(r.p999), ratio(r.vsRaw), ratio(r.vsEngine), aws)
	}
	tw.Flush()
	return b.String()
}

const (
	benchBegin = "<!-- tierlog bench: begin -->"
	benchEnd   = "<!-- tierlog bench: end -->"
)

// writeBenchDoc puts the table, the machine and the command line between
// the markers of path (appending them if absent).
func writeBenchDoc(path, table string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var sec strings.Builder
	fmt.Fprintf(&sec, "%s\n\nMeasured %s with `tierlog %s`.\n\n", benchBegin, time.Now().UTC().Format("2006-01-02"), strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&sec, "Machine: %s.\n\n```\n%s```\n\n%s", machine(), table, benchEnd)
	doc := string(old)
	i, j := strings.Index(doc, benchBegin), strings.Index(doc, benchEnd)
	switch {
	case i >= 0 && j > i:
		doc = doc[:i] + sec.String() + doc[j+len(benchEnd):]
	case doc == "":
		doc = "# Benchmarks\n\n" + sec.String() + "\n"
	default:
		doc = strings.TrimRight(doc, "\n") + "\n\n" + sec.String() + "\n"
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// machine describes the machine in one line: CPU model, cores, memory,
// kernel and Go version.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if i := strings.IndexByte(line, ':'); i > 0 {
					cpu = strings.TrimSpace(line[i+1:])
				}
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores%s%s, %s %s/%s", cpu, runtime.NumCPU(), mem, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
