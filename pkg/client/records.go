package client

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tierlog/tierlog/pkg/wire"
)

// Record is a record to produce. A nil Key means no key; a nil Value is a
// tombstone; empty non-nil slices stay empty. Partition pins the record to
// a partition; nil lets the key choose (Kafka's murmur2) or, without a
// key, round-robin.
type Record struct {
	Key       []byte
	Value     []byte
	Partition *int
}

// Partition returns a pointer to p, for Record.Partition.
func Partition(p int) *int { return &p }

// Result is the outcome of one produced record. Err is set (and Offset is
// -1) when the record was not appended.
type Result struct {
	Partition int
	Offset    int64
	Timestamp int64
	Err       error
}

// Limits of the API (API.md), the same in both formats.
const (
	MaxRecords     = wire.MaxRecords
	MaxRecordBytes = wire.MaxRecordBytes
	MaxBodyBytes   = wire.MaxBodyBytes
)

// ErrTooLarge is returned before sending anything when a record or a batch
// is over a limit of the API. Match with errors.Is.
var ErrTooLarge = errors.New("client: too large")

// Produce appends records to topic, each to its Partition or, if nil, by
// key hash or round-robin (server side). Records bound for one partition
// are appended as one atomic batch in order. A partition that fails
// leaves its records with Err set; the error return is for the whole
// request. Sent once: see the package doc on duplicates.
func (c *Client) Produce(ctx context.Context, topic string, recs []Record) ([]Result, error) {
	return c.produce(ctx, topicPath(topic)+"/records", recs, true)
}

// ProduceTo appends records to one partition, all or nothing: an error
// is the request's. Records must not set Partition. Sent once.
func (c *Client) ProduceTo(ctx context.Context, topic string, partition int, recs []Record) ([]Result, error) {
	return c.produce(ctx, partitionPath(topic, partition)+"/records", recs, false)
}

func (c *Client) produce(ctx context.Context, path string, recs []Record, perRecord bool) ([]Result, error) {
	body, err := encodeProduce(c.cfg.format, recs, perRecord)
	if err != nil {
		return nil, err
	}
	res, err := c.send(ctx, c.produceRequest(path, body))
	if err != nil {
		return nil, err
	}
	return c.decodeProduce(res, len(recs), "POST "+path)
}

func (c *Client) produceRequest(path string, body []byte) *request {
	rq := &request{method: "POST", path: path, body: body, contentType: "application/json", accept: "application/json"}
	if c.cfg.format == Binary {
		rq.contentType, rq.accept = wire.MediaType, wire.MediaType
	}
	return rq
}

// encodeProduce encodes recs in format f, refusing what the server would
// refuse (ErrTooLarge: more than MaxRecords, a record over MaxRecordBytes,
// a body over MaxBodyBytes).
func encodeProduce(f Format, recs []Record, perRecord bool) ([]byte, error) {
	if len(recs) == 0 {
		return nil, errors.New("client: produce needs at least one record")
	}
	if len(recs) > MaxRecords {
		return nil, fmt.Errorf("%w: %d records in one request, at most %d", ErrTooLarge, len(recs), MaxRecords)
	}
	for i := range recs {
		r := &recs[i]
		if n := len(r.Key) + len(r.Value); n > MaxRecordBytes {
			return nil, fmt.Errorf("%w: record %d has %d bytes of key and value, at most %d", ErrTooLarge, i, n, MaxRecordBytes)
		}
		if r.Partition != nil && (!perRecord || *r.Partition < 0) {
			if !perRecord {
				return nil, fmt.Errorf("client: record %d sets a partition; ProduceTo takes it as an argument", i)
			}
			return nil, fmt.Errorf("client: record %d: negative partition %d", i, *r.Partition)
		}
	}
	var body []byte
	if f == Binary {
		var err error
		body, err = wire.AppendProduceRequest(make([]byte, 0, produceSize(recs, f)), len(recs), func(i int) wire.Record {
			r := &recs[i]
			p := int32(-1)
			if r.Partition != nil {
				p = int32(*r.Partition)
			}
			return wire.Record{Key: r.Key, Value: r.Value, Partition: p}
		})
		if err != nil {
			if errors.Is(err, wire.ErrTooLarge) {
				return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
			}
			return nil, fmt.Errorf("client: encode: %w", err)
		}
	} else {
		body = appendJSONProduce(make([]byte, 0, produceSize(recs, f)), recs)
	}
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("%w: %d records make a %s body of %d bytes, at most %d", ErrTooLarge, len(recs), f, len(body), MaxBodyBytes)
	}
	return body, nil
}

