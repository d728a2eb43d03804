package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
)

// TestProduceRecordFields decodes headers, timestamps and json values at
// the codec level, and checks that the fast scanner takes these bodies
// itself (ok) with the reference decoder's answer.
func TestProduceRecordFields(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []broker.ProduceRecord
	}{
		{"utf8 headers", `{"records":[{"key":"k","value":"v","headers":[{"key":"trace-id","value":"abc"},{"key":"trace-id","value":null},{"key":"e","value":""}]}]}`,
			[]broker.ProduceRecord{{Key: []byte("k"), Value: []byte("v"), Partition: -1, Headers: []broker.Header{
				{Key: "trace-id", Value: []byte("abc")}, {Key: "trace-id"}, {Key: "e", Value: []byte{}}}}}},
		{"no headers", `{"records":[{"value":"v","headers":[]},{"value":"w","headers":null}]}`,
			[]broker.ProduceRecord{{Value: []byte("v"), Partition: -1}, {Value: []byte("w"), Partition: -1}}},
		{"timestamp", `{"records":[{"value":"v","timestamp":1764500000123},{"value":"w","timestamp":0},{"value":"x","timestamp":null}]}`,
			[]broker.ProduceRecord{{Value: []byte("v"), Partition: -1, Timestamp: 1764500000123, HasTimestamp: true},
				{Value: []byte("w"), Partition: -1, HasTimestamp: true}, {Value: []byte("x"), Partition: -1}}},
		{"base64 headers", `{"encoding":"base64","records":[{"value":"aGk=","headers":[{"key":"bin","value":"/w=="}]}]}`,
			[]broker.ProduceRecord{{Value: []byte("hi"), Partition: -1, Headers: []broker.Header{{Key: "bin", Value: []byte{0xff}}}}}},
		{"json", `{"encoding":"json","records":[{"key":{"id":7},"value":{"a":[1,2.5e-3,"x y",true,null]},"headers":[{"key":"n","value":12},{"key":"s","value":"str"}]},{"value":null},{"value":"null"}]}`,
			[]broker.ProduceRecord{
				{Key: []byte(`{"id":7}`), Value: []byte(`{"a":[1,2.5e-3,"x y",true,null]}`), Partition: -1,
					Headers: []broker.Header{{Key: "n", Value: []byte("12")}, {Key: "s", Value: []byte(`"str"`)}}},
				{Partition: -1},
				{Value: []byte(`"null"`), Partition: -1}}},
		{"json compacted", `{"encoding":"json","records":[{"value": { "a" : [ 1 , 2 ] , "b" : "x y" } }]}`,
			[]broker.ProduceRecord{{Value: []byte(`{"a":[1,2],"b":"x y"}`), Partition: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _, ok := jsonrec.ScanProduce([]byte(tc.body), true)
			if !ok {
				t.Fatalf("the fast scanner refused %s", tc.body)
			}
			if !reflect.DeepEqual(recs, tc.want) {
				t.Errorf("scanner:\n got %+v\nwant %+v", recs, tc.want)
			}
			ref, _, err := decodeProduceJSON(strings.NewReader(tc.body), true)
			if err != nil || !reflect.DeepEqual(ref, tc.want) {
				t.Errorf("reference: %+v, %v\nwant %+v", ref, err, tc.want)
			}
		})
	}
}

