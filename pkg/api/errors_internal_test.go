package api

import (
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
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
)

// TestClassify covers every row of docs/api.md's error table, including the
// ones the real broker cannot be made to return on demand (503, 500).
func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("topic %q partition %d: %w", "orders", 3, err) }
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{badRequest("offset %q is bad", "x"), 400, "invalid_request"},
		{wrap(broker.ErrInvalid), 400, "invalid_request"},
		{wrap(broker.ErrTopicNotFound), 404, "topic_not_found"},
		{wrap(broker.ErrPartitionNotFound), 404, "partition_not_found"},
		{notFound(httptest.NewRequest("GET", "/nope", nil)), 404, "not_found"},
		{&apiError{status: 405, code: codeMethodNotAllowed, msg: "m", allow: "GET"}, 405, "method_not_allowed"},
		{wrap(broker.ErrTopicExists), 409, "topic_exists"},
		{wrap(broker.ErrTooLarge), 413, "payload_too_large"},
		{tooLarge("big"), 413, "payload_too_large"},
		{fmt.Errorf("read: %w", &http.MaxBytesError{Limit: maxBodyBytes}), 413, "payload_too_large"},
		{wrap(&broker.OffsetOutOfRangeError{Offset: 9, LogStartOffset: 2, HighWatermark: 5}), 416, "offset_out_of_range"},
		{wrap(broker.ErrUnavailable), 503, "unavailable"},
		{broker.ErrClosed, 503, "unavailable"},
		{wrap(context.DeadlineExceeded), 503, "unavailable"},
		{context.Canceled, 503, "unavailable"},
		{wrap(meta.ErrUnavailable), 503, "unavailable"},
		{wrap(partition.ErrUnavailable), 503, "unavailable"},
		{wrap(partition.ErrClosed), 503, "unavailable"},
		{wrap(meta.ErrLeaseHeld), 503, "unavailable"},
		{wrap(&partition.DamagedError{Topic: "orders", Partition: 3, First: 5, Next: 20, Err: io.ErrUnexpectedEOF}), 500, "corrupt_record"},
		{errors.New("disk on fire"), 500, "internal"},
		{fmt.Errorf("read segment: %w", io.ErrUnexpectedEOF), 500, "internal"},
	}
	for _, c := range cases {
		var logs bytes.Buffer
		s := &server{log: slog.New(slog.NewTextHandler(&logs, nil))}
		r := httptest.NewRequest("GET", "/v1/x", nil)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "req-123"))
		w := httptest.NewRecorder()
		s.writeError(w, r, c.err)

		if w.Code != c.status {
			t.Errorf("%v: status %d, want %d", c.err, w.Code, c.status)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%v: Content-Type %q", c.err, ct)
		}
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			LogStartOffset *int64 `json:"log_start_offset"`
			HighWatermark  *int64 `json:"high_watermark"`
			NextOffset     *int64 `json:"next_offset"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: body %s: %v", c.err, w.Body, err)
		}
		if body.Error.Code != c.code || body.Error.Message == "" {
			t.Errorf("%v: error %+v, want code %s", c.err, body.Error, c.code)
		}
		if got := w.Header().Get("Retry-After"); (c.status == 503) != (got == "1") {
			t.Errorf("%v: Retry-After %q", c.err, got)
		}
		if c.status == 405 && w.Header().Get("Allow") != "GET" {
			t.Errorf("%v: Allow %q", c.err, w.Header().Get("Allow"))
		}
		if c.status == 416 {
			if body.LogStartOffset == nil || *body.LogStartOffset != 2 || body.HighWatermark == nil || *body.HighWatermark != 5 {
				t.Errorf("416 body %s", w.Body)
			}
		} else if body.LogStartOffset != nil || body.HighWatermark != nil {
			t.Errorf("%v: offsets in a non-416 body %s", c.err, w.Body)
		}
		if (c.code == "corrupt_record") != (body.NextOffset != nil) {
			t.Errorf("%v: next_offset %v in %s", c.err, body.NextOffset, w.Body)
		}
		switch {
		case c.code == "corrupt_record":
			if *body.NextOffset != 20 || !strings.Contains(logs.String(), "req-123") {
				t.Errorf("corrupt_record body %s, log %q", w.Body, logs.String())
			}
		case c.status == 503:
			// A fixed message; the cause is logged with the request id.
			if strings.Contains(body.Error.Message, c.err.Error()) {
				t.Errorf("503 message %q repeats the cause", body.Error.Message)
			}
			if l := logs.String(); !strings.Contains(l, "req-123") || !strings.Contains(l, strconv.Quote(c.err.Error())) {
				t.Errorf("503 log %q", l)
			}
		case c.status == 500:
			// The message names the request id, not the internals; the log
			// has both.
			if !strings.Contains(body.Error.Message, "req-123") || strings.Contains(body.Error.Message, c.err.Error()) {
				t.Errorf("500 message %q", body.Error.Message)
			}
			if l := logs.String(); !strings.Contains(l, "req-123") || !strings.Contains(l, c.err.Error()) {
				t.Errorf("500 log %q", l)
			}
		default:
			if logs.Len() != 0 {
				t.Errorf("%v: logged %q", c.err, logs.String())
			}
		}
	}
}

func TestPanicRecovered(t *testing.T) {
	var logs bytes.Buffer
	h := New(nil, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	s := h.(*server)
	s.mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("boom") })

	for _, target := range []string{
		"/panic",
		// A nil broker panics inside the broker call: still a 500.
		"/v1/topics/orders",
	} {
		logs.Reset()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		if w.Code != 500 || !strings.Contains(w.Body.String(), `"code":"internal"`) {
			t.Errorf("%s: %d %s", target, w.Code, w.Body)
		}
		id := w.Header().Get(headerRequestID)
		if id == "" || !strings.Contains(logs.String(), id) || !strings.Contains(logs.String(), "goroutine") {
			t.Errorf("%s: log %q lacks request id %q or stack", target, logs.String(), id)
		}
	}
}

func TestParseNonNegative(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int64
		want int64
		ok   bool
	}{
		{"0", 10, 0, true},
		{"007", 10, 7, true},
		{"10", 10, 10, true},
		{"11", 10, 0, false},
		{"9223372036854775807", 1<<63 - 1, 1<<63 - 1, true},
		{"9223372036854775808", 1<<63 - 1, 0, false},
		{"99999999999999999999999", 1<<63 - 1, 0, false},
		{"", 10, 0, false},
		{"-1", 10, 0, false},
		{"+1", 10, 0, false},
		{"1e3", 1 << 20, 0, false},
		{"0x10", 1 << 20, 0, false},
		{" 1", 10, 0, false},
		{"1.0", 10, 0, false},
		{"١", 10, 0, false}, // Arabic-Indic digit one
	} {
		got, ok := parseNonNegative(c.in, c.max)
		if got != c.want || ok != c.ok {
			t.Errorf("parseNonNegative(%q, %d) = %d, %v; want %d, %v", c.in, c.max, got, ok, c.want, c.ok)
		}
	}
}

func TestRawString(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`"plain"`, "plain", true},
		{`""`, "", true},
		{`"a\nb\u00e9"`, "a\nbé", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ufffd"`, "\uFFFD", true},
		{"\"\uFFFD\"", "\uFFFD", true},
		{`"\uFFFD\ud800"`, "", false},
		{`"\udc00"`, "", false},
		{`"\\ufffd\ud800"`, "", false},
		{`"\\ud800"`, `\ud800`, true},
		{`"\ud83d"`, "", false},
		{`"\ud83dx"`, "", false},
		{`"\ud83d\n12345"`, "", false},
		{`"\ud83d\u0041"`, "", false},
		{`"\uD83D\uDE00\u00E9"`, "😀é", true},
		{"\"\xff\"", "", false},
		{`12`, "", false},
	} {
		got, err := rawString(json.RawMessage(c.raw), "v")
		if (err == nil) != c.ok || (c.ok && string(got) != c.want) {
			t.Errorf("rawString(%s) = %q, %v; want %q ok=%v", c.raw, got, err, c.want, c.ok)
		}
		if c.ok && got == nil {
			t.Errorf("rawString(%s) = nil, want non-nil", c.raw)
		}
	}
}

