package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
	objs3 "github.com/tierlog/tierlog/pkg/objstore/s3"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

const (
	table  = "tierlog-e2e"
	bucket = "tierlog-e2e"
	prefix = "e2e"
	region = "us-east-1"
)

// stack is the functions under the RIE against one emulated endpoint.
type stack struct {
	ep        *endpoint
	hotDir    string
	produce   *rie // notifies the compactor on a roll
	produceB  *rie // a second produce container, without notifications
	fetch     *rie
	compactor *rie
}

// createResources makes the table and the bucket, as the CDK app would.
func createResources(t testing.TB, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
	if err := dynamo.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	if err := objs3.CreateBucket(ctx, objs3.NewClient(cfg, objs3.ClientOptions{Endpoint: url}), bucket); err != nil {
		t.Fatal(err)
	}
}

// functionEnv is the environment every function gets: the emulated
// endpoint, fake credentials, and the stack's table, bucket and hot dir.
func functionEnv(t *testing.T, endpointURL, hotDir string) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"HOME=" + home,
		"AWS_ENDPOINT_URL=" + endpointURL,
		"AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_XRAY_DAEMON_ADDRESS=127.0.0.1:" + strconv.Itoa(freeUDPPort(t)), // no daemon there
		"TIERLOG_HOT_DIR=" + hotDir,
		"TIERLOG_TABLE=" + table,
		"TIERLOG_BUCKET=" + bucket,
		"TIERLOG_PREFIX=" + prefix,
		"TIERLOG_LOG_LEVEL=debug",
		"TIERLOG_COMPACT_GRACE=1ms", // tiered segments leave the hot tier at once
	}
}

func startStack(t *testing.T, binDir string) *stack {
	t.Helper()
	ep := startEndpoint(t)
	createResources(t, ep.URL)
	s := &stack{ep: ep, hotDir: t.TempDir()}
	base := functionEnv(t, ep.URL, s.hotDir)
	with := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	s.compactor = startRIE(t, "compactor", filepath.Join(binDir, "compactor"), with())
	s.fetch = startRIE(t, "fetch", filepath.Join(binDir, "fetch"), with())
	// The Lambda client's Invoke is POST /2015-03-31/functions/<name>/invocations,
	// exactly the RIE's endpoint with the name "function".
	s.produce = startRIE(t, "produce", filepath.Join(binDir, "produce"), with(
		"TIERLOG_COMPACTOR_FUNCTION=function",
		"AWS_ENDPOINT_URL_LAMBDA="+strings.TrimSuffix(s.compactor.url, "/2015-03-31/functions/function/invocations"),
		"TIERLOG_NOTIFY_TIMEOUT=10s",
	))
	s.produceB = startRIE(t, "produce-b", filepath.Join(binDir, "produce"), with())
	return s
}

type topicJSON struct {
	Name         string `json:"name"`
	Partitions   int    `json:"partitions"`
	SegmentBytes int64  `json:"segment_bytes"`
}

type recordJSON struct {
	Offset    int64   `json:"offset"`
	Timestamp int64   `json:"timestamp"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
}

type fetchJSON struct {
	Records        []recordJSON `json:"records"`
	NextOffset     int64        `json:"next_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	LogStartOffset int64        `json:"log_start_offset"`
}

type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// testRecord i: key and value bytes, some not valid UTF-8, ~170 bytes.
func testRecord(topic string, i int) (key, value []byte) {
	key = []byte(fmt.Sprintf("%s-key-%03d", topic, i))
	value = bytes.Repeat([]byte{byte(i), 0xff, 0x00, 'v'}, 36)
	return key, value
}

