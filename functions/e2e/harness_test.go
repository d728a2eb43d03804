package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/localstack/emulator"
)

// rieModule is the Runtime Interface Emulator, pinned (docs/lambda.md
// "Build and test").
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// repoRoot is the module root (two levels up from functions/e2e).
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Clean(filepath.Join(wd, "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from %s: %v", wd, err)
	}
	return root
}

// goTool is the go command on PATH; go test puts the GOROOT/bin of the go
// command that runs it first there.
func goTool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	return p
}

var rieOnce struct {
	sync.Mutex
	path string
}

// ensureRIE returns the path of aws-lambda-rie: $TIERLOG_RIE, else
// <repo>/bin/aws-lambda-rie, installed there from the Go module proxy when
// missing.
func ensureRIE(t testing.TB) string {
	t.Helper()
	rieOnce.Lock()
	defer rieOnce.Unlock()
	if rieOnce.path != "" {
		return rieOnce.path
	}
	if p := os.Getenv("TIERLOG_RIE"); p != "" {
		rieOnce.path = p
		return p
	}
	bin := filepath.Join(repoRoot(t), "bin")
	p := filepath.Join(bin, "aws-lambda-rie")
	if _, err := os.Stat(p); err != nil {
		t.Logf("installing %s into %s", rieModule, bin)
		cmd := exec.Command(goTool(t), "install", rieModule)
		cmd.Env = append(os.Environ(), "GOBIN="+bin, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install %s: %v\n%s", rieModule, err, out)
		}
	}
	rieOnce.path = p
	return p
}

// buildFunctions builds the three functions for this machine into dir
// (dir/produce, dir/fetch, dir/compactor) with the release flags, plus
// extra build tags.
func buildFunctions(t testing.TB, dir string, tags ...string) {
	t.Helper()
	start := time.Now()
	args := []string{"build", "-tags", strings.Join(append([]string{"lambda.norpc"}, tags...), ","),
		"-trimpath", "-ldflags", "-s -w", "-o", dir + string(filepath.Separator),
		"./functions/produce", "./functions/fetch", "./functions/compactor"}
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built functions %v in %v", tags, time.Since(start).Round(time.Millisecond))
}

// endpoint is the in-process S3 + DynamoDB endpoint of localstack/emulator
// (one URL for both, like LocalStack), counting the S3 requests it serves.
type endpoint struct {
	URL string
	emu *emulator.Emulator

	s3Gets atomic.Int64 // object GETs (not listings)
	s3Puts atomic.Int64
}

func startEndpoint(t testing.TB) *endpoint {
	t.Helper()
	emu, err := emulator.New(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &endpoint{emu: emu}
	srv := httptest.NewServer(e) // 127.0.0.1
	t.Cleanup(func() {
		srv.Close()
		emu.Close()
	})
	e.URL = srv.URL
	return e
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") == "" { // S3
		switch r.Method {
		case http.MethodGet:
			if !r.URL.Query().Has("list-type") && strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0 {
				e.s3Gets.Add(1)
			}
		case http.MethodPut:
			e.s3Puts.Add(1)
		}
	}
	e.emu.ServeHTTP(w, r)
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines returns the output lines that parse as JSON objects.
func (l *lockedBuffer) jsonLines() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// rie is one function under the Runtime Interface Emulator.
type rie struct {
	name string
	url  string // invocation URL
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// freeUDPPort returns a UDP port nobody listens on right now.
func freeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// freePort returns a port free on 127.0.0.1 right now.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startRIE runs bootstrap under aws-lambda-rie, both of its addresses on
// 127.0.0.1, with exactly env (plus PATH). The process group is ended
// when the test ends: SIGTERM (the RIE then stops the function), SIGKILL
// after 5 s.
func startRIE(t testing.TB, name, bootstrap string, env []string) *rie {
	t.Helper()
	rieBin := ensureRIE(t)
	apiPort, runtimePort := freePort(t), freePort(t)
	cmd := exec.Command(rieBin,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", runtimePort),
		"--log-level", "warn",
		bootstrap)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "AWS_LAMBDA_FUNCTION_NAME=" + name}, env...)
	cmd.Dir = filepath.Dir(bootstrap)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", rieBin, err)
	}
	r := &rie{name: name, url: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", apiPort),
		cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, out.String())
		}
	})
	testenv.Eventually(t, 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", apiPort), 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		select {
		case <-r.done:
			t.Fatalf("%s: the RIE exited: %s", name, out.String())
		default:
		}
		return fmt.Errorf("%s: the RIE is not listening: %w\n%s", name, err, out.String())
	})
	return r
}

// stop ends the RIE's process group: SIGTERM, then SIGKILL after 5 s.
func (r *rie) stop() {
	pgid := r.cmd.Process.Pid // Setpgid: the group id is the RIE's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-r.done
	}
	// The function may outlive the RIE in its group: make sure it is gone.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// invoke posts payload to the function and returns the raw answer.