// TestProducePartialFailure checks the answer shape when one partition's
// batch failed, which the real broker cannot be made to do on demand.
func TestProducePartialFailure(t *testing.T) {
	var logs bytes.Buffer
	s := &server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	r := httptest.NewRequest("POST", "/v1/topics/orders/records", nil)
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "req-9"))
	w := httptest.NewRecorder()
	recs := make([]broker.ProduceRecord, 4)
	s.writeProduce(w, r, recs, []broker.ProduceResult{
		{Partition: 0, Offset: 41, Timestamp: 1764500000000},
		{Partition: 1, Offset: -1, Err: fmt.Errorf("append: %w", broker.ErrUnavailable)},
		{Partition: 0, Offset: 42, Timestamp: 1764500000000},
		{Partition: 2, Offset: -1, Err: errors.New("boom")},
	})
	want := `{"offsets":[` +
		`{"partition":0,"offset":41,"timestamp":1764500000000},` +
		`{"partition":1,"error":{"code":"unavailable","message":"partition unavailable: retry"}},` +
		`{"partition":0,"offset":42,"timestamp":1764500000000},` +
		`{"partition":2,"error":{"code":"internal","message":"internal error; request id req-9"}}` +
		`],"failed_record_count":2}`
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
		t.Errorf("got %d %s\nwant %s", w.Code, w.Body, want)
	}
	if !strings.Contains(logs.String(), "req-9") || !strings.Contains(logs.String(), "boom") {
		t.Errorf("internal record error not logged: %q", logs.String())
	}

	// A result count that does not match is the broker's bug: 500.
	w = httptest.NewRecorder()
	s.writeProduce(w, r, recs, nil)
	if w.Code != 500 {
		t.Errorf("mismatched results: %d", w.Code)
	}
}

