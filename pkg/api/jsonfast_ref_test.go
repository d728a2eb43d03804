package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/tierlog/tierlog/pkg/broker"
)

// The reference implementations the hand-written JSON of jsonfast.go
// replaced, kept as the tests' oracle: what the fetch route wrote with
// encoding/json before.

// utf8Record is a fetched record in utf8 mode. Key and Value are JSON
// strings, or null for no key / a tombstone; a key or value that is not
// valid UTF-8 is base64 and says so in KeyEncoding / ValueEncoding, so the
// bytes are never altered.
type utf8Record struct {
	Offset        int64   `json:"offset"`
	Timestamp     int64   `json:"timestamp"`
	Key           *string `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// base64Record is a fetched record in base64 mode: encoding/json writes a
// []byte as standard padded base64, and nil as null.
type base64Record struct {
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
}

type fetchResponse struct {
	Records        any   `json:"records"`
	NextOffset     int64 `json:"next_offset"`
	HighWatermark  int64 `json:"high_watermark"`
	LogStartOffset int64 `json:"log_start_offset"`
}

// textOrBase64 renders b for utf8 mode into *slot: nil stays nil (null),
// valid UTF-8 is the string itself, anything else is base64 with encoding
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
func fetchJSONRef(res *broker.FetchResult, enc encoding) []byte {
	out := fetchResponse{
		NextOffset:     res.NextOffset,
		HighWatermark:  res.HighWatermark,
		LogStartOffset: res.LogStartOffset,
	}
	if enc == encBase64 {
		recs := make([]base64Record, len(res.Records))
		for i := range res.Records {
			rec := &res.Records[i]
			recs[i] = base64Record{Offset: rec.Offset, Timestamp: rec.Timestamp, Key: rec.Key, Value: rec.Value}
		}
		out.Records = recs
	} else {
		recs := make([]utf8Record, len(res.Records))
		strs := make([]string, 2*len(res.Records))
		for i := range res.Records {
			rec := &res.Records[i]
			o := &recs[i]
			o.Offset, o.Timestamp = rec.Offset, rec.Timestamp
			o.Key, o.KeyEncoding = textOrBase64(rec.Key, &strs[2*i])
			o.Value, o.ValueEncoding = textOrBase64(rec.Value, &strs[2*i+1])
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

// produceJSONRef is the produce answer as writeProduce wrote it with
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
