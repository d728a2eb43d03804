package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/server"
)

// sseServer is the local server (server.Open's handler) over a real
// listener on 127.0.0.1, with a short keep-alive; hs may adjust the
// http.Server before it starts.
type sseServer struct {
	*httptest.Server
	s *server.Server
	t *testing.T
}

func newSSEServer(t *testing.T, cfg server.Config, hs func(*http.Server)) *sseServer {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.CompactInterval = -1
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if cfg.StreamKeepAlive == 0 {
		cfg.StreamKeepAlive = 50 * time.Millisecond
	}
	s, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("server.Open: %v", err)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config = s.HTTPServer()
	if hs != nil {
		hs(srv.Config)
	}
	srv.Start()
	t.Cleanup(func() {
		s.EndStreams() // a stream left open would keep Close waiting
		srv.Close()
		if err := s.Close(); err != nil {
			t.Errorf("server.Close: %v", err)
		}
	})
	return &sseServer{Server: srv, s: s, t: t}
}

func (s *sseServer) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s.t.Cleanup(cancel)
	return ctx
}

// call sends a JSON request and checks its status.
func (s *sseServer) call(method, path, body string, want int) []byte {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx(), method, s.URL+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
	}
	return b
}

func (s *sseServer) produce(topic string, values ...string) {
	s.t.Helper()
	var recs []string
	for _, v := range values {
		recs = append(recs, fmt.Sprintf(`{"key":"k","value":%q}`, v))
	}
	s.call("POST", "/v1/topics/"+topic+"/partitions/0/records", `{"records":[`+strings.Join(recs, ",")+`]}`, 200)
}

// sseEvent is one event of a stream, or a comment (comment true).
type sseEvent struct {
	id, event, data string
	comment         bool
}

// sseStream is an open event stream.
type sseStream struct {
	res    *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
	t      *testing.T
}

// open sends a streaming fetch; hdr adds headers. An answer that is not
// a 200 event stream is returned as status and body with a nil stream.
func (s *sseServer) open(query string, hdr map[string]string) (*sseStream, int, []byte) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(s.ctx())
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/topics/t/partitions/0/records?"+query, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		cancel()
		s.t.Fatalf("open stream: %v", err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		defer cancel()
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return nil, res.StatusCode, b
	}
	st := &sseStream{res: res, r: bufio.NewReader(res.Body), cancel: cancel, t: s.t}
	s.t.Cleanup(st.close)
	return st, 200, nil
}

func (st *sseStream) close() {
	st.cancel()
	st.res.Body.Close()
}

// next reads the next event or comment.
func (st *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := st.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		seen = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			ev.comment, ev.data = true, strings.TrimSpace(c)
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "id":
			ev.id = v
		case "event":
			ev.event = v
		case "data":
			ev.data = v
		default:
			st.t.Fatalf("unexpected field %q", line)
		}
	}
}

// records reads n record events (skipping comments) and returns them.
func (st *sseStream) records(n int) []sseEvent {
	st.t.Helper()
	var out []sseEvent
	for len(out) < n {
		ev, err := st.next()
		if err != nil {
			st.t.Fatalf("after %d of %d records: %v", len(out), n, err)
		}
		if ev.comment {
			continue
		}
		if ev.event != "record" {
			st.t.Fatalf("event %q (%s), want record", ev.event, ev.data)
		}
		out = append(out, ev)
	}
	return out
}

// untilComment reads until a comment and fails on any event before it.
func (st *sseStream) untilComment() {
	st.t.Helper()
	ev, err := st.next()
	if err != nil {
		st.t.Fatalf("waiting for a comment: %v", err)
	}
	if !ev.comment {
		st.t.Fatalf("event %+v before the keep-alive comment", ev)
	}
	if ev.data != "keep-alive" {
		st.t.Fatalf("comment %q", ev.data)
	}
}

