package api_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// snapshot is everything a refused request must leave alone.
type snapshot struct {
	topics  string
	offsets map[string]string // "topic/partition" -> offsets answer
	groups  string
	dirs    []string
}

func (s *testServer) snapshot() snapshot {
	s.t.Helper()
	sn := snapshot{offsets: map[string]string{}}
	var list struct {
		Topics []topicJSON `json:"topics"`
	}
	sn.topics = string(s.ok("GET", "/v1/topics", nil, 200, &list).body)
	for _, tp := range list.Topics {
		for p := range tp.Partitions {
			path := fmt.Sprintf("/v1/topics/%s/partitions/%d/offsets", tp.Name, p)
			sn.offsets[path] = string(s.ok("GET", path, nil, 200, nil).body)
		}
	}
	sn.groups = string(s.ok("GET", "/v1/groups/g1/offsets?topic=orders", nil, 200, nil).body)
	sn.dirs = dirs(s.t, s.root)
	return sn
}

// TestHostileInputs sends malformed and hostile requests: each must get
// its documented status and code in the documented shape, and afterwards
// the server must still answer and nothing may have changed.
func TestHostileInputs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 3)
	s.createTopic("victim2", 1)
	for p := range 3 { // touch every partition: its directory exists before
		s.ok("POST", fmt.Sprintf("/v1/topics/orders/partitions/%d/records", p), `{"records":[{"key":"k","value":"v"},{"value":"w"}]}`, 200, nil)
	}
	s.ok("PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, 204, nil)
	before := s.snapshot()

	long := strings.Repeat("a", 250)
	bigValue := strings.Repeat("a", 5<<20) // alone, more than the body limit
	recordOver := base64.StdEncoding.EncodeToString(make([]byte, 1<<20+1))
	var many bytes.Buffer
	many.WriteString(`{"records":[`)
	for i := range 10001 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"value":"x"}`)
	}
	many.WriteString(`]}`)
	ok := `{"records":[{"value":"x"}]}`
	recs := "/v1/topics/orders/records"
	fetch := "/v1/topics/orders/partitions/0/records"

	const (
		bad      = http.StatusBadRequest
		notFound = http.StatusNotFound
		tooLarge = http.StatusRequestEntityTooLarge
	)
	cases := []struct {
		name         string
		method, path string
		body         any
		status       int
		code         string
	}{
		// Topic names in the path.
		{"dotdot", "GET", "/v1/topics/..", nil, bad, "invalid_request"},
		{"escaped dotdot", "GET", "/v1/topics/%2e%2e", nil, bad, "invalid_request"},
		{"escaped dotdot upper", "DELETE", "/v1/topics/%2E%2E", nil, bad, "invalid_request"},
		{"dot", "GET", "/v1/topics/.", nil, bad, "invalid_request"},
		{"escaped slash", "GET", "/v1/topics/a%2Fb", nil, bad, "invalid_request"},
		{"traversal produce", "POST", "/v1/topics/..%2F..%2Fetc/records", ok, bad, "invalid_request"},
		{"dotdot produce", "POST", "/v1/topics/../records", ok, bad, "invalid_request"},
		{"dotdot fetch", "GET", "/v1/topics/../partitions/0/records?offset=0", nil, bad, "invalid_request"},
		{"250 chars", "GET", "/v1/topics/" + long, nil, bad, "invalid_request"},
		{"250 chars produce", "POST", "/v1/topics/" + long + "/records", ok, bad, "invalid_request"},
		{"NUL", "GET", "/v1/topics/orders%00", nil, bad, "invalid_request"},
		{"unicode", "GET", "/v1/topics/%C3%A9t%C3%A9", nil, bad, "invalid_request"},
		{"space", "DELETE", "/v1/topics/orders%20", nil, bad, "invalid_request"},
		{"backslash", "GET", "/v1/topics/..%5Corders", nil, bad, "invalid_request"},
		{"empty segment", "GET", "/v1/topics//partitions/0/records?offset=0", nil, notFound, "not_found"},
		// Literal ".", ".." and "//" anywhere (robustness.md 1 and 3.2):
		// taken literally, never cleaned into another path, never a 3xx.
		{"delete dotdot", "DELETE", "/v1/topics/..", nil, bad, "invalid_request"},
		{"delete dot", "DELETE", "/v1/topics/.", nil, bad, "invalid_request"},
		{"delete partition dotdot", "DELETE", "/v1/topics/victim2/partitions/..", nil, notFound, "not_found"},
		{"delete partition dot", "DELETE", "/v1/topics/victim2/partitions/.", nil, notFound, "not_found"},
		{"delete topic dot", "DELETE", "/v1/topics/victim2/.", nil, notFound, "not_found"},
		{"delete topic dotdot records", "DELETE", "/v1/topics/victim2/records/..", nil, notFound, "not_found"},
		{"get partition dotdot", "GET", "/v1/topics/victim2/partitions/..", nil, notFound, "not_found"},
		{"produce via dotdot partition", "POST", "/v1/topics/victim2/partitions/../records", ok, bad, "invalid_request"},
		{"produce via dot partition", "POST", "/v1/topics/victim2/partitions/./records", ok, bad, "invalid_request"},
		{"fetch dotdot segment", "GET", "/v1/topics/victim2/partitions/0/records/..?offset=0", nil, notFound, "not_found"},
		{"dot segment", "GET", "/v1/./topics", nil, notFound, "not_found"},
		{"dotdot version", "GET", "/v1/../v1/topics", nil, notFound, "not_found"},
		{"leading dot", "GET", "/./v1/health", nil, notFound, "not_found"},
		{"health dotdot", "GET", "/v1/health/..", nil, notFound, "not_found"},
		{"double slash", "GET", "//", nil, notFound, "not_found"},
		{"double slash prefix", "GET", "//v1/topics", nil, notFound, "not_found"},
		{"double slash delete", "DELETE", "/v1//topics/victim2", nil, notFound, "not_found"},
		{"double slash topic", "DELETE", "/v1/topics//victim2", nil, notFound, "not_found"},
		{"trailing slash", "DELETE", "/v1/topics/victim2/", nil, notFound, "not_found"},
		{"trailing double slash", "GET", "/v1/topics//", nil, notFound, "not_found"},
		{"metrics dotdot", "GET", "/metrics/..", nil, notFound, "not_found"},
		{"metrics double slash", "GET", "//metrics", nil, notFound, "not_found"},
		{"metrics dot", "GET", "/./metrics", nil, notFound, "not_found"},
		{"metrics post", "POST", "/metrics", ok, http.StatusMethodNotAllowed, "method_not_allowed"},
		// Topic names in bodies.
		{"create dotdot", "POST", "/v1/topics", `{"name":".."}`, bad, "invalid_request"},
		{"create traversal", "POST", "/v1/topics", `{"name":"../x"}`, bad, "invalid_request"},
		{"create empty", "POST", "/v1/topics", `{"name":""}`, bad, "invalid_request"},
		{"create 250", "POST", "/v1/topics", `{"name":"` + long + `"}`, bad, "invalid_request"},
		{"create unicode", "POST", "/v1/topics", `{"name":"ordérs"}`, bad, "invalid_request"},
		{"create existing", "POST", "/v1/topics", `{"name":"orders","partitions":5}`, http.StatusConflict, "topic_exists"},
		// Bad JSON.
		{"truncated", "POST", "/v1/topics", `{"name":`, bad, "invalid_request"},
		{"trailing garbage create", "POST", "/v1/topics", `{"name":"x2"} {"name":"x3"}`, bad, "invalid_request"},
		{"trailing garbage produce", "POST", recs, ok + `x`, bad, "invalid_request"},
		{"trailing object produce", "POST", recs, ok + `{}`, bad, "invalid_request"},
		{"empty body", "POST", recs, "", bad, "invalid_request"},
		{"array body", "POST", recs, `[{"value":"x"}]`, bad, "invalid_request"},
		{"not JSON", "POST", "/v1/topics", `name=x`, bad, "invalid_request"},
		{"invalid UTF-8 in JSON", "POST", recs, "{\"records\":[{\"value\":\"\xff\"}]}", bad, "invalid_request"},
		{"lone surrogate", "POST", recs, `{"records":[{"value":"\ud800"}]}`, bad, "invalid_request"},
		// Wrong types.
		{"partitions string", "POST", "/v1/topics", `{"name":"x4","partitions":"3"}`, bad, "invalid_request"},
		{"partitions float", "POST", "/v1/topics", `{"name":"x5","partitions":1.5}`, bad, "invalid_request"},
		{"partitions huge", "POST", "/v1/topics", `{"name":"x6","partitions":99999999999}`, bad, "invalid_request"},
		{"name number", "POST", "/v1/topics", `{"name":7}`, bad, "invalid_request"},
		{"records string", "POST", recs, `{"records":"nope"}`, bad, "invalid_request"},
		{"records null", "POST", recs, `{"records":null}`, bad, "invalid_request"},
		{"records missing", "POST", recs, `{"encoding":"utf8"}`, bad, "invalid_request"},
		{"records empty", "POST", recs, `{"records":[]}`, bad, "invalid_request"},
		{"record not object", "POST", recs, `{"records":[1]}`, bad, "invalid_request"},
		{"value number", "POST", recs, `{"records":[{"value":123}]}`, bad, "invalid_request"},
		{"key object", "POST", recs, `{"records":[{"key":{},"value":"x"}]}`, bad, "invalid_request"},
		{"value absent", "POST", recs, `{"records":[{"key":"k"}]}`, bad, "invalid_request"},
		{"partition negative", "POST", recs, `{"records":[{"value":"x","partition":-1}]}`, bad, "invalid_request"},
		{"partition string", "POST", recs, `{"records":[{"value":"x","partition":"0"}]}`, bad, "invalid_request"},
		{"partition float", "POST", recs, `{"records":[{"value":"x","partition":0.5}]}`, bad, "invalid_request"},
		{"partition exponent", "POST", recs, `{"records":[{"value":"x","partition":1e0}]}`, bad, "invalid_request"},
		{"partition out of range", "POST", recs, `{"records":[{"value":"x"},{"value":"y","partition":99}]}`, notFound, "partition_not_found"},
		{"partition on partition route", "POST", fetch, `{"records":[{"value":"x","partition":0}]}`, bad, "invalid_request"},
		// Encodings.
		{"bad base64", "POST", recs, `{"encoding":"base64","records":[{"value":"aGVsbG8"},{"value":"!!!"}]}`, bad, "invalid_request"},
		{"bad base64 key", "POST", recs, `{"records":[{"key":"*","value":"aGk="}],"encoding":"base64"}`, bad, "invalid_request"},
		{"base64 line feed", "POST", recs, `{"encoding":"base64","records":[{"value":"aG\nk="}]}`, bad, "invalid_request"},
		{"base64 only CRLF", "POST", recs, `{"encoding":"base64","records":[{"value":"\r\n"}]}`, bad, "invalid_request"},
		{"base64 trailing CRLF", "POST", fetch, `{"encoding":"base64","records":[{"value":"aGk=\r\n"}]}`, bad, "invalid_request"},
		{"base64 CR key", "POST", recs, `{"encoding":"base64","records":[{"key":"aG\rk=","value":"aGk="}]}`, bad, "invalid_request"},
		{"base64 padding bits", "POST", recs, `{"encoding":"base64","records":[{"value":"aGl="}]}`, bad, "invalid_request"},
		{"base64 space", "POST", recs, `{"encoding":"base64","records":[{"value":"aG k="}]}`, bad, "invalid_request"},
		{"base64 unpadded", "POST", recs, `{"encoding":"base64","records":[{"value":"aGk"}]}`, bad, "invalid_request"},
		{"unknown encoding", "POST", recs, `{"encoding":"rot13","records":[{"value":"x"}]}`, bad, "invalid_request"},
		{"encoding number", "POST", recs, `{"encoding":1,"records":[{"value":"x"}]}`, bad, "invalid_request"},
		{"fetch unknown encoding", "GET", fetch + "?offset=0&encoding=hex", nil, bad, "invalid_request"},
		// Sizes.
		{"body over 5 MiB", "POST", recs, `{"records":[{"value":"` + bigValue + `"}]}`, tooLarge, "payload_too_large"},
		{"record over 1 MiB", "POST", recs, `{"encoding":"base64","records":[{"value":"` + recordOver + `"}]}`, tooLarge, "payload_too_large"},
		{"10001 records", "POST", recs, many.Bytes(), tooLarge, "payload_too_large"},
		{"10001 records partition route", "POST", fetch, many.Bytes(), tooLarge, "payload_too_large"},
		// Partitions in the path.
		{"partition -1", "GET", "/v1/topics/orders/partitions/-1/records?offset=0", nil, bad, "invalid_request"},
		{"partition huge", "GET", "/v1/topics/orders/partitions/99999999999999999999/records?offset=0", nil, bad, "invalid_request"},
		{"partition beyond int32", "GET", "/v1/topics/orders/partitions/2147483648/offsets", nil, bad, "invalid_request"},
		{"partition word", "GET", "/v1/topics/orders/partitions/abc/records?offset=0", nil, bad, "invalid_request"},
		{"partition hex", "GET", "/v1/topics/orders/partitions/0x10/offsets", nil, bad, "invalid_request"},
		{"partition plus", "GET", "/v1/topics/orders/partitions/+1/offsets", nil, bad, "invalid_request"},
		{"partition exp", "POST", "/v1/topics/orders/partitions/1e3/records", ok, bad, "invalid_request"},
		{"partition dotdot", "GET", "/v1/topics/orders/partitions/../offsets", nil, bad, "invalid_request"},
		{"partition space", "GET", "/v1/topics/orders/partitions/%201/offsets", nil, bad, "invalid_request"},
		{"partition missing", "GET", "/v1/topics/orders/partitions/3/offsets", nil, notFound, "partition_not_found"},
		{"partition missing fetch", "GET", "/v1/topics/orders/partitions/7/records?offset=0", nil, notFound, "partition_not_found"},
		// Query parameters.
		{"offset missing", "GET", fetch, nil, bad, "invalid_request"},
		{"offset empty", "GET", fetch + "?offset=", nil, bad, "invalid_request"},
		{"offset negative", "GET", fetch + "?offset=-1", nil, bad, "invalid_request"},
		{"offset huge", "GET", fetch + "?offset=99999999999999999999", nil, bad, "invalid_request"},
		{"offset exponent", "GET", fetch + "?offset=1e3", nil, bad, "invalid_request"},
		{"offset hex", "GET", fetch + "?offset=0x10", nil, bad, "invalid_request"},
		{"offset plus", "GET", fetch + "?offset=%2B1", nil, bad, "invalid_request"},
		{"offset twice", "GET", fetch + "?offset=0&offset=1", nil, bad, "invalid_request"},
		{"bad query escape", "GET", fetch + "?offset=%zz", nil, bad, "invalid_request"},
		{"max_records negative", "GET", fetch + "?offset=0&max_records=-5", nil, bad, "invalid_request"},
		{"wait_ms word", "GET", fetch + "?offset=0&wait_ms=soon", nil, bad, "invalid_request"},
		{"timestamp word", "GET", "/v1/topics/orders/partitions/0/offsets?timestamp=now", nil, bad, "invalid_request"},
		{"offset beyond hw", "GET", fetch + "?offset=3", nil, http.StatusRequestedRangeNotSatisfiable, "offset_out_of_range"},
		// Groups.
		{"group slash", "PUT", "/v1/groups/a%2Fb/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":0}]}`, bad, "invalid_request"},
		{"group dotdot", "GET", "/v1/groups/../offsets?topic=orders", nil, bad, "invalid_request"},
		{"group 250", "GET", "/v1/groups/" + long + "/offsets?topic=orders", nil, bad, "invalid_request"},
		{"group topic missing", "GET", "/v1/groups/g1/offsets", nil, bad, "invalid_request"},
		{"group topic bad", "GET", "/v1/groups/g1/offsets?topic=..", nil, bad, "invalid_request"},
		{"group offset negative", "PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":-1}]}`, bad, "invalid_request"},
		{"group offset string", "PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":"1"}]}`, bad, "invalid_request"},
		{"group partition missing", "PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"orders","offset":1}]}`, bad, "invalid_request"},
		{"group topic traversal", "PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"../x","partition":0,"offset":0}]}`, bad, "invalid_request"},
		{"group offsets empty", "PUT", "/v1/groups/g1/offsets", `{"offsets":[]}`, bad, "invalid_request"},
		{"group beyond hw", "PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":0},{"topic":"orders","partition":1,"offset":3}]}`, http.StatusRequestedRangeNotSatisfiable, "offset_out_of_range"},
		// Methods and routes.
		{"delete collection", "DELETE", "/v1/topics", nil, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"put topic", "PUT", "/v1/topics/orders", `{"name":"orders"}`, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"patch records", "PATCH", fetch, ok, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"delete group", "DELETE", "/v1/groups/g1/offsets", nil, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"unknown route", "GET", "/v1/topics/orders/secrets", nil, notFound, "not_found"},
		{"unknown version", "POST", "/v2/topics", ok, notFound, "not_found"},
		{"unknown topic", "DELETE", "/v1/topics/ghost", nil, notFound, "topic_not_found"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, c := range cases {
		r := s.do(c.method, c.path, c.body)
		msg := checkError(t, c.name+" ("+c.method+" "+truncate(c.path, 60)+")", r, c.status, c.code)
		t.Logf("%-30s %d %s", c.name, r.status, truncate(msg, 200))
	}

	s.ok("GET", "/v1/health", nil, 200, nil)
	after := s.snapshot()
	if after.topics != before.topics {
		t.Errorf("topics changed:\n before %s\n after  %s", before.topics, after.topics)
	}
	for k, v := range before.offsets {
		if after.offsets[k] != v {
			t.Errorf("%s changed: %s -> %s", k, v, after.offsets[k])
		}
	}
	if after.groups != before.groups {
		t.Errorf("group offsets changed: %s -> %s", before.groups, after.groups)
	}
	if !slices.Equal(after.dirs, before.dirs) {
		t.Errorf("directories changed:\n before %v\n after  %v", before.dirs, after.dirs)
	}
}

// TestNoRedirectDelete is robustness.md's worst row: Go's default client
// follows a 307 and keeps the method, so a redirect of
// DELETE /v1/topics/victim2/partitions/.. to /v1/topics/victim2 deleted
// the topic. Sent by a client that follows redirects, every such request
// must be answered where it was sent, and the topic must survive.
func TestNoRedirectDelete(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("victim2", 2)
	s.ok("POST", "/v1/topics/victim2/partitions/0/records", `{"records":[{"value":"keep me"}]}`, 200, nil)
	follows := &http.Client{} // http.DefaultClient's policy: follow up to 10 redirects
	for _, path := range []string{
		"/v1/topics/victim2/partitions/..",
		"/v1/topics/victim2/partitions/0/..",
		"/v1/topics/victim2/partitions/./..",
		"/v1/topics/victim2/records/..",
		"/v1/topics/victim2/.",
		"/v1/topics/victim2/",
		"/v1/topics/x/../victim2",
		"//v1/topics/victim2",
		"/v1//topics/victim2",
		"/v1/topics//victim2",
	} {
		req, err := http.NewRequest("DELETE", s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := follows.Do(req)
		if err != nil {
			t.Fatalf("DELETE %s: %v", path, err)
		}
		res.Body.Close()
		if res.Request.URL.Path != req.URL.Path || res.StatusCode/100 == 3 || res.StatusCode/100 == 2 {
			t.Errorf("DELETE %s: %d from %s, want 400 or 404 from the path sent", path, res.StatusCode, res.Request.URL.Path)
		}
	}
	var o offsetsResponse
	s.ok("GET", "/v1/topics/victim2", nil, 200, nil)
	s.ok("GET", "/v1/topics/victim2/partitions/0/offsets", nil, 200, &o)
	if o.HighWatermark != 1 {
		t.Errorf("victim2/0 high watermark %d, want 1", o.HighWatermark)
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// TestRecreatedTopicHasNoOffsets is robustness.md's last row of section 1:
// a group's offsets go with the topic (Kafka), so a topic created again
// under the same name starts with none, and the old offset does not apply
// to the new incarnation.
func TestRecreatedTopicHasNoOffsets(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("again", 1)
	s.ok("POST", "/v1/topics/again/partitions/0/records", `{"records":[{"value":"a"},{"value":"b"},{"value":"c"}]}`, 200, nil)
	s.ok("PUT", "/v1/groups/g/offsets", `{"offsets":[{"topic":"again","partition":0,"offset":3}]}`, 204, nil)
	s.ok("DELETE", "/v1/topics/again", nil, 204, nil)
	s.createTopic("again", 1)
	var got groupOffsets
	s.ok("GET", "/v1/groups/g/offsets?topic=again", nil, 200, &got)
	if len(got.Offsets) != 0 {
		t.Errorf("offsets of the re-created topic: %+v, want none", got.Offsets)
	}
}
