package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
	"github.com/tierlog/tierlog/pkg/objstore"
	objs3 "github.com/tierlog/tierlog/pkg/objstore/s3"
	"github.com/tierlog/tierlog/pkg/segment"
)

// CloudOpts configures `tierlog bench cloud`.
type CloudOpts struct {
	ContentionOpts
	Cells    []CellSpec
	Delay    time.Duration // DynamoDB
	MemoryMB int           // of the functions, for the cost columns

	TierSegments     int   // sealed segments the tiering step writes and finalizes; 0: no tiering step
	TierSegmentBytes int64 // their topic's segment_bytes
	TierRecords      int   // records per produce request of the tiering step
	TierRecordBytes  int

	ReaderSamples  int // commits a long-poll consumer waits for; 0: no reader step
	StraceProduces int // produces counted by strace; 0: no strace step
	StraceBin      string

	Rates    []float64 // MB/s (10^6 B/s) of the cost-at-a-rate table
	Batches  []int     // records per request of the cost-at-a-rate table
	RecBytes int       // record size of the cost-at-a-rate table

	Markdown bool
}

var cellRE = regexp.MustCompile(`^(\d+)x(\d+)$`)

// ParseCells parses "1x1,8x8": writers x partitions.
func ParseCells(s string) ([]CellSpec, error) {
	var cells []CellSpec
	for _, part := range strings.Split(s, ",") {
		m := cellRE.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, fmt.Errorf("%q: want WRITERSxPARTITIONS, such as 8x1", part)
		}
		w, _ := strconv.Atoi(m[1])
		p, _ := strconv.Atoi(m[2])
		if w < 1 || w > 256 || p < 1 || p > w {
			return nil, fmt.Errorf("%q: want 1 to 256 writers and 1 to writers partitions", part)
		}
		cells = append(cells, CellSpec{writers: w, partitions: p})
	}
	return cells, nil
}

// cloudResult is one run of `tierlog bench cloud`.
type cloudResult struct {
	o      CloudOpts
	Cells  []*contentionCell
	Tier   *tierResult
	Reader *readerResult
	Strace *straceResult
}

// s3Counter counts the S3 requests that reach the in-process S3 by billing
// class: put (PUT, COPY, POST, LIST), get (GET, HEAD and the rest) and
// free (DELETE).
type s3Counter struct {
	mu sync.Mutex
	n  map[string]int64
}

func s3Class(r *http.Request) string {
	switch {
	case r.Method == http.MethodDelete:
		return "free"
	case r.Method == http.MethodPut || r.Method == http.MethodPost:
		return "put"
	case r.Method == http.MethodGet && (r.URL.Query().Has("list-type") || strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0):
		return "put" // LIST (a GET of the bucket)
	}
	return "get"
}

func (c *s3Counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n[s3Class(r)]++
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *s3Counter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		m[k] = v
	}
	return m
}

func staticCreds() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("test", "test", "")
}

func runCloud(ctx context.Context, o CloudOpts) (*cloudResult, error) {
	if len(o.Cells) == 0 || o.MemoryMB < 128 || o.TierSegments < 0 || o.ReaderSamples < 0 || o.StraceProduces < 0 {
		return nil, usagef("--cells needs values, --memory-mb at least 128, and the step counts must not be negative")
	}
	if o.TierSegments > 0 && (o.TierSegmentBytes < 4096 || o.TierRecords < 1 || o.TierRecordBytes < 1) {
		return nil, usagef("--tier-segment-bytes must be at least 4096, --tier-records and --tier-record-bytes positive")
	}
	s3c := &s3Counter{n: map[string]int64{}}
	o.s3 = s3c.wrap(gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	cl, err := startCluster(ctx, &o.ContentionOpts)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	s3client := objs3.NewClient(aws.Config{Credentials: staticCreds()}, objs3.ClientOptions{Endpoint: cl.s3URL})
	if err := objs3.CreateBucket(ctx, s3client, benchBucket); err != nil {
		return nil, fmt.Errorf("create bucket: %w", err)
	}
	res := &cloudResult{o: o}
	for i, spec := range o.Cells {
		spec.delay = o.Delay
		o.Logger.Info("cloud cell", "writers", spec.writers, "partitions", spec.partitions, "profile", o.Profile.String(),
			"overhead", o.Overhead, "dynamodb_delay", o.Delay, "duration", o.Duration)
		c, err := runContentionCell(ctx, o.ContentionOpts, cl.cellEnv(fmt.Sprintf("cloud-%d", i)), spec)
		if err != nil {
			return nil, fmt.Errorf("cell %dx%d: %w", spec.writers, spec.partitions, err)
		}
		res.Cells = append(res.Cells, c)
	}
	if o.TierSegments > 0 {
		o.Logger.Info("cloud tiering step", "segments", o.TierSegments, "segment_bytes", o.TierSegmentBytes)
		if res.Tier, err = runTierStep(ctx, o, cl, s3c); err != nil {
			return nil, fmt.Errorf("tiering step: %w", err)
		}
	}
	if o.ReaderSamples > 0 {
		o.Logger.Info("cloud reader step", "commits", o.ReaderSamples)
		if res.Reader, err = runReaderStep(ctx, o, cl); err != nil {
			return nil, fmt.Errorf("reader step: %w", err)
		}
	}
	if o.StraceProduces > 0 {
		o.Logger.Info("cloud strace step", "produces", o.StraceProduces)
		if res.Strace, err = runStraceStep(ctx, o, cl); err != nil {
			return nil, fmt.Errorf("strace step: %w", err)
		}
	}
	return res, nil
}

// startOne starts one server on e (a fresh table and hot dir) and waits
// for its address.
func startOne(ctx context.Context, e cellEnv, o ContentionOpts, name string) (*child, string, error) {
	if err := dynamo.CreateTable(ctx, e.admin, e.table); err != nil {
		return nil, "", fmt.Errorf("create table: %w", err)
	}
	if err := os.MkdirAll(e.hot, 0o755); err != nil {
		return nil, "", err
	}
	p, err := e.startServer(name, o)
	if err != nil {
		return nil, "", err
	}
	a, err := p.waitAddr(ctx)
	if err != nil {
		p.stop()
		return nil, "", err
	}
	return p, "http://" + a, nil
}

func createTopic(ctx context.Context, hc *http.Client, base, body string) error {
	code, b, err := httpDo(ctx, hc, http.MethodPost, base+"/v1/topics", []byte(body))
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create topic %s: %d %v %s", body, code, err, b)
	}
	return nil
}

