package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
)

// TestProduceAnswerType holds jsonrec.AppendProduce (whose fuzz test
// compares it to a copy of produceResponse) to the API's own answer type:
// the same bytes as encoding/json writes for produceResponse.
func TestProduceAnswerType(t *testing.T) {
	for _, res := range [][]broker.ProduceResult{
		nil,
		{{Partition: 0, Offset: 0, Timestamp: 0}},
		{{Partition: 3, Offset: 41, Timestamp: 1764500000000}, {Partition: 3, Offset: 42, Timestamp: 1764500000000}, {Partition: 7, Offset: 9, Timestamp: 1764500000001}},
	} {
		out := produceResponse{Offsets: make([]produceOffset, len(res))}
		for i, pr := range res {
			off, ts := pr.Offset, pr.Timestamp
			out.Offsets[i] = produceOffset{Partition: pr.Partition, Offset: &off, Timestamp: &ts}
		}
		var want bytes.Buffer
		e := json.NewEncoder(&want)
		e.SetEscapeHTML(false)
		if err := e.Encode(&out); err != nil {
			t.Fatal(err)
		}
		got, ok := jsonrec.AppendProduce(nil, res)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%d results:\n got %q\nwant %q", len(res), got, want.Bytes())
		}
	}
}

// FuzzProduceJSON holds readProduceJSON (ScanProduce, then decodeProduce
// for anything it does not take) to decodeProduceJSON, the encoding/json
// decoder alone: the same records, expected offset and error text for
// every body, whole or cut short by a read error.
func FuzzProduceJSON(f *testing.F) {
	for _, seed := range []string{
		``,
		` `,
		`{}`,
		`{"records":[{"key":"k","value":"v","partition":0}]}`,
		`{"encoding":"utf8","records":[{"key":"k1","value":"hello","partition":0}]}`,
		`{"records":[{"value":"x"}],"encoding":"base64"}`,
		`{"encoding":"base64","records":[{"key":null,"value":"aGk="},{"key":"","value":""}]}`,
		`{"encoding":"base64","records":[{"value":"aGk"}]}`,
		`{"encoding":"base64","records":[{"value":"aG\nk="}]}`,
		`{"encoding":"base64","records":[{"value":"aG\\nk="}]}`,
		`{"records":[{"value":null},{"value":""}]} `,
		` { "records" : [ { "value" : "a" , "key" : "b" } ] , "expected_offset" : 12 } `,
		`{"records":[{"value":"a"}],"expected_offset":null}`,
		`{"records":[{"value":"a"}],"expected_offset":9223372036854775807}`,
		`{"records":[{"value":"a"}],"expected_offset":9223372036854775808}`,
		`{"records":[{"value":"a"}],"expected_offset":-1}`,
		`{"records":[{"value":"a"}],"expected_offset":01}`,
		`{"records":[{"value":"a"}],"expected_offset":1.0}`,
		`{"records":[{"value":"\ud83d\ude00 \u00e9 \" \\ \/ \b\f\n\r\t \u0000"}]}`,
		`{"records":[{"value":"\ud83d\ude00"}]}x`,
		`{"records":[{"value":"\ud800"}]}`,
		`{"records":[{"value":"\udc00\ud800"}]}`,
		`{"records":[{"value":"\ud800\u0041"}]}`,
		`{"records":[{"value":"\x"}]}`,
		`{"records":[{"value":"caf` + "\xc3\xa9" + `"}]}`,
		`{"records":[{"value":"` + "\xff" + `"}]}`,
		`{"records":[{"value":"` + "\x01" + `"}]}`,
		`{"records":[{"value":"x","partition":1e3}]}`,
		`{"records":[{"value":"x","partition":2147483647}]}`,
		`{"records":[{"value":"x","partition":2147483648}]}`,
		`{"records":[{"value":"x","partition":null}]}`,
		`{"records":[{"value":"x","partition":"1"}]}`,
		`{"Records":[{"VALUE":"x"}],"encoding":null}`,
		`{"records":[{"value":"x","other":1}],"other":{"a":[1,2]}}`,
		`{"records":[{"value":"x","value":"y"}]}`,
		`{"records":[{"value":"x"}],"records":[]}`,
		`{"encoding":"utf8","encoding":"base64","records":[{"value":"aGk="}]}`,
		`{"encoding":"latin1","records":[{"value":"x"}]}`,
		`{"records":[]}`,
		`{"records":null}`,
		`{"records":[{"key":"k"}]}`,
		`{"records":[{}]}`,
		`{"records":[{"value":"x"},]}`,
		`{"records":[{"value":"x"}]`,
		`{"records":[{"value":"x"}]}}`,
		`{"records":[{"value":"x"}]}{}`,
		`[{"value":"x"}]`,
		`{"records":[1,2,3]}`,
		`{"records":[{"value":nul}]}`,
		`{"records":[{"value":truex}]}`,
		`{"re\u0063ords":[{"value":"x"}]}`,
		`{"records":[{"key":"` + strings.Repeat("k", 1<<20) + `","value":"v"}]}`,
		`{"records":[{"value":"` + strings.Repeat("abcdefgh\\n", 30) + `"}]}`,
		// Headers, timestamps, json values, strictness.
		`{"records":[{"value":"v","headers":[{"key":"trace-id","value":"abc"},{"key":"trace-id","value":null},{"key":"x"}]}]}`,
		`{"records":[{"value":"v","headers":[]}]}`,
		`{"records":[{"value":"v","headers":null,"timestamp":null}]}`,
		`{"records":[{"value":"v","headers":[{"key":"","value":"a"}]}]}`,
		`{"records":[{"value":"v","headers":[{"value":"a"}]}]}`,
		`{"records":[{"value":"v","headers":[{"key":null}]}]}`,
		`{"records":[{"value":"v","headers":[{"key":"a","key":"b"}]}]}`,
		`{"records":[{"value":"v","headers":[{"key":"a","Value":"b"}]}]}`,
		`{"records":[{"value":"v","headers":[{"key":"a","vlaue":"b"}]}]}`,
		`{"records":[{"value":"v","headers":{"key":"a"}}]}`,
		`{"records":[{"value":"v","headers":[1]}]}`,
		`{"records":[{"value":"v","headers":[{"key":"` + strings.Repeat("k", 257) + `"}]}]}`,
		`{"records":[{"value":"v","headers":[{"key":"` + strings.Repeat("k", 256) + `"}]}]}`,
		`{"records":[{"value":"v","headers":[{"key":"\u00e9\ud800"}]}]}`,
		`{"records":[{"value":"v","headers":[` + strings.Repeat(`{"key":"h"},`, 63) + `{"key":"h"}]}]}`,
		`{"records":[{"value":"v","headers":[` + strings.Repeat(`{"key":"h"},`, 64) + `{"key":"h"}]}]}`,
		`{"encoding":"base64","records":[{"value":"aGk=","headers":[{"key":"k","value":"aGk="},{"key":"k","value":"aGk"}]}]}`,
		`{"encoding":"base64","records":[{"value":"aGk=","headers":[{"key":"k","value":"aGl="}]}]}`,
		`{"records":[{"value":"v","timestamp":1764500000000}]}`,
		`{"records":[{"value":"v","timestamp":-1}]}`,
		`{"records":[{"value":"v","timestamp":1.5}]}`,
		`{"records":[{"value":"v","timestamp":"1"}]}`,
		`{"records":[{"value":"v","timestamp":9223372036854775808}]}`,
		`{"records":[{"value":"v","timestamp":0,"timestamp":1}]}`,
		`{"encoding":"json","records":[{"key":{"id":7},"value":{"a":[1,2.5e-3,"x y",true,false,null]},"headers":[{"key":"n","value":12}]}]}`,
		`{"encoding":"json","records":[{"key":null,"value":null},{"value":"null"},{"value":-0.0},{"value":[]},{"value":{}}]}`,
		`{"encoding":"json","records":[{"value": { "a" : [ 1 , 2 ] , "b" : "x y" } }]}`,
		`{"encoding":"json","records":[{"value":{"a":1,"a":2}}]}`,
		`{"encoding":"json","records":[{"value":"\ud800\u00e9\n"}]}`,
		`{"encoding":"json","records":[{"value":"\x"}]}`,
		`{"encoding":"json","records":[{"value":01}]}`,
		`{"encoding":"json","records":[{"value":1.}]}`,
		`{"encoding":"json","records":[{"value":-}]}`,
		`{"encoding":"json","records":[{"value":[1,]}]}`,
		`{"encoding":"json","records":[{"value":tru}]}`,
		`{"encoding":"json","records":[{"value":"` + "\xff" + `"}]}`,
		`{"encoding":"json","records":[{"value":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}]}`,
		`{"records":[{"value":{"a":1}}],"encoding":"json"}`,
		`{"records":[{"value":"x"}],"Encoding":"utf8"}`,
		`{"records":[{"value":"x","partitons":1}]}`,
		`{"records":[{"value":"x"}],"recordz":[]}`,
		`{"records":[{"VALUE":"x"}]}`,
		`{"expected_offset":1,"expected_offset":2,"records":[{"value":"x"}]}`,
		// Past jsonx.LongString: the vector path, and each thing that sends it back.
		`{"records":[{"key":"` + strings.Repeat("k", 200) + `","value":"` + strings.Repeat("v", 300) + `"}]}`,
		`{"records":[{"value":"` + strings.Repeat("v", 140) + `\"` + strings.Repeat("w", 30) + `"}]}`,
		`{"records":[{"value":"` + strings.Repeat("v", 130) + "\x01" + strings.Repeat("w", 30) + `"}]}`,
		`{"records":[{"value":"` + strings.Repeat("v", 129) + "\xc3\xa9" + strings.Repeat("w", 30) + `"}]}`,
		`{"records":[{"value":"` + strings.Repeat("v", 200) + "\xff" + `"}]}`,
		`{"records":[{"value":"` + strings.Repeat("v", 300),
	} {
		f.Add(seed, true, -1)
		f.Add(seed, false, len(seed)/2)
	}
	f.Fuzz(func(t *testing.T, body string, allowPartition bool, cut int) {
		// cut >= 0: the body breaks off after cut bytes with a read error.
		var cutErr = errors.New("connection reset")
		newBody := func() io.Reader {
			if cut < 0 || cut >= len(body) {
				return strings.NewReader(body)
			}
			return io.MultiReader(strings.NewReader(body[:cut]), iotest.ErrReader(cutErr))
		}
		wantRecs, wantExp, wantErr := decodeProduceJSON(iotest.OneByteReader(newBody()), allowPartition)
		r := httptest.NewRequest("POST", "/v1/topics/t/records", newBody())
		gotRecs, gotExp, release, gotErr := readProduceJSON(httptest.NewRecorder(), r, allowPartition)
		defer release() // the next input reads into the same buffer
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprintf("%#v", gotErr) != fmt.Sprintf("%#v", wantErr) {
			t.Fatalf("error\n got %#v\nwant %#v", gotErr, wantErr)
		}
		if !reflect.DeepEqual(gotRecs, wantRecs) {
			t.Fatalf("records\n got %+v\nwant %+v", gotRecs, wantRecs)
		}
		if (gotExp == nil) != (wantExp == nil) || (gotExp != nil && *gotExp != *wantExp) {
			t.Fatalf("expected_offset: got %v, want %v", gotExp, wantExp)
		}
		// The fast path alone: whatever it takes, the reference takes the same.
		if recs, exp, ok := jsonrec.ScanProduce([]byte(body), allowPartition); ok {
			if cut < 0 && (wantErr != nil || !reflect.DeepEqual(recs, wantRecs) || (exp == nil) != (wantExp == nil)) {
				t.Fatalf("ScanProduce took %q: %+v, the reference: %+v, %v", body, recs, wantRecs, wantErr)
			}
		}
	})
}
