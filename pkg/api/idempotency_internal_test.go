package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
)

// errorShape is an error answer decoded with every top-level field kept.
type errorShape struct {
	status int
	header http.Header
	top    map[string]json.RawMessage
	code   string
	msg    string
}

func decodeErrorShape(t *testing.T, w *httptest.ResponseRecorder) errorShape {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &top); err != nil {
		t.Fatalf("body %s: %v", w.Body, err)
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Fatalf("error %s: %v", top["error"], err)
	}
	return errorShape{status: w.Code, header: w.Header(), top: top, code: e.Code, msg: e.Message}
}

// TestIdempotencyErrorMapping: the three errors of idempotent and
// conditional produce answer docs/api.md's statuses and codes, offset_mismatch
// with high_watermark at the top level beside error (and nothing else),
// messages that name the value and no package or server internals.
func TestIdempotencyErrorMapping(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("topic %q partition %d: %w", "orders", 3, err) }
	cases := []struct {
		name       string
		err        error
		status     int
		code       string
		keys       []string // top-level keys of the body
		hw         int64
		msgHas     []string
		retryAfter bool
	}{
		{"mismatch", wrap(&broker.OffsetMismatchError{Expected: 7, HighWatermark: 12}), 409, "offset_mismatch",
			[]string{"error", "high_watermark"}, 12, []string{"expected_offset 7", "12", "nothing was appended"}, false},
		{"in use", keyed(wrap(broker.ErrIdempotencyKeyInUse), "k-1"), 409, "idempotency_key_in_use",
			[]string{"error"}, 0, []string{`Idempotency-Key "k-1"`, "in flight"}, true},
		{"reused", keyed(wrap(broker.ErrIdempotencyKeyReused), "k-2"), 422, "idempotency_key_reused",
			[]string{"error"}, 0, []string{`Idempotency-Key "k-2"`, "other contents", "nothing was appended"}, false},
		{"reused, no key known", wrap(broker.ErrIdempotencyKeyReused), 422, "idempotency_key_reused",
			[]string{"error"}, 0, []string{"Idempotency-Key", "other contents"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &server{log: slog.New(slog.DiscardHandler)}
			r := httptest.NewRequest("POST", "/v1/topics/orders/partitions/3/records", nil)
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "req-1"))
			w := httptest.NewRecorder()
			s.writeError(w, r, c.err)
			got := decodeErrorShape(t, w)
			if got.status != c.status || got.code != c.code {
				t.Fatalf("status %d code %q, want %d %q; body %s", got.status, got.code, c.status, c.code, w.Body)
			}
			if keys := sortedKeys(got.top); !slices.Equal(keys, c.keys) {
				t.Errorf("top-level keys %v, want %v; body %s", keys, c.keys, w.Body)
			}
			if c.code == "offset_mismatch" {
				var hw int64
				if err := json.Unmarshal(got.top["high_watermark"], &hw); err != nil || hw != c.hw {
					t.Errorf("high_watermark %s, want %d", got.top["high_watermark"], c.hw)
				}
			}
			for _, want := range c.msgHas {
				if !strings.Contains(got.msg, want) {
					t.Errorf("message %q does not say %q", got.msg, want)
				}
			}
			if strings.Contains(got.msg, "broker:") || strings.Contains(got.msg, "partition 3:") {
				t.Errorf("message %q carries the error chain", got.msg)
			}
			if ra := got.header.Get("Retry-After"); (ra != "") != c.retryAfter {
				t.Errorf("Retry-After %q, want it %v", ra, c.retryAfter)
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestIdempotencyErrorsPerRecord: on the multi-partition route, key errors
// the broker reports per partition (ProduceResult.Err) are per-record
// error entries with the same codes, the other records' offsets intact.
func TestIdempotencyErrorsPerRecord(t *testing.T) {
	s := &server{log: slog.New(slog.DiscardHandler)}
	r := httptest.NewRequest("POST", "/v1/topics/orders/records", nil)
	w := httptest.NewRecorder()
	recs := make([]broker.ProduceRecord, 3)
	res := []broker.ProduceResult{
		{Partition: 0, Offset: 4, Timestamp: 100},
		{Partition: 1, Err: keyed(broker.ErrIdempotencyKeyReused, "k")},
		{Partition: 2, Err: keyed(broker.ErrIdempotencyKeyInUse, "k")},
	}
	s.writeProduce(w, r, recs, res)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var out produceResponse
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.FailedRecordCount != 2 || out.Offsets[0].Offset == nil || *out.Offsets[0].Offset != 4 {
		t.Fatalf("answer %s", w.Body)
	}
	for i, want := range map[int]string{1: "idempotency_key_reused", 2: "idempotency_key_in_use"} {
		if e := out.Offsets[i].Error; e == nil || e.Code != want || !strings.Contains(e.Message, `"k"`) {
			t.Errorf("entry %d: error %+v, want code %s naming the key", i, e, want)
		}
	}
}

// TestIdempotencyKeyHeader: the header rules as the handler sees them,
// including bytes net/http's server never lets through (API Gateway may).
func TestIdempotencyKeyHeader(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		key    string
		bad    string // a word the 400's message must have; "" for valid
	}{
		{"absent", nil, "", ""},
		{"plain", []string{"order-42"}, "order-42", ""},
		{"printable edges", []string{" ~!\"#{}"}, " ~!\"#{}", ""},
		{"255", []string{strings.Repeat("k", 255)}, strings.Repeat("k", 255), ""},
		{"same twice", []string{"a", "a"}, "a", ""},
		{"empty", []string{""}, "", "empty"},
		{"256", []string{strings.Repeat("k", 256)}, "", "256 characters"},
		{"control", []string{"a\x01b"}, "", "position 1"},
		{"tab", []string{"a\tb"}, "", "non-printable"},
		{"DEL", []string{"ab\x7f"}, "", "0x7f"},
		{"non-ASCII", []string{"caf\xc3\xa9"}, "", "non-printable"},
		{"different twice", []string{"a", "b"}, "", "different values"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/v1/topics/t/records", nil)
		for _, v := range c.values {
			r.Header.Add("Idempotency-Key", v)
		}
		key, err := idempotencyKey(r)
		if c.bad == "" {
			if err != nil || key != c.key {
				t.Errorf("%s: key %q, %v; want %q", c.name, key, err, c.key)
			}
			continue
		}
		cl := classify(err, "id")
		if err == nil || cl.status != 400 || cl.body.Error.Code != "invalid_request" ||
			!strings.Contains(cl.body.Error.Message, "Idempotency-Key") || !strings.Contains(cl.body.Error.Message, c.bad) {
			t.Errorf("%s: %v (%d %s %q), want 400 invalid_request saying %q", c.name, err, cl.status, cl.body.Error.Code, cl.body.Error.Message, c.bad)
		}
	}
}