func (s *stack) produceRecords(t *testing.T, fn *rie, topic string, from, n int) {
	t.Helper()
	type rec struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	var recs []rec
	for i := from; i < from+n; i++ {
		k, v := testRecord(topic, i)
		recs = append(recs, rec{base64.StdEncoding.EncodeToString(k), base64.StdEncoding.EncodeToString(v)})
	}
	h, b := jsonBody(t, map[string]any{"encoding": "base64", "records": recs})
	resp := fn.call(t, "POST", "/v1/topics/"+topic+"/partitions/0/records", h, b)
	if resp.Status != http.StatusOK {
		t.Fatalf("produce %s [%d,%d): %d %s", topic, from, from+n, resp.Status, resp.Body)
	}
	var out struct {
		Offsets []struct {
			Offset int64 `json:"offset"`
		} `json:"offsets"`
	}
	resp.decode(t, &out)
	if len(out.Offsets) != n || out.Offsets[0].Offset != int64(from) || out.Offsets[n-1].Offset != int64(from+n-1) {
		t.Fatalf("produce %s: offsets %+v, want %d..%d", topic, out.Offsets, from, from+n-1)
	}
}

// fetchAll reads topic/0 from offset 0 to n through the fetch function and
// checks every record byte for byte, and that the high watermark is hw.
func (s *stack) fetchAll(t *testing.T, topic string, n, hw int) {
	t.Helper()
	next := int64(0)
	for next < int64(n) {
		resp := s.fetch.call(t, "GET", fmt.Sprintf("/v1/topics/%s/partitions/0/records?offset=%d&encoding=base64&max_records=25", topic, next), nil, nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("fetch %s@%d: %d %s", topic, next, resp.Status, resp.Body)
		}
		var f fetchJSON
		resp.decode(t, &f)
		if f.HighWatermark != int64(hw) || len(f.Records) == 0 {
			t.Fatalf("fetch %s@%d: %d records, high watermark %d, want %d", topic, next, len(f.Records), f.HighWatermark, hw)
		}
		for _, r := range f.Records {
			if next == int64(n) {
				break
			}
			if r.Offset != next {
				t.Fatalf("fetch %s: offset %d, want %d", topic, r.Offset, next)
			}
			k, v := testRecord(topic, int(next))
			gk, _ := base64.StdEncoding.DecodeString(*r.Key)
			gv, _ := base64.StdEncoding.DecodeString(*r.Value)
			if !bytes.Equal(gk, k) || !bytes.Equal(gv, v) {
				t.Fatalf("fetch %s@%d: got key %q value %x, want %q %x", topic, next, gk, gv, k, v)
			}
			next++
		}
		if next < int64(n) && f.NextOffset != next {
			t.Fatalf("fetch %s: next_offset %d, want %d", topic, f.NextOffset, next)
		}
	}
}

// emfLines returns the EMF metric lines a function wrote.
func emfLines(r *rie) []map[string]any {
	var out []map[string]any
	for _, m := range r.out.jsonLines() {
		if _, ok := m["_aws"]; ok {
			out = append(out, m)
		}
	}
	return out
}

func hotLogFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".log") {
			files = append(files, p)
		}
		return nil
	})
	return files
}

func TestFunctionsUnderRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the functions under the Lambda Runtime Interface Emulator: skipped with -short (make unit); make test runs it")
	}
	start := time.Now()
	binDir := t.TempDir()
	ensureRIE(t)
	buildFunctions(t, binDir)
	s := startStack(t, binDir)
	begin := time.Now()

	// Health, cold then warm (the RIE's "Init Duration" is not the init:
	// see coldstart_test.go), and topic creation.
	var health [2]time.Duration
	for i := range health {
		t0 := time.Now()
		if r := s.fetch.call(t, "GET", "/v1/health", nil, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"ok"`) {
			t.Fatalf("health: %d %s", r.Status, r.Body)
		}
		health[i] = time.Since(t0)
	}
	t.Logf("fetch: cold invocation %v, warm %v", health[0].Round(time.Microsecond), health[1].Round(time.Microsecond))
	for _, topic := range []string{"orders", "events"} {
		h, b := jsonBody(t, map[string]any{"name": topic, "partitions": 1, "segment_bytes": 4096})
		r := s.produceB.call(t, "POST", "/v1/topics", h, b)
		if r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", topic, r.Status, r.Body)
		}
		var tj topicJSON
		r.decode(t, &tj)
		if tj.Name != topic || tj.SegmentBytes != 4096 {
			t.Fatalf("create %s: %+v", topic, tj)
		}
	}
	if r := s.fetch.call(t, "GET", "/v1/topics/orders", nil, nil); r.Status != 200 {
		t.Fatalf("get topic through fetch: %d %s", r.Status, r.Body)
	}

	// Produce "orders" through the container without notifications: 3
	// requests of ~3.6 KiB into 4 KiB segments roll twice.
	const perReq, reqs = 20, 3
	for i := 0; i < reqs; i++ {
		s.produceRecords(t, s.produceB, "orders", i*perReq, perReq)
	}
	total := perReq * reqs
	s.fetchAll(t, "orders", total, total)

	// Offsets.
	r := s.fetch.call(t, "GET", "/v1/topics/orders/partitions/0/offsets", nil, nil)
	if r.Status != 200 || string(bytes.TrimSpace(r.Body)) != fmt.Sprintf(`{"log_start_offset":0,"high_watermark":%d}`, total) {
		t.Fatalf("offsets: %d %s", r.Status, r.Body)
	}
	// HEAD through fetch: headers, no body.
	if r := s.fetch.call(t, "HEAD", "/v1/topics/orders/partitions/0/offsets", nil, nil); r.Status != 200 || len(r.Body) != 0 {
		t.Fatalf("HEAD offsets: %d %q", r.Status, r.Body)
	}

	// Group commit (produce) and read back with lag (fetch).
	h, b := jsonBody(t, map[string]any{"offsets": []map[string]any{{"topic": "orders", "partition": 0, "offset": 42, "metadata": "e2e"}}})
	if r := s.produce.call(t, "PUT", "/v1/groups/g1/offsets", h, b); r.Status != http.StatusNoContent {
		t.Fatalf("group commit: %d %s", r.Status, r.Body)
	}
	r = s.fetch.call(t, "GET", "/v1/groups/g1/offsets?topic=orders", nil, nil)
	want := fmt.Sprintf(`{"offsets":[{"topic":"orders","partition":0,"offset":42,"metadata":"e2e","lag":%d}]}`, total-42)
	if r.Status != 200 || string(bytes.TrimSpace(r.Body)) != want {
		t.Fatalf("group offsets: %d %s, want %s", r.Status, r.Body, want)
	}

	// X-Ray under the RIE: it does not pass X-Amzn-Trace-Id on to the
	// runtime (its tracer is a no-op), so nothing is sampled, and there is
	// no daemon: the instrumented path must simply work. Segment emission
	// is tested in package lambdafn. Through produce-b, the partition's
	// writer so far: another container would take its parked lease over,
	// sealing the active segment, and notify the compactor, which would
	// tier the sealed segments before the scheduled run below.
	traced := apigwEvent("POST", "/v1/topics/orders/partitions/0/records",
		http.Header{"Content-Type": {"application/json"}}, []byte(`{"records":[{"value":"traced"}]}`))
	if r := decodeAPIGW(t, s.produceB.invoke(t, traced, sampledTrace())); r.Status != 200 {
		t.Fatalf("traced produce: %d %s", r.Status, r.Body)
	}
	hw := total + 1 // and the traced record

	// Routes sent to the wrong function: 405 or 404 in docs/api.md's shape.
	for _, c := range []struct {
		fn     *rie
		method string
		path   string
		status int
		code   string
	}{
		{s.produce, "GET", "/v1/topics/orders/partitions/0/records?offset=0", 405, "method_not_allowed"},
		{s.produce, "GET", "/v1/health", 405, "method_not_allowed"},
		{s.fetch, "POST", "/v1/topics", 405, "method_not_allowed"},
		{s.fetch, "PUT", "/v1/groups/g1/offsets", 405, "method_not_allowed"},
		{s.fetch, "DELETE", "/v1/topics/orders", 405, "method_not_allowed"},
		{s.fetch, "GET", "/metrics", 404, "not_found"},
		{s.produce, "POST", "/v1/nope", 404, "not_found"},
		{s.produce, "POST", "/v1/topics/orders/partitions/0/offsets", 405, "method_not_allowed"}, // the API's own 405
	} {
		r := c.fn.call(t, c.method, c.path, nil, []byte("{}"))
		var e errorJSON
		r.decode(t, &e)
		if r.Status != c.status || e.Error.Code != c.code || e.Error.Message == "" || r.Headers["X-Request-Id"] == "" {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.fn.name, c.method, c.path, r.Status, r.Body, c.status, c.code)
		}
		if c.status == 405 && r.Headers["Allow"] == "" {
			t.Errorf("%s %s %s: 405 without Allow", c.fn.name, c.method, c.path)
		}
	}

	// The scheduled compactor tiers the sealed segments of "orders".
	hotBefore := len(hotLogFiles(t, s.hotDir))
	getsBefore := s.ep.s3Gets.Load()
	scheduled := map[string]any{
		"version": "0", "id": "5c1b2d4e-e2e0-4c3a-9c11-000000000001", "detail-type": "Scheduled Event",
		"source": "aws.events", "account": "123456789012", "time": time.Now().UTC().Format(time.RFC3339),
		"region": region, "resources": []string{"arn:aws:events:us-east-1:123456789012:rule/tierlog-compactor"},
		"detail": map[string]any{},
	}
	var res1, res2 struct {
		Mode            string `json:"mode"`
		Finalized       int    `json:"finalized"`
		HotFilesDeleted int    `json:"hot_files_deleted"`
	}
	decodeInto(t, s.compactor.invoke(t, scheduled, sampledTrace()), &res1)
	// The behaviour under test is a duration: the compactor leaves a hot
	// file alone for a grace (1 ms here) after its segment is tiered, and
	// the second run, past it, deletes the file. The RIE runs the function
	// as its own process, so no fake clock reaches it.
	time.Sleep(5 * time.Millisecond)
	decodeInto(t, s.compactor.invoke(t, scheduled, nil), &res2)
	if res1.Mode != "scheduled" || res1.Finalized < 2 {
		t.Fatalf("scheduled compactor run: %+v, want >= 2 segments finalized", res1)
	}
	if deleted := res1.HotFilesDeleted + res2.HotFilesDeleted; deleted < 2 || len(hotLogFiles(t, s.hotDir)) >= hotBefore {
		t.Fatalf("hot files of tiered segments not removed: deleted %d, files %d -> %d", deleted, hotBefore, len(hotLogFiles(t, s.hotDir)))
	}
	if s.ep.s3Puts.Load() < 2 {
		t.Fatalf("no artifacts uploaded: %d S3 PUTs", s.ep.s3Puts.Load())
	}

	// Fetch from offset 0 again: now the old segments come from S3.
	s.fetchAll(t, "orders", total, hw)
	if got := s.ep.s3Gets.Load() - getsBefore; got == 0 {
		t.Fatalf("fetch after tiering made no S3 GET")
	}
	var fetchS3 float64
	for _, m := range emfLines(s.fetch) {
		if v, ok := m["S3Get"].(float64); ok {
			fetchS3 += v
		}
	}
	if fetchS3 == 0 {
		t.Fatalf("the fetch function's EMF lines count no S3 GET")
	}

	// The roll path: produce (with notifications) seals a segment of
	// "events" and invokes the compactor asynchronously before answering.
	putsBefore := s.ep.s3Puts.Load()
	for i := 0; i < reqs; i++ {
		s.produceRecords(t, s.produce, "events", i*perReq, perReq)
	}
	events := perReq * reqs
	if s.ep.s3Puts.Load() == putsBefore {
		t.Fatalf("roll notification did not tier anything")
	}
	var rolled, notified bool
	for _, m := range emfLines(s.compactor) {
		rolled = rolled || m["mode"] == "rolled"
	}
	for _, m := range emfLines(s.produce) {
		notified = notified || m["CompactorNotifications"] == float64(1)
	}
	if !rolled || !notified {
		t.Fatalf("no rolled-mode compactor invocation (%v) or produce notification (%v)", rolled, notified)
	}
	s.fetchAll(t, "events", events, events)

	// pkg/client, binary format, through the functions as API Gateway.
	gw := &gateway{t: t, produce: s.produceB, fetch: s.fetch}
	c, err := client.New("https://e2eapi.execute-api.us-east-1.amazonaws.com",
		client.WithHTTPClient(&http.Client{Transport: gw}), client.WithFormat(client.Binary))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs := []client.Record{{Key: []byte{0xff, 0}, Value: []byte{0, 1, 2, 0xfe}}, {Key: nil, Value: nil}, {Key: []byte("k"), Value: []byte{}}}
	if _, err := c.ProduceTo(ctx, "orders", 0, recs); err != nil {
		t.Fatalf("client produce (binary): %v", err)
	}
	fr, err := c.Fetch(ctx, "orders", 0, int64(hw), client.FetchOptions{})
	if err != nil {
		t.Fatalf("client fetch (binary): %v", err)
	}
	if len(fr.Messages) != len(recs) {
		t.Fatalf("client fetch: %d messages", len(fr.Messages))
	}
	for i, m := range fr.Messages {
		if !bytes.Equal(m.Key, recs[i].Key) || (m.Key == nil) != (recs[i].Key == nil) ||
			!bytes.Equal(m.Value, recs[i].Value) || (m.Value == nil) != (recs[i].Value == nil) {
			t.Fatalf("client fetch %d: %+v, want %+v", i, m, recs[i])
		}
	}

	// Logs: JSON with the Lambda request id; one EMF line per invocation.
	for _, fn := range []*rie{s.produce, s.produceB, s.fetch, s.compactor} {
		var withID int
		for _, m := range fn.out.jsonLines() {
			if _, ok := m["_aws"]; !ok && m["requestId"] != nil && m["function"] != nil {
				withID++
			}
		}
		// The RIE's REPORT lines and the function's output reach us
		// through one pipe, copied asynchronously: let it drain.
		testenv.Eventually(t, 2*time.Second, func() error {
			if reports, emf := strings.Count(fn.out.String(), "REPORT RequestId:"), len(emfLines(fn)); emf != reports {
				return fmt.Errorf("%s: %d EMF lines for %d invocations", fn.name, emf, reports)
			}
			return nil
		})
		if withID == 0 {
			t.Errorf("%s: no log line with a request id", fn.name)
		}
	}

	// Produce answered before the work its rounds leave (checkpoint,
	// release), through its internal extension: the RIE ran every
	// invocation above, each of which waited for the extension to ask for
	// its next event.
	for _, fn := range []*rie{s.produce, s.produceB} {
		if out := fn.out.String(); !strings.Contains(out, "after-answer extension registered") {
			t.Errorf("%s: the after-answer extension was not registered:\n%s", fn.name, out)
		}
	}

	if os.Getenv("E2E_DUMP") != "" {
		for _, fn := range []*rie{s.produce, s.fetch, s.compactor} {
			t.Logf("--- %s ---\n%s", fn.name, fn.out.String())
		}
	}
	took := time.Since(begin)
	t.Logf("invocations took %v; whole test %v", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func decodeInto(t *testing.T, raw []byte, v any) {
	t.Helper()
	r := &httpResponse{Body: raw}
	r.decode(t, v)
}
