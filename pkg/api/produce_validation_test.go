package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/wire"
)

// doHeader is testServer.do with request headers (values set with Add, so
// a key given twice is sent twice).
func (s *testServer) doHeader(method, path string, body any, header http.Header) response {
	s.t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			s.t.Fatalf("marshal body: %v", err)
		}
	}
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(data))
	if err != nil {
		s.t.Fatalf("new request %s %s: %v", method, path, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	res, err := s.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: out}
}

// highWatermarks returns each partition's high watermark.
func (s *testServer) highWatermarks(topic string, partitions int) []int64 {
	s.t.Helper()
	hws := make([]int64, partitions)
	for p := range hws {
		var o offsetsResponse
		s.ok("GET", fmt.Sprintf("/v1/topics/%s/partitions/%d/offsets", topic, p), nil, http.StatusOK, &o)
		hws[p] = o.HighWatermark
	}
	return hws
}

func keyHeader(vs ...string) http.Header { return http.Header{"Idempotency-Key": vs} }

// checkNothingAppended fails unless every partition of topic is empty.
func (s *testServer) checkNothingAppended(topic string, partitions int) {
	s.t.Helper()
	for p, hw := range s.highWatermarks(topic, partitions) {
		if hw != 0 {
			s.t.Errorf("topic %s partition %d: high watermark %d after refused requests, want 0", topic, p, hw)
		}
	}
}

const (
	multiRoute  = "/v1/topics/v/records"
	singleRoute = "/v1/topics/v/partitions/1/records"
	oneRecord   = `{"records":[{"key":"k","value":"v"}]}`
)

// TestProduceIdempotencyKeyValidation: a malformed Idempotency-Key is
// 400 invalid_request naming the header and what is wrong, on both
// routes, and nothing is appended.
func TestProduceIdempotencyKeyValidation(t *testing.T) {
	s := newServer(t)
	s.createTopic("v", 2)
	cases := []struct {
		name   string
		header http.Header
		says   string
	}{
		{"empty", keyHeader(""), "empty"},
		{"256 characters", keyHeader(strings.Repeat("k", 256)), "256 characters, at most 255"},
		{"tab", keyHeader("a\tb"), "non-printable character at position 1 (byte 0x09)"},
		{"non-ASCII", keyHeader("caf\xc3\xa9"), "non-printable character at position 3 (byte 0xc3)"},
		{"repeated, different", keyHeader("a", "b"), "different values"},
	}
	for _, c := range cases {
		for _, path := range []string{multiRoute, singleRoute} {
			what := c.name + " " + path
			r := s.doHeader("POST", path, oneRecord, c.header)
			msg := checkError(t, what, r, http.StatusBadRequest, "invalid_request")
			if !strings.Contains(msg, "Idempotency-Key") || !strings.Contains(msg, c.says) {
				t.Errorf("%s: message %q does not say Idempotency-Key ... %q", what, msg, c.says)
			}
		}
	}
	s.checkNothingAppended("v", 2)
}

// TestProduceIdempotencyKeyControlBytes: control characters and DEL never
// reach the handler over HTTP/1.1 (net/http's server refuses the request
// itself, with a 400 of its own); where something in front of the handler
// lets them through (API Gateway's event, here the handler called
// directly), the handler refuses them in docs/api.md's shape. Either way
// nothing is appended.
func TestProduceIdempotencyKeyControlBytes(t *testing.T) {
	s := newServer(t)
	s.createTopic("v", 2)
	for _, key := range []string{"a\x01b", "ab\x7f", "\x00", "a\x1fb"} {
		for _, path := range []string{multiRoute, singleRoute} {
			what := fmt.Sprintf("key %q %s", key, path)
			// Over the wire: net/http's own 400.
			if status := rawProduce(t, s.Listener.Addr().String(), path, key, oneRecord); status != http.StatusBadRequest {
				t.Errorf("%s over TCP: status %d, want 400", what, status)
			}
			// Straight to the handler.
			req := httptest.NewRequest("POST", path, strings.NewReader(oneRecord))
			req.Header["Idempotency-Key"] = []string{key}
			w := httptest.NewRecorder()
			s.Config.Handler.ServeHTTP(w, req)
			msg := checkError(t, what+" to the handler", response{status: w.Code, header: w.Header(), body: w.Body.Bytes()},
				http.StatusBadRequest, "invalid_request")
			if !strings.Contains(msg, "Idempotency-Key has a non-printable character") {
				t.Errorf("%s: message %q", what, msg)
			}
		}
	}
	s.checkNothingAppended("v", 2)
}

// rawProduce sends a produce with an Idempotency-Key header of any bytes
// over a plain TCP connection (net/http's client refuses to send such
// headers) and returns the status.
func rawProduce(t *testing.T, addr, path, key, body string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, addr, key, len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// TestProduceExpectedOffsetValidation: expected_offset must be a
// non-negative integer that fits an int64, in the JSON body or the query
// (not both), and only on the single-partition route; anything else is
// 400 invalid_request naming expected_offset, and nothing is appended.
func TestProduceExpectedOffsetValidation(t *testing.T) {
	s := newServer(t)
	s.createTopic("v", 2)
	withExpected := func(raw string) string {
		return `{"records":[{"key":"k","value":"v"}],"expected_offset":` + raw + `}`
	}
	bin, err := wire.AppendProduceRequest(nil, 1, func(int) wire.Record {
		return wire.Record{Key: []byte("k"), Value: []byte("v"), Partition: -1}
	})
	if err != nil {
		t.Fatal(err)
	}
	binHeader := http.Header{"Content-Type": {wire.MediaType}}
	type req struct {
		what   string
		path   string
		body   any
		header http.Header
		says   string
	}
	var cases []req
	for _, raw := range []string{"-1", "1.5", `"3"`, "1e30", "9223372036854775808", "true", "{}", "[0]", "0.0", "1E2"} {
		cases = append(cases, req{"body " + raw, singleRoute, withExpected(raw), nil, "expected_offset"})
	}
	for _, raw := range []string{"-1", "1.5", "3x", "1e30", "9223372036854775808", "", "+1", "0x10"} {
		q := "?expected_offset=" + url.QueryEscape(raw)
		cases = append(cases,
			req{"query " + raw, singleRoute + q, oneRecord, nil, "expected_offset"},
			req{"binary, query " + raw, singleRoute + q, bin, binHeader, "expected_offset"})
	}
	cases = append(cases,
		req{"query twice", singleRoute + "?expected_offset=0&expected_offset=0", oneRecord, nil, "expected_offset is given 2 times"},
		req{"query and body", singleRoute + "?expected_offset=0", withExpected("0"), nil, "both in the query (0) and in the body (0)"},
		req{"body twice", singleRoute, `{"expected_offset":0,"records":[{"value":"v"}],"expected_offset":0}`, nil, "expected_offset is given twice"},
		req{"multi-partition body", multiRoute, withExpected("0"), nil, "expected_offset is only allowed on the single-partition route"},
		req{"multi-partition query", multiRoute + "?expected_offset=0", oneRecord, nil, "expected_offset is only allowed on the single-partition route"},
		req{"multi-partition binary query", multiRoute + "?expected_offset=0", bin, binHeader, "expected_offset is only allowed on the single-partition route"},
	)
	for _, c := range cases {
		r := s.doHeader("POST", c.path, c.body, c.header)
		msg := checkError(t, c.what, r, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(msg, c.says) {
			t.Errorf("%s: message %q does not say %q", c.what, msg, c.says)
		}
	}
	s.checkNothingAppended("v", 2)
}