func (r *rie) invoke(t testing.TB, payload any, header http.Header) []byte {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("invoke %s: %v\n%s", r.name, err, r.out.String())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke %s: RIE status %d: %s\n%s", r.name, resp.StatusCode, body, r.out.String())
	}
	var fnErr struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}
	if json.Unmarshal(body, &fnErr) == nil && fnErr.ErrorType != "" {
		t.Fatalf("invoke %s: function error %s: %s\n%s", r.name, fnErr.ErrorType, fnErr.ErrorMessage, r.out.String())
	}
	return body
}

// httpResponse is a decoded API Gateway v2 answer.
type httpResponse struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

func (h *httpResponse) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(h.Body, v); err != nil {
		t.Fatalf("decode %q: %v", h.Body, err)
	}
}

var eventSeq atomic.Int64

// apigwEvent builds the API Gateway HTTP API (payload format 2.0) event
// API Gateway sends for a request with IAM authorization. Bodies that are
// not valid UTF-8 or have a binary content type are base64-encoded, as
// API Gateway does.
func apigwEvent(method, target string, header http.Header, body []byte) events.APIGatewayV2HTTPRequest {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	id := fmt.Sprintf("e2e-%d", eventSeq.Add(1))
	headers := map[string]string{
		"host":              "e2eapi.execute-api.us-east-1.amazonaws.com",
		"user-agent":        "tierlog-e2e",
		"x-amzn-trace-id":   "Root=1-" + strconv.FormatInt(now.Unix(), 16) + "-000000000000000000000001",
		"x-forwarded-for":   "127.0.0.1",
		"x-forwarded-port":  "443",
		"x-forwarded-proto": "https",
	}
	for k, v := range header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if len(body) > 0 {
		headers["content-length"] = strconv.Itoa(len(body))
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        u.EscapedPath(),
		RawQueryString: u.RawQuery,
		Headers:        headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     "$default",
			AccountID:    "123456789012",
			Stage:        "$default",
			RequestID:    id,
			APIID:        "e2eapi",
			DomainName:   "e2eapi.execute-api.us-east-1.amazonaws.com",
			DomainPrefix: "e2eapi",
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: method, Path: u.Path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: "tierlog-e2e",
			},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
					AccessKey: "AKIAE2ETEST", AccountID: "123456789012", CallerID: "AIDAE2ETEST",
					UserARN: "arn:aws:iam::123456789012:user/e2e", UserID: "AIDAE2ETEST",
				},
			},
		},
	}
	if len(body) > 0 {
		ct := headers["content-type"]
		if isTextType(ct) && isUTF8(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

func isTextType(ct string) bool {
	return ct == "" || strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/")
}

func isUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

// call sends one HTTP request through the function as API Gateway would.
func (r *rie) call(t testing.TB, method, target string, header http.Header, body []byte) *httpResponse {
	t.Helper()
	raw := r.invoke(t, apigwEvent(method, target, header, body), nil)
	return decodeAPIGW(t, raw)
}

// sampledTrace is the invoke header of a sampled X-Ray trace: the RIE
// passes it to the runtime as Lambda does (Lambda-Runtime-Trace-Id).
func sampledTrace() http.Header {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	root := fmt.Sprintf("1-%08x-%s", time.Now().Unix(), h[:24])
	return http.Header{"X-Amzn-Trace-Id": {fmt.Sprintf("Root=%s;Parent=%s;Sampled=1", root, h[16:32])}}
}

func decodeAPIGW(t testing.TB, raw []byte) *httpResponse {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("not an API Gateway v2 answer: %q: %v", raw, err)
	}
	out := &httpResponse{Status: resp.StatusCode, Headers: map[string]string{}}
	for k, v := range resp.Headers {
		out.Headers[http.CanonicalHeaderKey(k)] = v
	}
	out.Body = []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			t.Fatalf("bad base64 body: %v", err)
		}
		out.Body = b
	}
	return out
}

func jsonBody(t testing.TB, v any) (http.Header, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Content-Type": {"application/json"}}, b
}

// gateway is an http.RoundTripper that plays API Gateway: it turns each
// request into a payload 2.0 event and invokes produce (POST, PUT, DELETE)
// or fetch (GET, HEAD) under the RIE, so pkg/client runs unmodified
// through the functions.
type gateway struct {
	t              testing.TB
	produce, fetch *rie
	mu             sync.Mutex // one invoke at a time per RIE
}

func (g *gateway) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	fn := g.produce
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		fn = g.fetch
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ev := apigwEvent(req.Method, req.URL.RequestURI(), req.Header, body)
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(req.Context(), http.MethodPost, fn.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hresp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(hresp.Body)
	if err != nil {
		return nil, err
	}
	if hresp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("gateway: RIE status %d: %s", hresp.StatusCode, raw)
	}
	var ar events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(raw, &ar); err != nil || ar.StatusCode == 0 {
		return nil, errors.Join(fmt.Errorf("gateway: not an API Gateway answer: %.200s", raw), err)
	}
	out := []byte(ar.Body)
	if ar.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(ar.Body); err != nil {
			return nil, err
		}
	}
	h := http.Header{}
	for k, v := range ar.Headers {
		h.Set(k, v)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", ar.StatusCode, http.StatusText(ar.StatusCode)), StatusCode: ar.StatusCode,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out)), Request: req,
	}, nil
}
