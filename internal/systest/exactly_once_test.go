package systest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
)

// TestExactlyOnceChaos is the exactly-once test of docs/api.md's
// Idempotency-Key (docs/design.md "Invariants", I7 and I8) with real
// processes: three `tierlog serve --backend aws` processes (Lambda mode:
// each batch acquires and releases the lease) share one hot dir, one
// dynalite and one S3 endpoint, while a chaos loop SIGKILLs them (and
// restarts them on the same port) and SIGSTOPs them past their lease, and
// small segments keep the compactors tiering. Producers send logical
// batches of unique, self-describing values over both produce routes, each
// batch with its own Idempotency-Key, and retry every failure with the same
// key and the same body on a random live server until a 2xx or the end of
// the production phase; one attempt in ten gives up after 20-150ms, so
// answers get lost without a crash too. Then every partition is read from
// log_start_offset to the high watermark through both tiers, twice, from
// different servers, and checked: dense offsets (I1), every record of every
// 2xx batch present exactly once at the offsets its answer named (I2, I8),
// no value twice (I7), no value never sent, batches atomic and in order,
// timestamps non-decreasing (I6), the same records on every read (I3).
//
// TIERLOG_CHAOS_SEED=N replays the chaos and the producers' choices of a
// run (the interleaving of real processes is not replayed).
func TestExactlyOnceChaos(t *testing.T) {
	testenv.SkipShort(t, "dynalite, an S3 endpoint and tierlog serve processes")
	const (
		servers     = 3
		partitions  = 2
		producers   = 6
		produceFor  = 20 * time.Second
		minAcked    = 100 // batches: fewer means the test proved little
		topic       = "eo"
		table       = "exactlyonce"
		bucket      = "exactlyonce"
		leaseTTL    = time.Second
		httpTimeout = 2 * time.Second // shorter than the longest SIGSTOP: answers get lost
	)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TIERLOG_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TIERLOG_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with TIERLOG_CHAOS_SEED=%d)", seed, seed)

	ddb, err := testenv.StartDynalite()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ddb.Stop)
	lite := buildLite(t)
	s3p, err := testenv.StartListening(lite, func(port int) []string {
		return []string{"--listen", fmt.Sprintf("127.0.0.1:%d", port)}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s3p.Stop)
	env := []string{
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddb.Endpoint,
		"AWS_ENDPOINT_URL_S3=" + s3p.Endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
	}
	for _, kv := range env { // for the in-process DynamoDB client below
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	hot := t.TempDir()
	args := []string{"--backend", "aws", "--create-resources", "--hot-dir", hot, "--table", table, "--bucket", bucket,
		"--lease-ttl", leaseTTL.String(), "--compact-interval", "250ms", "--compact-grace", "1s"}

	// Each server keeps its port across restarts: a producer's retry to
	// a killed server's address is refused until it is back.
	addrs := make([]string, servers)
	procs := make([]atomic.Pointer[testenv.Tierlog], servers)
	down := make([]atomic.Bool, servers) // killed or stopped: producers avoid it
	start := func(i int) *testenv.Tierlog {
		// The last --listen wins over startServerWith's 127.0.0.1:0.
		return testenv.StartTierlog(t, env, append(append([]string{}, args...), "--listen", addrs[i])...)
	}
	for i := range procs {
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		procs[i].Store(start(i))
		if got := procs[i].Load().URL; got != "http://"+addrs[i] {
			t.Fatalf("server %d listens on %s, not %s", i, got, addrs[i])
		}
	}
	code, err := testenv.DoJSON("POST", procs[0].Load().URL+"/v1/topics", map[string]any{
		"name": topic, "partitions": partitions, "segment_bytes": 8 << 10,
		"retention_ms": -1, "retention_bytes": -1,
	}, nil)
	if err != nil || code != 201 {
		t.Fatalf("create topic: %d %v", code, err)
	}

	// Production: every producer owns its batches; they are read only
	// after wg.Wait.
	hc := &http.Client{} // each attempt has its own deadline
	var stop atomic.Bool
	var wg sync.WaitGroup
	ledgers := make([][]*eoBatch, producers)
	stats := make([]eoStats, producers)
	for c := 0; c < producers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)+1))
			st := &stats[c]
			for seq := 0; !stop.Load(); seq++ {
				b := newEOBatch(rng, seed, c, seq, partitions)
				ledgers[c] = append(ledgers[c], b)
				for !stop.Load() {
					b.attempts++
					i := eoPickLive(rng, down)
					// One attempt in ten is impatient: it gives up
					// after 20-150ms, often while its batch is being
					// committed, as a client with a short timeout does.
					wait := httpTimeout
					if rng.IntN(10) == 0 {
						wait = time.Duration(20+rng.IntN(130)) * time.Millisecond
					}
					ans, kind := b.send(hc, procs[i].Load().URL, topic, wait)
					st.count(kind)
					b.history = append(b.history, fmt.Sprintf("s%d:%s", i, eoOr(kind, strconv.Itoa(ans.status))))
					if kind == "" {
						if err := b.record(ans); err != nil {
							t.Errorf("%s: %v", b.key, err)
						}
						break
					}
					if kind == "fatal" {
						t.Errorf("%s: attempt %d on server %d: %s", b.key, b.attempts, i, ans.body)
						return
					}
					time.Sleep(time.Duration(5+rng.IntN(30)) * time.Millisecond) // retry backoff
				}
			}
		}()
	}

	// Chaos, on the test goroutine (startServerWith may call t.Fatal): the
	// first event is a kill and the second a pause, then either at random.
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	var kills, stops int
	deadline := time.Now().Add(produceFor)
	for ev := 0; time.Now().Before(deadline); ev++ {
		// The chaos's timing is the behaviour under test: a kill or pause
		// lands at a random point of the load, and a killed server stays
		// down, a paused one asleep past its lease, for a random time.
		time.Sleep(time.Duration(200+rng.IntN(500)) * time.Millisecond)
		i := rng.IntN(servers)
		s := procs[i].Load()
		if ev == 0 || (ev > 1 && rng.IntN(2) == 0) {
			down[i].Store(true)
			s.Kill(t, syscall.SIGKILL)
			kills++
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			procs[i].Store(start(i))
			down[i].Store(false)
		} else {
			// Paused past its lease: it wakes up as a zombie, and a
			// client that waited longer than httpTimeout for it gave up.
			down[i].Store(true)
			if err := s.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatalf("SIGSTOP server %d: %v", i, err)
			}
			stops++
			time.Sleep(leaseTTL + time.Duration(200+rng.IntN(1800))*time.Millisecond)
			if err := s.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatalf("SIGCONT server %d: %v", i, err)
			}
			down[i].Store(false)
		}
	}
	stop.Store(true)
	wg.Wait()

	var all []*eoBatch
	var total eoStats
	for c := range ledgers {
		all = append(all, ledgers[c]...)
		total.add(&stats[c])
	}
	var acked, retried, replayed, partial, unresolved int
	for _, b := range all {
		switch {
		case b.answered && b.partial:
			partial++
			acked++
		case b.answered:
			acked++
		default:
			unresolved++
		}
		if b.attempts > 1 {
			retried++
		}
		if b.replayed {
			replayed++
		}
	}
	summary := fmt.Sprintf("%d batches sent in %d attempts (%s); %d answered 2xx (%d partly failed), %d retried at least once, %d answered with Idempotent-Replayed: true, %d never answered 2xx; %d SIGKILLs, %d SIGSTOPs",
		len(all), total.attempts, total.String(), acked, partial, retried, replayed, unresolved, kills, stops)
	t.Log(summary)
	// Not vacuous: enough was acknowledged, and chaos and retries happened.
	if acked < minAcked || kills == 0 || stops == 0 || retried == 0 {
		t.Fatalf("the run proved too little: %d batches acknowledged (want ≥ %d), %d kills, %d stops, %d retried batches (want ≥ 1 each)", acked, minAcked, kills, stops, retried)
	}
	for i := range procs {
		select {
		case <-procs[i].Load().Done():
			t.Fatalf("server %d is not running after the chaos:\n%s", i, procs[i].Load().LogText())
		default:
		}
	}

	// A final compaction: every sealed segment of every partition reaches
	// the cold tier (the compactors run every 250ms; poll the partition
	// items with a deadline).
	ctx := context.Background()
	dc, err := dynamo.NewClientFromEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms := dynamo.New(dc, table)
	defer ms.Close()
	tc, err := ms.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	coldEnd := make([]int64, partitions)
	for p := 0; p < partitions; p++ {
		k := meta.PartitionKey{Topic: topic, TopicID: tc.ID, Partition: p}
		var item meta.Partition
		testenv.Eventually(t, 30*time.Second, func() error {
			item, err = ms.Partition(ctx, k)
			if err != nil {
				return err
			}
			pending := 0
			for _, s := range item.Sealed {
				if s.NextOffset > item.ColdEnd {
					pending++
				}
			}
			if item.ColdEnd > 0 && pending == 0 {
				return nil
			}
			return fmt.Errorf("partition %d: cold end %d, %d sealed segments not yet tiered, next offset %d", p, item.ColdEnd, pending, item.NextOffset)
		})
		coldEnd[p] = item.ColdEnd
	}

	// Read everything from every server: the first read is checked, the
	// others must be identical (I3). Below the cold end the reads go to
	// the cold tier (the hot files are gone after the 1s grace).
	getsBefore := eoObjectGets(t, procs[0].Load().URL)
	logs := make([][]eoRecord, partitions)
	for p := 0; p < partitions; p++ {
		logs[p] = eoReadPartition(t, procs[0].Load().URL, topic, p)
	}
	if d := eoObjectGets(t, procs[0].Load().URL) - getsBefore; d == 0 {
		t.Errorf("reading %d records below the cold ends %v made no object-store GET: the cold tier was not read", coldEnd[0]+coldEnd[1], coldEnd)
	}
	for i := 1; i < servers; i++ {
		for p := 0; p < partitions; p++ {
			again := eoReadPartition(t, procs[i].Load().URL, topic, p)
			if len(again) != len(logs[p]) {
				t.Errorf("I3: partition %d has %d records read from server 0, %d from server %d", p, len(logs[p]), len(again), i)
				continue
			}
			for j := range again {
				if a, b := logs[p][j].canon(), again[j].canon(); a != b {
					t.Errorf("I3: partition %d offset %d: server 0 read %s, server %d read %s", p, logs[p][j].Offset, a, i, b)
					break
				}
			}
		}
	}
	stored := checkExactlyOnce(t, all, logs)
	t.Logf("%s; %d records stored (cold ends %v), %d of them in 2xx batches; dynalite survived %d dropped requests",
		summary, stored, coldEnd, eoCountAcked(all), strings.Count(ddb.Output(), "[survive-aborts]"))
}

