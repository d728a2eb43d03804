package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tierlog/tierlog/internal/hrsleep"
	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
	"github.com/tierlog/tierlog/pkg/segment"
)

// ContentionOpts configures `tierlog bench contention`.
type ContentionOpts struct {
	Writers     []int
	Delays      []time.Duration
	Duration    time.Duration
	Records     int
	RecordBytes int
	Markdown    bool
	Dynalite    string // tools/dynalite (holding node_modules/dynalite)
	ServerBin   string // the tierlog binary the servers run; default os.Executable()
	// HotDir is where the shared hot directory (and the servers' other
	// files) is made; "" is the system's temporary directory.
	HotDir string
	Logger *slog.Logger

	// Set by tierlog bench cloud (zero for bench contention):
	Profile  segment.LatencyProfile // the servers' --hot-fs-latency
	Overhead time.Duration          // the client waits this before each request (API Gateway and Lambda)
	s3       http.Handler           // the cold tier's S3 endpoint; nil: a stub that refuses every request
}

// contentionCell is one measured cell: N writers at one delay.
type contentionCell struct {
	Writers    int
	Partitions int // writer i sends to partition i mod Partitions
	Delay      time.Duration
	Profile    string        // the hot tier's latency profile
	Overhead   time.Duration // waited by the client before each request
	Elapsed    time.Duration
	// FirstProduce is each process's first produce (a cold process,
	// alone), overhead included.
	FirstProduce []time.Duration

	Sent, OK, Unavailable, Other int64         // HTTP answers (Other: any other code or a transport error)
	P50, P99                     time.Duration // of the 200s

	DDBWrites, DDBWritesFailed int64 // PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems; failed: answered non-200 (condition failures)
	DDBReads, DDBOther         int64
	DDBByOp                    map[string]int64 // as the proxy counted
	// ServerDDB is the servers' own count of their DynamoDB requests
	// (tierlog_metadata_requests_total, lower-case op): it should match
	// DDBByOp.
	ServerDDB map[string]int64

	FSOps   int64
	FSByOp  map[string]int64
	FSBytes map[string]int64 // tierlog_hot_fs_bytes_total by direction: read, written
	// RoundTrips, Charged and Taken are the round trips by class (read,
	// durable), the latency the profile charged, and the time the charged
	// calls took (empty and 0 without a profile).
	RoundTrips     map[string]int64
	Charged, Taken time.Duration
	S3Calls        int64 // requests that reached the S3 endpoint (want 0)
	// DDBTaken is the time the DynamoDB requests took, the delay included.
	DDBTaken time.Duration
	// AfterAnswer is the servers' time on produce work after the answers
	// (tierlog_after_answer_seconds_total): a Lambda function bills it.
	AfterAnswer time.Duration
}

func (c *contentionCell) okPerSec() float64 { return float64(c.OK) / c.Elapsed.Seconds() }

func (c *contentionCell) perOK(n int64) string {
	if c.OK == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(n)/float64(c.OK), 'f', 2, 64)
}

func (c *contentionCell) share503() string {
	if c.Sent == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(c.Unavailable)/float64(c.Sent))
}

// dynaliteDir finds tools/dynalite with dynalite installed in it.
func dynaliteDir(dir string) (string, error) {
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return "", fmt.Errorf("dynalite: not in the tierlog repository (%v): run from it after 'make test-deps', or pass --dynalite", err)
		}
		dir = filepath.Join(root, "tools", "dynalite")
	}
	cli := filepath.Join(dir, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return "", fmt.Errorf("dynalite is not installed (%s is missing): run 'make test-deps'", cli)
	}
	return dir, nil
}

// child is a process the harness started; it is killed when the harness
// returns (and, on Linux, when the harness dies).
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	tail []string // the last lines of its output
	addr chan string
}

var listenAddrRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

