package jsonrec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/tierlog/tierlog/internal/jsonx"
	"github.com/tierlog/tierlog/pkg/broker"
)

// The encoders. Each writes what encoding/json writes for the API's
// answer type (the references of ref_test.go), appending to dst.

// AppendRecord appends one fetched record as the fetch answer holds
// it (as encoding/json writes the reference records of ref_test.go): {"offset":..,"timestamp":..,"key":..,"value":..}
// and "headers":[{"key":..,"value":..}] when the record has any. In utf8
// mode a key or value (or header value) that is not valid UTF-8 is base64
// with "key_encoding"/"value_encoding":"base64"; in json mode one that is
// not a JSON value is; nil is null.
func AppendRecord(dst []byte, r *broker.Record, enc Encoding) []byte {
	var offset, ts decimal
	return appendRecordFrom(dst, r, enc, &offset, &ts)
}

// appendRecordFrom is AppendRecord writing the offset and the
// timestamp from the ones of the record before it (decimal).
func appendRecordFrom(dst []byte, r *broker.Record, enc Encoding, offset, ts *decimal) []byte {
	dst = append(dst, `{"offset":`...)
	dst = offset.append(dst, r.Offset)
	dst = append(dst, `,"timestamp":`...)
	dst = ts.append(dst, r.Timestamp)
	dst = append(dst, `,"key":`...)
	dst = appendFieldJSON(dst, r.Key, enc, `,"key_encoding":"base64"`)
	dst = append(dst, `,"value":`...)
	dst = appendFieldJSON(dst, r.Value, enc, `,"value_encoding":"base64"`)
	if len(r.Headers) > 0 {
		dst = appendHeadersJSON(dst, r.Headers, enc)
	}
	return append(dst, '}')
}

// appendFieldJSON appends a key or value (or header value) in mode enc,
// and flag after it when it went base64 where the mode is not base64.
func appendFieldJSON(dst, b []byte, enc Encoding, flag string) []byte {
	var b64 bool
	switch enc {
	case Base64:
		return appendBase64JSON(dst, b)
	case JSON:
		dst, b64 = appendValueJSON(dst, b)
	default:
		dst, b64 = appendTextJSON(dst, b)
	}
	if b64 {
		dst = append(dst, flag...)
	}
	return dst
}

