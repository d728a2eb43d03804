package api_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/wire"
)

// recordJSON is a fetched record with its headers, fields kept raw.
type recordJSON struct {
	Offset        int64           `json:"offset"`
	Timestamp     int64           `json:"timestamp"`
	Key           json.RawMessage `json:"key"`
	KeyEncoding   string          `json:"key_encoding"`
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding"`
	Headers       []headerJSON    `json:"headers"`
}

type headerJSON struct {
	Key           string          `json:"key"`
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding"`
}

func (s *testServer) fetchRecords(path string) ([]recordJSON, []map[string]json.RawMessage) {
	s.t.Helper()
	var out struct {
		Records []recordJSON `json:"records"`
	}
	r := s.ok("GET", path, nil, http.StatusOK, &out)
	var raw struct {
		Records []map[string]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		s.t.Fatal(err)
	}
	return out.Records, raw.Records
}

// TestRecordHeadersRoundTrip produces records with headers in utf8,
// base64 and json and fetches them back in every encoding.
func TestRecordHeadersRoundTrip(t *testing.T) {
	s := newServer(t)
	s.createTopic("hdr", 1)
	s.ok("POST", "/v1/topics/hdr/partitions/0/records", `{"records":[
		{"key":"k0","value":"v0","headers":[{"key":"trace-id","value":"abc"},{"key":"trace-id","value":null},{"key":"empty","value":""}]},
		{"key":"k1","value":"v1"}]}`, http.StatusOK, nil)
	s.ok("POST", "/v1/topics/hdr/partitions/0/records", `{"encoding":"base64","records":[
		{"value":"aGk=","headers":[{"key":"bin","value":"/w=="}]}]}`, http.StatusOK, nil)
	s.ok("POST", "/v1/topics/hdr/partitions/0/records", `{"encoding":"json","records":[
		{"key":{"id":7},"value":{"amount": 12.5, "tags":["a","b"]},"headers":[{"key":"n","value":12},{"key":"o","value":{"x":null}}]},
		{"key":"user","value":null}]}`, http.StatusOK, nil)

	recs, raw := s.fetchRecords("/v1/topics/hdr/partitions/0/records?offset=0")
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	wantH0 := []headerJSON{{Key: "trace-id", Value: json.RawMessage(`"abc"`)}, {Key: "trace-id", Value: json.RawMessage(`null`)}, {Key: "empty", Value: json.RawMessage(`""`)}}
	if !reflect.DeepEqual(recs[0].Headers, wantH0) {
		t.Errorf("record 0 headers %+v, want %+v", recs[0].Headers, wantH0)
	}
	if _, ok := raw[1]["headers"]; ok {
		t.Errorf("record 1 has no headers but the answer has the field: %s", raw[1]["headers"])
	}
	// utf8 mode: a header value that is not UTF-8 is base64, said on the header.
	if h := recs[2].Headers; len(h) != 1 || h[0].Key != "bin" || string(h[0].Value) != `"/w=="` || h[0].ValueEncoding != "base64" {
		t.Errorf("record 2 headers %+v, want bin /w== base64", h)
	}
	// json values are stored as their compact text.
	if got := str(t, recs[3].Value); got != `{"amount":12.5,"tags":["a","b"]}` {
		t.Errorf("record 3 value as text %q", got)
	}
	if got := str(t, recs[3].Key); got != `{"id":7}` {
		t.Errorf("record 3 key as text %q", got)
	}
	if string(recs[4].Value) != "null" || str(t, recs[4].Key) != `"user"` {
		t.Errorf("record 4: key %s value %s, want the text \"user\" and a tombstone", recs[4].Key, recs[4].Value)
	}

	// json mode: JSON values come back as themselves, the rest base64.
	recs, _ = s.fetchRecords("/v1/topics/hdr/partitions/0/records?offset=0&encoding=json")
	if string(recs[3].Value) != `{"amount":12.5,"tags":["a","b"]}` || string(recs[3].Key) != `{"id":7}` || recs[3].ValueEncoding != "" {
		t.Errorf("json fetch of record 3: key %s value %s (%s)", recs[3].Key, recs[3].Value, recs[3].ValueEncoding)
	}
	if h := recs[3].Headers; len(h) != 2 || string(h[0].Value) != "12" || string(h[1].Value) != `{"x":null}` {
		t.Errorf("json fetch of record 3 headers %+v", h)
	}
	if string(recs[4].Key) != `"user"` || string(recs[4].Value) != "null" {
		t.Errorf("json fetch of record 4: key %s value %s", recs[4].Key, recs[4].Value)
	}
	// "v0" is not JSON text: base64.
	if recs[0].ValueEncoding != "base64" || str(t, recs[0].Value) != base64.StdEncoding.EncodeToString([]byte("v0")) {
		t.Errorf("json fetch of record 0 value %s (%s), want base64 of v0", recs[0].Value, recs[0].ValueEncoding)
	}
	if h := recs[0].Headers; h[0].ValueEncoding != "base64" || string(h[1].Value) != "null" {
		t.Errorf("json fetch of record 0 headers %+v", h)
	}

	// base64 mode: header keys stay strings, values are base64.
	recs, _ = s.fetchRecords("/v1/topics/hdr/partitions/0/records?offset=2&encoding=base64")
	if h := recs[0].Headers; len(h) != 1 || h[0].Key != "bin" || string(h[0].Value) != `"/w=="` || h[0].ValueEncoding != "" {
		t.Errorf("base64 fetch of record 2 headers %+v", h)
	}
}

