package api_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta/local"
	"github.com/tierlog/tierlog/pkg/wire"
)

// TestWireLimitsMatchBroker pins the binary format's limits to docs/api.md's,
// which the broker enforces: a batch that fits one format fits the other.
func TestWireLimitsMatchBroker(t *testing.T) {
	if wire.MaxRecords != broker.MaxBatchRecords || wire.MaxRecords < broker.MaxFetchRecords {
		t.Errorf("wire.MaxRecords %d, broker batch %d fetch %d", wire.MaxRecords, broker.MaxBatchRecords, broker.MaxFetchRecords)
	}
	if wire.MaxRecordBytes != broker.MaxRecordBytes {
		t.Errorf("wire.MaxRecordBytes %d, broker %d", wire.MaxRecordBytes, broker.MaxRecordBytes)
	}
	if wire.MaxBodyBytes != 5<<20 {
		t.Errorf("wire.MaxBodyBytes %d, API.md says 5 MiB", wire.MaxBodyBytes)
	}
}

// newClockedServer is newServer with a fixed clock, so two servers fed the
// same records write the same bytes.
func newClockedServer(t *testing.T, now time.Time) *testServer {
	t.Helper()
	root := t.TempDir()
	store, err := local.Open(filepath.Join(root, "meta"))
	if err != nil {
		t.Fatalf("local.Open: %v", err)
	}
	b, err := broker.New(context.Background(), broker.Config{
		DataDir: filepath.Join(root, "data"), Meta: store,
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := httptest.NewServer(api.New(b, api.WithLogger(log)))
	t.Cleanup(func() {
		srv.Close()
		if err := b.Close(); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("store.Close: %v", err)
		}
	})
	return &testServer{Server: srv, root: root, t: t}
}

// raw sends a request with the given headers and returns the answer whole.
func (s *testServer) raw(method, path string, body []byte, header map[string]string) response {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

var (
	binaryCT     = map[string]string{"Content-Type": wire.MediaType}
	binaryAccept = map[string]string{"Accept": wire.MediaType}
	binaryBoth   = map[string]string{"Content-Type": wire.MediaType, "Accept": wire.MediaType}
)

func encodeBinary(t *testing.T, recs []wire.Record) []byte {
	t.Helper()
	b, err := wire.AppendProduceRequest(nil, len(recs), func(i int) wire.Record { return recs[i] })
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonBody is the base64 JSON produce body of the same records.
func jsonBody(t *testing.T, recs []wire.Record) []byte {
	t.Helper()
	type rec struct {
		Key       []byte `json:"key"`
		Value     []byte `json:"value"`
		Partition *int32 `json:"partition,omitempty"`
	}
	out := struct {
		Encoding string `json:"encoding"`
		Records  []rec  `json:"records"`
	}{Encoding: "base64"}
	for _, r := range recs {
		jr := rec{Key: r.Key, Value: r.Value}
		if r.Partition >= 0 {
			p := r.Partition
			jr.Partition = &p
		}
		out.Records = append(out.Records, jr)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// equivalenceRecords covers every case of key and value: absent, empty,
// text with tabs and unicode, invalid UTF-8, a big value.
func equivalenceRecords(pinned bool) []wire.Record {
	recs := []wire.Record{
		{Key: []byte("k1"), Value: []byte("hello")},
		{Key: nil, Value: []byte("no key, round-robin")},
		{Key: []byte{}, Value: []byte{}},
		{Key: []byte("tombstone"), Value: nil},
		{Key: nil, Value: nil},
		{Key: []byte("tab\there"), Value: []byte("ünïcødé ✓ \t end")},
		{Key: []byte{0xff, 0xfe, 0x00}, Value: []byte{0x80, 0x81, 0x00, 0xc3}},
		{Key: []byte("big"), Value: bytes.Repeat([]byte("0123456789abcdef"), 4096)},
	}
	for i := range recs {
		recs[i].Partition = -1
		if pinned && i%3 == 0 {
			recs[i].Partition = int32(i % 3)
		}
	}
	return recs
}

// fetched is a fetch answer in one shape, whatever the format.
type fetched struct {
	Bounds wire.Bounds
	Recs   []wire.FetchedRecord
}

func (s *testServer) fetchJSON(path string) fetched {
	s.t.Helper()
	var out struct {
		Records []struct {
			Offset    int64  `json:"offset"`
			Timestamp int64  `json:"timestamp"`
			Key       []byte `json:"key"`
			Value     []byte `json:"value"`
		} `json:"records"`
		NextOffset     int64 `json:"next_offset"`
		HighWatermark  int64 `json:"high_watermark"`
		LogStartOffset int64 `json:"log_start_offset"`
	}
	s.ok("GET", path+"&encoding=base64", nil, 200, &out)
	f := fetched{Bounds: wire.Bounds{NextOffset: out.NextOffset, HighWatermark: out.HighWatermark, LogStartOffset: out.LogStartOffset}}
	f.Recs = []wire.FetchedRecord{}
	for _, r := range out.Records {
		f.Recs = append(f.Recs, wire.FetchedRecord{Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value})
	}
	return f
}

func (s *testServer) fetchBinary(path string) fetched {
	s.t.Helper()
	r := s.raw("GET", path, nil, binaryAccept)
	if r.status != 200 || r.header.Get("Content-Type") != wire.MediaType {
		s.t.Fatalf("GET %s: %d %s %.200s", path, r.status, r.header.Get("Content-Type"), r.body)
	}
	b, recs, err := wire.DecodeFetchAnswer(r.body)
	if err != nil {
		s.t.Fatalf("GET %s: decode: %v", path, err)
	}
	return fetched{Bounds: b, Recs: recs}
}

// segmentFiles reads every segment file under the data dir, keyed by path
// with the topic's random incarnation id left out.
func segmentFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	data := filepath.Join(root, "data")
	err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, p)
		parts := strings.Split(rel, string(filepath.Separator))
		if i := strings.IndexByte(parts[0], '~'); i >= 0 {
			parts[0] = parts[0][:i]
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.Join(parts, "/")] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBinaryEquivalence sends the same records as JSON to one server and
// as binary batches to another (same clock): the segment files must be
// byte-identical, the produce answers equal, and every fetch, in either
// format from either server, the same.
func TestBinaryEquivalence(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1764500000000)
	js, bs := newClockedServer(t, now), newClockedServer(t, now)
	for _, s := range []*testServer{js, bs} {
		s.createTopic("eq", 3)
	}
	type step struct {
		path string
		recs []wire.Record
	}
	steps := []step{
		{"/v1/topics/eq/records", equivalenceRecords(true)},
		{"/v1/topics/eq/partitions/1/records", equivalenceRecords(false)},
		{"/v1/topics/eq/records", equivalenceRecords(false)},
	}
	for i, st := range steps {
		var jr produceResponse
		js.ok("POST", st.path, jsonBody(t, st.recs), 200, &jr)
		r := bs.raw("POST", st.path, encodeBinary(t, st.recs), binaryBoth)
		if r.status != 200 || r.header.Get("Content-Type") != wire.MediaType {
			t.Fatalf("step %d: binary produce: %d %.300s", i, r.status, r.body)
		}
		if r.header.Get("Vary") != "Accept" {
			t.Errorf("step %d: Vary %q", i, r.header.Get("Vary"))
		}
		br, err := wire.DecodeProduceAnswer(r.body)
		if err != nil {
			t.Fatalf("step %d: decode answer: %v", i, err)
		}
		if len(br) != len(jr.Offsets) {
			t.Fatalf("step %d: %d binary entries, %d JSON", i, len(br), len(jr.Offsets))
		}
		for j, e := range jr.Offsets {
			if e.Error != nil || e.Offset == nil || e.Timestamp == nil {
				t.Fatalf("step %d entry %d: JSON entry %+v", i, j, e)
			}
			want := wire.Result{Partition: int32(e.Partition), Offset: *e.Offset, Timestamp: *e.Timestamp}
			if br[j] != want {
				t.Errorf("step %d entry %d: binary %+v, JSON %+v", i, j, br[j], want)
			}
		}
	}

	jf, bf := segmentFiles(t, js.root), segmentFiles(t, bs.root)
	if len(jf) == 0 || len(jf) != len(bf) {
		t.Fatalf("segment files: %d via JSON, %d via binary", len(jf), len(bf))
	}
	for name, want := range jf {
		if got, ok := bf[name]; !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: differs between JSON and binary produce (%d vs %d bytes)", name, len(want), len(got))
		}
	}

	for p := range 3 {
		for _, q := range []string{"offset=0", "offset=1&max_records=2", "offset=0&max_bytes=1"} {
			path := fmt.Sprintf("/v1/topics/eq/partitions/%d/records?%s", p, q)
			want := js.fetchJSON(path)
			for name, got := range map[string]fetched{
				"json server, binary": js.fetchBinary(path),
				"binary server, json": bs.fetchJSON(path),
				"binary server, bin":  bs.fetchBinary(path),
			} {
				if !sameFetch(got, want) {
					t.Errorf("%s %s: %+v, want %+v", path, name, got, want)
				}
			}
		}
	}
}

func sameFetch(a, b fetched) bool {
	if a.Bounds != b.Bounds || len(a.Recs) != len(b.Recs) {
		return false
	}
	for i := range a.Recs {
		x, y := a.Recs[i], b.Recs[i]
		if x.Offset != y.Offset || x.Timestamp != y.Timestamp ||
			(x.Key == nil) != (y.Key == nil) || !bytes.Equal(x.Key, y.Key) ||
			(x.Value == nil) != (y.Value == nil) || !bytes.Equal(x.Value, y.Value) {
			return false
		}
	}
	return true
}

// TestBinaryNegotiation checks who gets which format.
func TestBinaryNegotiation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("neg", 1)
	one := encodeBinary(t, []wire.Record{{Value: []byte("v"), Partition: -1}})
	jsonOne := []byte(`{"records":[{"value":"v"}]}`)
	const path = "/v1/topics/neg/partitions/0/records"
	cases := []struct {
		name     string
		body     []byte
		header   map[string]string
		wantCT   string
		wantCode int
	}{
		{"binary in, json out", one, binaryCT, "application/json", 200},
		{"binary in with params", one, map[string]string{"Content-Type": wire.MediaType + "; charset=binary"}, "application/json", 200},
		{"binary in, upper case", one, map[string]string{"Content-Type": strings.ToUpper(wire.MediaType)}, "application/json", 200},
		{"binary in and out", one, binaryBoth, wire.MediaType, 200},
		{"json in, binary out", jsonOne, binaryAccept, wire.MediaType, 200},
		{"form content type is json", jsonOne, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "application/json", 200},
		{"unknown content type is json", jsonOne, map[string]string{"Content-Type": "text/plain"}, "application/json", 200},
		{"other vnd version is json", one, map[string]string{"Content-Type": "application/vnd.tierlog.batch.v3"}, "application/json", 400},
		{"v1 body under the v2 type: its version byte decides", one, map[string]string{"Content-Type": wire.MediaTypeV2}, "application/json", 200},
		{"v2 accepted, v2 out", jsonOne, map[string]string{"Accept": wire.MediaTypeV2}, wire.MediaTypeV2, 200},
		{"accept list", jsonOne, map[string]string{"Accept": "application/json;q=0.5, " + wire.MediaType}, wire.MediaType, 200},
		{"accept q=0 refuses", jsonOne, map[string]string{"Accept": wire.MediaType + ";q=0"}, "application/json", 200},
		{"accept star is json", jsonOne, map[string]string{"Accept": "*/*"}, "application/json", 200},
		{"binary body sent as json", one, nil, "application/json", 400},
	}
	for _, c := range cases {
		r := s.raw("POST", path, c.body, c.header)
		if r.status != c.wantCode || r.header.Get("Content-Type") != c.wantCT {
			t.Errorf("%s: %d %q, want %d %q; body %.200q", c.name, r.status, r.header.Get("Content-Type"), c.wantCode, c.wantCT, r.body)
		}
	}
	// Errors stay JSON whatever the Accept.
	for _, c := range []struct {
		method, path string
		body         []byte
		status       int
		code         string
	}{
		{"GET", "/v1/topics/nope/partitions/0/records?offset=0", nil, 404, "topic_not_found"},
		{"GET", "/v1/topics/neg/partitions/0/records?offset=999", nil, 416, "offset_out_of_range"},
		{"POST", "/v1/topics/nope/records", one, 404, "topic_not_found"},
		{"POST", path, []byte("garbage"), 400, "invalid_request"},
	} {
		r := s.raw(c.method, c.path, c.body, binaryBoth)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: error with Content-Type %q", c.method, c.path, ct)
		}
		checkError(t, c.method+" "+c.path, r, c.status, c.code)
	}
}