// produceSize estimates the encoded size of recs, to size the buffer once.
func produceSize(recs []Record, f Format) int {
	n := 0
	for i := range recs {
		n += len(recs[i].Key) + len(recs[i].Value)
	}
	if f == Binary {
		return wire.ProduceRequestSize(len(recs), n)
	}
	return 32 + n*4/3 + len(recs)*40
}

// appendJSONProduce writes API.md's produce body by hand: encoding/json
// would replace invalid UTF-8 with U+FFFD. Text that is all valid UTF-8
// goes as utf8 strings, anything else makes the whole body base64.
func appendJSONProduce(dst []byte, recs []Record) []byte {
	b64 := false
	for i := range recs {
		if !utf8.Valid(recs[i].Key) || !utf8.Valid(recs[i].Value) {
			b64 = true
			break
		}
	}
	str := appendJSONString
	if b64 {
		dst = append(dst, `{"encoding":"base64","records":[`...)
		str = appendBase64String
	} else {
		dst = append(dst, `{"records":[`...)
	}
	for i := range recs {
		r := &recs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		if r.Key != nil {
			dst = append(dst, `"key":`...)
			dst = str(dst, r.Key)
			dst = append(dst, ',')
		}
		dst = append(dst, `"value":`...)
		if r.Value == nil {
			dst = append(dst, "null"...)
		} else {
			dst = str(dst, r.Value)
		}
		if r.Partition != nil {
			dst = append(dst, `,"partition":`...)
			dst = strconv.AppendInt(dst, int64(*r.Partition), 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, valid UTF-8, as a JSON string: quotes,
// backslashes and control characters escaped, every other byte as is.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendBase64String(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, s)
	return append(dst, '"')
}

// decodeProduce reads a produce answer in whichever format it came.
func (c *Client) decodeProduce(res *response, n int, op string) ([]Result, error) {
	var out []Result
	if res.header.Get("Content-Type") == wire.MediaType {
		entries, err := wire.DecodeProduceAnswer(res.body)
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", op, err)
		}
		out = make([]Result, len(entries))
		for i, e := range entries {
			out[i] = Result{Partition: int(e.Partition), Offset: e.Offset, Timestamp: e.Timestamp}
			if e.Failed() {
				out[i].Err = &Error{Status: statusOf(e.ErrCode), Code: e.ErrCode, Message: e.ErrMessage}
			}
		}
	} else {
		var body struct {
			Offsets []struct {
				Partition int    `json:"partition"`
				Offset    *int64 `json:"offset"`
				Timestamp *int64 `json:"timestamp"`
				Error     *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"offsets"`
		}
		if err := decodeJSON(res.body, &body, op); err != nil {
			return nil, err
		}
		out = make([]Result, len(body.Offsets))
		for i, e := range body.Offsets {
			r := Result{Partition: e.Partition, Offset: -1, Timestamp: -1}
			switch {
			case e.Error != nil:
				r.Err = &Error{Status: statusOf(e.Error.Code), Code: e.Error.Code, Message: e.Error.Message}
			case e.Offset != nil:
				r.Offset = *e.Offset
				if e.Timestamp != nil {
					r.Timestamp = *e.Timestamp
				}
			default:
				return nil, fmt.Errorf("client: %s: entry %d has neither offset nor error", op, i)
			}
			out[i] = r
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("client: %s: %d results for %d records", op, len(out), n)
	}
	return out, nil
}

// Fetch reads records of one partition from offset on. An offset below
// the log start or above the high watermark is an *Error with code
// offset_out_of_range and both bounds. Records damaged on the server's
// disk from offset on are a *DamagedError naming the next readable
// offset. Retried like every read.
func (c *Client) Fetch(ctx context.Context, topic string, partition int, offset int64, opt FetchOptions) (*FetchResult, error) {
	rq := c.fetchRequest(topic, partition, offset, opt)
	res, err := c.do(ctx, rq, true)
	if err != nil {
		return nil, asDamaged(err, topic, partition, offset)
	}
	return decodeFetch(res, partition, rq.method+" "+rq.path)
}

func (c *Client) fetchRequest(topic string, partition int, offset int64, opt FetchOptions) *request {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
	if opt.MaxRecords > 0 {
		q.Set("max_records", strconv.Itoa(opt.MaxRecords))
	}
	if opt.MaxBytes > 0 {
		q.Set("max_bytes", strconv.Itoa(opt.MaxBytes))
	}
	if opt.Wait > 0 {
		q.Set("wait_ms", strconv.FormatInt(max(opt.Wait.Milliseconds(), 1), 10))
	}
	rq := &request{method: "GET", path: partitionPath(topic, partition) + "/records", query: q, accept: "application/json"}
	if c.cfg.format == Binary {
		rq.accept = wire.MediaType
	}
	return rq
}

func decodeFetch(res *response, partition int, op string) (*FetchResult, error) {
	if res.header.Get("Content-Type") == wire.MediaType {
		b, recs, err := wire.DecodeFetchAnswer(res.body)
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", op, err)
		}
		out := &FetchResult{NextOffset: b.NextOffset, HighWatermark: b.HighWatermark, LogStartOffset: b.LogStartOffset, Messages: make([]Message, len(recs))}
		for i, r := range recs {
			// Keys and values alias this answer's body, which nothing
			// else uses: the caller owns them.
			out.Messages[i] = Message{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
		}
		return out, nil
	}
	var body struct {
		Records []struct {
			Offset        int64   `json:"offset"`
			Timestamp     int64   `json:"timestamp"`
			Key           *string `json:"key"`
			KeyEncoding   string  `json:"key_encoding"`
			Value         *string `json:"value"`
			ValueEncoding string  `json:"value_encoding"`
		} `json:"records"`
		NextOffset     int64 `json:"next_offset"`
		HighWatermark  int64 `json:"high_watermark"`
		LogStartOffset int64 `json:"log_start_offset"`
	}
	if err := decodeJSON(res.body, &body, op); err != nil {
		return nil, err
	}
	out := &FetchResult{NextOffset: body.NextOffset, HighWatermark: body.HighWatermark, LogStartOffset: body.LogStartOffset, Messages: make([]Message, len(body.Records))}
	for i, r := range body.Records {
		m := Message{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp}
		var err error
		if m.Key, err = fieldBytes(r.Key, r.KeyEncoding); err != nil {
			return nil, fmt.Errorf("client: %s: record %d key: %w", op, r.Offset, err)
		}
		if m.Value, err = fieldBytes(r.Value, r.ValueEncoding); err != nil {
			return nil, fmt.Errorf("client: %s: record %d value: %w", op, r.Offset, err)
		}
		out.Messages[i] = m
	}
	return out, nil
}

// fieldBytes turns a utf8-mode key or value back into its bytes: null is
// nil, "" is empty and non-nil, *_encoding base64 is decoded.
func fieldBytes(s *string, enc string) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	switch enc {
	case "":
		return []byte(*s), nil
	case "base64":
		return decodeBase64(*s)
	}
	return nil, fmt.Errorf("unknown encoding %q", enc)
}

// strictBase64 is RFC 4648 standard base64 with padding and zero padding
// bits, as the server writes it. Line breaks, which the decoder skips even
// in strict mode, are refused by decodeBase64.
var strictBase64 = base64.StdEncoding.Strict()

func decodeBase64(s string) ([]byte, error) {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return nil, base64.CorruptInputError(i)
	}
	return strictBase64.DecodeString(s)
}
