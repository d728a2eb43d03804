package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := s.ok("GET", "/v1/health", nil, http.StatusOK, nil)
	if got := strings.TrimSpace(string(r.body)); got != `{"status":"ok"}` {
		t.Errorf("health body %s", got)
	}
	if r := s.do("HEAD", "/v1/health", nil); r.status != http.StatusOK {
		t.Errorf("HEAD health: %d", r.status)
	}
}

func TestRequestIDUnique(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seen := map[string]bool{}
	for range 20 {
		id := s.do("GET", "/v1/nope", nil).header.Get("X-Request-Id")
		if seen[id] {
			t.Fatalf("request id %q repeated", id)
		}
		seen[id] = true
	}
}

func TestTopics(t *testing.T) {
	t.Parallel()
	s := newServer(t)

	// Defaults filled in; exactly the documented fields and the extensions
	// of docs/api.md.
	r := s.ok("POST", "/v1/topics", `{"name":"orders"}`, http.StatusCreated, nil)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"cache_enabled", "cleanup_policy", "name", "partitions", "read_ahead_segments", "retention_bytes", "retention_ms", "segment_bytes", "segment_ms", "timestamp_type"}
	if got := sortedKeys(fields); !slices.Equal(got, want) {
		t.Errorf("topic fields %v, want %v", got, want)
	}
	var got topicJSON
	_ = json.Unmarshal(r.body, &got)
	def := topicJSON{Name: "orders", Partitions: 1, RetentionMs: 604800000, RetentionBytes: -1, SegmentBytes: 16777216, SegmentMs: 60000, CleanupPolicy: "delete"}
	if got != def {
		t.Errorf("created %+v, want %+v", got, def)
	}

	// Every field given; an unknown field is 400 (strict bodies).
	full := topicJSON{Name: "audit", Partitions: 3, RetentionMs: 1000, RetentionBytes: 1 << 30, SegmentBytes: 1 << 20, SegmentMs: 5000, CleanupPolicy: "delete"}
	body, _ := json.Marshal(full)
	checkError(t, "unknown field", s.do("POST", "/v1/topics", append(body[:len(body)-1:len(body)-1], `,"future_field":{"x":[1,2]}}`...)), 400, "invalid_request")
	s.ok("POST", "/v1/topics", body, http.StatusCreated, &got)
	if got != full {
		t.Errorf("created %+v, want %+v", got, full)
	}
	s.ok("POST", "/v1/topics", `{"name":"b-topic","partitions":null}`, http.StatusCreated, nil)

	checkError(t, "create existing", s.do("POST", "/v1/topics", `{"name":"orders","partitions":2}`), 409, "topic_exists")
	checkError(t, "partitions 0", s.do("POST", "/v1/topics", `{"name":"p0","partitions":0}`), 400, "invalid_request")
	checkError(t, "bad policy", s.do("POST", "/v1/topics", `{"name":"p1","cleanup_policy":"shred"}`), 400, "invalid_request")
	checkError(t, "no name", s.do("POST", "/v1/topics", `{"partitions":1}`), 400, "invalid_request")

	var list struct {
		Topics []topicJSON `json:"topics"`
	}
	s.ok("GET", "/v1/topics", nil, http.StatusOK, &list)
	var names []string
	for _, tp := range list.Topics {
		names = append(names, tp.Name)
	}
	if !slices.Equal(names, []string{"audit", "b-topic", "orders"}) {
		t.Errorf("topics %v, want sorted [audit b-topic orders]", names)
	}
	if list.Topics[0] != full {
		t.Errorf("listed %+v, want %+v", list.Topics[0], full)
	}

	s.ok("GET", "/v1/topics/audit", nil, http.StatusOK, &got)
	if got != full {
		t.Errorf("get %+v, want %+v", got, full)
	}
	r = s.ok("DELETE", "/v1/topics/audit", nil, http.StatusNoContent, nil)
	if len(r.body) != 0 {
		t.Errorf("204 with body %q", r.body)
	}
	checkError(t, "get deleted", s.do("GET", "/v1/topics/audit", nil), 404, "topic_not_found")
	checkError(t, "delete deleted", s.do("DELETE", "/v1/topics/audit", nil), 404, "topic_not_found")
	// A re-created topic starts empty.
	s.createTopic("audit", 1)
	var o offsetsResponse
	s.ok("GET", "/v1/topics/audit/partitions/0/offsets", nil, 200, &o)
	if o != (offsetsResponse{}) {
		t.Errorf("re-created topic offsets %+v", o)
	}

	// Empty list is [], not null.
	s2 := newServer(t)
	r = s2.ok("GET", "/v1/topics", nil, http.StatusOK, nil)
	if strings.TrimSpace(string(r.body)) != `{"topics":[]}` {
		t.Errorf("empty list %s", r.body)
	}
}

