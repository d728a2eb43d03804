package jsonrec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
)

// FuzzFetchJSON holds AppendFetch to the encoding/json answer of
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
		enc := []Encoding{UTF8, Base64, JSON}[mode%3]
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
			got := AppendFetch([]byte("prefix"), r, enc)
			if !bytes.Equal(got[6:], want) || string(got[:6]) != "prefix" {
				t.Fatalf("%d records, Encoding %d:\n got %q\nwant %q", n, enc, got, want)
			}
			if n > 0 {
				// A stream's event (AppendRecord) is the same record, on
				// one line.
				ev := AppendRecord(nil, &r.Records[0], enc)
				if bytes.ContainsAny(ev, "\r\n") || !bytes.Contains(got, ev) {
					t.Fatalf("event %q is not the answer's record or not one line", ev)
				}
			}
		}
	})
}

// FuzzProduceAnswerJSON holds AppendProduce to the encoding/json
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
		got, ok := AppendProduce([]byte("x"), res)
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
