package jsonrec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/tierlog/tierlog/pkg/broker"
)

// The reference implementations the hand-written encoders replaced, kept
// as the tests' oracle: what the fetch and produce routes write with
// encoding/json. pkg/api's TestProduceAnswerType holds produceResponse
// below to the API's own answer type.

// utf8Record is a fetched record in utf8 mode. Key and Value are JSON
// strings, or null for no key / a tombstone; a key or value that is not
// valid UTF-8 is base64 and says so in KeyEncoding / ValueEncoding, so the
// bytes are never altered.
type utf8Record struct {
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []utf8Header `json:"headers,omitempty"`
}

// utf8Header is a header of a utf8Record.
type utf8Header struct {
	Key           string  `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// base64Header is a header of a base64Record: the key a string, the
// value base64.
type base64Header struct {
	Key         string `json:"key"`
	KeyEncoding string `json:"key_encoding,omitempty"`
	Value       []byte `json:"value"`
}

// jsonRecord is a fetched record in json mode: a key or value that is a
// JSON value of its own (not the literal null) is that value, anything
// else base64 with its *_encoding.
type jsonRecord struct {
	Offset        int64           `json:"offset"`
	Timestamp     int64           `json:"timestamp"`
	Key           json.RawMessage `json:"key"`
	KeyEncoding   string          `json:"key_encoding,omitempty"`
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding,omitempty"`
	Headers       []jsonHeader    `json:"headers,omitempty"`
}

type jsonHeader struct {
	Key           string          `json:"key"`
	KeyEncoding   string          `json:"key_encoding,omitempty"`
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding,omitempty"`
}

// refKey is a header key: the string, or base64 if it is not UTF-8.
func refKey(k string) (string, string) {
	if utf8.ValidString(k) {
		return k, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(k)), "base64"
}

// jsonOrBase64 renders b for json mode.
func jsonOrBase64(b []byte) (json.RawMessage, string) {
	if b == nil {
		return nil, ""
	}
	var v any
	if utf8.Valid(b) && json.Unmarshal(b, &v) == nil && v != nil {
		return json.RawMessage(b), ""
	}
	q, _ := json.Marshal(base64.StdEncoding.EncodeToString(b))
	return q, "base64"
}

// base64Record is a fetched record in base64 mode: encoding/json writes a
// []byte as standard padded base64, and nil as null.
type base64Record struct {
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"`
	Key       []byte         `json:"key"`
	Value     []byte         `json:"value"`
	Headers   []base64Header `json:"headers,omitempty"`
}

type fetchResponse struct {
	Records        any   `json:"records"`
	NextOffset     int64 `json:"next_offset"`
	HighWatermark  int64 `json:"high_watermark"`
	LogStartOffset int64 `json:"log_start_offset"`
}

// textOrBase64 renders b for utf8 mode into *slot: nil stays nil (null),
// valid UTF-8 is the string itself, anything else is base64 with Encoding
// "base64".
func textOrBase64(b []byte, slot *string) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		*slot = string(b)
		return slot, ""
	}
	*slot = base64.StdEncoding.EncodeToString(b)
	return slot, "base64"
}

// fetchJSONRef is the fetch answer as the fetch handler wrote it with
// encoding/json (writeJSON: json.Encoder, SetEscapeHTML(false)).
func fetchJSONRef(res *broker.FetchResult, enc Encoding) []byte {
	out := fetchResponse{
		NextOffset:     res.NextOffset,
		HighWatermark:  res.HighWatermark,
		LogStartOffset: res.LogStartOffset,
	}
	switch enc {
	case Base64:
		recs := make([]base64Record, len(res.Records))
		for i := range res.Records {
			rec := &res.Records[i]
			recs[i] = base64Record{Offset: rec.Offset, Timestamp: rec.Timestamp, Key: rec.Key, Value: rec.Value}
			for _, h := range rec.Headers {
				k, ke := refKey(h.Key)
				recs[i].Headers = append(recs[i].Headers, base64Header{Key: k, KeyEncoding: ke, Value: h.Value})
			}
		}
		out.Records = recs
	case JSON:
		recs := make([]jsonRecord, len(res.Records))
		for i := range res.Records {
			rec := &res.Records[i]
			o := &recs[i]
			o.Offset, o.Timestamp = rec.Offset, rec.Timestamp
			o.Key, o.KeyEncoding = jsonOrBase64(rec.Key)
			o.Value, o.ValueEncoding = jsonOrBase64(rec.Value)
			for _, h := range rec.Headers {
				var jh jsonHeader
				jh.Key, jh.KeyEncoding = refKey(h.Key)
				jh.Value, jh.ValueEncoding = jsonOrBase64(h.Value)
				o.Headers = append(o.Headers, jh)
			}
		}
		out.Records = recs
	default:
		recs := make([]utf8Record, len(res.Records))
		strs := make([]string, 2*len(res.Records))
		for i := range res.Records {
			rec := &res.Records[i]
			o := &recs[i]
			o.Offset, o.Timestamp = rec.Offset, rec.Timestamp
			o.Key, o.KeyEncoding = textOrBase64(rec.Key, &strs[2*i])
			o.Value, o.ValueEncoding = textOrBase64(rec.Value, &strs[2*i+1])
			for _, h := range rec.Headers {
				var uh utf8Header
				uh.Key, uh.KeyEncoding = refKey(h.Key)
				uh.Value, uh.ValueEncoding = textOrBase64(h.Value, new(string))
				o.Headers = append(o.Headers, uh)
			}
		}
		out.Records = recs
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(&out); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// produceOffset and produceResponse are the produce answer as the API
// declares it (without the per-record error, which AppendProduce leaves
// to encoding/json).
type produceOffset struct {
	Partition int    `json:"partition"`
	Offset    *int64 `json:"offset,omitempty"`
	Timestamp *int64 `json:"timestamp,omitempty"`
}

type produceResponse struct {
	Offsets           []produceOffset `json:"offsets"`
	FailedRecordCount int             `json:"failed_record_count"`
}

// produceJSONRef is the produce answer as the API writes it with
// encoding/json, for results without errors.
func produceJSONRef(res []broker.ProduceResult) []byte {
	out := produceResponse{Offsets: make([]produceOffset, len(res))}
	nums := make([]int64, 2*len(res))
	for i, pr := range res {
		e := &out.Offsets[i]
		e.Partition = pr.Partition
		nums[2*i], nums[2*i+1] = pr.Offset, pr.Timestamp
		e.Offset, e.Timestamp = &nums[2*i], &nums[2*i+1]
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(&out); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