func TestProduceFetchUTF8(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 1)
	res := s.produce("orders", `{"records":[
		{"key":"k1","value":"hello"},
		{"value":"no key"},
		{"key":null,"value":null},
		{"key":"","value":""},
		{"key":"é✓ <&> \"q\" \\ \u00e9\n","value":"\ud83d\ude00 tab\t"}
	]}`)
	if res.FailedRecordCount == nil || *res.FailedRecordCount != 0 || len(res.Offsets) != 5 {
		t.Fatalf("produce answer %+v", res)
	}
	for i, o := range res.Offsets {
		if o.Partition != 0 || o.Offset == nil || *o.Offset != int64(i) || o.Timestamp == nil || *o.Timestamp <= 0 || o.Error != nil {
			t.Errorf("offset %d: %+v", i, o)
		}
	}

	f := s.fetch("/v1/topics/orders/partitions/0/records?offset=0")
	if len(f.Records) != 5 || f.NextOffset != 5 || f.HighWatermark != 5 || f.LogStartOffset != 0 {
		t.Fatalf("fetch %+v", f)
	}
	wantKV := [][2]string{
		{`"k1"`, `"hello"`},
		{`null`, `"no key"`},
		{`null`, `null`},
		{`""`, `""`},
	}
	for i, kv := range wantKV {
		rec := f.Records[i]
		if string(rec.Key) != kv[0] || string(rec.Value) != kv[1] {
			t.Errorf("record %d: key %s value %s, want %s %s", i, rec.Key, rec.Value, kv[0], kv[1])
		}
		if rec.Offset != int64(i) || rec.Timestamp != *res.Offsets[i].Timestamp {
			t.Errorf("record %d: offset %d ts %d", i, rec.Offset, rec.Timestamp)
		}
		if rec.KeyEncoding != "" || rec.ValueEncoding != "" {
			t.Errorf("record %d: encodings %q %q", i, rec.KeyEncoding, rec.ValueEncoding)
		}
	}
	if k, v := str(t, f.Records[4].Key), str(t, f.Records[4].Value); k != "é✓ <&> \"q\" \\ é\n" || v != "😀 tab\t" {
		t.Errorf("escaped record: %q %q", k, v)
	}

	// Tombstone and absent key: in base64 mode too.
	f = s.fetch("/v1/topics/orders/partitions/0/records?offset=1&encoding=base64&max_records=3")
	if len(f.Records) != 3 || string(f.Records[1].Key) != "null" || string(f.Records[1].Value) != "null" ||
		string(f.Records[0].Key) != "null" || string(f.Records[2].Key) != `""` || string(f.Records[2].Value) != `""` {
		t.Errorf("base64 fetch %+v", f.Records)
	}
	if got := str(t, f.Records[0].Value); got != base64.StdEncoding.EncodeToString([]byte("no key")) {
		t.Errorf("base64 value %q", got)
	}
}

