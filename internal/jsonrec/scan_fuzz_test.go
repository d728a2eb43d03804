package jsonrec

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tierlog/tierlog/pkg/broker"
)

// FuzzScanProduce checks what ScanProduce promises on its own: it never
// panics, and what it takes is one valid JSON text whose records keep the
// API's limits. pkg/api's FuzzProduceJSON holds the records it gives to
// the API's encoding/json decoder.
func FuzzScanProduce(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`{"records":[{"key":"k","value":"v","partition":0}]}`,
		`{"encoding":"base64","records":[{"key":null,"value":"aGk="},{"key":"","value":""}]}`,
		`{"encoding":"base64","records":[{"value":"aG\nk="}]}`,
		` { "records" : [ { "value" : "a" , "key" : "b" } ] , "expected_offset" : 12 } `,
		`{"records":[{"value":"\ud83d\ude00 \u00e9 \" \\ \/ \b\f\n\r\t \u0000"}]}`,
		`{"records":[{"value":"\ud800"}]}`,
		`{"records":[{"value":"` + "\xff" + `"}]}`,
		`{"records":[{"value":"v","headers":[{"key":"trace-id","value":"abc"},{"key":"trace-id","value":null}]}]}`,
		`{"records":[{"value":"v","headers":[` + strings.Repeat(`{"key":"h"},`, 64) + `{"key":"h"}]}]}`,
		`{"encoding":"json","records":[{"key":{"id":7},"value":{"a":[1,2.5e-3,"x y",true,false,null]}}]}`,
		`{"encoding":"json","records":[{"value":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}]}`,
		`{"records":[{"value":"` + strings.Repeat("v", 140) + `\"` + strings.Repeat("w", 30) + `"}]}`,
	} {
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, allowPartition bool) {
		recs, exp, ok := ScanProduce([]byte(body), allowPartition)
		if !ok {
			return
		}
		if !json.Valid([]byte(body)) {
			t.Fatalf("took %q, which is not JSON", body)
		}
		if len(recs) == 0 || (exp != nil && *exp < 0) {
			t.Fatalf("took %q: %d records, expected offset %v", body, len(recs), exp)
		}
		for i := range recs {
			r := &recs[i]
			if RecordSize(r) > broker.MaxRecordBytes || len(r.Headers) > MaxHeaders || r.Timestamp < 0 || (!r.HasTimestamp && r.Timestamp != 0) {
				t.Fatalf("took %q: record %d breaks a limit", body, i)
			}
			if r.Partition < -1 || (!allowPartition && r.Partition != -1) {
				t.Fatalf("took %q: a partition where none is allowed", body)
			}
			for _, h := range r.Headers {
				if len(h.Key) == 0 || len(h.Key) > MaxHeaderKeySize || !utf8.ValidString(h.Key) {
					t.Fatalf("took %q: header key %q", body, h.Key)
				}
			}
		}
	})
}
