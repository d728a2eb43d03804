package subscribe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/tierlog/tierlog/pkg/broker"
)

// The event a target receives is JSON that aws-lambda-go's
// events.KafkaEvent decodes unchanged, so a handler written for an MSK or
// self-managed Kafka event source runs as it is:
//
//	{"eventSource":"tierlog","eventSourceArn":"<source>","bootstrapServers":"",
//	 "records":{"<topic>-<partition>":[
//	   {"topic":"orders","partition":0,"offset":41,"timestamp":1764500000000,
//	    "timestampType":"LOG_APPEND_TIME","key":"<base64>","value":"<base64>",
//	    "headers":[{"trace-id":[97,98,99]}]}, ...]}}
//
// One partition per event (one key, its records in offset order). key is
// absent for a record without a key, value for a tombstone. Header values
// are arrays of signed bytes (-128..127), as Lambda's Kafka event sources
// send them. The field names are Lambda's: never change them.
const (
	eventSource          = "tierlog"
	timestampLogAppend   = "LOG_APPEND_TIME"
	timestampCreate      = "CREATE_TIME"
	minBatchBytes        = 1024 // below this no envelope and record would fit
	answerFailuresField  = "batchItemFailures"
	answerItemIdentifier = "itemIdentifier"
)

// encoder builds events of one partition under a byte budget. Each record
// is encoded once (recordJSON); an event is the envelope around a run of
// them, so its size is known before it is built.
type encoder struct {
	head, tail []byte
}

func newEncoder(sourceARN, topic string, partition int) encoder {
	var e encoder
	e.head = append(e.head, `{"eventSource":"`+eventSource+`","eventSourceArn":`...)
	e.head = appendJSONString(e.head, sourceARN)
	e.head = append(e.head, `,"bootstrapServers":"","records":{`...)
	e.head = appendJSONString(e.head, topic+"-"+strconv.Itoa(partition))
	e.head = append(e.head, ":["...)
	e.tail = []byte("]}}")
	return e
}

// overhead is the size of an event with no record.
func (e encoder) overhead() int { return len(e.head) + len(e.tail) }

// event joins encoded records into one event.
func (e encoder) event(recs []*pending) []byte {
	n := e.overhead()
	for _, r := range recs {
		n += len(r.json) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, e.head...)
	for i, r := range recs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r.json...)
	}
	return append(out, e.tail...)
}

// recordJSON encodes one record of the event.
func recordJSON(dst []byte, topic string, partition int, tsType string, r *broker.Record) []byte {
	dst = append(dst, `{"topic":`...)
	dst = appendJSONString(dst, topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, r.Offset, 10)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, r.Timestamp, 10)
	dst = append(dst, `,"timestampType":"`...)
	dst = append(dst, tsType...)
	dst = append(dst, '"')
	if r.Key != nil {
		dst = append(dst, `,"key":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, r.Key)
		dst = append(dst, '"')
	}
	if r.Value != nil {
		dst = append(dst, `,"value":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, r.Value)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"headers":[`...)
	for i, h := range r.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = appendJSONString(dst, h.Key)
		dst = append(dst, ":["...)
		for j, b := range h.Value {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(int8(b)), 10)
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, "]}"...)
}

// appendJSONString appends s as a JSON string (encoding/json's escaping
// without the HTML escapes).
func appendJSONString(dst []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

// answer is what a target said about a batch.
type answer struct {
	// failed is the lowest offset the target listed in batchItemFailures,
	// or -1 when the batch succeeded whole.
	failed int64
}

// parseAnswer reads a success body: empty, or any JSON; a
// {"batchItemFailures":[...]} with entries is a partial failure. An entry
// whose itemIdentifier is not an offset of the batch fails the whole batch
// (as Lambda treats an invalid identifier), reported as an error.
func parseAnswer(body []byte, first, last int64) (answer, error) {
	var a struct {
		Failures []map[string]json.RawMessage `json:"batchItemFailures"`
	}
	if len(body) == 0 || json.Unmarshal(body, &a) != nil || len(a.Failures) == 0 {
		return answer{failed: -1}, nil
	}
	low := int64(-1)
	for _, f := range a.Failures {
		raw, ok := f[answerItemIdentifier]
		if !ok {
			return answer{}, fmt.Errorf("batchItemFailures entry without %s", answerItemIdentifier)
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw) // a number, as some handlers send
		}
		off, err := strconv.ParseInt(s, 10, 64)
		if err != nil || off < first || off > last {
			return answer{}, fmt.Errorf("batchItemFailures %s %.40q is not an offset of the batch [%d, %d]", answerItemIdentifier, s, first, last)
		}
		if low < 0 || off < low {
			low = off
		}
	}
	return answer{failed: low}, nil
}