func TestBase64AndInvalidUTF8(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("bin", 1)
	raw := []byte{0xff, 0xfe, 'a', 0x00, 0xc3}
	b64 := base64.StdEncoding.EncodeToString
	s.produce("bin", map[string]any{"encoding": "base64", "records": []map[string]any{
		{"key": b64([]byte("plain-key")), "value": b64(raw)},
		{"key": b64(raw), "value": b64([]byte("plain value"))},
		{"key": "", "value": ""},
	}})

	f := s.fetch("/v1/topics/bin/partitions/0/records?offset=0")
	if len(f.Records) != 3 {
		t.Fatalf("fetched %d records", len(f.Records))
	}
	r0, r1, r2 := f.Records[0], f.Records[1], f.Records[2]
	if str(t, r0.Key) != "plain-key" || r0.KeyEncoding != "" || r0.ValueEncoding != "base64" || str(t, r0.Value) != b64(raw) {
		t.Errorf("record 0: %+v", r0)
	}
	if r1.KeyEncoding != "base64" || str(t, r1.Key) != b64(raw) || r1.ValueEncoding != "" || str(t, r1.Value) != "plain value" {
		t.Errorf("record 1: %+v", r1)
	}
	if string(r2.Key) != `""` || string(r2.Value) != `""` {
		t.Errorf("record 2 (empty, not null): %+v", r2)
	}

	f = s.fetch("/v1/topics/bin/partitions/0/records?offset=0&encoding=base64")
	if str(t, f.Records[0].Key) != b64([]byte("plain-key")) || str(t, f.Records[0].Value) != b64(raw) ||
		f.Records[0].KeyEncoding != "" || f.Records[0].ValueEncoding != "" {
		t.Errorf("base64 mode: %+v", f.Records[0])
	}
	// Explicit utf8 is the default.
	if g := s.fetch("/v1/topics/bin/partitions/0/records?offset=0&encoding=utf8"); g.Records[0].ValueEncoding != "base64" {
		t.Errorf("encoding=utf8: %+v", g.Records[0])
	}
}

func TestProduceRouting(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("events", 3)
	var recs []map[string]any
	for i := range 30 {
		r := map[string]any{"value": fmt.Sprint("v", i)}
		switch i % 3 {
		case 0:
			r["partition"] = 2
		case 1:
			r["key"] = "user-1"
		}
		recs = append(recs, r)
	}
	res := s.produce("events", map[string]any{"records": recs})
	if len(res.Offsets) != 30 || *res.FailedRecordCount != 0 {
		t.Fatalf("answer %+v", res)
	}
	keyPart := -1
	last := map[int]int64{}
	for i, o := range res.Offsets {
		switch i % 3 {
		case 0:
			if o.Partition != 2 {
				t.Errorf("record %d: partition %d, want explicit 2", i, o.Partition)
			}
		case 1:
			if keyPart == -1 {
				keyPart = o.Partition
			} else if o.Partition != keyPart {
				t.Errorf("record %d: key user-1 went to %d and %d", i, keyPart, o.Partition)
			}
		}
		// Request order within a partition, one contiguous batch.
		if prev, ok := last[o.Partition]; ok && *o.Offset != prev+1 {
			t.Errorf("record %d: partition %d offset %d after %d", i, o.Partition, *o.Offset, prev)
		}
		last[o.Partition] = *o.Offset
	}
	// Values are where the answer says.
	for i, o := range res.Offsets {
		f := s.fetch(fmt.Sprintf("/v1/topics/events/partitions/%d/records?offset=%d&max_records=1", o.Partition, *o.Offset))
		if len(f.Records) != 1 || str(t, f.Records[0].Value) != fmt.Sprint("v", i) {
			t.Errorf("record %d not at %d/%d: %+v", i, o.Partition, *o.Offset, f.Records)
		}
	}
	checkError(t, "partition out of range", s.do("POST", "/v1/topics/events/records", `{"records":[{"value":"x","partition":3}]}`), 404, "partition_not_found")
	checkError(t, "unknown topic", s.do("POST", "/v1/topics/nosuch/records", `{"records":[{"value":"x"}]}`), 404, "topic_not_found")
}

func TestProducePartition(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 2)
	var res produceResponse
	s.ok("POST", "/v1/topics/orders/partitions/1/records", `{"records":[{"key":"a","value":"1"},{"value":"2"},{"key":"b","value":null}]}`, 200, &res)
	if len(res.Offsets) != 3 || *res.FailedRecordCount != 0 {
		t.Fatalf("answer %+v", res)
	}
	for i, o := range res.Offsets {
		if o.Partition != 1 || *o.Offset != int64(i) {
			t.Errorf("entry %d: %+v", i, o)
		}
	}
	f := s.fetch("/v1/topics/orders/partitions/1/records?offset=0")
	if len(f.Records) != 3 || string(f.Records[2].Value) != "null" || str(t, f.Records[2].Key) != "b" {
		t.Errorf("fetch %+v", f)
	}
	checkError(t, "per-record partition", s.do("POST", "/v1/topics/orders/partitions/1/records", `{"records":[{"value":"x","partition":1}]}`), 400, "invalid_request")
	checkError(t, "no such partition", s.do("POST", "/v1/topics/orders/partitions/2/records", `{"records":[{"value":"x"}]}`), 404, "partition_not_found")
	checkError(t, "no such topic", s.do("POST", "/v1/topics/nope/partitions/0/records", `{"records":[{"value":"x"}]}`), 404, "topic_not_found")
	var o offsetsResponse
	s.ok("GET", "/v1/topics/orders/partitions/1/offsets", nil, 200, &o)
	if o.HighWatermark != 3 {
		t.Errorf("high watermark %d after refused produces", o.HighWatermark)
	}
}

