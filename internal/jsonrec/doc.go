// Package jsonrec is the hand-written JSON of records on the two hot
// routes: ScanProduce reads a produce body of the plain shape, and
// AppendFetch, AppendRecord and AppendProduce write the fetch answer, one
// fetched record (a stream's event) and the produce answer. All are fixed
// shapes, so none needs reflection.
//
// The package owns the bytes, not their meaning on the wire: the HTTP
// API (pkg/api) reads bodies, picks the route's answer, and keeps the
// encoding/json decoder that answers every body ScanProduce does not take,
// with its errors. The encoders write exactly what encoding/json
// (json.Encoder, SetEscapeHTML(false)) writes for the API's answer types;
// ScanProduce takes only bodies that decoder takes and gives the same
// records, and never makes an error of its own. The fuzz tests hold the
// encoders to encoding/json references (ref_test.go); pkg/api's
// FuzzProduceJSON holds the scanner to the API's decoder.
//
// Strings are escaped by internal/jsonx. Nothing here is goroutine-unsafe:
// every function works on its arguments alone.
package jsonrec

import (
	"bytes"
	"encoding/base64"

	"github.com/tierlog/tierlog/pkg/broker"
)

// Encoding is how keys, values and header values travel in JSON
// (docs/api.md "Encodings of keys and values").
type Encoding int

const (
	// UTF8: a string when the bytes are valid UTF-8, else base64 with
	// "key_encoding"/"value_encoding":"base64".
	UTF8 Encoding = iota
	// Base64: padded standard base64 (RFC 4648).
	Base64
	// JSON: a JSON value of its own, else base64 as in UTF8.
	JSON
)

// RecordSize is what a record counts against broker.MaxRecordBytes: its
// key, value, and header keys and values.
func RecordSize(r *broker.ProduceRecord) int {
	n := len(r.Key) + len(r.Value)
	for i := range r.Headers {
		n += len(r.Headers[i].Key) + len(r.Headers[i].Value)
	}
	return n
}

// strictBase64 is RFC 4648 standard base64 with padding and zero padding
// bits. Line breaks are refused by DecodeBase64: the decoder skips them
// even in strict mode.
var strictBase64 = base64.StdEncoding.Strict()

// DecodeBase64 decodes s as strict base64: "aG\nk=" is not "hi".
func DecodeBase64(s []byte) ([]byte, error) {
	if i := bytes.IndexAny(s, "\r\n"); i >= 0 {
		return nil, base64.CorruptInputError(i)
	}
	b := make([]byte, strictBase64.DecodedLen(len(s)))
	n, err := strictBase64.Decode(b, s)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// Limits of record headers (docs/api.md "Produce", the headers field):
// 65 or more headers on a record is 400, as is a key of 0 or more than
// 256 bytes. Header keys and values count in the record's
// broker.MaxRecordBytes.
const (
	MaxHeaders       = 64
	MaxHeaderKeySize = 256
)