// appendHeadersJSON appends ,"headers":[..] for hs. A header key is a
// string in every mode (base64 with "key_encoding" should one not be
// UTF-8: the API stores only UTF-8 keys).
func appendHeadersJSON(dst []byte, hs []broker.Header, enc Encoding) []byte {
	dst = append(dst, `,"headers":[`...)
	for i := range hs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		var b64 bool
		dst, b64 = appendTextJSON(dst, []byte(hs[i].Key))
		if b64 {
			dst = append(dst, `,"key_encoding":"base64"`...)
		}
		dst = append(dst, `,"value":`...)
		dst = appendFieldJSON(dst, hs[i].Value, enc, `,"value_encoding":"base64"`)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendValueJSON appends b for json mode: null for nil, b itself
// (compacted) when it is one JSON value in valid UTF-8 other than the
// literal null (which would read as a tombstone or no key), else b's
// base64 (and b64 true).
func appendValueJSON(dst, b []byte) (_ []byte, b64 bool) {
	if b == nil {
		return append(dst, "null"...), false
	}
	if !isJSONText(b) {
		return appendBase64JSON(dst, b), true
	}
	return appendCompact(dst, b), false
}

// isJSONText reports whether b reads back as a JSON value of its own
// in json mode.
func isJSONText(b []byte) bool {
	return utf8.Valid(b) && json.Valid(b) && string(bytes.TrimSpace(b)) != "null"
}

// appendCompact appends valid JSON b without white space outside its
// strings, as json.Compact (and json.Encoder for a json.RawMessage)
// writes it: b itself when it has none.
func appendCompact(dst, b []byte) []byte {
	if !bytes.ContainsAny(b, " \t\n\r") {
		return append(dst, b...)
	}
	inStr, esc := false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendFetch appends the whole fetch answer, with the newline
// json.Encoder ends it with.
func AppendFetch(dst []byte, res *broker.FetchResult, enc Encoding) []byte {
	dst = append(dst, `{"records":[`...)
	var offset, ts decimal
	for i := range res.Records {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRecordFrom(dst, &res.Records[i], enc, &offset, &ts)
	}
	dst = append(dst, `],"next_offset":`...)
	dst = strconv.AppendInt(dst, res.NextOffset, 10)
	dst = append(dst, `,"high_watermark":`...)
	dst = strconv.AppendInt(dst, res.HighWatermark, 10)
	dst = append(dst, `,"log_start_offset":`...)
	dst = strconv.AppendInt(dst, res.LogStartOffset, 10)
	return append(dst, "}\n"...)
}

// decimal writes a run of numbers, each from the one written before it
// where it can: a fetch answer's offsets count up by one and the records
// of a batch share a timestamp, and strconv took a fifth of the time of
// encoding 100 B records. The zero value has written nothing.
type decimal struct {
	last       int64
	start, end int // dst[start:end] is last's text; end == 0: none yet
}

// append appends v in base 10 to dst, which holds the text of the last
// number appended where append left it.
func (d *decimal) append(dst []byte, v int64) []byte {
	start := len(dst)
	switch {
	case d.end > 0 && v == d.last:
		dst = append(dst, dst[d.start:d.end]...)
	case d.end > 0 && v == d.last+1 && d.last >= 0 && dst[d.start] != '9':
		// The text of d.last plus one: a first digit other than 9 takes
		// any carry, so the length stays the same.
		dst = append(dst, dst[d.start:d.end]...)
		i := len(dst) - 1
		for dst[i] == '9' {
			dst[i] = '0'
			i--
		}
		dst[i]++
	default:
		dst = strconv.AppendInt(dst, v, 10)
	}
	d.last, d.start, d.end = v, start, len(dst)
	return dst
}

// FetchSize is an upper bound of AppendFetch's length for most
// answers (escapes may need more; append grows then), so that the buffer
// is allocated once.
func FetchSize(res *broker.FetchResult, enc Encoding) int {
	n := 128
	for i := range res.Records {
		r := &res.Records[i]
		k, v := len(r.Key), len(r.Value)
		for j := range r.Headers {
			k += 40 + len(r.Headers[j].Key)
			v += len(r.Headers[j].Value)
		}
		if enc != UTF8 {
			k, v = base64.StdEncoding.EncodedLen(k), base64.StdEncoding.EncodedLen(v)
		}
		n += 100 + k + v
	}
	return n
}

// appendBase64JSON appends b as encoding/json writes a []byte: padded
// standard base64 in quotes, null for nil.
func appendBase64JSON(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendTextJSON appends b for utf8 mode: null for nil, the JSON string
// of b when b is valid UTF-8, else b's base64 (and b64 true).
func appendTextJSON(dst, b []byte) (_ []byte, b64 bool) {
	if b == nil {
		return append(dst, "null"...), false
	}
	i := jsonx.PlainPrefix(b)
	if i == len(b) { // the common case: nothing to escape
		dst = append(dst, '"')
		dst = append(dst, b...)
		return append(dst, '"'), false
	}
	if !utf8.Valid(b[i:]) {
		return appendBase64JSON(dst, b), true
	}
	dst = append(dst, '"')
	dst = append(dst, b[:i]...)
	return append(jsonx.AppendEscaped(dst, b[i:]), '"'), false
}

// AppendProduce appends the produce answer for res, with the newline
// json.Encoder ends it with, when no record failed; ok is false (and dst
// unchanged) when one did: the API's encoding/json path answers those,
// with their error bodies.
func AppendProduce(dst []byte, res []broker.ProduceResult) (_ []byte, ok bool) {
	for i := range res {
		if res[i].Err != nil {
			return dst, false
		}
	}
	dst = append(dst, `{"offsets":[`...)
	var part, offset, ts decimal
	for i := range res {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"partition":`...)
		dst = part.append(dst, int64(res[i].Partition))
		dst = append(dst, `,"offset":`...)
		dst = offset.append(dst, res[i].Offset)
		dst = append(dst, `,"timestamp":`...)
		dst = ts.append(dst, res[i].Timestamp)
		dst = append(dst, '}')
	}
	return append(dst, "],\"failed_record_count\":0}\n"...), true
}