func TestFetchLimits(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("logs", 1)
	var recs []map[string]any
	for i := range 20 {
		recs = append(recs, map[string]any{"value": strings.Repeat("x", 100) + fmt.Sprint(i)})
	}
	s.produce("logs", map[string]any{"records": recs})
	base := "/v1/topics/logs/partitions/0/records"

	f := s.fetch(base + "?offset=3&max_records=5")
	if len(f.Records) != 5 || f.Records[0].Offset != 3 || f.NextOffset != 8 || f.HighWatermark != 20 {
		t.Errorf("max_records=5: %d records, next %d", len(f.Records), f.NextOffset)
	}
	// Above the caps: clamped, not refused.
	f = s.fetch(base + "?offset=0&max_records=20000&max_bytes=999999999&wait_ms=999999")
	if len(f.Records) != 20 || f.NextOffset != 20 {
		t.Errorf("clamped: %d records, next %d", len(f.Records), f.NextOffset)
	}
	// At least one record, however small max_bytes.
	f = s.fetch(base + "?offset=0&max_bytes=1")
	if len(f.Records) != 1 || f.NextOffset != 1 {
		t.Errorf("max_bytes=1: %d records", len(f.Records))
	}
	f = s.fetch(base + "?offset=0&max_bytes=250")
	if len(f.Records) < 1 || len(f.Records) > 2 {
		t.Errorf("max_bytes=250: %d records", len(f.Records))
	}
	// At the high watermark: empty, not an error.
	f = s.fetch(base + "?offset=20")
	if len(f.Records) != 0 || f.NextOffset != 20 || f.HighWatermark != 20 {
		t.Errorf("at hw: %+v", f)
	}
	// Past it: 416 with both bounds.
	r := s.do("GET", base+"?offset=21", nil)
	checkError(t, "offset 21", r, 416, "offset_out_of_range")
	var bounds offsetsResponse
	_ = json.Unmarshal(r.body, &bounds)
	if bounds.HighWatermark != 20 || bounds.LogStartOffset != 0 {
		t.Errorf("416 bounds %+v", bounds)
	}
	checkError(t, "max_records=0", s.do("GET", base+"?offset=0&max_records=0", nil), 400, "invalid_request")
	checkError(t, "max_bytes=0", s.do("GET", base+"?offset=0&max_bytes=0", nil), 400, "invalid_request")
	checkError(t, "unknown partition", s.do("GET", "/v1/topics/logs/partitions/1/records?offset=0", nil), 404, "partition_not_found")
	checkError(t, "unknown topic", s.do("GET", "/v1/topics/nope/partitions/0/records?offset=0", nil), 404, "topic_not_found")
}

func TestLongPoll(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("poll", 1)
	s.produce("poll", `{"records":[{"value":"first"}]}`)
	path := "/v1/topics/poll/partitions/0/records?offset=1&wait_ms=2000"

	t.Run("wakes on produce", func(t *testing.T) {
		var (
			wg      sync.WaitGroup
			f       fetchResponse
			elapsed time.Duration
		)
		// The poll goes through a server of its own whose handler has a
		// frame of longPollUnderTest: the produce is sent once this
		// request waits in the partition's long-poll, not another test's.
		h := s.Config.Handler
		poller := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { longPollUnderTest(h, w, r) }))
		defer poller.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := poller.Client().Get(poller.URL + path)
			if err != nil {
				t.Errorf("long poll: %v", err)
				return
			}
			defer resp.Body.Close()
			elapsed = time.Since(start)
			if resp.StatusCode != 200 {
				t.Errorf("long poll: %d", resp.StatusCode)
				return
			}
			if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
				t.Errorf("long poll answer: %v", err)
			}
		}()
		waitForLongPolls(t, 1, "api_test.longPollUnderTest(")
		s.produce("poll", `{"records":[{"value":"second"}]}`)
		wg.Wait()
		if elapsed >= 1500*time.Millisecond {
			t.Errorf("long poll returned after %v, want soon after the produce", elapsed)
		}
		if len(f.Records) != 1 || str(t, f.Records[0].Value) != "second" || f.NextOffset != 2 {
			t.Errorf("long poll got %+v", f)
		}
	})
	t.Run("times out empty", func(t *testing.T) {
		start := time.Now()
		f := s.fetch("/v1/topics/poll/partitions/0/records?offset=2&wait_ms=300")
		elapsed := time.Since(start)
		if len(f.Records) != 0 || f.NextOffset != 2 || f.HighWatermark != 2 {
			t.Errorf("timed-out poll: %+v", f)
		}
		if elapsed < 250*time.Millisecond || elapsed > 1500*time.Millisecond {
			t.Errorf("wait_ms=300 took %v", elapsed)
		}
	})
	t.Run("no wait below the watermark", func(t *testing.T) {
		start := time.Now()
		f := s.fetch("/v1/topics/poll/partitions/0/records?offset=0&wait_ms=20000")
		if len(f.Records) != 2 || time.Since(start) > time.Second {
			t.Errorf("fetch below hw with wait: %d records after %v", len(f.Records), time.Since(start))
		}
	})
}