// TestErrorsHideInternals: what lies below the API (server paths, fencing
// epochs and owners, SDK request ids, the check that found damage) never
// reaches a client. 503s answer a fixed message per kind and log the
// cause with the request id; 400 and 413 keep the API's and the broker's
// own validation messages but not a lower-level error riding along.
func TestErrorsHideInternals(t *testing.T) {
	const secretPath = "/some/dir/file.log"
	pathErr := &fs.PathError{Op: "open", Path: secretPath, Err: syscall.ENOSPC}
	fenced := fmt.Errorf("%w: commit: %w: epoch 1 owner \"local\" version 7", partition.ErrUnavailable, meta.ErrFenced)
	sdk := fmt.Errorf("%w: operation error DynamoDB: UpdateItem, https response error StatusCode: 400, RequestID: ABC123, ThrottlingException", meta.ErrUnavailable)
	secrets := []string{secretPath, "epoch", "owner", "local", "version 7", "DynamoDB", "ABC123", "Throttling", "no space", "file.log"}
	cases := []struct {
		name   string
		err    error
		status int
		msg    string // the whole message, when fixed
	}{
		{"fs error", fmt.Errorf("%w: %w", broker.ErrUnavailable, pathErr), 503, msgPartitionDown},
		{"fenced commit", fmt.Errorf("%w: %w", broker.ErrUnavailable, fenced), 503, msgPartitionBusy},
		{"lease held", fmt.Errorf("%w: acquire: %w", partition.ErrUnavailable, meta.ErrLeaseHeld), 503, msgPartitionBusy},
		{"meta journal full", fmt.Errorf("broker: create topic %q: %w: write %s: %w", "t", meta.ErrUnavailable, secretPath, pathErr), 503, msgMetaDown},
		{"dynamo throttled", fmt.Errorf("broker: commit offsets of group %q: %w", "g", sdk), 503, msgMetaDown},
		{"deadline in commit", fmt.Errorf("%w: commit %s: %w", broker.ErrUnavailable, secretPath, context.DeadlineExceeded), 503, msgCommitUnknown},
		{"closing", fmt.Errorf("%w: %s", broker.ErrClosed, secretPath), 503, msgShuttingDown},
		{"invalid with path", fmt.Errorf("%w: segment_bytes: %w", broker.ErrInvalid, pathErr), 400, msgInvalidGeneric},
		{"too large with path", fmt.Errorf("%w: record: %w", broker.ErrTooLarge, pathErr), 413, msgTooLargeGeneric},
		{"damaged", &partition.DamagedError{Topic: "orders", Partition: 2, First: 5, Next: 20,
			Err: fmt.Errorf("segment %s at position 992: %w", secretPath, io.ErrUnexpectedEOF)}, 500, ""},
	}
	for _, c := range cases {
		var logs bytes.Buffer
		s := &server{log: slog.New(slog.NewTextHandler(&logs, nil))}
		r := httptest.NewRequest("POST", "/v1/topics/orders/records", nil)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "req-77"))
		w := httptest.NewRecorder()
		s.writeError(w, r, c.err)
		if w.Code != c.status {
			t.Errorf("%s: status %d, want %d", c.name, w.Code, c.status)
		}
		var body errorResponse
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %s: %v", c.name, w.Body, err)
		}
		for _, sec := range secrets {
			if strings.Contains(w.Body.String(), sec) {
				t.Errorf("%s: body %s shows %q", c.name, w.Body, sec)
			}
		}
		if c.msg != "" && body.Error.Message != c.msg {
			t.Errorf("%s: message %q, want %q", c.name, body.Error.Message, c.msg)
		}
		if l := logs.String(); !strings.Contains(l, "req-77") || !strings.Contains(l, strconv.Quote(c.err.Error())) {
			t.Errorf("%s: the log %q lacks the request id or the cause", c.name, l)
		}
		// A produce answer's per-record errors say no more.
		e := s.recordError(r, c.err)
		for _, sec := range secrets {
			if strings.Contains(e.Message, sec) {
				t.Errorf("%s: per-record message %q shows %q", c.name, e.Message, sec)
			}
		}
	}
}

