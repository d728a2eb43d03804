package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/smithy-go/middleware"

	"github.com/tierlog/tierlog/localstack/emulator"
)

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines returns the JSON lines written, split into metric (EMF) and log
// lines.
func (s *syncBuffer) lines(t *testing.T) (emf, logs []map[string]any) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		if _, ok := m["_aws"]; ok {
			emf = append(emf, m)
		} else {
			logs = append(logs, m)
		}
	}
	return emf, logs
}

// awsEnv points the AWS SDK of this process at an in-process emulator.
func awsEnv(t *testing.T) {
	t.Helper()
	emu, err := emulator.New(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(emu)
	t.Cleanup(func() { srv.Close(); emu.Close() })
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

type fakeNotifier struct {
	mu     sync.Mutex
	events []RolledEvent
	err    error
}

func (f *fakeNotifier) Notify(_ context.Context, ev RolledEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return f.err
}

func newFunction(t *testing.T, name, hotDir string, extra map[string]string, opts ...Option) (*Function, *syncBuffer) {
	t.Helper()
	env := map[string]string{EnvTable: "tbl", EnvBucket: "bkt", EnvHotDir: hotDir, EnvCreateResources: "true",
		EnvLogLevel: "debug", EnvCompactGrace: "1ms"}
	for k, v := range extra {
		env[k] = v
	}
	out := &syncBuffer{}
	f, err := New(context.Background(), name, append(opts, withGetenv(mapEnv(env)), withOutput(out))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, out
}

var invocations int

func lambdaCtx() context.Context {
	invocations++
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		AwsRequestID: "req-" + strings.Repeat("x", invocations%3) + string(rune('a'+invocations%26)),
	})
}

func event(method, path, body string) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: path,
		Headers: map[string]string{"content-type": "application/json"}, Body: body}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		ev.RawPath, ev.RawQueryString = path[:i], path[i+1:]
	}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.Path = ev.RawPath
	return ev
}