// longPollUnderTest serves one request with h: a frame a goroutine dump
// finds.
//
//go:noinline
func longPollUnderTest(h http.Handler, w http.ResponseWriter, r *http.Request) {
	h.ServeHTTP(w, r)
}

func TestOffsets(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("ts", 1)
	var stamps []int64
	for i := range 4 {
		res := s.produce("ts", fmt.Sprintf(`{"records":[{"value":"a%d"},{"value":"b%d"}]}`, i, i))
		stamps = append(stamps, *res.Offsets[0].Timestamp)
		// The next batch gets a later timestamp of the server's clock
		// (the wall clock: nothing to wait on but its next millisecond).
		testenv.Eventually(t, time.Second, func() error {
			if now := time.Now().UnixMilli(); now <= stamps[i] {
				return fmt.Errorf("the clock is at %d ms, not past %d", now, stamps[i])
			}
			return nil
		})
	}
	r := s.ok("GET", "/v1/topics/ts/partitions/0/offsets", nil, 200, nil)
	if got := strings.TrimSpace(string(r.body)); got != `{"log_start_offset":0,"high_watermark":8}` {
		t.Errorf("offsets %s", got)
	}
	f := s.fetch("/v1/topics/ts/partitions/0/records?offset=0")
	for _, T := range []int64{0, stamps[0], stamps[1], stamps[2] - 1, stamps[3], stamps[3] + 1, 1 << 62} {
		var want *fetchRecord
		for i := range f.Records {
			if f.Records[i].Timestamp >= T {
				want = &f.Records[i]
				break
			}
		}
		r := s.ok("GET", fmt.Sprintf("/v1/topics/ts/partitions/0/offsets?timestamp=%d", T), nil, 200, nil)
		var got map[string]json.RawMessage
		_ = json.Unmarshal(r.body, &got)
		if !slices.Equal(sortedKeys(got), []string{"offset", "timestamp"}) {
			t.Errorf("T=%d: keys %v", T, sortedKeys(got))
		}
		wantBody := `{"offset":8,"timestamp":null}`
		if want != nil {
			wantBody = fmt.Sprintf(`{"offset":%d,"timestamp":%d}`, want.Offset, want.Timestamp)
		}
		if strings.TrimSpace(string(r.body)) != wantBody {
			t.Errorf("T=%d: %s, want %s", T, r.body, wantBody)
		}
	}
	checkError(t, "negative timestamp", s.do("GET", "/v1/topics/ts/partitions/0/offsets?timestamp=-1", nil), 400, "invalid_request")
	checkError(t, "unknown partition", s.do("GET", "/v1/topics/ts/partitions/1/offsets?timestamp=0", nil), 404, "partition_not_found")
}