// fetchRecords is a plain fetch's records, each as its raw JSON.
func (s *sseServer) fetchRecords(query string) []json.RawMessage {
	s.t.Helper()
	var body struct {
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(s.call("GET", "/v1/topics/t/partitions/0/records?"+query, "", 200), &body); err != nil {
		s.t.Fatal(err)
	}
	return body.Records
}

func checkOffsets(t *testing.T, evs []sseEvent, from int64) {
	t.Helper()
	for i, ev := range evs {
		if want := strconv.FormatInt(from+int64(i), 10); ev.id != want {
			t.Fatalf("event %d: id %q, want %s", i, ev.id, want)
		}
		var rec struct {
			Offset int64 `json:"offset"`
		}
		if err := json.Unmarshal([]byte(ev.data), &rec); err != nil || rec.Offset != from+int64(i) {
			t.Fatalf("event %d: data %s (%v), want offset %d", i, ev.data, err, from+int64(i))
		}
	}
}

func TestStreamEventsInOrderAcrossCommits(t *testing.T) {
	s := newSSEServer(t, server.Config{}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	s.produce("t", "a", "b <&> \u2028", "c")
	// A value that is not UTF-8 and a tombstone, as the fetch renders them.
	s.call("POST", "/v1/topics/t/partitions/0/records", `{"encoding":"base64","records":[{"key":"/w==","value":"gA=="},{"value":null}]}`, 200)

	for _, enc := range []string{"utf8", "base64"} {
		t.Run(enc, func(t *testing.T) {
			st, code, body := s.open("offset=1&max_records=2&encoding="+enc, nil)
			if st == nil {
				t.Fatalf("%d %s", code, body)
			}
			evs := st.records(4)
			checkOffsets(t, evs, 1)
			want := s.fetchRecords("offset=1&encoding=" + enc)
			for i, ev := range evs {
				if ev.data != string(want[i]) {
					t.Errorf("offset %d: stream data %s, fetch record %s", i+1, ev.data, want[i])
				}
			}
		})
	}

	// Commits made while the stream waits arrive in order, none twice.
	st, _, _ := s.open("offset=5", nil)
	for round := 0; round < 5; round++ {
		st.untilComment() // the stream is idle at the high watermark
		s.produce("t", fmt.Sprint("r", round, "x"), fmt.Sprint("r", round, "y"))
		checkOffsets(t, st.records(2), int64(5+2*round))
	}
	if got := s.s.Streams.Started(); got < 3 {
		t.Errorf("Started %d, want at least 3", got)
	}
}

func TestStreamLastEventID(t *testing.T) {
	s := newSSEServer(t, server.Config{}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	s.produce("t", "0", "1", "2", "3", "4")

	// Last-Event-ID wins over offset: the stream starts after it.
	st, code, body := s.open("offset=0", map[string]string{"Last-Event-ID": "2"})
	if st == nil {
		t.Fatalf("%d %s", code, body)
	}
	checkOffsets(t, st.records(2), 3)
	st.close()

	// After the last record: nothing until the next commit.
	st, _, _ = s.open("offset=0", map[string]string{"Last-Event-ID": "4"})
	st.untilComment()
	s.produce("t", "5")
	checkOffsets(t, st.records(1), 5)

	for _, tc := range []struct {
		query, id string
		status    int
		code      string
	}{
		{"offset=0", "x", 400, "invalid_request"},
		{"offset=0", "-1", 400, "invalid_request"},
		{"offset=0", "1.5", 400, "invalid_request"},
		{"offset=0", "9223372036854775807", 400, "invalid_request"},
		{"offset=x", "", 400, "invalid_request"},
		{"", "", 400, "invalid_request"},
		{"offset=0", "6", 416, "offset_out_of_range"}, // after 6 is 7 > high watermark 6
		{"offset=7", "", 416, "offset_out_of_range"},
		{"offset=0&max_records=0", "", 400, "invalid_request"},
	} {
		hdr := map[string]string{}
		if tc.id != "" {
			hdr["Last-Event-ID"] = tc.id
		}
		st, code, body := s.open(tc.query, hdr)
		if st != nil {
			t.Fatalf("%q Last-Event-ID %q: a stream, want %d", tc.query, tc.id, tc.status)
		}
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
			LogStartOffset *int64 `json:"log_start_offset"`
			HighWatermark  *int64 `json:"high_watermark"`
		}
		if err := json.Unmarshal(body, &e); err != nil || code != tc.status || e.Error.Code != tc.code {
			t.Errorf("%q Last-Event-ID %q: %d %s, want %d %s", tc.query, tc.id, code, body, tc.status, tc.code)
		}
		if tc.status == 416 && (e.HighWatermark == nil || *e.HighWatermark != 6 || e.LogStartOffset == nil) {
			t.Errorf("416 without both offsets: %s", body)
		}
	}

	// Unknown topic: the plain fetch's 404, before any stream.
	req, _ := http.NewRequest("GET", s.URL+"/v1/topics/nope/partitions/0/records?offset=0", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 404 || !bytes.Contains(b, []byte("topic_not_found")) {
		t.Errorf("unknown topic: %d %s", res.StatusCode, b)
	}
}

func TestStreamDisconnectFreesTheStream(t *testing.T) {
	s := newSSEServer(t, server.Config{}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	stats := s.s.Streams
	var streams []*sseStream
	for range 3 {
		st, _, _ := s.open("offset=0", nil)
		st.untilComment()
		streams = append(streams, st)
	}
	if err := stats.WaitActive(s.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	for i, st := range streams {
		st.close() // the client goes away
		if err := stats.WaitActive(s.ctx(), int64(2-i)); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing of them is left: a delete (which waits for reads of the
	// topic) goes through, and a new stream works.
	s.call("DELETE", "/v1/topics/t", "", 204)
}

func TestStreamEndsWithErrorEvent(t *testing.T) {
	s := newSSEServer(t, server.Config{}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	s.produce("t", "a")
	st, _, _ := s.open("offset=0", nil)
	st.records(1)
	st.untilComment()
	s.call("DELETE", "/v1/topics/t", "", 204)
	ev := nextNonComment(t, st)
	if ev.event != "error" || !strings.Contains(ev.data, `"code":"topic_not_found"`) {
		t.Fatalf("after delete: %+v, want an error event topic_not_found", ev)
	}
	if _, err := st.next(); err != io.EOF {
		t.Fatalf("after the error event: %v, want the end of the stream", err)
	}

	// Shutdown: every stream ends with unavailable, and Shutdown does not
	// wait for them.
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	st, _, _ = s.open("offset=0", nil)
	st.untilComment()
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Config.Shutdown(shut); err != nil {
		t.Fatalf("Shutdown with a stream open: %v", err)
	}
	ev = nextNonComment(t, st)
	var e struct {
		Error struct{ Code, Message string }
	}
	if ev.event != "error" || json.Unmarshal([]byte(ev.data), &e) != nil || e.Error.Code != "unavailable" {
		t.Fatalf("after shutdown: %+v, want an error event unavailable", ev)
	}
	if err := s.s.Streams.WaitActive(s.ctx(), 0); err != nil {
		t.Fatal(err)
	}
}

func nextNonComment(t *testing.T, st *sseStream) sseEvent {
	t.Helper()
	for {
		ev, err := st.next()
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if !ev.comment {
			return ev
		}
	}
}

// A stream outlives the http.Server's WriteTimeout and the body-read
// timeout: it is read for several times either, then still delivers.
func TestStreamOutlivesWriteAndBodyTimeouts(t *testing.T) {
	const limit = 150 * time.Millisecond
	s := newSSEServer(t, server.Config{BodyReadTimeout: limit}, func(hs *http.Server) { hs.WriteTimeout = limit })
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)

	// A body (which the stream discards) arms the body-read deadline.
	ctx, cancel := context.WithCancel(s.ctx())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/topics/t/partitions/0/records?offset=0", strings.NewReader("ignored"))
	req.Header.Set("Accept", "text/event-stream")
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	st := &sseStream{res: res, r: bufio.NewReader(res.Body), cancel: cancel, t: t}
	start := time.Now()
	for time.Since(start) < 4*limit {
		st.untilComment()
	}
	s.produce("t", "late")
	checkOffsets(t, st.records(1), 0)
}

// Without streaming (the Lambda functions' setting) the same request is a
// plain fetch.
func TestStreamDisabledAnswersPlainFetch(t *testing.T) {
	s := newSSEServer(t, server.Config{DisableStreaming: true}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	s.produce("t", "a")
	st, code, body := s.open("offset=0", nil)
	if st != nil {
		t.Fatal("a stream with streaming disabled")
	}
	if code != 200 || !bytes.Contains(body, []byte(`"next_offset":1`)) {
		t.Fatalf("%d %s, want the plain fetch", code, body)
	}
	if s.s.Streams != nil {
		t.Error("Streams counted with streaming disabled")
	}
}

// TestDeleteEndsStreamsAndLongPolls: a topic delete with 20 idle streams
// and 5 long-polls waiting on it (the streams for their 15 s keep-alive,
// the long-polls for wait_ms=20000) does not wait for them: it answers,
// every stream ends with a topic_not_found error event and every
// long-poll answers 404 topic_not_found, well before any keep-alive or
// wait_ms was due.
func TestDeleteEndsStreamsAndLongPolls(t *testing.T) {
	s := newSSEServer(t, server.Config{StreamKeepAlive: 15 * time.Second}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	const nStreams, nPolls = 20, 5
	var streams []*sseStream
	for range nStreams {
		st, code, body := s.open("offset=0", nil)
		if st == nil {
			t.Fatalf("open: %d %s", code, body)
		}
		streams = append(streams, st)
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	polls := make(chan answer, nPolls)
	// Far below wait_ms: a long-poll that waits it out fails here.
	pollCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range nPolls {
		go func() {
			req, _ := http.NewRequestWithContext(pollCtx, "GET", s.URL+"/v1/topics/t/partitions/0/records?offset=0&wait_ms=20000", nil)
			res, err := s.Client().Do(req)
			if err != nil {
				polls <- answer{err: err}
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			polls <- answer{res.StatusCode, b, err}
		}()
	}
	waitForLongPolls(t, nStreams+nPolls)
	start := time.Now()
	s.call("DELETE", "/v1/topics/t", "", 204)
	took := time.Since(start)
	for i, st := range streams {
		ev, err := st.next()
		if err != nil || ev.event != "error" || !strings.Contains(ev.data, `"code":"topic_not_found"`) {
			t.Fatalf("stream %d after the delete: %+v %v, want an error event topic_not_found", i, ev, err)
		}
	}
	for range nPolls {
		a := <-polls
		if a.err != nil || a.status != 404 || !bytes.Contains(a.body, []byte(`"code":"topic_not_found"`)) {
			t.Errorf("long-poll after the delete: %d %s %v, want 404 topic_not_found", a.status, a.body, a.err)
		}
	}
	t.Logf("delete with %d idle streams and %d long-polls: answered in %v, every stream and long-poll ended in %v",
		nStreams, nPolls, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestClientGoneIsNoFailure: a client that goes away in the middle of a
// long-poll or of a stream is no failure of the server: nothing is logged
// at WARN or above, and nothing of the request is left running.
func TestClientGoneIsNoFailure(t *testing.T) {
	var logged syncBuffer
	log := slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), &logged), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := newSSEServer(t, server.Config{StreamKeepAlive: 15 * time.Second, Logger: log}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)

	ctx, cancel := context.WithCancel(s.ctx())
	gone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/topics/t/partitions/0/records?offset=0&wait_ms=20000", nil)
		res, err := s.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		gone <- err
	}()
	waitForLongPolls(t, 1)
	cancel() // the client goes away mid long-poll
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("long-poll: %v, want the client's own cancel", err)
	}
	waitUntilNoneIn(t, "api.(*server).fetch(")

	st, code, body := s.open("offset=0", nil)
	if st == nil {
		t.Fatalf("open: %d %s", code, body)
	}
	waitForLongPolls(t, 1)
	st.close() // the client goes away mid stream
	if err := s.s.Streams.WaitActive(s.ctx(), 0); err != nil {
		t.Fatal(err)
	}
	waitUntilNoneIn(t, "api.(*server).fetch")
	waitUntilNoneIn(t, "broker.(*topic).wait")
	if l := logged.String(); l != "" {
		t.Errorf("a client going away was logged as a failure:\n%s", l)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitUntilNoneIn waits until no goroutine has a frame of fn in its
// stack (no event marks a goroutine's end).
func waitUntilNoneIn(t *testing.T, fn string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() error {
		if n := goroutinesIn(fn); n > 0 {
			return fmt.Errorf("%d goroutines still in %s", n, fn)
		}
		return nil
	})
}

// waitForLongPolls waits until at least n goroutines wait in a long-poll
// for the partition's next commit, each with a frame of every one of also
// in its stack (a long-poll parks with no event a test can wait on).
func waitForLongPolls(t *testing.T, n int, also ...string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, func() error {
		if got := goroutinesIn(append([]string{"partition.(*Log).Wait("}, also...)...); got < n {
			return fmt.Errorf("%d long-polls waiting, want %d", got, n)
		}
		return nil
	})
}

// goroutinesIn is the number of goroutines with a frame of every one of
// fns in their stack.
func goroutinesIn(fns ...string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		all := true
		for _, fn := range fns {
			all = all && strings.Contains(g, fn)
		}
		if all {
			count++
		}
	}
	return count
}

// TestSlowStreamsBoundedMemory: 100 streams whose clients never read (a
// small receive buffer each, nothing read) over a topic with 8 MiB of
// records cost the server a bounded amount of memory each, and a stream
// whose client takes nothing for StreamStall is cut: none stays active.
// It logs the heap's growth and the process's resident set's (Linux).
func TestSlowStreamsBoundedMemory(t *testing.T) {
	s := newSSEServer(t, server.Config{StreamKeepAlive: 15 * time.Second, StreamStall: 3 * time.Second}, nil)
	s.call("POST", "/v1/topics", `{"name":"t"}`, 201)
	value := strings.Repeat("v", 1000)
	for range 80 {
		var recs []string
		for range 100 {
			recs = append(recs, fmt.Sprintf(`{"value":%q}`, value))
		}
		s.call("POST", "/v1/topics/t/partitions/0/records", `{"records":[`+strings.Join(recs, ",")+`]}`, 200)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before, rssBefore := heap(), residentBytes()
	const n = 100
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	addr := strings.TrimPrefix(s.URL, "http://")
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /v1/topics/t/partitions/0/records?offset=0&max_bytes=4194304 HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Every stream got its 200 (the first may be cut by its stall before
	// the last starts, so the active count need not reach n).
	testenv.Eventually(t, 30*time.Second, func() error {
		if got := s.s.Streams.Started(); got < n {
			return fmt.Errorf("%d of %d streams started", got, n)
		}
		return nil
	})
	deadline := time.Now().Add(20 * time.Second)
	var grown, rssGrown uint64
	for time.Now().Before(deadline) {
		if h := heap(); h > before {
			grown = max(grown, h-before)
		}
		if r := residentBytes(); r > rssBefore {
			rssGrown = max(rssGrown, r-rssBefore)
		}
		if s.s.Streams.Active() == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond) // sampling the heap while the streams are stuck, not synchronising
	}
	t.Logf("%d never-reading streams: heap grew by at most %.1f MiB (%.0f KiB a stream), the resident set by %.1f MiB (from %.1f MiB); %d still active after %v",
		n, float64(grown)/(1<<20), float64(grown)/n/1024, float64(rssGrown)/(1<<20), float64(rssBefore)/(1<<20),
		s.s.Streams.Active(), 20*time.Second)
	if per := grown / n; per > 1<<20 {
		t.Errorf("%d KiB of heap a never-reading stream, want under 1 MiB", per>>10)
	}
	if err := s.s.Streams.WaitActive(s.ctx(), 0); err != nil {
		t.Errorf("never-reading streams are not cut: %v", err)
	}
}

// residentBytes is the process's resident set size (VmRSS), 0 where
// /proc/self/status does not say.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
