package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
)

// listening is a local server on a real listener on 127.0.0.1, served by
// the same http.Server `tierlog serve` runs.
type listening struct {
	*server.Server
	addr string
}

// listen opens a local-backend server with cfg (DataDir and the logger
// filled in) and serves it until the test ends.
func listen(t *testing.T, cfg server.Config) *listening {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.CompactInterval = -1
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		if err := hs.Close(); err != nil {
			t.Errorf("http close: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return &listening{Server: s, addr: ln.Addr().String()}
}

// raw sends req (a whole HTTP/1.1 request head, and maybe part of a body)
// on a fresh connection and returns the connection and a reader of it.
// The connection has a deadline far beyond anything the server waits for,
// so a server that never answers fails the test instead of hanging it.
func (l *listening) raw(t *testing.T, req string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", l.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// errorCode reads an API error answer's code.
func errorCode(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatalf("answer %q: %v", data, err)
	}
	t.Logf("%d %s: %s", res.StatusCode, body.Error.Code, body.Error.Message)
	return body.Error.Code
}

// untilClosed reads the connection to its end: the server closed it. A
// reset counts: a server closing a connection with unread bytes of ours
// in its buffer resets it.
func untilClosed(t *testing.T, r *bufio.Reader) {
	t.Helper()
	if _, err := io.Copy(io.Discard, r); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

func highWatermark(t *testing.T, s *server.Server, topic string) int64 {
	t.Helper()
	o, err := s.Broker.Offsets(context.Background(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return o.HighWatermark
}

// TestSlowBodyIsCut is robustness.md 3.4: a body trickled in (here: part of
// it, then nothing) is cut at the body read timeout with 408, the
// connection is closed, and nothing of it is appended.
func TestSlowBodyIsCut(t *testing.T) {
	t.Parallel()
	l := listen(t, server.Config{BodyReadTimeout: 300 * time.Millisecond})
	if _, err := l.Broker.CreateTopic(context.Background(), broker.TopicSpec{Name: "slow"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/topics/slow/partitions/0/records", "/v1/topics/slow/records", "/v1/topics"} {
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", path)
		_, r := l.raw(t, head+`{"records":[{"value":"never finished"}`)
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", path, err)
		}
		if res.StatusCode != http.StatusRequestTimeout || errorCode(t, res) != "request_timeout" {
			t.Errorf("%s: status %d, want 408 request_timeout", path, res.StatusCode)
		}
		untilClosed(t, r)
	}
	// A trickle (robustness.md: 1 byte every 4 s held a connection
	// forever) is cut as well: the timeout bounds the whole body, not the
	// gap between two bytes.
	head := "POST /v1/topics/slow/partitions/0/records HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
	c, r := l.raw(t, head)
	trickling := make(chan struct{})
	go func() {
		defer close(trickling)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := c.Write([]byte(" ")); err != nil {
				return // the server closed the connection
			}
		}
	}()
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("trickle: no answer: %v", err)
	}
	if res.StatusCode != http.StatusRequestTimeout || errorCode(t, res) != "request_timeout" {
		t.Errorf("trickle: status %d, want 408 request_timeout", res.StatusCode)
	}
	untilClosed(t, r)
	c.Close()
	<-trickling
	if hw := highWatermark(t, l.Server, "slow"); hw != 0 {
		t.Errorf("high watermark %d after cut bodies, want 0", hw)
	}

	// A body that arrives in time is served, and the connection stays
	// usable: the deadline was for that body only.
	body := `{"records":[{"value":"in time"}]}`
	req := fmt.Sprintf("POST /v1/topics/slow/partitions/0/records HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c, r = l.raw(t, req)
	for i := range 2 {
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("answer %d: status %d", i, res.StatusCode)
		}
		if i == 0 {
			if _, err := io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hw := highWatermark(t, l.Server, "slow"); hw != 1 {
		t.Errorf("high watermark %d, want 1", hw)
	}
}

// TestExpectContinueTooLarge: a body announced larger than 5 MiB with
// "Expect: 100-continue" is refused with 413 before a byte of it is
// asked for: no "100 Continue".
func TestExpectContinueTooLarge(t *testing.T) {
	t.Parallel()
	l := listen(t, server.Config{})
	if _, err := l.Broker.CreateTopic(context.Background(), broker.TopicSpec{Name: "big"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/topics/big/records", "/v1/topics/big/partitions/0/records", "/v1/topics", "/v1/groups/g/offsets"} {
		method := "POST"
		if strings.HasPrefix(path, "/v1/groups") {
			method = "PUT"
		}
		_, r := l.raw(t, method+" "+path+" HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"+
			"Content-Length: 10737418240\r\nExpect: 100-continue\r\n\r\n")
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", path, err)
		}
		if res.StatusCode != http.StatusRequestEntityTooLarge || errorCode(t, res) != "payload_too_large" {
			t.Errorf("%s %s: status %d, want 413 payload_too_large", method, path, res.StatusCode)
		}
		untilClosed(t, r)
	}
	if hw := highWatermark(t, l.Server, "big"); hw != 0 {
		t.Errorf("high watermark %d, want 0", hw)
	}
}

// TestLongTopicNameEndToEnd is robustness.md 3.3: topic names of 239 to
// 249 characters (the longest the name rule allows) work on every route:
// 201, 200, 200, 204.
func TestLongTopicNameEndToEnd(t *testing.T) {
	t.Parallel()
	l := listen(t, server.Config{})
	for _, n := range []int{238, 239, 249} {
		longTopic(t, "http://"+l.addr, strings.Repeat("n", n-1)+"x")
	}
}

func longTopic(t *testing.T, base, name string) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string, want int) string {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %.60s...: status %d, want %d; body %.300s", method, path, res.StatusCode, want, data)
		}
		return string(data)
	}
	do("POST", "/v1/topics", `{"name":"`+name+`","partitions":2}`, http.StatusCreated)
	do("POST", "/v1/topics/"+name+"/partitions/1/records", `{"records":[{"key":"k","value":"long"}]}`, http.StatusOK)
	if got := do("POST", "/v1/topics/"+name+"/records", `{"records":[{"value":"a","partition":0}]}`, http.StatusOK); strings.Contains(got, `"error"`) {
		t.Errorf("produce: %s", got)
	}
	if got := do("GET", "/v1/topics/"+name+"/partitions/1/records?offset=0", "", http.StatusOK); !strings.Contains(got, `"value":"long"`) {
		t.Errorf("fetch: %s", got)
	}
	do("GET", "/v1/topics/"+name+"/partitions/0/records?offset=0", "", http.StatusOK)
	do("DELETE", "/v1/topics/"+name, "", http.StatusNoContent)
	do("GET", "/v1/topics/"+name, "", http.StatusNotFound)
}

// TestDamagedRecordsEndToEnd: a record damaged on disk (one flipped byte
// of its value) is answered per docs/api.md: a fetch before it
// gets the good records up to it, a fetch at it 500 corrupt_record with
// next_offset (and no server path), a fetch from next_offset works.
func TestDamagedRecordsEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *server.Server {
		s, err := server.Open(ctx, server.Config{DataDir: dir, CompactInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "ft"}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		rec := broker.ProduceRecord{Value: []byte(fmt.Sprintf("value-%02d", i))}
		if _, err := s.Broker.ProducePartition(ctx, "ft", 0, []broker.ProduceRecord{rec}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flipped := 0
	err := filepath.WalkDir(filepath.Join(dir, "topics"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if i := bytes.Index(b, []byte("value-15")); i >= 0 {
			b[i+6] ^= 0xff
			flipped++
			return os.WriteFile(p, b, 0o644)
		}
		return nil
	})
	if err != nil || flipped != 1 {
		t.Fatalf("corrupting record 15: %v (%d files)", err, flipped)
	}

	s = open()
	t.Cleanup(func() { s.Close() })
	h := s.Handler()
	get := func(offset int64) (int, map[string]json.RawMessage) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", fmt.Sprintf("/v1/topics/ft/partitions/0/records?offset=%d&max_records=100", offset), nil))
		var body map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("offset %d: %s: %v", offset, w.Body, err)
		}
		if strings.Contains(w.Body.String(), dir) || strings.Contains(w.Body.String(), ".log") {
			t.Errorf("offset %d: the answer shows server files: %s", offset, w.Body)
		}
		return w.Code, body
	}
	status, body := get(0)
	var recs []struct{ Offset int64 }
	if err := json.Unmarshal(body["records"], &recs); status != 200 || err != nil || len(recs) != 15 || string(body["next_offset"]) != "15" {
		t.Fatalf("fetch before the damage: %d, %d records, next_offset %s", status, len(recs), body["next_offset"])
	}
	status, body = get(15)
	var e struct{ Code, Message string }
	_ = json.Unmarshal(body["error"], &e)
	var next int64
	if err := json.Unmarshal(body["next_offset"], &next); status != 500 || e.Code != "corrupt_record" || err != nil || next <= 15 || next > 30 {
		t.Fatalf("fetch at the damage: %d %+v next_offset %s", status, e, body["next_offset"])
	}
	t.Logf("corrupt_record: %s; next_offset %d", e.Message, next)
	if status, body = get(next); status != 200 {
		t.Fatalf("fetch from next_offset %d: %d %s", next, status, body["error"])
	}
}

// TestErrorAnswerAfterWholeBody: a client that sends its whole body
// before reading (as most HTTP libraries do) reads the error answer in
// docs/api.md's shape, never a reset: an oversized body (announced by its
// length or chunked) and a request refused before its body is read (a bad
// topic name or partition, an unknown route, a method the route does not
// have) alike. A body past what the server drains is cut, and the server
// goes on serving.
func TestErrorAnswerAfterWholeBody(t *testing.T) {
	t.Parallel()
	l := listen(t, server.Config{})
	if _, err := l.Broker.CreateTopic(context.Background(), broker.TopicSpec{Name: "big"}); err != nil {
		t.Fatal(err)
	}
	body := `{"records":[{"value":"` + strings.Repeat("x", 8<<20) + `"}]}`
	for _, c := range []struct {
		method, path string
		chunked      bool
		status       int
		code         string
	}{
		{"POST", "/v1/topics/big/records", false, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"POST", "/v1/topics/big/records", true, http.StatusRequestEntityTooLarge, "payload_too_large"},
		{"POST", "/v1/topics/bad!name/records", false, http.StatusBadRequest, "invalid_request"},
		{"POST", "/v1/topics/big/partitions/x/records", true, http.StatusBadRequest, "invalid_request"},
		{"POST", "/v2/nothing", false, http.StatusNotFound, "not_found"},
		{"PUT", "/v1/topics/big/records", false, http.StatusMethodNotAllowed, "method_not_allowed"},
	} {
		name := fmt.Sprintf("%s %s (chunked %v)", c.method, c.path, c.chunked)
		c0, err := net.Dial("tcp", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		c0.SetDeadline(time.Now().Add(30 * time.Second))
		head := c.method + " " + c.path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
		msg := head + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
		if c.chunked {
			msg = head + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n", len(body)) + body + "\r\n0\r\n\r\n"
		}
		if _, err := io.WriteString(c0, msg); err != nil {
			t.Errorf("%s: the server closed the connection under the upload: %v", name, err)
			c0.Close()
			continue
		}
		res, err := http.ReadResponse(bufio.NewReader(c0), nil)
		if err != nil {
			t.Errorf("%s: no answer after sending the body: %v", name, err)
		} else if code := errorCode(t, res); res.StatusCode != c.status || code != c.code {
			t.Errorf("%s: %d %s, want %d %s", name, res.StatusCode, code, c.status, c.code)
		}
		c0.Close()
	}
	// Far more than the server drains: cut, and the server still answers.
	c, err := net.Dial("tcp", l.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "POST /v1/topics/big/records HTTP/1.1\r\nHost: test\r\nContent-Length: 1073741824\r\n\r\n")
	chunk := []byte(strings.Repeat("x", 1<<20))
	sent := 0
	for ; sent < 1024; sent++ {
		if _, err := c.Write(chunk); err != nil {
			break
		}
	}
	c.Close()
	if sent == 1024 {
		t.Errorf("the server read a 1 GiB body to its end")
	}
	if hw := highWatermark(t, l.Server, "big"); hw != 0 {
		t.Errorf("high watermark %d, want 0", hw)
	}
	t.Logf("a 1 GiB body was cut after %d MiB were sent", sent)
}
