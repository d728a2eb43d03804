package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tierlog/tierlog/pkg/broker"
)

// FuzzFetchJSON holds appendFetchJSON to the encoding/json answer of
// the reference records (fetchJSONRef): the same bytes for every record,
// with and without headers, in every encoding.
func FuzzFetchJSON(f *testing.F) {
	for _, s := range [][2]string{
		{"k1", "hello"},
		{"", ""},
		{"\x00\x1f\"\\/", "<>&\u2028\u2029\t\n\r\b\f"},
		{"\xff", "caf\xc3\xa9"},
		{"\xed\xa0\x80", "\xe2\x80"},
		{"日本語のテキスト、少し長め", strings.Repeat("abcdefgh", 5) + "\"x"},
		{"\x7f\x80", "plain ascii text that is long enough for several words"},
		{`{"a": [1, 2.5e3, "x y"], "b" : null}`, `"str\u00e9"`},
		{"null", " 42 "},
		{`{"a":1,"a":2}`, "[true,false]"},
		{`"\ud800"`, "\"unterminated"},
		// Past jsonx.LongString: the vector path, and each thing that sends it back.
		{strings.Repeat("k", 200), strings.Repeat("v", 300)},
		{strings.Repeat("a", 130) + "\"", strings.Repeat("b", 140) + "\\" + strings.Repeat("c", 20)},
		{strings.Repeat("a", 129) + "\x01z", strings.Repeat("b", 200) + "\xc3\xa9" + strings.Repeat("d", 40)},
		{strings.Repeat("\xff", 150), strings.Repeat("b", 127) + "\x1f" + strings.Repeat("e", 64)},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), false, false, int64(41), int64(1764500000000), uint8(0), "trace-id", 0)
		f.Add([]byte(s[0]), []byte(s[1]), true, false, int64(-1), int64(0), uint8(1), "k", 1)
		f.Add([]byte(s[0]), []byte(s[1]), false, true, int64(7), int64(3), uint8(2), "\xff\"", 3)
	}
	f.Add([]byte(nil), []byte(nil), true, true, int64(1)<<62, int64(-5), uint8(0), "", 0)
	// Carries: into a first digit, past it (one digit more), at the
	// top of int64, and below zero.
	for _, n := range []int64{8, 18, 97, 1998, 998, 9223372036854775805, -3, -1} {
		f.Add([]byte("k"), []byte("v"), false, false, n, n, uint8(0), "", 0)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, keyNil, valueNil bool, offset, ts int64, mode uint8, hkey string, nh int) {
		if keyNil {
			key = nil
		} else if key == nil {
			key = []byte{}
		}
		if valueNil {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		enc := []encoding{encUTF8, encBase64, encJSON}[mode%3]
		// Headers: none, or up to 3 with the key and value of the
		// record as values (nil among them).
		var hs []broker.Header
		for i := range max(nh%4, 0) {
			hv := [][]byte{value, key, nil}[i%3]
			hs = append(hs, broker.Header{Key: hkey, Value: hv})
		}
		res := &broker.FetchResult{
			Records: []broker.Record{
				{Offset: offset, Timestamp: ts, Key: key, Value: value, Headers: hs},
				{Offset: offset + 1, Timestamp: ts, Key: value, Value: key},
				// Each number from the one before it, as decimal writes
				// them: one more, the same, or neither.
				{Offset: offset + 2, Timestamp: ts + 1, Value: value},
				{Offset: offset + 12, Timestamp: ts - 1, Key: key},
			},
			NextOffset: offset + 13, HighWatermark: ts, LogStartOffset: offset,
		}
		for n := range len(res.Records) + 1 { // no record, one, ...
			r := &broker.FetchResult{Records: res.Records[:n], NextOffset: res.NextOffset, HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
			want := fetchJSONRef(r, enc)
			got := appendFetchJSON([]byte("prefix"), r, enc)
			if !bytes.Equal(got[6:], want) || string(got[:6]) != "prefix" {
				t.Fatalf("%d records, encoding %d:\n got %q\nwant %q", n, enc, got, want)
			}
			if n > 0 {
				// A stream's event is the same record, on one line.
				ev := sseRecordJSON(nil, &r.Records[0], enc)
				if bytes.ContainsAny(ev, "\r\n") || !bytes.Contains(got, ev) {
					t.Fatalf("event %q is not the answer's record or not one line", ev)
				}
			}
		}
	})
}

// FuzzProduceJSON holds readProduceJSON (scanProduce, then decodeProduce
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
		if recs, exp, ok := scanProduce([]byte(body), allowPartition); ok {
			if cut < 0 && (wantErr != nil || !reflect.DeepEqual(recs, wantRecs) || (exp == nil) != (wantExp == nil)) {
				t.Fatalf("scanProduce took %q: %+v, the reference: %+v, %v", body, recs, wantRecs, wantErr)
			}
		}
	})
}

// FuzzProduceAnswerJSON holds appendProduceJSON to the encoding/json
// produce answer, and checks it leaves answers with a failed record to
// encoding/json.
func FuzzProduceAnswerJSON(f *testing.F) {
	f.Add(0, int64(41), int64(1764500000000), 3, false)
	f.Add(-1, int64(-1), int64(-1), 1, true)
	f.Add(1<<31-1, int64(1)<<62, int64(0), 0, false)
	f.Add(7, int64(18), int64(9), 15, false) // a carry
	f.Add(7, int64(995), int64(9), 9, false) // one digit more
	f.Fuzz(func(t *testing.T, part int, off, ts int64, n int, failOne bool) {
		n = max(n%16, 0)
		res := make([]broker.ProduceResult, n)
		for i := range res {
			// One partition or counting up (decimal's cases), and
			// timestamps the same or not.
			res[i] = broker.ProduceResult{Partition: part + i*(n%2), Offset: off + int64(i), Timestamp: ts + int64(i/4)}
		}
		if failOne && n > 0 {
			res[n-1].Err = errors.New("boom")
		}
		got, ok := appendProduceJSON([]byte("x"), res)
		if failOne && n > 0 {
			if ok || string(got) != "x" {
				t.Fatalf("a failed record was encoded: %q", got)
			}
			return
		}
		if want := produceJSONRef(res); !ok || !bytes.Equal(got[1:], want) {
			t.Fatalf("\n got %q\nwant %q", got, want)
		}
	})
}