// TestRecordTimestamps: a producer timestamp on a create-time topic is
// the record's, answered by produce and fetch; on an append-time topic
// it is 400 and nothing is appended.
func TestRecordTimestamps(t *testing.T) {
	s := newServer(t)
	s.ok("POST", "/v1/topics", `{"name":"events","timestamp_type":"create"}`, http.StatusCreated, nil)
	out := s.produce("events", `{"records":[{"value":"a","timestamp":1000},{"value":"b","timestamp":500},{"value":"c"}]}`)
	if len(out.Offsets) != 3 || *out.Offsets[0].Timestamp != 1000 || *out.Offsets[1].Timestamp != 500 || *out.Offsets[2].Timestamp < 1764000000000 {
		t.Fatalf("produce answer %+v", out.Offsets)
	}
	s.ok("POST", "/v1/topics/events/partitions/0/records", `{"records":[{"value":"d","timestamp":0}]}`, http.StatusOK, nil)
	recs, _ := s.fetchRecords("/v1/topics/events/partitions/0/records?offset=0")
	if len(recs) != 4 || recs[0].Timestamp != 1000 || recs[1].Timestamp != 500 || recs[3].Timestamp != 0 {
		t.Errorf("fetched timestamps %+v", recs)
	}

	s.createTopic("clock", 1)
	for _, path := range []string{"/v1/topics/clock/records", "/v1/topics/clock/partitions/0/records"} {
		msg := checkError(t, path, s.do("POST", path, `{"records":[{"value":"a"},{"value":"b","timestamp":1000}]}`), 400, "invalid_request")
		if !strings.Contains(msg, "timestamp") {
			t.Errorf("%s: message %q does not name the timestamp", path, msg)
		}
	}
	if hw := s.highWatermarks("clock", 1); hw[0] != 0 {
		t.Errorf("high watermark %d after refused produces, want 0", hw[0])
	}
}

// TestStrictBodies: every route that takes a body refuses unknown
// fields, keys given twice and keys in the wrong case, naming the field.
func TestStrictBodies(t *testing.T) {
	s := newServer(t)
	s.createTopic("orders", 2)
	for _, tc := range []struct{ method, path, body, want string }{
		{"POST", "/v1/topics", `{"name":"x","partitons":2}`, "partitons"},
		{"POST", "/v1/topics", `{"name":"x","Partitions":2}`, `did you mean "partitions"`},
		{"POST", "/v1/topics", `{"name":"x","name":"y"}`, "name is given twice"},
		{"PATCH", "/v1/topics/orders", `{"retention_ms":1000,"retenton_bytes":5}`, "retenton_bytes"},
		{"PUT", "/v1/groups/g/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":0,"metdata":""}]}`, "offsets[0].metdata"},
		{"PUT", "/v1/groups/g/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":0,"offset":0}]}`, "offsets[0].offset is given twice"},
		{"PUT", "/v1/groups/g/offsets", `{"Offsets":[]}`, `did you mean "offsets"`},
		{"POST", "/v1/groups/g/members", `{"topics":["orders"],"session_timeout":30000}`, "session_timeout"},
		{"POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","to":"earliest","partition":[0]}`, "partition"},
		{"POST", "/v1/topics/orders/records", `{"records":[{"value":"a"},{"value":"b"},{"value":"c"},{"value":"d","partitons":1}]}`, "records[3].partitons"},
		{"POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"a"}],"expected_ofset":0}`, "expected_ofset"},
		{"POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"a","headers":[{"key":"k","Value":"v"}]}]}`, "records[0].headers[0].Value"},
		{"POST", "/v1/topics/orders/records", `{"encoding":"base64","records":[{"value":"aGk=\n"}]}`, "records[0].value is not valid standard base64"},
		{"POST", "/v1/topics/orders/records", `{"encoding":"base64","records":[{"value":"aGl="}]}`, "records[0].value is not valid standard base64"},
	} {
		what := tc.method + " " + tc.path + " " + tc.body
		msg := checkError(t, what, s.do(tc.method, tc.path, tc.body), 400, "invalid_request")
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: message %q does not contain %q", what, msg, tc.want)
		}
	}
	if hw := s.highWatermarks("orders", 2); hw[0] != 0 || hw[1] != 0 {
		t.Errorf("refused bodies appended: high watermarks %v", hw)
	}
}

