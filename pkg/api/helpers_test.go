package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/server"
)

// testServer is the API as the local server serves it: server.Open's
// handler (the one `tierlog serve` and the Lambda functions run, /metrics
// included) over a real broker and a real embedded meta store, so what a
// client sees is what these tests see.
type testServer struct {
	*httptest.Server
	root string // every file of the server lives under it
	t    *testing.T
}

func newServer(t *testing.T) *testServer {
	t.Helper()
	root := t.TempDir()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.Open(context.Background(), server.Config{DataDir: root, CompactInterval: -1, Logger: log})
	if err != nil {
		t.Fatalf("server.Open: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	// A redirect is never a documented answer: see it instead of following.
	srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t.Cleanup(func() {
		srv.Close() // waits for in-flight requests
		if err := s.Close(); err != nil {
			t.Errorf("server.Close: %v", err)
		}
	})
	return &testServer{Server: srv, root: root, t: t}
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends method path (raw: it is appended to the server URL as is) with
// body: nil, a string or []byte sent verbatim, or anything else as JSON.
// It checks what every answer must have: an X-Request-Id, and
// Content-Type application/json whenever there is a body.
func (s *testServer) do(method, path string, body any) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			s.t.Fatalf("marshal body: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatalf("new request %s %s: %v", method, path, err)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if res.Header.Get("X-Request-Id") == "" {
		s.t.Errorf("%s %s: no X-Request-Id header", method, path)
	}
	if len(data) > 0 && method != http.MethodHead {
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			s.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
		}
		if !json.Valid(data) {
			s.t.Errorf("%s %s: body is not JSON: %.200q", method, path, data)
		}
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// ok sends a request that must answer want, and decodes the body into out
// (if not nil).
func (s *testServer) ok(method, path string, body any, want int, out any) response {
	s.t.Helper()
	r := s.do(method, path, body)
	if r.status != want {
		s.t.Fatalf("%s %s: status %d, want %d; body %.300s", method, path, r.status, want, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			s.t.Fatalf("%s %s: decode %.300s: %v", method, path, r.body, err)
		}
	}
	return r
}

// checkError checks that r is the documented error answer: status, code,
// and exactly docs/api.md's shape, {"error":{"code","message"}} (plus the two
// offsets for 416). It returns the message.
func checkError(t *testing.T, what string, r response, status int, code string) string {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d; body %.300s", what, r.status, status, r.body)
		return ""
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &top); err != nil {
		t.Errorf("%s: body %.300q is not a JSON object: %v", what, r.body, err)
		return ""
	}
	wantKeys := []string{"error"}
	if status == http.StatusRequestedRangeNotSatisfiable {
		wantKeys = []string{"error", "high_watermark", "log_start_offset"}
		for _, k := range wantKeys[1:] {
			var n int64
			if err := json.Unmarshal(top[k], &n); err != nil {
				t.Errorf("%s: %s = %s is not an integer", what, k, top[k])
			}
		}
	}
	if got := sortedKeys(top); !slices.Equal(got, wantKeys) {
		t.Errorf("%s: top-level keys %v, want %v", what, got, wantKeys)
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Errorf("%s: error %s is not an object", what, top["error"])
		return ""
	}
	if got := sortedKeys(e); !slices.Equal(got, []string{"code", "message"}) {
		t.Errorf("%s: error keys %v, want [code message]", what, got)
	}
	var gotCode, msg string
	if json.Unmarshal(e["code"], &gotCode) != nil || json.Unmarshal(e["message"], &msg) != nil {
		t.Errorf("%s: code %s or message %s is not a string", what, e["code"], e["message"])
	}
	if gotCode != code {
		t.Errorf("%s: code %q, want %q (message %q)", what, gotCode, code, msg)
	}
	if msg == "" {
		t.Errorf("%s: empty message", what)
	}
	if status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", what)
	}
	return msg
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// dirs lists every directory under root, relative to it.
func dirs(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}

// Wire shapes used by the tests.

type topicJSON struct {
	Name           string `json:"name"`
	Partitions     int    `json:"partitions"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionBytes int64  `json:"retention_bytes"`
	SegmentBytes   int64  `json:"segment_bytes"`
	SegmentMs      int64  `json:"segment_ms"`
	CleanupPolicy  string `json:"cleanup_policy"`
}

type produceOffset struct {
	Partition int    `json:"partition"`
	Offset    *int64 `json:"offset"`
	Timestamp *int64 `json:"timestamp"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type produceResponse struct {
	Offsets           []produceOffset `json:"offsets"`
	FailedRecordCount *int            `json:"failed_record_count"`
}

// fetchRecord keeps key and value raw, to tell null from "".
type fetchRecord struct {
	Offset        int64           `json:"offset"`
	Timestamp     int64           `json:"timestamp"`
	Key           json.RawMessage `json:"key"`
	KeyEncoding   string          `json:"key_encoding"`
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding"`
}

type fetchResponse struct {
	Records        []fetchRecord `json:"records"`
	NextOffset     int64         `json:"next_offset"`
	HighWatermark  int64         `json:"high_watermark"`
	LogStartOffset int64         `json:"log_start_offset"`
}

type offsetsResponse struct {
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

type groupOffset struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
	Lag       int64  `json:"lag"`
}

type groupOffsets struct {
	Offsets []groupOffset `json:"offsets"`
}

// createTopic creates a topic with n partitions.
func (s *testServer) createTopic(name string, n int) {
	s.t.Helper()
	s.ok("POST", "/v1/topics", map[string]any{"name": name, "partitions": n}, http.StatusCreated, nil)
}

// produce sends records (as JSON objects) to a topic and returns the answer.
func (s *testServer) produce(topic string, body any) produceResponse {
	s.t.Helper()
	var out produceResponse
	s.ok("POST", "/v1/topics/"+topic+"/records", body, http.StatusOK, &out)
	return out
}

func (s *testServer) fetch(path string) fetchResponse {
	s.t.Helper()
	var out fetchResponse
	r := s.ok("GET", path, nil, http.StatusOK, &out)
	if bytes.Contains(r.body, []byte(`"records":null`)) {
		s.t.Errorf("GET %s: records is null, want an array", path)
	}
	return out
}

// str decodes a raw JSON string, failing on anything else.
func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		t.Fatalf("%s is not a JSON string", raw)
	}
	return *s
}