func TestFunctionHTTPAndCompactor(t *testing.T) {
	awsEnv(t)
	hot := t.TempDir()
	notifier := &fakeNotifier{}
	factory := func(_ context.Context, function string, _ []func(*middleware.Stack) error) (Notifier, error) {
		if function != "the-compactor" {
			t.Errorf("factory got function %q", function)
		}
		return notifier, nil
	}
	produce, produceOut := newFunction(t, "produce", hot, map[string]string{EnvCompactorFunction: "the-compactor"},
		WithRollNotifier(factory))
	fetch, _ := newFunction(t, "fetch", hot, nil)
	comp, compOut := newFunction(t, "compactor", hot, nil)
	ph, fh, ch := produce.HTTP(WriteMethods...), fetch.HTTP(ReadMethods...), comp.Compactor()

	call := func(h HTTPHandler, ev events.APIGatewayV2HTTPRequest, status int) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := h(lambdaCtx(), ev)
		if err != nil || resp.StatusCode != status {
			t.Fatalf("%s %s: %d %s (%v), want %d", ev.RequestContext.HTTP.Method, ev.RawPath, resp.StatusCode, resp.Body, err, status)
		}
		return resp
	}
	call(ph, event("POST", "/v1/topics", `{"name":"t","segment_bytes":4096}`), 201)
	value := strings.Repeat("v", 1000)
	body := `{"records":[` + strings.TrimSuffix(strings.Repeat(`{"value":"`+value+`"},`, 3), ",") + `]}`
	call(ph, event("POST", "/v1/topics/t/partitions/0/records", body), 200)
	if len(notifier.events) != 0 {
		t.Fatalf("notified without a roll: %+v", notifier.events)
	}
	call(ph, event("POST", "/v1/topics/t/partitions/0/records", body), 200) // rolls
	if len(notifier.events) != 1 || notifier.events[0].Event != EventSegmentRolled ||
		len(notifier.events[0].Partitions) != 1 || notifier.events[0].Partitions[0].Topic != "t" ||
		notifier.events[0].Partitions[0].TopicID == "" {
		t.Fatalf("roll notification: %+v", notifier.events)
	}
	// A failing notifier does not fail the request.
	notifier.err = errors.New("lambda is down")
	call(ph, event("POST", "/v1/topics/t/partitions/0/records", body), 200)
	if len(notifier.events) != 2 {
		t.Fatalf("second roll not notified: %d", len(notifier.events))
	}
	if !strings.Contains(produceOut.String(), "lambda is down") {
		t.Fatal("the notifier's failure is not logged")
	}

	// Malformed event: 400 in docs/api.md's shape, not a function error.
	bad := event("POST", "/v1/topics", "%%%")
	bad.IsBase64Encoded = true
	resp := call(ph, bad, 400)
	if !strings.Contains(resp.Body, "invalid_request") {
		t.Fatalf("bad event body: %s", resp.Body)
	}

	// The compactor, on the rolled event produce sent.
	payload, _ := json.Marshal(notifier.events[0])
	res, err := ch(lambdaCtx(), payload)
	if err != nil || res.Mode != ModeRolled || res.Partitions != 1 || res.Finalized != 2 {
		t.Fatalf("rolled: %+v %v", res, err)
	}
	// A rolled event of a topic that is gone: skipped.
	gone, _ := json.Marshal(RolledEvent{Event: EventSegmentRolled, Partitions: []RolledPartition{
		{Topic: "gone", TopicID: "x", Partition: 0}, {Topic: "t", TopicID: "other-incarnation", Partition: 0}}})
	if res, err := ch(lambdaCtx(), gone); err != nil || res.Mode != ModeRolled || res.Skipped != 2 || res.Partitions != 0 {
		t.Fatalf("rolled, gone: %+v %v", res, err)
	}
	// Scheduled: a full pass (nothing left to finalize).
	sched := []byte(`{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`)
	if res, err := ch(lambdaCtx(), sched); err != nil || res.Mode != ModeScheduled || res.Partitions != 1 || res.Finalized != 0 {
		t.Fatalf("scheduled: %+v %v", res, err)
	}
	// Anything else: a full pass too, with a warning.
	for _, p := range []string{`{"hello":1}`, `[1,2]`, `"x"`, `null`} {
		if res, err := ch(lambdaCtx(), []byte(p)); err != nil || res.Mode != ModeFallback || res.Partitions != 1 {
			t.Fatalf("payload %s: %+v %v", p, res, err)
		}
	}
	if !strings.Contains(compOut.String(), "payload not recognised") {
		t.Fatal("unknown payload not logged")
	}

	// Fetch reads everything back, some of it from the cold tier.
	for next := 0; next < 9; {
		resp = call(fh, event("GET", "/v1/topics/t/partitions/0/records?max_records=100&offset="+strconv.Itoa(next), ""), 200)
		var fr struct {
			Records []struct {
				Offset int    `json:"offset"`
				Value  string `json:"value"`
			} `json:"records"`
			HighWatermark int64 `json:"high_watermark"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &fr); err != nil || len(fr.Records) == 0 || fr.HighWatermark != 9 {
			t.Fatalf("fetch @%d: %d records, hw %d (%v)", next, len(fr.Records), fr.HighWatermark, err)
		}
		for _, r := range fr.Records {
			if r.Offset != next || r.Value != value {
				t.Fatalf("fetch: offset %d, want %d", r.Offset, next)
			}
			next++
		}
	}
	if snapshotOf(fetch.srv)["S3Get"].v == 0 {
		t.Fatal("fetch after tiering made no S3 GET")
	}
	// Wrong function.
	call(fh, event("POST", "/v1/topics", `{"name":"u"}`), 405)
	call(ph, event("GET", "/v1/topics", ""), 405)

	// One EMF line per invocation, each with the request id; cold start once.
	emf, logs := produceOut.lines(t)
	if len(emf) != 6 {
		t.Fatalf("%d EMF lines for 6 invocations", len(emf))
	}
	cold := 0
	for _, m := range emf {
		cold += int(m["ColdStarts"].(float64))
		if m["requestId"] == nil || m["Function"] != "produce" {
			t.Errorf("EMF line: %v", m)
		}
	}
	if cold != 1 {
		t.Errorf("%d cold starts", cold)
	}
	if emf[1]["FlushRecords"] != float64(3) || emf[1]["DynamoDBUpdateItem"] == nil {
		t.Errorf("produce deltas: %v", emf[1])
	}
	if emf[2]["CompactorNotifications"] != float64(1) || emf[3]["CompactorNotifications"] != float64(0) {
		t.Errorf("notification metric: %v / %v", emf[2]["CompactorNotifications"], emf[3]["CompactorNotifications"])
	}
	var initialized bool
	for _, m := range logs {
		initialized = initialized || m["message"] == "initialized"
	}
	if !initialized {
		t.Error("no initialized log line")
	}
}

func TestNewBadConfig(t *testing.T) {
	_, err := New(context.Background(), "fetch", withGetenv(mapEnv(nil)), withOutput(&syncBuffer{}))
	if err == nil || !strings.Contains(err.Error(), EnvTable) {
		t.Fatalf("err %v", err)
	}
}

func TestRolledEventJSON(t *testing.T) {
	b, err := json.Marshal(RolledEvent{Event: EventSegmentRolled, Partitions: []RolledPartition{{Topic: "t", TopicID: "id", Partition: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	// The wire shape between produce and the compactor: never change it.
	if want := `{"tierlog_event":"segment_rolled","partitions":[{"topic":"t","topic_id":"id","partition":2}]}`; string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
}