// produceOffset sends one batch and returns the offset of its first record.
func produceOffset(ctx context.Context, hc *http.Client, u string, payload []byte) (int64, error) {
	code, b, err := httpDo(ctx, hc, http.MethodPost, u, payload)
	if err != nil || code != http.StatusOK {
		return 0, fmt.Errorf("produce: %d %v %s", code, err, b)
	}
	var ans struct {
		Offsets []struct {
			Offset int64 `json:"offset"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal(b, &ans); err != nil || len(ans.Offsets) == 0 {
		return 0, fmt.Errorf("produce answer %s: %v", b, err)
	}
	return ans.Offsets[0].Offset, nil
}

// tierResult is the tiering step: what the compactor's one pass over the
// sealed segments cost.
type tierResult struct {
	Produces       int
	RecordBytes    int64 // record value bytes produced
	Segments       int   // finalized
	BytesFinalized int64 // artifact bytes uploaded
	Pass           time.Duration
	S3             map[string]int64 // requests by billing class: put, get, free
	S3Ops          map[string]int64 // objstore calls by op
	DDB            map[string]int64 // DynamoDB requests by operation
	FSOps          map[string]int64 // the compactor's hot-tier calls by op
	FSReadBytes    int64
	RoundTrips     map[string]int64
}

func (t *tierResult) mib() float64 { return float64(t.BytesFinalized) / (1 << 20) }

func (t *tierResult) perMiB(n int64) float64 {
	if t.BytesFinalized == 0 {
		return 0
	}
	return float64(n) / t.mib()
}

func runTierStep(ctx context.Context, o CloudOpts, cl *cluster, s3c *s3Counter) (*tierResult, error) {
	e := cl.cellEnv("cloud-tier")
	defer os.RemoveAll(e.hot)
	e.proxy.delay.Store(int64(o.Delay))
	p, base, err := startOne(ctx, e, o.ContentionOpts, "tiering server")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	hc := harnessClient()
	defer hc.CloseIdleConnections()
	if err := createTopic(ctx, hc, base, fmt.Sprintf(`{"name":"tier","partitions":1,"segment_bytes":%d}`, o.TierSegmentBytes)); err != nil {
		return nil, err
	}
	payload := contentionBatch(o.TierRecords, o.TierRecordBytes)
	per := int64(o.TierRecords * o.TierRecordBytes)
	n := int((int64(o.TierSegments)*o.TierSegmentBytes+per-1)/per) + 1 // one more batch rolls the last one
	t := &tierResult{Produces: n, RecordBytes: int64(n) * per}
	for range n {
		if _, err := produceOffset(ctx, hc, base+"/v1/topics/tier/partitions/0/records", payload); err != nil {
			return nil, err
		}
	}
	p.stop() // the compactor runs alone, as its own function would

	meta := dynamo.New(dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(cl.proxyURL), Credentials: staticCreds()}), e.table)
	defer meta.Close()
	objects, err := objs3.New(objs3.NewClient(aws.Config{Credentials: staticCreds()}, objs3.ClientOptions{Endpoint: cl.s3URL}), benchBucket, "")
	if err != nil {
		return nil, err
	}
	var oc objstore.Counters
	var fc segment.FSCounters
	var rt segment.RoundTripCounters
	comp, err := compactor.New(compactor.Config{
		Meta: meta, Objects: objstore.Counting(objects, &oc), HotDir: e.hot,
		FS:     segment.CountingFS(segment.LatencyFS(segment.OSFS{}, o.Profile, &rt, nil), &fc),
		Logger: o.Logger,
	})
	if err != nil {
		return nil, err
	}
	calls0, _, _ := e.proxy.snapshot()
	s30 := s3c.snapshot()
	t0 := time.Now()
	st, err := comp.Run(ctx)
	t.Pass = time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("compactor pass: %w", err)
	}
	t.Segments, t.BytesFinalized = st.Finalized, st.BytesUploaded
	calls1, _, _ := e.proxy.snapshot()
	t.DDB = map[string]int64{}
	for op, v := range calls1 {
		if d := v - calls0[op]; d != 0 {
			t.DDB[op] = d
		}
	}
	t.S3 = map[string]int64{}
	for k, v := range s3c.snapshot() {
		if d := v - s30[k]; d != 0 {
			t.S3[k] = d
		}
	}
	t.S3Ops = map[string]int64{}
	for _, op := range objstore.Ops {
		if v := oc.Calls(op); v != 0 {
			t.S3Ops[op.String()] = v
		}
	}
	t.FSOps = map[string]int64{}
	for _, op := range segment.FSOps {
		if v := fc.Calls(op); v != 0 {
			t.FSOps[op.String()] = v
		}
	}
	t.FSReadBytes = fc.Bytes(segment.FSRead)
	t.RoundTrips = map[string]int64{}
	for _, r := range segment.RoundTrips {
		if v := rt.Calls(r); v != 0 {
			t.RoundTrips[r.String()] = v
		}
	}
	if t.Segments != o.TierSegments {
		o.Logger.Warn("the compactor finalized another number of segments than were sealed", "finalized", t.Segments, "sealed", o.TierSegments)
	}
	return t, nil
}

// readerResult is the reader step: a long-poll consumer's delivery latency.
type readerResult struct {
	Samples int
	// AfterAck is from the producer's 200 to the consumer's answer with
	// the batch; AfterSend from the producer's request leaving the client
	// (after its overhead) to the same answer.
	AfterAck, AfterSend struct{ P50, P99 time.Duration }
}

func runReaderStep(ctx context.Context, o CloudOpts, cl *cluster) (*readerResult, error) {
	e := cl.cellEnv("cloud-reader")
	defer os.RemoveAll(e.hot)
	e.proxy.delay.Store(int64(o.Delay))
	w, wbase, err := startOne(ctx, e, o.ContentionOpts, "writer")
	if err != nil {
		return nil, err
	}
	defer w.stop()
	r, err := e.startServer("reader", o.ContentionOpts)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	ra, err := r.waitAddr(ctx)
	if err != nil {
		return nil, err
	}
	rbase := "http://" + ra
	hc := harnessClient()
	defer hc.CloseIdleConnections()
	if err := createTopic(ctx, hc, wbase, `{"name":"reader","partitions":1}`); err != nil {
		return nil, err
	}
	payload := contentionBatch(o.Records, o.RecordBytes)
	produceURL := wbase + "/v1/topics/reader/partitions/0/records"
	first, err := produceOffset(ctx, hc, produceURL, payload) // warm-up, and the reader's start
	if err != nil {
		return nil, err
	}
	next := first + int64(o.Records)

	type delivery struct {
		first int64
		at    time.Time
	}
	deliveries := make(chan delivery, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		offset := next
		for cctx.Err() == nil {
			sleepOverhead(o.Overhead)
			u := fmt.Sprintf("%s/v1/topics/reader/partitions/0/records?offset=%d&wait_ms=20000", rbase, offset)
			code, b, err := httpDo(cctx, hc, http.MethodGet, u, nil)
			at := time.Now()
			if cctx.Err() != nil {
				return
			}
			if err != nil || code != http.StatusOK {
				errc <- fmt.Errorf("long poll: %d %v %s", code, err, b)
				return
			}
			var ans struct {
				Records []struct {
					Offset int64 `json:"offset"`
				} `json:"records"`
				NextOffset int64 `json:"next_offset"`
			}
			if err := json.Unmarshal(b, &ans); err != nil {
				errc <- fmt.Errorf("long poll answer: %w", err)
				return
			}
			if len(ans.Records) == 0 {
				continue // the wait ran out
			}
			select {
			case deliveries <- delivery{ans.Records[0].Offset, at}:
			case <-cctx.Done():
				return
			}
			offset = ans.NextOffset
		}
	}()

	var afterAck, afterSend []time.Duration
	for range o.ReaderSamples {
		sleepOverhead(o.Overhead)
		sent := time.Now()
		base, err := produceOffset(ctx, hc, produceURL, payload)
		if err != nil {
			return nil, err
		}
		ack := time.Now()
		select {
		case d := <-deliveries:
			if d.first != base {
				return nil, fmt.Errorf("the consumer got offset %d, the producer wrote %d", d.first, base)
			}
			afterAck = append(afterAck, d.at.Sub(ack))
			afterSend = append(afterSend, d.at.Sub(sent))
		case err := <-errc:
			return nil, err
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("no delivery of offset %d within 30 s", base)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	slices.Sort(afterAck)
	slices.Sort(afterSend)
	res := &readerResult{Samples: len(afterAck)}
	res.AfterAck.P50, res.AfterAck.P99 = percentile(afterAck, 0.5), percentile(afterAck, 0.99)
	res.AfterSend.P50, res.AfterSend.P99 = percentile(afterSend, 0.5), percentile(afterSend, 0.99)
	return res, nil
}

// straceResult is the strace step: one server's hot-dir system calls
// during N produces, against its own counters for the same produces.
type straceResult struct {
	Produces int
	Counter  map[string]int64 // tierlog_hot_fs_ops_total by op
	Syscalls map[string]int64 // hot-dir system calls by name (openat on a directory as "openat(dir)", fsync/close/fstat of one likewise)
	Derived  map[string]int64 // the system calls as FS ops (straceOps)
}

// runStraceStep runs one server without a latency profile (the operations
// are the same; strace slows every call anyway), produces twice to warm
// it, attaches strace to it for o.StraceProduces produces, and reads its
// counters before and after.
func runStraceStep(ctx context.Context, o CloudOpts, cl *cluster) (*straceResult, error) {
	bin := o.StraceBin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("strace"); err != nil {
			return nil, fmt.Errorf("strace is not installed (apt-get install strace): %w", err)
		}
	}
	e := cl.cellEnv("cloud-strace")
	defer os.RemoveAll(e.hot)
	e.proxy.delay.Store(0)
	plain := o.ContentionOpts
	plain.Profile = segment.LatencyProfile{}
	p, base, err := startOne(ctx, e, plain, "strace server")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	hc := harnessClient()
	defer hc.CloseIdleConnections()
	if err := createTopic(ctx, hc, base, `{"name":"strace","partitions":1}`); err != nil {
		return nil, err
	}
	payload := contentionBatch(o.Records, o.RecordBytes)
	produceURL := base + "/v1/topics/strace/partitions/0/records"
	for range 2 {
		if _, err := produceOffset(ctx, hc, produceURL, payload); err != nil {
			return nil, err
		}
	}
	pid := p.cmd.Process.Pid
	out := filepath.Join(filepath.Dir(e.hot), "strace.out")
	defer os.Remove(out)
	sc0, err := scrapeCounts(ctx, hc, []string{base})
	if err != nil {
		return nil, err
	}
	st, err := startChild("strace", os.Environ(), bin, "-f", "-y", "-e", "trace=%file,%desc", "-o", out, "-p", strconv.Itoa(pid))
	if err != nil {
		return nil, err
	}
	defer st.stop()
	// strace says "Process N attached with M threads" once it has
	// attached to every thread.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(st.output(), " attached") {
		select {
		case <-st.done:
			return nil, fmt.Errorf("strace exited:\n%s", st.output())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("strace did not attach in 30 s:\n%s", st.output())
		}
	}
	for range o.StraceProduces {
		if _, err := produceOffset(ctx, hc, produceURL, payload); err != nil {
			return nil, err
		}
	}
	sc1, err := scrapeCounts(ctx, hc, []string{base})
	if err != nil {
		return nil, err
	}
	// SIGINT: strace detaches, writes out what it has and exits; the
	// server goes on.
	if err := st.cmd.Process.Signal(os.Interrupt); err != nil {
		return nil, err
	}
	select {
	case <-st.done:
	case <-time.After(30 * time.Second):
		return nil, errors.New("strace did not exit on SIGINT in 30 s")
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sys, err := parseStrace(f, e.hot)
	if err != nil {
		return nil, err
	}
	return &straceResult{Produces: o.StraceProduces, Counter: sc1.minus(sc0).fsOps, Syscalls: sys, Derived: straceOps(sys)}, nil
}

var (
	straceCallRE   = regexp.MustCompile(`^(\d+)\s+([a-z0-9_]+)\((.*)$`)
	straceResumeRE = regexp.MustCompile(`^(\d+)\s+<\.\.\. ([a-z0-9_]+) resumed>(.*)$`)
	straceFDRE     = regexp.MustCompile(`^(\d+)<`)
	straceRetFDRE  = regexp.MustCompile(`= (\d+)<[^>]*>\s*$`)
	stracePreadRE  = regexp.MustCompile(`, (\d+), (\d+)\) += (-?\d+)`)
)

// parseStrace counts the system calls of `strace -f -y` output (each line
// led by the thread id) that name a path under dir, as a path argument or
// as an fd's path, by name. A call on an fd of a directory (opened with
// O_DIRECTORY) is named with "(dir)": openat(dir), getdents64(dir),
// fsync(dir), close(dir). os.File.ReadAt reads again after a short read
// until the buffer is full or a read answers 0: such a second pread64 (on
// the same thread and fd, for the rest of the buffer at the end of the
// short one, answered 0) is also counted as pread64(again). A call strace split ("<unfinished
// ...>", then "<... name resumed>") is counted once, its result read
// from the second line. The runtime's poller calls (epoll_ctl, fcntl)
// are left out.
func parseStrace(r io.Reader, dir string) (map[string]int64, error) {
	counts := map[string]int64{}
	dirFDs := map[string]bool{} // fds open on a directory under dir
	type call struct{ name, fd string }
	pending := map[string]call{} // by thread
	type read struct {
		fd        string
		end, left int64 // where it ended; what it left of its buffer
	}
	lastRead := map[string]read{} // by thread
	result := func(tid string, c call, rest string) {
		switch c.name {
		case "openat(dir)":
			if m := straceRetFDRE.FindStringSubmatch(rest); m != nil {
				dirFDs[m[1]] = true
			}
		case "pread64":
			m := stracePreadRE.FindStringSubmatch(rest)
			if m == nil {
				delete(lastRead, tid)
				return
			}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			off, _ := strconv.ParseInt(m[2], 10, 64)
			ret, _ := strconv.ParseInt(m[3], 10, 64)
			if l, ok := lastRead[tid]; ok && ret == 0 && l.left > 0 && l.left == n && l.fd == c.fd && l.end == off {
				counts["pread64(again)"]++
			}
			lastRead[tid] = read{fd: c.fd, end: off + max(ret, 0), left: n - max(ret, 0)}
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := straceResumeRE.FindStringSubmatch(line); m != nil {
			if c, ok := pending[m[1]]; ok && strings.HasPrefix(c.name, m[2]) {
				delete(pending, m[1])
				result(m[1], c, m[3])
			}
			continue
		}
		m := straceCallRE.FindStringSubmatch(line)
		if m == nil || !strings.Contains(line, dir) {
			continue
		}
		tid, c, args := m[1], call{name: m[2]}, m[3]
		if fm := straceFDRE.FindStringSubmatch(args); fm != nil {
			c.fd = fm[1]
		}
		switch c.name {
		case "epoll_ctl", "fcntl":
			continue
		case "openat":
			if strings.Contains(args, "O_DIRECTORY") {
				c.name = "openat(dir)"
			}
		default:
			if c.fd != "" && dirFDs[c.fd] {
				if c.name == "close" {
					delete(dirFDs, c.fd)
				}
				c.name += "(dir)"
			}
		}
		counts[c.name]++
		if strings.Contains(args, "<unfinished ...>") {
			pending[tid] = c
			continue
		}
		result(tid, c, args)
	}
	return counts, sc.Err()
}

// straceOps maps hot-dir system calls to the FS ops tierlog_hot_fs_ops_total
// counts: open = openat of a file; read = pread64 less pread64(again) (see
// parseStrace); write = pwrite64; sync
// = fsync of a file; truncate = ftruncate; fstat = fstat (newfstatat of
// an fd with an empty path); close = close of a file; readdir = openat of
// a directory not fsynced (os.ReadDir: openat, getdents64 until empty,
// close); syncdir = fsync of a directory; stat = newfstatat or statx of a
// path; remove = unlinkat; mkdirall = mkdirat.
func straceOps(sys map[string]int64) map[string]int64 {
	d := map[string]int64{
		"open": sys["openat"], "read": sys["pread64"] - sys["pread64(again)"], "write": sys["pwrite64"], "sync": sys["fsync"],
		"truncate": sys["ftruncate"], "fstat": sys["fstat"], "close": sys["close"],
		"readdir": sys["openat(dir)"] - sys["fsync(dir)"], "syncdir": sys["fsync(dir)"],
		"stat": sys["newfstatat"] + sys["statx"], "remove": sys["unlinkat"], "mkdirall": sys["mkdirat"],
	}
	for k, v := range d {
		if v == 0 {
			delete(d, k)
		}
	}
	return d
}

// cellUsage is what a cell's acknowledged produces used, for the cost
// model: Lambda duration at the cell's p50 less the overhead (API Gateway
// and the invoke are not the function's time), plus the servers' work after
// the answers (billed too: docs/lambda.md), DynamoDB units as counted
// (1 KB items: one unit a request; failed conditional writes too), the hot
// tier's bytes, and the tiering step's S3 requests and compactor time per
// MiB, for the record bytes.
func (r *cloudResult) cellUsage(c *contentionCell) usage {
	ok := float64(c.OK)
	recBytes := ok * float64(r.o.Records*r.o.RecordBytes)
	u := usage{
		Requests: ok, BodyBytes: ok * float64(len(contentionBatch(r.o.Records, r.o.RecordBytes))),
		LambdaSeconds: ok*max(c.P50-c.Overhead, 0).Seconds() + c.AfterAnswer.Seconds(),
		DDBWriteUnits: float64(c.DDBWrites), DDBReadUnits: float64(c.DDBReads),
		EFSWriteBytes: float64(c.FSBytes["written"]), EFSReadBytes: float64(c.FSBytes["read"]),
	}
	if t := r.Tier; t != nil && t.BytesFinalized > 0 {
		mib := recBytes / (1 << 20)
		u.S3Puts = t.perMiB(t.S3["put"]) * mib
		u.S3Gets = t.perMiB(t.S3["get"]) * mib
		u.CompactorCalls = float64(t.Segments) / t.mib() * mib // one invocation per segment rolled
		u.CompactorSeconds = t.Pass.Seconds() / t.mib() * mib
		u.EFSReadBytes += float64(t.FSReadBytes) / t.mib() * mib
	}
	return u
}

// money is a cell's $ per million produces and $ per GB of record values.
func (r *cloudResult) money(c *contentionCell) (perMillion, perGB float64) {
	if c.OK == 0 {
		return 0, 0
	}
	b := listPrices.cost(r.cellUsage(c), float64(r.o.MemoryMB))
	rec := float64(c.OK) * float64(r.o.Records*r.o.RecordBytes)
	return b.Total() / float64(c.OK) * 1e6, b.Total() / rec * gib
}

// moneyBreakdown is a cell's $ per million produces by service.
func (r *cloudResult) moneyBreakdown(c *contentionCell) string {
	if c.OK == 0 {
		return ""
	}
	b := listPrices.cost(r.cellUsage(c), float64(r.o.MemoryMB))
	k := 1e6 / float64(c.OK)
	return fmt.Sprintf("$ per million produces: Lambda %.3f, API Gateway %.3f, DynamoDB %.3f, EFS %.3f, S3 %.4f",
		b.Lambda*k, b.APIGateway*k, b.DynamoDB*k, b.EFS*k, b.S3*k)
}

// rateRow is a month of tierlog at a rate, with batches of some records,
// from one cell's per-request usage, beside Kinesis.
type rateRow struct {
	MBps                   float64
	Batch                  int
	Requests               float64 // a month
	Bill                   bill
	EFSProvisioned         float64 // Provisioned throughput for the EFS traffic, in place of Bill.EFS
	KinesisOD, KinesisProv float64
}

// rateTable scales the first single-partition cell's per-request usage to
// each rate and batch: requests = bytes / (batch x record size); hot-tier
// bytes written per request = the cell's less its record bytes plus the
// batch's; S3, compactor and the compactor's EFS reads by bytes.
func (r *cloudResult) rateTable() []rateRow {
	var base *contentionCell
	for _, c := range r.Cells {
		if c.Writers == 1 && c.Partitions == 1 && c.OK > 0 {
			base = c
			break
		}
	}
	if base == nil {
		return nil
	}
	per := r.cellUsage(base).perRequest()
	cellRec := float64(r.o.Records * r.o.RecordBytes)
	var rows []rateRow
	for _, mbps := range r.o.Rates {
		for _, batch := range r.o.Batches {
			batchBytes := float64(batch * r.o.RecBytes)
			n := mbps * 1e6 * secondsMonth / batchBytes
			u := per
			u.BodyBytes = per.BodyBytes - cellRec + batchBytes
			u.EFSWriteBytes = per.EFSWriteBytes - cellRec + batchBytes
			k := batchBytes / cellRec // per-byte parts scale with the batch
			u.S3Puts, u.S3Gets, u.CompactorCalls, u.CompactorSeconds = per.S3Puts*k, per.S3Gets*k, per.CompactorCalls*k, per.CompactorSeconds*k
			if t := r.Tier; t != nil && t.BytesFinalized > 0 {
				u.EFSReadBytes = (per.EFSReadBytes - float64(t.FSReadBytes)/t.mib()*cellRec/(1<<20)) + float64(t.FSReadBytes)/t.mib()*batchBytes/(1<<20)
			}
			od, prov := listPrices.kinesisMonth(mbps, r.o.RecBytes, 0)
			month := u.scaled(n)
			efsMBps := math.Ceil((month.EFSWriteBytes + month.EFSReadBytes) / secondsMonth / (1 << 20))
			rows = append(rows, rateRow{MBps: mbps, Batch: batch, Requests: n, Bill: listPrices.cost(month, float64(r.o.MemoryMB)),
				EFSProvisioned: efsMBps * listPrices.EFSProvMBsMonth, KinesisOD: od, KinesisProv: prov})
		}
	}
	return rows
}

func fmtMoney(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 0.01:
		return fmt.Sprintf("$%.4f", v)
	case v < 100:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.0f", v)
}

func fmtDurs(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 1 {
		return fmtLat(s[0])
	}
	return fmtLat(percentile(s, 0.5)) + " (max " + fmtLat(s[len(s)-1]) + ")"
}

var cloudHeader = []string{"writers x partitions", "ok req/s per partition", "p50", "p99", "503 share",
	"hot FS ops/ok", "durable EFS round trips/ok", "read EFS round trips/ok", "EFS latency/ok, charged (taken)",
	"DDB writes/ok", "DDB reads/ok", "DDB latency/request, charged (taken)", "first produce, cold process", "$ per M produces", "$ per GB"}

func (r *cloudResult) row(c *contentionCell) []string {
	perM, perGB := r.money(c)
	charged := "-"
	if c.OK > 0 && c.Charged > 0 {
		charged = fmtLat(c.Charged/time.Duration(c.OK)) + " (" + fmtLat(c.Taken/time.Duration(c.OK)) + ")"
	}
	return []string{fmt.Sprintf("%d x %d", c.Writers, c.Partitions),
		fmt.Sprintf("%.1f", c.okPerSec()/float64(c.Partitions)), fmtLat(c.P50), fmtLat(c.P99), c.share503(),
		c.perOK(c.FSOps), c.perOK(c.RoundTrips["durable"]), c.perOK(c.RoundTrips["read"]), charged,
		c.perOK(c.DDBWrites), c.perOK(c.DDBReads), c.ddbLatency(), fmtDurs(c.FirstProduce), fmtMoney(perM), fmtMoney(perGB)}
}

// ddbLatency is the delay and what the cell's DynamoDB requests took on
// average, the delay included.
func (c *contentionCell) ddbLatency() string {
	n := c.DDBWrites + c.DDBReads + c.DDBOther
	if n == 0 {
		return "-"
	}
	return fmtLat(c.Delay) + " (" + fmtLat(c.DDBTaken/time.Duration(n)) + ")"
}

// sortedOps renders m per n, largest first ("open 10.00, read 9.96").
func sortedOps(m map[string]int64, per float64) string {
	ops := largestFirst(m)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %.2f", op, float64(m[op])/per)
	}
	return strings.Join(parts, ", ")
}

func (r *cloudResult) setting() string {
	where := "the system's temporary directory"
	if r.o.HotDir != "" {
		where = "--hot-dir"
	}
	return fmt.Sprintf("hot tier %s (read %v, durable %v per round trip) on a local directory under %s, API Gateway + Lambda overhead %v per request, DynamoDB %v per request; "+
		"%d records of %d B per produce (JSON), %v per cell; functions at %d MB",
		r.o.Profile.String(), r.o.Profile.Read, r.o.Profile.Durable, where, r.o.Overhead, r.o.Delay,
		r.o.Records, r.o.RecordBytes, r.o.Duration, r.o.MemoryMB)
}

func renderCloudText(r *cloudResult) string {
	var b strings.Builder
	fmt.Fprintln(&b, r.setting())
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(cloudHeader, "\t")+"\t")
	for _, c := range r.Cells {
		fmt.Fprintln(tw, strings.Join(r.row(c), "\t")+"\t")
	}
	tw.Flush()
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "  %d x %d: hot FS ops per ok: %s; DynamoDB per ok: %s; hot bytes per ok: %s\n", c.Writers, c.Partitions,
			byOp(c, c.FSByOp), byOp(c, c.DDBByOp), byOp(c, c.FSBytes))
	}
	r.renderSteps(&b, false)
	return b.String()
}

func renderCloudMarkdown(r *cloudResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Setting: %s.\n\n", r.setting())
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(cloudHeader, " | "), strings.Repeat("---|", len(cloudHeader)))
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r.row(c), " | "))
	}
	b.WriteString("\n")
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "- %d x %d: hot FS ops per ok request: %s; DynamoDB per ok request: %s; hot-tier bytes per ok request: %s; %s\n",
			c.Writers, c.Partitions, byOp(c, c.FSByOp), byOp(c, c.DDBByOp), byOp(c, c.FSBytes), r.moneyBreakdown(c))
	}
	b.WriteString("\n")
	r.renderSteps(&b, true)
	return b.String()
}

func (r *cloudResult) renderSteps(b *strings.Builder, md bool) {
	item := "  "
	if md {
		item = "- "
	}
	if t := r.Tier; t != nil {
		fmt.Fprintf(b, "%sTiering: %d produces of %d x %d B wrote %.1f MiB; one compactor pass (%v) finalized %d segments, %.1f MiB: "+
			"per MiB finalized %.2f S3 PUT-class, %.2f GET-class, %.2f other S3 requests (objstore calls: %s), "+
			"%.2f DynamoDB requests (%s), %.2f hot-tier ops (%s), %.2f durable and %.2f read EFS round trips\n",
			item, t.Produces, r.o.TierRecords, r.o.TierRecordBytes, float64(t.RecordBytes)/(1<<20), t.Pass.Round(time.Millisecond),
			t.Segments, t.mib(), t.perMiB(t.S3["put"]), t.perMiB(t.S3["get"]), t.perMiB(t.S3["free"]), sortedOps(t.S3Ops, t.mib()),
			t.perMiB(sum(t.DDB)), sortedOps(t.DDB, t.mib()), t.perMiB(sum(t.FSOps)), sortedOps(t.FSOps, t.mib()),
			t.perMiB(t.RoundTrips["durable"]), t.perMiB(t.RoundTrips["read"]))
	}
	if rd := r.Reader; rd != nil {
		fmt.Fprintf(b, "%sReader: a long-poll consumer on another process, %d commits: delivered after the producer's 200 p50 %s, p99 %s; after the produce was sent p50 %s, p99 %s\n",
			item, rd.Samples, fmtLat(rd.AfterAck.P50), fmtLat(rd.AfterAck.P99), fmtLat(rd.AfterSend.P50), fmtLat(rd.AfterSend.P99))
	}
	if s := r.Strace; s != nil {
		n := float64(s.Produces)
		fmt.Fprintf(b, "%sstrace: %d produces of one server (no latency profile): hot-dir system calls per produce: %s\n", item, s.Produces, sortedOps(s.Syscalls, n))
		if md {
			b.WriteString("\n| op | tierlog_hot_fs_ops_total per produce | strace per produce |\n|---|---|---|\n")
		}
		ops := map[string]bool{}
		for k := range s.Counter {
			ops[k] = true
		}
		for k := range s.Derived {
			ops[k] = true
		}
		names := make([]string, 0, len(ops))
		for k := range ops {
			names = append(names, k)
		}
		sort.Strings(names)
		var tc, ts int64
		for _, k := range names {
			tc += s.Counter[k]
			ts += s.Derived[k]
			if md {
				fmt.Fprintf(b, "| %s | %.2f | %.2f |\n", k, float64(s.Counter[k])/n, float64(s.Derived[k])/n)
			} else {
				fmt.Fprintf(b, "    %-9s counter %6.2f  strace %6.2f\n", k, float64(s.Counter[k])/n, float64(s.Derived[k])/n)
			}
		}
		if md {
			fmt.Fprintf(b, "| total | %.2f | %.2f |\n\n", float64(tc)/n, float64(ts)/n)
		} else {
			fmt.Fprintf(b, "    %-9s counter %6.2f  strace %6.2f\n", "total", float64(tc)/n, float64(ts)/n)
		}
	}
	if rows := r.rateTable(); len(rows) > 0 {
		if md {
			fmt.Fprintf(b, "Cost a month at a rate of %d B records, from the 1 x 1 cell's counts per request (ingest only: no consumer, no storage):\n\n", r.o.RecBytes)
			b.WriteString("| MB/s | records per produce | produces a month | Lambda | API Gateway | DynamoDB | EFS Elastic | S3 | tierlog | EFS Provisioned instead | tierlog, EFS Provisioned | Kinesis on demand | Kinesis provisioned |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		} else {
			fmt.Fprintf(b, "Cost a month at a rate of %d B records (ingest only), from the 1 x 1 cell:\n", r.o.RecBytes)
		}
		for _, x := range rows {
			cols := []string{strconv.FormatFloat(x.MBps, 'g', -1, 64), strconv.Itoa(x.Batch), fmt.Sprintf("%.1f M", x.Requests/1e6),
				fmtMoney(x.Bill.Lambda), fmtMoney(x.Bill.APIGateway), fmtMoney(x.Bill.DynamoDB), fmtMoney(x.Bill.EFS), fmtMoney(x.Bill.S3),
				fmtMoney(x.Bill.Total()), fmtMoney(x.EFSProvisioned), fmtMoney(x.Bill.Total() - x.Bill.EFS + x.EFSProvisioned),
				fmtMoney(x.KinesisOD), fmtMoney(x.KinesisProv)}
			if md {
				fmt.Fprintf(b, "| %s |\n", strings.Join(cols, " | "))
			} else {
				fmt.Fprintf(b, "  %s\n", strings.Join(cols, "  "))
			}
		}
		b.WriteString("\n")
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