// eoBatch is one logical batch: one Idempotency-Key, one body, sent until
// answered 2xx.
type eoBatch struct {
	key      string
	url      string // the route, after the server's base URL
	body     []byte
	values   []string
	parts    []int // the partition each record was sent to
	attempts int
	history  []string // "s<server>:<outcome>" of each attempt

	answered bool    // some attempt was answered 2xx
	partial  bool    // ... with failed records (multi-partition route)
	replayed bool    // ... with Idempotent-Replayed: true
	offsets  []int64 // per record from the 2xx answer; -1: that record failed
}

type eoRecord struct {
	Offset        int64   `json:"offset"`
	Timestamp     int64   `json:"timestamp"`
	Key           *string `json:"key"`
	Value         *string `json:"value"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// canon is the record as one comparable string (its fields, pointers
// followed).
func (r eoRecord) canon() string {
	b, _ := json.Marshal(r)
	return string(b)
}

type eoAnswer struct {
	status   int
	body     []byte
	replayed bool
}

// newEOBatch makes batch seq of producer c: 1 to 6 records with values
// "producer-C/batch-S/rec-I/" plus padding (to roll segments), sent to one
// partition's route or, every other time, the multi-partition route with
// an explicit partition per record.
func newEOBatch(rng *rand.Rand, seed uint64, c, seq, partitions int) *eoBatch {
	n := 1 + rng.IntN(6)
	b := &eoBatch{key: fmt.Sprintf("eo-%d-producer-%d-batch-%d", seed, c, seq)}
	single := rng.IntN(2) == 0
	p := rng.IntN(partitions)
	type rec struct {
		Value     string `json:"value"`
		Partition *int   `json:"partition,omitempty"`
	}
	var recs []rec
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("producer-%d/batch-%d/rec-%d/%s", c, seq, i, strings.Repeat("x", rng.IntN(160)))
		r := rec{Value: v}
		if !single {
			p = rng.IntN(partitions)
			pp := p
			r.Partition = &pp
		}
		b.values = append(b.values, v)
		b.parts = append(b.parts, p)
		recs = append(recs, r)
	}
	if single {
		b.url = fmt.Sprintf("/partitions/%d/records", p)
	} else {
		b.url = "/records"
	}
	b.body, _ = json.Marshal(map[string]any{"records": recs})
	return b
}

// send makes one attempt. kind is "" for a 2xx, the failure's name for a
// retryable failure, "fatal" for an answer no retry can change.
func (b *eoBatch) send(hc *http.Client, base, topic string, wait time.Duration) (eoAnswer, string) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/topics/"+topic+b.url, bytes.NewReader(b.body))
	if err != nil {
		return eoAnswer{body: []byte(err.Error())}, "fatal"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", b.key)
	resp, err := hc.Do(req)
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
			return eoAnswer{body: []byte(err.Error())}, "timeout"
		case errors.Is(err, syscall.ECONNREFUSED):
			return eoAnswer{body: []byte(err.Error())}, "refused"
		default:
			return eoAnswer{body: []byte(err.Error())}, "conn"
		}
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return eoAnswer{body: []byte(err.Error())}, "timeout"
		}
		return eoAnswer{body: []byte(err.Error())}, "conn"
	}
	a := eoAnswer{status: resp.StatusCode, body: body, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	switch {
	case resp.StatusCode/100 == 2:
		return a, ""
	case resp.StatusCode == 503:
		return a, "503"
	case resp.StatusCode/100 == 5:
		return a, "5xx"
	case resp.StatusCode == 408: // body cut: nothing applied
		return a, "408"
	case resp.StatusCode == 409 && bytes.Contains(body, []byte("idempotency_key_in_use")):
		return a, "409-in-use" // the first attempt is still in flight somewhere
	}
	a.body = []byte(fmt.Sprintf("status %d: %s", resp.StatusCode, body))
	return a, "fatal"
}

// record keeps a 2xx answer: the offsets it names, which must be one per
// record, in the partition it was sent to, contiguous within a partition.
func (b *eoBatch) record(a eoAnswer) error {
	var pr struct {
		Offsets []struct {
			Partition int             `json:"partition"`
			Offset    *int64          `json:"offset"`
			Error     json.RawMessage `json:"error"`
		} `json:"offsets"`
		FailedRecordCount int `json:"failed_record_count"`
	}
	if err := json.Unmarshal(a.body, &pr); err != nil {
		return fmt.Errorf("2xx answer %s: %v", a.body, err)
	}
	if len(pr.Offsets) != len(b.values) {
		return fmt.Errorf("2xx answer names %d offsets for %d records: %s", len(pr.Offsets), len(b.values), a.body)
	}
	b.answered, b.replayed = true, a.replayed
	if a.replayed && b.attempts == 1 {
		return fmt.Errorf("the first attempt was answered with Idempotent-Replayed: true: %s", a.body)
	}
	b.offsets = make([]int64, len(b.values))
	last := map[int]int64{}
	failed := 0
	for i, o := range pr.Offsets {
		if o.Partition != b.parts[i] {
			return fmt.Errorf("I8: record %d (%s) sent to partition %d, answered for partition %d: %s", i, b.values[i], b.parts[i], o.Partition, a.body)
		}
		if o.Offset == nil {
			b.offsets[i] = -1
			failed++
			continue
		}
		b.offsets[i] = *o.Offset
		if prev, ok := last[o.Partition]; ok && *o.Offset != prev+1 {
			return fmt.Errorf("I8: partition %d part of the batch answered at offsets not contiguous (%d then %d): %s", o.Partition, prev, *o.Offset, a.body)
		}
		last[o.Partition] = *o.Offset
	}
	if failed != pr.FailedRecordCount {
		return fmt.Errorf("failed_record_count %d, %d entries without an offset: %s", pr.FailedRecordCount, failed, a.body)
	}
	if failed > 0 && !strings.HasPrefix(b.url, "/records") {
		return fmt.Errorf("single-partition route answered 2xx with %d failed records: %s", failed, a.body)
	}
	b.partial = failed > 0
	return nil
}

// eoStats counts attempts by outcome.
type eoStats struct {
	attempts, ok, s503, s5xx, s408, inUse, timeout, refused, conn, fatal int
}

func (s *eoStats) count(kind string) {
	s.attempts++
	switch kind {
	case "":
		s.ok++
	case "503":
		s.s503++
	case "5xx":
		s.s5xx++
	case "408":
		s.s408++
	case "409-in-use":
		s.inUse++
	case "timeout":
		s.timeout++
	case "refused":
		s.refused++
	case "conn":
		s.conn++
	default:
		s.fatal++
	}
}

func (s *eoStats) add(o *eoStats) {
	s.attempts += o.attempts
	s.ok += o.ok
	s.s503 += o.s503
	s.s5xx += o.s5xx
	s.s408 += o.s408
	s.inUse += o.inUse
	s.timeout += o.timeout
	s.refused += o.refused
	s.conn += o.conn
	s.fatal += o.fatal
}

func (s *eoStats) String() string {
	return fmt.Sprintf("%d 2xx, %d 503, %d other 5xx, %d 408, %d 409 key in use, %d timeouts, %d refused, %d other connection errors, %d fatal",
		s.ok, s.s503, s.s5xx, s.s408, s.inUse, s.timeout, s.refused, s.conn, s.fatal)
}

// eoPickLive picks a random server not marked down, any if all are.
func eoPickLive(rng *rand.Rand, down []atomic.Bool) int {
	var live []int
	for i := range down {
		if !down[i].Load() {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return rng.IntN(len(down))
	}
	return live[rng.IntN(len(live))]
}

// eoReadPartition reads partition p from log_start_offset to the high
// watermark, checking I1 (dense from the log start) and I6 on the way.
// Retention is forever, so the log start must be 0.
func eoReadPartition(t *testing.T, url, topic string, p int) []eoRecord {
	t.Helper()
	var out []eoRecord
	var lastTS int64 = -1
	deadline := time.Now().Add(30 * time.Second)
	for off := int64(0); ; {
		var f struct {
			Records        []eoRecord `json:"records"`
			HighWatermark  int64      `json:"high_watermark"`
			LogStartOffset int64      `json:"log_start_offset"`
		}
		code, err := testenv.DoJSON("GET", fmt.Sprintf("%s/v1/topics/%s/partitions/%d/records?offset=%d&max_records=10000&max_bytes=4194304", url, topic, p, off), nil, &f)
		if (code == 503 || err != nil) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond) // retry backoff, as a client's: a restarting server answers 503
			continue
		}
		if err != nil || code != 200 {
			t.Fatalf("fetch %s partition %d at %d: %d %v", url, p, off, code, err)
		}
		if f.LogStartOffset != 0 {
			t.Fatalf("partition %d: log_start_offset %d with retention forever: records left the log", p, f.LogStartOffset)
		}
		for _, r := range f.Records {
			if r.Offset != off {
				t.Fatalf("I1: partition %d: offset %d where %d expected", p, r.Offset, off)
			}
			if r.Timestamp < lastTS {
				t.Fatalf("I6: partition %d: timestamp %d at offset %d after %d", p, r.Timestamp, off, lastTS)
			}
			lastTS = r.Timestamp
			out = append(out, r)
			off++
		}
		if off >= f.HighWatermark {
			return out
		}
		if len(f.Records) == 0 {
			t.Fatalf("partition %d: empty fetch at %d below the high watermark %d", p, off, f.HighWatermark)
		}
	}
}

// eoObjectGets is the object-store GETs a server made (its /metrics).
func eoObjectGets(t *testing.T, url string) int64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, `tierlog_object_requests_total{op="get"} %d`, &v); err == nil {
			n += v
		}
	}
	return n
}

type eoLoc struct {
	p   int
	off int64
}

func (l eoLoc) String() string { return fmt.Sprintf("p%d@%d", l.p, l.off) }

type eoRef struct {
	b *eoBatch
	i int
}

// checkExactlyOnce checks the logs against the batches and returns how
// many records are stored.
func checkExactlyOnce(t *testing.T, all []*eoBatch, logs [][]eoRecord) int {
	t.Helper()
	sent := map[string]eoRef{}
	for _, b := range all {
		for i, v := range b.values {
			sent[v] = eoRef{b, i}
		}
	}
	where := map[string][]eoLoc{}
	var unsent, misrouted []string
	stored := 0
	for p, recs := range logs {
		for _, r := range recs {
			stored++
			loc := eoLoc{p, r.Offset}
			if r.Value == nil || r.ValueEncoding != "" || r.Key != nil {
				unsent = append(unsent, fmt.Sprintf("%v: key %v, value %v (%s): never sent", loc, r.Key, r.Value, r.ValueEncoding))
				continue
			}
			ref, ok := sent[*r.Value]
			if !ok {
				unsent = append(unsent, fmt.Sprintf("%v: %s never sent", loc, eoName(*r.Value)))
				continue
			}
			if ref.b.parts[ref.i] != p {
				misrouted = append(misrouted, fmt.Sprintf("%v: %s was sent to partition %d (key %s)", loc, eoName(*r.Value), ref.b.parts[ref.i], ref.b.key))
			}
			where[*r.Value] = append(where[*r.Value], loc)
		}
	}
	eoReport(t, "never sent", unsent)
	eoReport(t, "in the wrong partition", misrouted)

	// I7: no value twice. I2, I8: every record of a 2xx batch at the
	// offset its answer named.
	var dupAcked, dupUnacked, lost, moved []string
	dupBatches := map[*eoBatch]bool{}
	dupRecords := 0
	for _, b := range all {
		for i, v := range b.values {
			locs := where[v]
			if len(locs) > 1 {
				dupBatches[b] = true
				dupRecords += len(locs) - 1
				msg := fmt.Sprintf("%s (key %s, attempts %s) stored %d times, at %v", eoName(v), b.key, b.tried(), len(locs), locs)
				if b.answered && b.offsets[i] >= 0 {
					dupAcked = append(dupAcked, msg+fmt.Sprintf("; the 2xx named %v", eoLoc{b.parts[i], b.offsets[i]}))
				} else {
					dupUnacked = append(dupUnacked, msg+"; never answered 2xx")
				}
			}
			if !b.answered || b.offsets[i] < 0 {
				continue // outcome unknown: at most once is all we know
			}
			named := eoLoc{b.parts[i], b.offsets[i]}
			switch {
			case len(locs) == 0:
				lost = append(lost, fmt.Sprintf("%s (key %s, attempts %s) answered at %v is not stored", eoName(v), b.key, b.tried(), named))
			case !eoContainsLoc(locs, named):
				got := "nothing"
				if p, off := named.p, named.off; off < int64(len(logs[p])) && logs[p][off].Value != nil {
					got = eoName(*logs[p][off].Value)
				}
				moved = append(moved, fmt.Sprintf("%s (key %s, attempts %s) answered at %v is stored at %v; %v holds %s", eoName(v), b.key, b.tried(), named, locs, named, got))
			}
		}
	}
	if len(dupAcked)+len(dupUnacked) > 0 {
		// Which earlier answers hid a commit: a refused connection
		// never reached a server, so a batch whose other earlier
		// attempts were all answered 503 was committed by a 503.
		by503 := 0
		for b := range dupBatches {
			h := b.history
			if b.answered {
				h = h[:len(h)-1]
			}
			only503 := true
			for _, a := range h {
				if !strings.HasSuffix(a, ":503") && !strings.HasSuffix(a, ":refused") {
					only503 = false
				}
			}
			if only503 {
				by503++
			}
		}
		t.Errorf("I7: %d records of %d batches stored more than once (%d extra copies): %d records of batches answered 2xx, %d of batches never answered 2xx; %d of these batches had no earlier attempt but 503 answers and refused connections (a 503 whose batch was committed), the others lost an answer to a timeout, a reset or a kill",
			len(dupAcked)+len(dupUnacked), len(dupBatches), dupRecords, len(dupAcked), len(dupUnacked), by503)
	}
	eoReport(t, "I7 duplicate of an acknowledged record", dupAcked)
	eoReport(t, "I7 duplicate of a record whose batch was never acknowledged", dupUnacked)
	eoReport(t, "I2 lost", lost)
	eoReport(t, "I8 not at the offset answered", moved)

	// Batches are atomic and in request order within a partition: a
	// part is stored whole at consecutive offsets, or not at all.
	var torn []string
	for _, b := range all {
		if dupBatches[b] {
			continue // reported above
		}
		byPart := map[int][]int{}
		for i, p := range b.parts {
			byPart[p] = append(byPart[p], i)
		}
		for p, idx := range byPart {
			var locs []eoLoc
			for _, i := range idx {
				locs = append(locs, where[b.values[i]]...)
			}
			if len(locs) == 0 {
				continue
			}
			ok := len(locs) == len(idx)
			for j := 1; ok && j < len(locs); j++ {
				ok = locs[j].off == locs[j-1].off+1
			}
			if !ok {
				torn = append(torn, fmt.Sprintf("key %s: the %d records sent to partition %d are stored at %v", b.key, len(idx), p, locs))
			}
		}
	}
	eoReport(t, "torn or reordered batch", torn)
	return stored
}

func eoContainsLoc(locs []eoLoc, l eoLoc) bool {
	for _, x := range locs {
		if x == l {
			return true
		}
	}
	return false
}

// eoReport fails the test with up to 10 of msgs, sorted, and their count.
func eoReport(t *testing.T, what string, msgs []string) {
	t.Helper()
	if len(msgs) == 0 {
		return
	}
	sort.Strings(msgs)
	shown := msgs[:min(len(msgs), 10)]
	t.Errorf("%s: %d records, first %d:\n  %s", what, len(msgs), len(shown), strings.Join(shown, "\n  "))
}

func eoCountAcked(all []*eoBatch) int {
	n := 0
	for _, b := range all {
		for _, o := range b.offsets {
			if o >= 0 {
				n++
			}
		}
	}
	return n
}

// tried is the batch's attempts, "s2:timeout s0:503 s1:200", the middle of
// a long history left out.
func (b *eoBatch) tried() string {
	h := b.history
	if len(h) <= 6 {
		return strings.Join(h, " ")
	}
	return fmt.Sprintf("%s ... (%d more) ... %s", strings.Join(h[:3], " "), len(h)-5, strings.Join(h[len(h)-2:], " "))
}

// eoName shortens a value of newEOBatch to what names it,
// "producer-1/batch-7/rec-2/+40x"; other values are quoted, cut at 80 bytes.
func eoName(v string) string {
	if i := strings.LastIndex(v, "/"); i >= 0 && strings.HasPrefix(v, "producer-") && strings.Trim(v[i+1:], "x") == "" {
		return fmt.Sprintf("%s/+%dx", v[:i], len(v)-i-1)
	}
	if len(v) > 80 {
		return strconv.Quote(v[:80]) + "..."
	}
	return strconv.Quote(v)
}

func eoOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