func startChild(name string, env []string, bin string, args ...string) (*child, error) {
	ch := &child{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{}), addr: make(chan string, 1)}
	ch.cmd.Env = env
	ch.cmd.SysProcAttr = childSysProcAttr()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ch.cmd.Stdout, ch.cmd.Stderr = pw, pw
	if err := ch.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pw.Close()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			ch.mu.Lock()
			ch.tail = append(ch.tail, line)
			if len(ch.tail) > 40 {
				ch.tail = ch.tail[len(ch.tail)-40:]
			}
			ch.mu.Unlock()
			if m := listenAddrRE.FindStringSubmatch(line); m != nil && strings.Contains(line, "listening") {
				select {
				case ch.addr <- m[1]:
				default:
				}
			}
		}
		pr.Close()
	}()
	go func() { _ = ch.cmd.Wait(); close(ch.done) }()
	return ch, nil
}

func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.tail, "\n")
}

func (c *child) stop() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// waitAddr waits for a `tierlog serve` child to log its address.
func (c *child) waitAddr(ctx context.Context) (string, error) {
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case a := <-c.addr:
		return a, nil
	case <-c.done:
		return "", fmt.Errorf("%s exited before listening:\n%s", c.name, c.output())
	case <-t.C:
		return "", fmt.Errorf("%s did not log its address in 60 s:\n%s", c.name, c.output())
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// startDynaliteFor runs dynalite from dir on a free port and waits until
// it accepts connections.
func startDynaliteFor(ctx context.Context, dir string) (*child, string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, "", fmt.Errorf("dynalite needs node on PATH (install Node.js 20, then 'make test-deps'): %w", err)
	}
	var lastErr error
	for range 3 {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, "", err
		}
		args := []string{"-r", filepath.Join(dir, "survive-aborts.js"), filepath.Join(dir, "node_modules", "dynalite", "cli.js"),
			"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
		ch, err := startChild("dynalite", os.Environ(), node, args...)
		if err != nil {
			return nil, "", err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitListening(ctx, ch, addr); lastErr == nil {
			return ch, "http://" + addr, nil
		}
		ch.stop()
	}
	return nil, "", lastErr
}

// waitListening polls addr until it accepts a connection, the child
// exits, or 60 s pass.
func waitListening(ctx context.Context, ch *child, addr string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ch.done:
			return fmt.Errorf("%s exited before listening on %s:\n%s", ch.name, addr, ch.output())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening on %s after 60 s:\n%s", ch.name, addr, ch.output())
		}
	}
}

// ddbWriteOps are the DynamoDB operations that consume write capacity,
// whether or not their condition holds.
var ddbWriteOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true}