func TestGroupOffsets(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 2)
	s.ok("POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"1"},{"value":"2"},{"value":"3"},{"value":"4"},{"value":"5"}]}`, 200, nil)
	s.ok("POST", "/v1/topics/orders/partitions/1/records", `{"records":[{"value":"1"},{"value":"2"},{"value":"3"}]}`, 200, nil)

	r := s.ok("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":2,"metadata":"m"},{"topic":"orders","partition":1,"offset":3}]}`, 204, nil)
	if len(r.body) != 0 {
		t.Errorf("204 with body %q", r.body)
	}
	var g groupOffsets
	s.ok("GET", "/v1/groups/billing/offsets?topic=orders", nil, 200, &g)
	want := []groupOffset{
		{Topic: "orders", Partition: 0, Offset: 2, Metadata: "m", Lag: 3},
		{Topic: "orders", Partition: 1, Offset: 3, Metadata: "", Lag: 0},
	}
	if !slices.Equal(g.Offsets, want) {
		t.Errorf("group offsets %+v, want %+v", g.Offsets, want)
	}
	// Move on; lag follows produce.
	s.ok("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":5}]}`, 204, nil)
	s.ok("POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"6"}]}`, 200, nil)
	s.ok("GET", "/v1/groups/billing/offsets?topic=orders", nil, 200, &g)
	if g.Offsets[0].Offset != 5 || g.Offsets[0].Lag != 1 || g.Offsets[0].Metadata != "" {
		t.Errorf("after move: %+v", g.Offsets[0])
	}

	r = s.do("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":1,"offset":1},{"topic":"orders","partition":0,"offset":7}]}`)
	checkError(t, "beyond hw", r, 416, "offset_out_of_range")
	var bounds offsetsResponse
	_ = json.Unmarshal(r.body, &bounds)
	if bounds != (offsetsResponse{LogStartOffset: 0, HighWatermark: 6}) {
		t.Errorf("416 bounds %+v", bounds)
	}
	s.ok("GET", "/v1/groups/billing/offsets?topic=orders", nil, 200, &g)
	if g.Offsets[1].Offset != 3 {
		t.Errorf("refused commit changed partition 1: %+v", g.Offsets[1])
	}

	r = s.ok("GET", "/v1/groups/nobody/offsets?topic=orders", nil, 200, nil)
	if strings.TrimSpace(string(r.body)) != `{"offsets":[]}` {
		t.Errorf("unknown group: %s", r.body)
	}
	checkError(t, "topic missing", s.do("GET", "/v1/groups/billing/offsets", nil), 400, "invalid_request")
	checkError(t, "unknown topic", s.do("GET", "/v1/groups/billing/offsets?topic=nope", nil), 404, "topic_not_found")
	checkError(t, "commit unknown topic", s.do("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"nope","partition":0,"offset":0}]}`), 404, "topic_not_found")
	checkError(t, "commit unknown partition", s.do("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":2,"offset":0}]}`), 404, "partition_not_found")
	checkError(t, "duplicate entry", s.do("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1},{"topic":"orders","partition":0,"offset":2}]}`), 400, "invalid_request")
	checkError(t, "metadata too large", s.do("PUT", "/v1/groups/billing/offsets", fmt.Sprintf(`{"offsets":[{"topic":"orders","partition":0,"offset":1,"metadata":%q}]}`, strings.Repeat("m", 4097))), 413, "payload_too_large")
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 1)
	for _, c := range []struct {
		method, path, allow string
	}{
		{"POST", "/v1/health", "GET, HEAD"},
		{"DELETE", "/v1/topics", "GET, HEAD, POST"},
		{"PUT", "/v1/topics/orders", "GET, HEAD, DELETE, PATCH"},
		{"GET", "/v1/topics/orders/records", "POST"},
		{"DELETE", "/v1/topics/orders/partitions/0/records", "GET, HEAD, POST"},
		{"POST", "/v1/topics/orders/partitions/0/offsets", "GET, HEAD"},
		{"POST", "/v1/groups/g/offsets", "GET, HEAD, PUT"},
		{"OPTIONS", "/v1/topics", "GET, HEAD, POST"},
	} {
		r := s.do(c.method, c.path, nil)
		checkError(t, c.method+" "+c.path, r, 405, "method_not_allowed")
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	for _, p := range []string{"/", "/v1", "/v1/", "/v2/topics", "/v1/topics/", "/v1/topics/orders/", "/v1/topics/orders/partitions",
		"/v1/topics/orders/partitions/0", "/v1/topics/orders/partitions/0/records/1", "/v1/groups/g/members/m/other", "/v1/topics//records", "/v1/./topics"} {
		checkError(t, "GET "+p, s.do("GET", p, nil), 404, "not_found")
	}
}