// TestProduceStrictErrors checks the 400s of strict produce bodies: each
// names the field with its path.
func TestProduceStrictErrors(t *testing.T) {
	many := func(n int) string { return strings.TrimSuffix(strings.Repeat(`{"key":"h"},`, n), ",") }
	for _, tc := range []struct{ body, want string }{
		{`{"records":[{"value":"a"},{"value":"b"},{"value":"c"},{"value":"d","partitons":1}]}`, "unknown field records[3].partitons"},
		{`{"records":[{"VALUE":"x"}]}`, `unknown field records[0].VALUE: field names are case-sensitive; did you mean "value"?`},
		{`{"Records":[{"value":"x"}]}`, `did you mean "records"?`},
		{`{"records":[{"value":"x"}],"extra":1}`, "unknown field extra"},
		{`{"records":[{"value":"x","value":"y"}]}`, "records[0].value is given twice"},
		{`{"encoding":"utf8","encoding":"utf8","records":[{"value":"x"}]}`, "encoding is given twice"},
		{`{"records":[{"value":"x","headers":[{"key":"a","vlaue":"b"}]}]}`, "unknown field records[0].headers[0].vlaue"},
		{`{"records":[{"value":"x","headers":[{"key":"a","key":"b"}]}]}`, "records[0].headers[0].key is given twice"},
		{`{"records":[{"value":"x","headers":[{"key":""}]}]}`, "records[0].headers[0].key is 0 bytes"},
		{`{"records":[{"value":"x","headers":[{"value":"v"}]}]}`, "records[0].headers[0].key is required"},
		{`{"records":[{"value":"x","headers":[{"key":"` + strings.Repeat("k", 257) + `"}]}]}`, "key is 257 bytes: want 1 to 256"},
		{`{"records":[{"value":"x","headers":[` + many(65) + `]}]}`, "records[0].headers has more than 64 headers"},
		{`{"records":[{"value":"x","timestamp":-1}]}`, "records[0].timestamp"},
		{`{"records":[{"value":"x","timestamp":1.5}]}`, "records[0].timestamp"},
		{`{"encoding":"base64","records":[{"value":" aGk="}]}`, "records[0].value is not valid standard base64"},
		{`{"encoding":"base64","records":[{"value":"aG\nk="}]}`, "records[0].value is not valid standard base64"},
		{`{"encoding":"base64","records":[{"value":"aGl="}]}`, "records[0].value is not valid standard base64"},
		{`{"encoding":"base64","records":[{"value":"aGk"}]}`, "records[0].value is not valid standard base64"},
		{`{"encoding":"base64","records":[{"value":"aGk=","headers":[{"key":"k","value":"aGl="}]}]}`, "records[0].headers[0].value is not valid standard base64"},
		{`{"encoding":"json","records":[{"value":"` + "\xff" + `"}]}`, "records[0].value is not valid UTF-8"},
	} {
		r := httptest.NewRequest("POST", "/v1/topics/t/records", strings.NewReader(tc.body))
		_, _, _, err := readProduceJSON(httptest.NewRecorder(), r, true)
		ae, ok := err.(*apiError)
		if !ok || ae.status != 400 || ae.code != codeInvalidRequest || !strings.Contains(ae.msg, tc.want) {
			t.Errorf("%.80s: got %v, want a 400 invalid_request containing %q", tc.body, err, tc.want)
		}
	}
	// 64 headers are allowed.
	body := `{"records":[{"value":"x","headers":[` + many(64) + `]}]}`
	if recs, _, ok := jsonrec.ScanProduce([]byte(body), true); !ok || len(recs[0].Headers) != 64 {
		t.Errorf("64 headers refused")
	}
}

// TestStrictUnmarshal holds the generic strict decoder (readJSON's) to
// its rules on a body of nested structs, slices, maps and raw fields.
func TestStrictUnmarshal(t *testing.T) {
	type inner struct {
		Topic string `json:"topic"`
		Skip  int    `json:"-"`
	}
	type Embedded struct {
		Shared int `json:"shared"`
	}
	type body struct {
		Embedded
		Name   string            `json:"name"`
		Items  []inner           `json:"items"`
		Labels map[string]inner  `json:"labels"`
		Raw    json.RawMessage   `json:"raw"`
		Plain  int               // no tag: its Go name
		Ptr    *inner            `json:"ptr,omitempty"`
		Free   map[string]string `json:"free"`
	}
	for _, tc := range []struct{ in, want string }{
		{`{"name":"a","items":[{"topic":"t"}],"labels":{"x":{"topic":"u"}},"raw":{"any":[1]},"Plain":1,"ptr":{"topic":"v"},"shared":2,"free":{"k":"v"}}`, ""},
		{`{"nmae":"a"}`, `unknown field nmae: want "shared", "name", "items", "labels", "raw", "Plain", "ptr" or "free"`},
		{`{"Name":"a"}`, `unknown field Name: field names are case-sensitive; did you mean "name"?`},
		{`{"name":"a","name":"b"}`, "name is given twice"},
		{`{"items":[{"topic":"t"},{"topik":"t"}]}`, "unknown field items[1].topik"},
		{`{"labels":{"x":{"Topic":"u"}}}`, "unknown field labels.x.Topic"},
		{`{"ptr":{"topic":"v","topic":"w"}}`, "ptr.topic is given twice"},
		{`{"raw":{"a":1,"a":2}}`, "raw.a is given twice"},
		{`{"Skip":1}`, "unknown field Skip"},
		{`{"plain":1}`, `did you mean "Plain"?`},
		{`{"name":1}`, "name: got JSON number, want a string"},
		{`{"name":"a",}`, "malformed JSON"},
	} {
		var v body
		err := strictUnmarshal([]byte(tc.in), "", &v)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	// decodeArray holds each entry to its type, with the path.
	type entry struct {
		Offset int64 `json:"offset"`
	}
	if _, err := decodeArray[entry]([]byte(`[{"offset":1},{"ofset":2}]`), "offsets", 10); err == nil ||
		!strings.Contains(err.Error(), "unknown field offsets[1].ofset") {
		t.Errorf("decodeArray: %v", err)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"a":1}`)
	var m map[string]int
	if err := strictUnmarshal(buf.Bytes(), "", &m); err != nil || m["a"] != 1 {
		t.Errorf("map body: %v %v", m, err)
	}
}
