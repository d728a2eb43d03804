package jsonrec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
)

// BenchmarkFetchEncode compares AppendFetch with the encoding/json
// encoder it replaced (ref), for 1000 records of 100 B and 1 KiB values;
// "escaped" values hold a '"' and a newline, "invalid" ones are not
// UTF-8 (base64 in the answer).
func BenchmarkFetchEncode(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, kind := range []string{"ascii", "escaped", "invalid"} {
			v := []byte(strings.Repeat("v", size))
			switch kind {
			case "escaped":
				v[size/2], v[size/3] = '"', '\n'
			case "invalid":
				v[size/2] = 0xff
			}
			res := &broker.FetchResult{Records: make([]broker.Record, 1000), NextOffset: 1000, HighWatermark: 1000}
			for i := range res.Records {
				res.Records[i] = broker.Record{Offset: int64(i), Timestamp: 1764500000000 + int64(i), Key: []byte(fmt.Sprint("key-", i)), Value: v}
			}
			for _, enc := range []Encoding{UTF8, Base64} {
				if enc == Base64 && kind != "ascii" {
					continue
				}
				name := fmt.Sprintf("value=%d/%s/%s", size, kind, map[Encoding]string{UTF8: "utf8", Base64: "base64"}[enc])
				b.Run(name+"/ref", func(b *testing.B) {
					b.SetBytes(int64(1000 * size))
					b.ReportAllocs()
					for b.Loop() {
						fetchJSONRef(res, enc)
					}
				})
				b.Run(name+"/fast", func(b *testing.B) {
					b.SetBytes(int64(1000 * size))
					b.ReportAllocs()
					var buf []byte
					for b.Loop() {
						buf = AppendFetch(buf[:0], res, enc)
					}
				})
			}
		}
	}
}