// TestDamagedAnswer pins the corrupt_record answer: 500, the message names
// topic, partition and offsets, and next_offset sits beside error.
func TestDamagedAnswer(t *testing.T) {
	s := &server{log: slog.New(slog.DiscardHandler)}
	r := httptest.NewRequest("GET", "/v1/topics/ft/partitions/0/records?offset=7", nil)
	w := httptest.NewRecorder()
	err := fmt.Errorf("fetch: %w", &partition.DamagedError{Topic: "ft", Partition: 0, First: 5, Next: 20,
		Err: errors.New("segment: corrupt: crc 1 want 2 in /data/topics/ft~1/0/0.log")})
	if !errors.Is(err, partition.ErrCorrupt) {
		t.Fatal("DamagedError is not ErrCorrupt")
	}
	s.writeError(w, r, err)
	want := `{"error":{"code":"corrupt_record","message":"records 5 to 19 of topic \"ft\" partition 0 are damaged on disk and cannot be served; the next readable offset is 20 (next_offset)"},"next_offset":20}`
	if w.Code != 500 || strings.TrimSpace(w.Body.String()) != want {
		t.Errorf("got %d %s\nwant %s", w.Code, w.Body, want)
	}
	if w.Header().Get("Retry-After") != "" {
		t.Error("corrupt_record has Retry-After: a retry cannot help")
	}
}

// TestBodyReadErrorsHideAddresses: a body that fails to arrive (a reset,
// a cut connection) is a 400 that does not repeat the socket's text.
func TestBodyReadErrorsHideAddresses(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8080}, Err: syscall.ECONNRESET}
	for _, read := range []func(w http.ResponseWriter, r *http.Request) error{
		func(w http.ResponseWriter, r *http.Request) error { return readJSON(w, r, new(createTopicRequest)) },
		func(w http.ResponseWriter, r *http.Request) error { _, err := readProduce(w, r, true); return err },
		func(w http.ResponseWriter, r *http.Request) error {
			_, release, err := readPooledBody(w, r)
			release()
			return err
		},
	} {
		r := httptest.NewRequest("POST", "/v1/topics", io.MultiReader(strings.NewReader(`{"records":[`), errReader{reset}))
		err := read(httptest.NewRecorder(), r)
		cl := classify(err, "req")
		if cl.status != 400 || strings.Contains(cl.body.Error.Message, "10.1.2.3") || strings.Contains(cl.body.Error.Message, "reset") {
			t.Errorf("%v: %d %q", err, cl.status, cl.body.Error.Message)
		}
	}
}