// TestBinaryHostile sends malformed binary bodies over HTTP: each gets its
// documented status in docs/api.md's error shape and stores nothing.
func TestBinaryHostile(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 3)
	for p := range 3 {
		s.ok("POST", fmt.Sprintf("/v1/topics/orders/partitions/%d/records", p), `{"records":[{"value":"v"}]}`, 200, nil)
	}
	s.ok("PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, 204, nil)
	before := s.snapshot()

	valid := encodeBinary(t, []wire.Record{{Key: []byte("k"), Value: []byte("value"), Partition: -1}, {Value: []byte("w"), Partition: 1}})
	fixCRC := func(b []byte) []byte {
		// CRC-32C of the bytes after the 16-byte header, at bytes 12..15.
		binary.LittleEndian.PutUint32(b[12:], crc32c(b[16:]))
		return b
	}
	tooMany := make([]wire.Record, 10000)
	for i := range tooMany {
		tooMany[i] = wire.Record{Value: []byte{}, Partition: -1}
	}
	manyBody := encodeBinary(t, tooMany)
	binary.LittleEndian.PutUint32(manyBody[8:], 10001)
	manyBody = fixCRC(append(manyBody, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	huge := append(encodeBinary(t, []wire.Record{{Value: bytes.Repeat([]byte("x"), 1<<20), Partition: -1}}), make([]byte, 4<<20+1)...)
	cases := []struct {
		name   string
		path   string
		body   []byte
		status int
		code   string
	}{
		{"empty body", "/v1/topics/orders/records", []byte{}, 400, "invalid_request"},
		{"zero records", "/v1/topics/orders/records", encodeBinary(t, nil), 400, "invalid_request"},
		{"json body with binary type", "/v1/topics/orders/records", []byte(`{"records":[{"value":"v"}]}`), 400, "invalid_request"},
		{"truncated", "/v1/topics/orders/records", valid[:len(valid)-1], 400, "invalid_request"},
		{"checksum", "/v1/topics/orders/records", append(bytes.Clone(valid[:len(valid)-1]), 'X'), 400, "invalid_request"},
		{"too many records", "/v1/topics/orders/records", manyBody, 413, "payload_too_large"},
		{"record over 1 MiB", "/v1/topics/orders/records", fixCRC(encodeBinaryUnchecked(1<<20 + 1)), 413, "payload_too_large"},
		{"body over 5 MiB", "/v1/topics/orders/records", huge, 413, "payload_too_large"},
		{"partition on partition route", "/v1/topics/orders/partitions/0/records", valid, 400, "invalid_request"},
		{"partition out of range", "/v1/topics/orders/records", encodeBinary(t, []wire.Record{{Value: []byte("v"), Partition: 3}}), 404, "partition_not_found"},
	}
	for _, c := range cases {
		r := s.raw("POST", c.path, c.body, binaryBoth)
		msg := checkError(t, c.name, r, c.status, c.code)
		if msg != "" && c.status == 400 && !strings.Contains(msg, "binary") && !strings.Contains(msg, "record") && !strings.Contains(msg, "empty") {
			t.Errorf("%s: message %q does not say what was wrong", c.name, msg)
		}
	}
	if after := s.snapshot(); !reflect.DeepEqual(before, after) {
		t.Errorf("refused requests changed the server:\nbefore %+v\nafter  %+v", before, after)
	}
}

// encodeBinaryUnchecked builds a one-record request whose value is n bytes,
// bypassing the encoder's limit check (the CRC is left for the caller).
func encodeBinaryUnchecked(n int) []byte {
	b := []byte("\x89TLB\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00")
	b = append(b, 0x01)                                // flags: key null
	b = binary.LittleEndian.AppendUint32(b, 0)         // partition
	b = binary.LittleEndian.AppendUint32(b, 0)         // key len
	b = binary.LittleEndian.AppendUint32(b, uint32(n)) // value len
	return append(b, make([]byte, n)...)
}

// TestBinaryBase64ParamIgnored checks that a binary fetch answer carries
// the bytes whatever encoding says, while encoding is still validated.
func TestBinaryBase64ParamIgnored(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("b", 1)
	s.ok("POST", "/v1/topics/b/partitions/0/records", `{"records":[{"key":"k","value":"v"}]}`, 200, nil)
	for _, q := range []string{"", "&encoding=base64", "&encoding=utf8"} {
		f := s.fetchBinary("/v1/topics/b/partitions/0/records?offset=0" + q)
		if len(f.Recs) != 1 || string(f.Recs[0].Key) != "k" || string(f.Recs[0].Value) != "v" {
			t.Errorf("%q: %+v", q, f)
		}
	}
	r := s.raw("GET", "/v1/topics/b/partitions/0/records?offset=0&encoding=hex", nil, binaryAccept)
	checkError(t, "bad encoding with binary accept", r, 400, "invalid_request")
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