// TestBinaryHeadersAndTimestamps: a version 2 binary body carries headers
// and producer timestamps; a version 2 fetch answer gives them back, a
// version 1 one (old clients) leaves headers out; version 1 bodies are
// still accepted.
func TestBinaryHeadersAndTimestamps(t *testing.T) {
	s := newServer(t)
	s.ok("POST", "/v1/topics", `{"name":"bin","timestamp_type":"create"}`, http.StatusCreated, nil)
	recs := []wire.Record{
		{Key: []byte("k"), Value: []byte{0xff}, Partition: -1, Timestamp: 1234, HasTimestamp: true,
			Headers: []wire.Header{{Key: "trace-id", Value: []byte("abc")}, {Key: "trace-id"}, {Key: "bin", Value: []byte{0, 0xff}}}},
		{Value: []byte("v"), Partition: -1, Timestamp: 7, HasTimestamp: true},
	}
	body, err := wire.AppendProduceRequestV(nil, wire.Version2, len(recs), func(i int) wire.Record { return recs[i] })
	if err != nil {
		t.Fatal(err)
	}
	v2 := map[string]string{"Content-Type": wire.MediaTypeV2, "Accept": wire.MediaTypeV2}
	r := s.raw("POST", "/v1/topics/bin/partitions/0/records", body, v2)
	if r.status != 200 || r.header.Get("Content-Type") != wire.MediaTypeV2 {
		t.Fatalf("v2 produce: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	res, err := wire.DecodeProduceAnswer(r.body)
	if err != nil || res[0].Timestamp != 1234 || res[1].Timestamp != 7 {
		t.Fatalf("v2 produce answer %+v %v", res, err)
	}
	// Version 1 bodies still go in (no headers, the clock's timestamp).
	old := encodeBinary(t, []wire.Record{{Value: []byte("old"), Partition: -1}})
	if r := s.raw("POST", "/v1/topics/bin/partitions/0/records", old, binaryBoth); r.status != 200 || r.header.Get("Content-Type") != wire.MediaType {
		t.Fatalf("v1 produce: %d %s", r.status, r.body)
	}

	r = s.raw("GET", "/v1/topics/bin/partitions/0/records?offset=0", nil, map[string]string{"Accept": wire.MediaType + ", " + wire.MediaTypeV2 + ";q=0.5"})
	if r.header.Get("Content-Type") != wire.MediaTypeV2 {
		t.Fatalf("fetch asking for both versions answered %s", r.header.Get("Content-Type"))
	}
	_, got, err := wire.DecodeFetchAnswer(r.body)
	if err != nil || len(got) != 3 {
		t.Fatalf("v2 fetch: %d records, %v", len(got), err)
	}
	if got[0].Timestamp != 1234 || got[1].Timestamp != 7 || !reflect.DeepEqual(got[0].Headers, recs[0].Headers) || got[1].Headers != nil || got[2].Headers != nil {
		t.Errorf("v2 fetch: %+v", got)
	}
	r = s.raw("GET", "/v1/topics/bin/partitions/0/records?offset=0", nil, binaryAccept)
	_, got, err = wire.DecodeFetchAnswer(r.body)
	if err != nil || r.header.Get("Content-Type") != wire.MediaType || len(got) != 3 || got[0].Headers != nil || string(got[0].Key) != "k" {
		t.Errorf("v1 fetch: %+v %v", got, err)
	}
	// JSON sees the same headers.
	jr, _ := s.fetchRecords("/v1/topics/bin/partitions/0/records?offset=0")
	if len(jr[0].Headers) != 3 || jr[0].Headers[2].ValueEncoding != "base64" || jr[0].Timestamp != 1234 {
		t.Errorf("json fetch of binary records: %+v", jr[0])
	}
	// A timestamp on an append-time topic is 400 in binary too.
	s.createTopic("clock", 1)
	r = s.raw("POST", "/v1/topics/clock/partitions/0/records", body, v2)
	checkError(t, "v2 timestamp on an append-time topic", r, 400, "invalid_request")
}
