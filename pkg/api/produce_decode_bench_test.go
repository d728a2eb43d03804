package api

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/internal/jsonrec"
)

// BenchmarkProduceDecode compares readProduceJSON (jsonrec.ScanProduce) with the
// encoding/json decoder alone (ref) on a body of 1000 records: plain
// utf8 values, escaped ones, base64, 1 or 8 headers a record, json values.
func BenchmarkProduceDecode(b *testing.B) {
	for _, size := range []int{100, 1024} {
		v := strings.Repeat("v", size)
		for _, kind := range []string{"utf8", "escaped", "base64", "headers1", "headers8", "json"} {
			enc, val, extra := "utf8", `"`+v+`"`, ""
			switch kind {
			case "escaped":
				val = `"` + v[:size/2] + `\"\n` + v[size/2+4:] + `"`
			case "base64":
				enc, val = "base64", `"`+base64.StdEncoding.EncodeToString([]byte(v))+`"`
			case "headers1":
				extra = `,"headers":[{"key":"trace-id","value":"0af7651916cd43dd8448eb211c80319c"}]`
			case "headers8":
				extra = `,"headers":[` + strings.TrimSuffix(strings.Repeat(`{"key":"header-key","value":"header-value"},`, 8), ",") + `]`
			case "json":
				enc, val = "json", `{"id":12345,"v":"`+v[:size-20]+`"}`
			}
			var body bytes.Buffer
			fmt.Fprintf(&body, `{"encoding":%q,"records":[`, enc)
			for i := range 1000 {
				if i > 0 {
					body.WriteByte(',')
				}
				key := fmt.Sprint("key-", i)
				if enc == "base64" {
					key = base64.StdEncoding.EncodeToString([]byte(key))
				}
				fmt.Fprintf(&body, `{"key":"%s","value":%s%s}`, key, val, extra)
			}
			body.WriteString("]}")
			raw := body.Bytes()
			name := fmt.Sprintf("value=%d/%s", size, kind)
			b.Run(name+"/ref", func(b *testing.B) {
				b.SetBytes(int64(1000 * size))
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := decodeProduceJSON(bytes.NewReader(raw), true); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/fast", func(b *testing.B) {
				b.SetBytes(int64(1000 * size))
				b.ReportAllocs()
				for b.Loop() {
					if _, _, ok := jsonrec.ScanProduce(raw, true); !ok {
						b.Fatal("ScanProduce refused the body")
					}
				}
			})
		}
	}
}