// ddbReadOps consume read capacity.
var ddbReadOps = map[string]bool{"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true}

// ddbProxy forwards to DynamoDB and makes each request take at least the
// delay: it waits what is left of it once DynamoDB answered, so the
// emulator's own time is not added to the network's (as the hot tier's
// latency profiles charge). It counts requests by X-Amz-Target operation,
// the ones not answered 200, and the time they took.
type ddbProxy struct {
	rp    *httputil.ReverseProxy
	delay atomic.Int64 // time.Duration
	taken atomic.Int64 // time.Duration, of all requests

	mu     sync.Mutex
	calls  map[string]int64
	failed map[string]int64
}

func newDDBProxy(target *url.URL) *ddbProxy {
	p := &ddbProxy{calls: map[string]int64{}, failed: map[string]int64{}}
	p.rp = httputil.NewSingleHostReverseProxy(target)
	p.rp.Transport = floorTransport{p: p, base: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}
	p.rp.ErrorLog = nil
	return p
}

// floorTransport is the proxy's way upstream: a request answered sooner
// than the delay waits the rest before its answer goes back.
type floorTransport struct {
	p    *ddbProxy
	base http.RoundTripper
}

func (t floorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(r)
	hrsleep.Sleep(time.Duration(t.p.delay.Load()) - time.Since(start))
	t.p.taken.Add(int64(time.Since(start)))
	return resp, err
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (p *ddbProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	if op == "" {
		op = "unknown"
	}
	rec := &statusRecorder{ResponseWriter: w}
	p.rp.ServeHTTP(rec, r)
	p.mu.Lock()
	p.calls[op]++
	if rec.code != http.StatusOK {
		p.failed[op]++
	}
	p.mu.Unlock()
}

func (p *ddbProxy) snapshot() (calls, failed map[string]int64, taken time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.calls), maps.Clone(p.failed), time.Duration(p.taken.Load())
}

// serveLoopback serves h on a free 127.0.0.1 port until the returned
// closer is called.
func serveLoopback(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// runContention runs every cell and returns them in order (by delay, then
// writers).
func runContention(ctx context.Context, o ContentionOpts) ([]*contentionCell, error) {
	if len(o.Writers) == 0 || len(o.Delays) == 0 {
		return nil, usagef("--writers and --delay need values")
	}
	for _, n := range o.Writers {
		if n < 1 || n > 256 {
			return nil, usagef("--writers %d: want 1 to 256", n)
		}
	}
	cl, err := startCluster(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	var cells []*contentionCell
	for _, d := range o.Delays {
		for _, n := range o.Writers {
			o.Logger.Info("contention cell", "writers", n, "dynamodb_delay", d, "duration", o.Duration)
			c, err := runContentionCell(ctx, o, cl.cellEnv(fmt.Sprintf("contention-%d", len(cells))), CellSpec{writers: n, partitions: 1, delay: d})
			if err != nil {
				return cells, fmt.Errorf("cell writers=%d delay=%v: %w", n, d, err)
			}
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// cluster is what the cells of a multi-process bench share: dynalite behind
// the delay proxy, the cold tier's S3 endpoint (counted), the servers'
// binary and environment, and a temporary directory. close stops them.
type cluster struct {
	bin, tmp string
	env      []string
	ddbURL   string // dynalite itself, not delayed
	proxyURL string // the delay proxy in front of it
	s3URL    string
	admin    *dynamodb.Client // through ddbURL
	proxy    *ddbProxy
	s3Calls  *atomic.Int64
	closers  []func()
}

// startCluster checks o's shared settings (filling in its logger) and
// starts dynalite, the proxy and the S3 endpoint: o.s3, or a stub that
// refuses every request.
func startCluster(ctx context.Context, o *ContentionOpts) (_ *cluster, err error) {
	if o.Duration <= 0 || o.Records < 1 || o.RecordBytes < 1 {
		return nil, usagef("--duration, --records and --record-bytes must be positive")
	}
	if o.Overhead < 0 {
		return nil, usagef("--overhead must not be negative")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dir, err := dynaliteDir(o.Dynalite)
	if err != nil {
		return nil, err
	}
	cl := &cluster{bin: o.ServerBin, s3Calls: &atomic.Int64{}}
	defer func() {
		if err != nil {
			cl.close()
		}
	}()
	if cl.bin == "" {
		if cl.bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if cl.tmp, err = os.MkdirTemp(o.HotDir, "tierlog-contention-"); err != nil {
		return nil, err
	}
	cl.closers = append(cl.closers, func() { os.RemoveAll(cl.tmp) })

	ddb, ddbURL, err := startDynaliteFor(ctx, dir)
	if err != nil {
		return nil, err
	}
	cl.closers = append(cl.closers, ddb.stop)
	cl.ddbURL = ddbURL
	target, _ := url.Parse(ddbURL)
	cl.proxy = newDDBProxy(target)
	proxyURL, closeProxy, err := serveLoopback(cl.proxy)
	if err != nil {
		return nil, err
	}
	cl.closers = append(cl.closers, closeProxy)
	cl.proxyURL = proxyURL
	s3 := o.s3
	if s3 == nil {
		s3 = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>tierlog bench contention: no cold tier</Message></Error>`)
		})
	}
	s3URL, closeS3, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cl.s3Calls.Add(1)
		s3.ServeHTTP(w, r)
	}))
	if err != nil {
		return nil, err
	}
	cl.closers = append(cl.closers, closeS3)
	cl.s3URL = s3URL
	cl.admin = dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(ddbURL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})

	cl.env = []string{
		"AWS_ENDPOINT_URL_DYNAMODB=" + proxyURL, "AWS_ENDPOINT_URL_S3=" + s3URL,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_EC2_METADATA_DISABLED=true",
	}
	for _, kv := range os.Environ() {
		// The servers' settings are the harness's: no AWS_* or TIERLOG_*
		// of the caller's shell leaks into them.
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "TIERLOG_") {
			cl.env = append(cl.env, kv)
		}
	}
	return cl, nil
}

func (cl *cluster) close() {
	for i := len(cl.closers) - 1; i >= 0; i-- {
		cl.closers[i]()
	}
	cl.closers = nil
}

// cellEnv is a fresh table and hot dir, both named name, in the cluster.
func (cl *cluster) cellEnv(name string) cellEnv {
	return cellEnv{bin: cl.bin, env: cl.env, hot: filepath.Join(cl.tmp, "hot-"+name), table: name,
		admin: cl.admin, proxy: cl.proxy, s3Calls: cl.s3Calls}
}

type cellEnv struct {
	bin, hot, table string
	env             []string
	admin           *dynamodb.Client
	proxy           *ddbProxy
	s3Calls         *atomic.Int64
}

// startServer starts one `tierlog serve --backend aws` in Lambda mode (the
// lease released after every batch) on the cell's table and hot dir, with
// the hot tier's latency profile; the compactor is off. With wrap, the
// server runs under that command (wrap[0] with wrap[1:] before the
// server's own command line).
func (e cellEnv) startServer(name string, o ContentionOpts, wrap ...string) (*child, error) {
	args := []string{"serve", "--backend", "aws",
		"--listen", "127.0.0.1:0", "--hot-dir", e.hot, "--table", e.table, "--bucket", benchBucket,
		"--compact-interval", "off", "--log-level", "info"}
	if o.Profile.Charges() {
		args = append(args, "--hot-fs-latency", o.Profile.String())
	}
	if len(wrap) > 0 {
		return startChild(name, e.env, wrap[0], slices.Concat(wrap[1:], []string{e.bin}, args)...)
	}
	return startChild(name, e.env, e.bin, args...)
}

// benchBucket is the S3 bucket the bench servers name.
const benchBucket = "contention"

// CellSpec is one cell: writers processes, each with one client sending to
// partition i mod partitions of a fresh topic, DynamoDB delay delay.
type CellSpec struct {
	writers, partitions int
	delay               time.Duration
}

// sleepOverhead stands for API Gateway and a warm Lambda in front of each
// request: the client waits d before sending (on the kernel's timer, as
// the latency profile's waits: a runtime timer would add up to 1 ms). A
// cell that ends meanwhile ends its request after the wait.
func sleepOverhead(d time.Duration) { hrsleep.Sleep(d) }

func runContentionCell(ctx context.Context, o ContentionOpts, e cellEnv, spec CellSpec) (*contentionCell, error) {
	n := spec.writers
	if err := dynamo.CreateTable(ctx, e.admin, e.table); err != nil {
		return nil, fmt.Errorf("create table: %w", err)
	}
	if err := os.MkdirAll(e.hot, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(e.hot)
	e.proxy.delay.Store(int64(spec.delay))

	// Start the servers, and one more process that creates the topic (so
	// that every server's first produce is that of a cold process); stop
	// them all whatever happens.
	procs := make([]*child, n+1)
	urls := make([]string, n+1)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.stop()
			}
		}
	}()
	for i := range procs {
		name := fmt.Sprintf("server %d", i)
		if i == n {
			name = "admin server"
		}
		p, err := e.startServer(name, o)
		if err != nil {
			return nil, err
		}
		procs[i] = p
	}
	for i, p := range procs {
		a, err := p.waitAddr(ctx)
		if err != nil {
			return nil, err
		}
		urls[i] = "http://" + a
	}

	hc := harnessClient()
	defer hc.CloseIdleConnections()
	const topic = "contention"
	body := fmt.Sprintf(`{"name":%q,"partitions":%d}`, topic, spec.partitions)
	code, rb, err := httpDo(ctx, hc, http.MethodPost, urls[n]+"/v1/topics", []byte(body))
	if err != nil || code != http.StatusCreated {
		return nil, fmt.Errorf("create topic: %d %v %s", code, err, rb)
	}
	procs[n].stop()
	procs, urls = procs[:n], urls[:n]

	payload := contentionBatch(o.Records, o.RecordBytes)
	produceURL := func(i int) string {
		return fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records", urls[i], topic, i%spec.partitions)
	}
	c := &contentionCell{Writers: n, Partitions: spec.partitions, Delay: spec.delay, Profile: o.Profile.String(), Overhead: o.Overhead}
	// Warm up each process alone (topic and partition metadata, the
	// partition's files), so that the cell measures steady state; this
	// first produce of a cold process is timed apart.
	for i := range urls {
		t0 := time.Now()
		sleepOverhead(o.Overhead)
		code, body, err := httpDo(ctx, hc, http.MethodPost, produceURL(i), payload)
		if err != nil || code != http.StatusOK {
			return nil, fmt.Errorf("warm-up produce on server %d: %d %v %s", i, code, err, body)
		}
		c.FirstProduce = append(c.FirstProduce, time.Since(t0))
	}

	calls0, failed0, taken0 := e.proxy.snapshot()
	sc0, err := scrapeCounts(ctx, hc, urls)
	if err != nil {
		return nil, err
	}
	s30 := e.s3Calls.Load()

	lats := make([][]time.Duration, n)
	var sent, ok, unavail, other atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	deadline := start.Add(o.Duration)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := produceURL(i)
			for time.Now().Before(deadline) && cctx.Err() == nil {
				t0 := time.Now()
				sleepOverhead(o.Overhead)
				code, _, err := httpDo(cctx, hc, http.MethodPost, u, payload)
				if cctx.Err() != nil {
					return // interrupted: not an answer
				}
				sent.Add(1)
				switch {
				case err != nil:
					other.Add(1)
				case code == http.StatusOK:
					ok.Add(1)
					lats[i] = append(lats[i], time.Since(t0))
				case code == http.StatusServiceUnavailable:
					unavail.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	c.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	calls1, failed1, taken1 := e.proxy.snapshot()
	c.DDBTaken = taken1 - taken0
	sc1, err := scrapeCounts(ctx, hc, urls)
	if err != nil {
		return nil, err
	}
	c.S3Calls = e.s3Calls.Load() - s30
	c.Sent, c.OK, c.Unavailable, c.Other = sent.Load(), ok.Load(), unavail.Load(), other.Load()
	all := slices.Concat(lats...)
	slices.Sort(all)
	c.P50, c.P99 = percentile(all, 0.50), percentile(all, 0.99)
	c.DDBByOp = map[string]int64{}
	for op, v := range calls1 {
		d := v - calls0[op]
		if d == 0 {
			continue
		}
		c.DDBByOp[op] = d
		switch {
		case ddbWriteOps[op]:
			c.DDBWrites += d
			c.DDBWritesFailed += failed1[op] - failed0[op]
		case ddbReadOps[op]:
			c.DDBReads += d
		default:
			c.DDBOther += d
		}
	}
	d := sc1.minus(sc0)
	c.ServerDDB = d.metaOps
	for op, v := range c.DDBByOp {
		if got := c.ServerDDB[strings.ToLower(op)]; got != v {
			o.Logger.Warn("the proxy and the servers count DynamoDB requests differently", "op", op, "proxy", v, "servers", got)
		}
	}
	c.FSByOp = d.fsOps
	for _, v := range c.FSByOp {
		c.FSOps += v
	}
	c.FSBytes, c.RoundTrips, c.Charged, c.Taken = d.fsBytes, d.roundTrips, d.charged, d.taken
	c.AfterAnswer = d.afterAnswer
	return c, nil
}

// percentile is the p-quantile of sorted (0 if empty).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// harnessClient is the HTTP client of the bench harnesses' clients: no
// retries, a minute per request.
func harnessClient() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
}

// contentionBatch is the JSON body of one produce request.
func contentionBatch(records, size int) []byte {
	type rec struct {
		Value string `json:"value"`
	}
	recs := make([]rec, records)
	for i := range recs {
		recs[i].Value = strings.Repeat("x", size)
	}
	b, _ := json.Marshal(map[string]any{"records": recs})
	return b
}

func httpDo(ctx context.Context, hc *http.Client, method, u string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

var (
	fsOpsRE      = regexp.MustCompile(`(?m)^tierlog_hot_fs_ops_total\{op="([a-z]+)"\} (\S+)$`)
	metaOpsRE    = regexp.MustCompile(`(?m)^tierlog_metadata_requests_total\{op="([a-z]+)"\} (\S+)$`)
	fsBytesRE    = regexp.MustCompile(`(?m)^tierlog_hot_fs_bytes_total\{direction="([a-z]+)"\} (\S+)$`)
	roundTripsRE = regexp.MustCompile(`(?m)^tierlog_hot_fs_round_trips_total\{class="([a-z]+)"\} (\S+)$`)
	latencyRE    = regexp.MustCompile(`(?m)^tierlog_hot_fs_latency_seconds_total\{kind="([a-z]+)"\} (\S+)$`)
	afterRE      = regexp.MustCompile(`(?m)^tierlog_(after_answer)_seconds_total (\S+)$`)
)

// serverCounts are counters of the servers' /metrics, summed over them.
type serverCounts struct {
	fsOps, metaOps, fsBytes, roundTrips map[string]int64
	charged, taken, afterAnswer         time.Duration
}

// minus is c - before, series by series (zero differences left out).
func (c serverCounts) minus(before serverCounts) serverCounts {
	sub := func(a, b map[string]int64) map[string]int64 {
		d := map[string]int64{}
		for k, v := range a {
			if v != b[k] {
				d[k] = v - b[k]
			}
		}
		return d
	}
	return serverCounts{fsOps: sub(c.fsOps, before.fsOps), metaOps: sub(c.metaOps, before.metaOps),
		fsBytes: sub(c.fsBytes, before.fsBytes), roundTrips: sub(c.roundTrips, before.roundTrips),
		charged: c.charged - before.charged, taken: c.taken - before.taken, afterAnswer: c.afterAnswer - before.afterAnswer}
}

// scrapeCounts sums, over the servers, tierlog_hot_fs_ops_total by op,
// tierlog_metadata_requests_total by (lower-case) op,
// tierlog_hot_fs_bytes_total by direction, and, when the servers charge a
// latency profile, tierlog_hot_fs_round_trips_total by class and
// tierlog_hot_fs_latency_seconds_total by kind.
func scrapeCounts(ctx context.Context, hc *http.Client, urls []string) (serverCounts, error) {
	sc := serverCounts{fsOps: map[string]int64{}, metaOps: map[string]int64{}, fsBytes: map[string]int64{}, roundTrips: map[string]int64{}}
	latency := map[string]int64{} // nanoseconds
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/metrics", nil)
		if err != nil {
			return sc, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return sc, fmt.Errorf("scrape %s/metrics: %w", u, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return sc, fmt.Errorf("scrape %s/metrics: %w", u, err)
		}
		for _, x := range []struct {
			re       *regexp.Regexp
			sum      map[string]int64
			scale    float64
			optional bool
		}{{fsOpsRE, sc.fsOps, 1, false}, {metaOpsRE, sc.metaOps, 1, false}, {fsBytesRE, sc.fsBytes, 1, false},
			{roundTripsRE, sc.roundTrips, 1, true}, {latencyRE, latency, 1e9, true}, {afterRE, latency, 1e9, true}} {
			ms := x.re.FindAllSubmatch(b, -1)
			if len(ms) == 0 && !x.optional {
				return sc, fmt.Errorf("scrape %s/metrics: no match for %s (a tierlog binary older than the harness?)", u, x.re)
			}
			for _, m := range ms {
				v, err := strconv.ParseFloat(string(m[2]), 64)
				if err != nil {
					return sc, fmt.Errorf("scrape %s/metrics: %q: %w", u, m[0], err)
				}
				x.sum[string(m[1])] += int64(math.Round(v * x.scale))
			}
		}
	}
	sc.charged, sc.taken = time.Duration(latency["charged"]), time.Duration(latency["taken"])
	sc.afterAnswer = time.Duration(latency["after_answer"])
	return sc, nil
}

func fmtLat(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

func fmtDelay(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}

// largestFirst is m's keys by count, largest first, then by name.
func largestFirst(m map[string]int64) []string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool {
		if m[ops[i]] != m[ops[j]] {
			return m[ops[i]] > m[ops[j]]
		}
		return ops[i] < ops[j]
	})
	return ops
}

// byOp renders counts per acknowledged request by operation, largest first.
func byOp(c *contentionCell, m map[string]int64) string {
	ops := largestFirst(m)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = op + " " + c.perOK(m[op])
	}
	return strings.Join(parts, ", ")
}

var contentionHeader = []string{"writers", "sent", "ok req/s", "503 share", "other", "p50", "p99",
	"DDB writes/ok", "failed DDB writes/ok", "DDB reads/ok", "FS ops/ok"}

func contentionRow(c *contentionCell) []string {
	return []string{strconv.Itoa(c.Writers), strconv.FormatInt(c.Sent, 10), fmt.Sprintf("%.1f", c.okPerSec()), c.share503(),
		strconv.FormatInt(c.Other, 10), fmtLat(c.P50), fmtLat(c.P99),
		c.perOK(c.DDBWrites), c.perOK(c.DDBWritesFailed), c.perOK(c.DDBReads), c.perOK(c.FSOps)}
}

// groupByDelay keeps the cells' order.
func groupByDelay(cells []*contentionCell) [][]*contentionCell {
	var groups [][]*contentionCell
	for _, c := range cells {
		if len(groups) == 0 || groups[len(groups)-1][0].Delay != c.Delay {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], c)
	}
	return groups
}

func renderContentionText(cells []*contentionCell) string {
	var b strings.Builder
	for _, g := range groupByDelay(cells) {
		fmt.Fprintf(&b, "DynamoDB delay %s\n", fmtDelay(g[0].Delay))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(contentionHeader, "\t")+"\t")
		for _, c := range g {
			fmt.Fprintln(tw, strings.Join(contentionRow(c), "\t")+"\t")
		}
		tw.Flush()
		for _, c := range g {
			fmt.Fprintf(&b, "  %s: DynamoDB per ok: %s; FS ops per ok: %s%s\n", writersLabel(c.Writers),
				byOp(c, c.DDBByOp), byOp(c, c.FSByOp), s3Note(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func writersLabel(n int) string {
	if n == 1 {
		return "1 writer"
	}
	return strconv.Itoa(n) + " writers"
}

func s3Note(c *contentionCell) string {
	if c.S3Calls == 0 {
		return ""
	}
	return fmt.Sprintf("; %d S3 requests (refused by the stub)", c.S3Calls)
}

func renderContentionMarkdown(cells []*contentionCell) string {
	var b strings.Builder
	for _, g := range groupByDelay(cells) {
		fmt.Fprintf(&b, "DynamoDB delay: %s\n\n", fmtDelay(g[0].Delay))
		fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(contentionHeader, " | "), strings.Repeat("---|", len(contentionHeader)))
		for _, c := range g {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(contentionRow(c), " | "))
		}
		b.WriteString("\n")
		for _, c := range g {
			fmt.Fprintf(&b, "- %s: DynamoDB per ok request: %s; FS ops per ok request: %s%s\n", writersLabel(c.Writers),
				byOp(c, c.DDBByOp), byOp(c, c.FSByOp), s3Note(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}
