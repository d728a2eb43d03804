package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tierlog/tierlog/internal/jsonx"
	"github.com/tierlog/tierlog/pkg/wire"
)

// Record is a record to produce. A nil Key means no key; a nil Value is a
// tombstone; empty non-nil slices stay empty. Partition pins the record to
// a partition; nil lets the key choose (Kafka's murmur2) or, without a
// key, round-robin.
//
// Headers travel with the record in order (keys may repeat; at most
// MaxHeaders, each key 1 to MaxHeaderKeyBytes bytes of UTF-8; keys and
// values count in MaxRecordBytes). Timestamp, if not the zero time, is the
// record's event time (milliseconds are kept; not before 1970): on a topic
// with timestamp type "create" it is the record's timestamp, on an
// append-time topic the server refuses it (400). The zero time means the
// server's clock.
type Record struct {
	Key       []byte
	Value     []byte
	Partition *int
	Headers   []Header
	Timestamp time.Time
}

// Partition returns a pointer to p, for Record.Partition.
func Partition(p int) *int { return &p }

// Header is a record header, as in Kafka. A nil Value is a null header
// value; an empty non-nil one stays empty.
type Header struct {
	Key   string
	Value []byte
}

// Limits of record headers (docs/api.md).
const (
	MaxHeaders        = 64
	MaxHeaderKeyBytes = 256
)

// Size is what the record counts against MaxRecordBytes: key, value,
// and header keys and values.
func (r *Record) Size() int {
	n := len(r.Key) + len(r.Value)
	for i := range r.Headers {
		n += len(r.Headers[i].Key) + len(r.Headers[i].Value)
	}
	return n
}

// check refuses, before anything is sent, what the server would refuse
// in record i (i < 0: the record of a Producer.Send): size
// (ErrTooLarge), headers, a timestamp before 1970.
func (r *Record) check(i int) error {
	what := "record"
	if i >= 0 {
		what = "record " + strconv.Itoa(i)
	}
	if n := r.Size(); n > MaxRecordBytes {
		return fmt.Errorf("%w: %s has %d bytes of key, value and headers, at most %d", ErrTooLarge, what, n, MaxRecordBytes)
	}
	if len(r.Headers) > MaxHeaders {
		return fmt.Errorf("client: %s has %d headers, at most %d", what, len(r.Headers), MaxHeaders)
	}
	for j, h := range r.Headers {
		if len(h.Key) == 0 || len(h.Key) > MaxHeaderKeyBytes || !utf8.ValidString(h.Key) {
			return fmt.Errorf("client: %s header %d: key of %d bytes: want 1 to %d bytes of UTF-8", what, j, len(h.Key), MaxHeaderKeyBytes)
		}
	}
	if !r.Timestamp.IsZero() && r.Timestamp.UnixMilli() < 0 {
		return fmt.Errorf("client: %s: timestamp %v is before 1970", what, r.Timestamp)
	}
	return nil
}

// Result is the outcome of one produced record. Err is set (and Offset is
// -1) when the record was not appended. Replayed is true when the server
// answered the request from an earlier attempt with the same
// Idempotency-Key (Idempotent-Replayed: true): the record was appended
// once, by that attempt, at Offset.
type Result struct {
	Partition int
	Offset    int64
	Timestamp int64
	Err       error
	Replayed  bool
}

// ProduceOptions are the conditions of one produce call (ProduceWith,
// ProduceToWith).
type ProduceOptions struct {
	// IdempotencyKey is sent as the Idempotency-Key header: 1 to 255
	// printable ASCII characters. Empty (the default) means a fresh
	// random key (128 bits, hex) for this call. Every retry of the call
	// carries the same key, so a retry after an unknown outcome appends
	// nothing twice. Give one to repeat a call across processes (the same
	// key with the same records answers the first call's offsets; with
	// other records the call fails with ErrIdempotencyKeyReused).
	IdempotencyKey string
	// ExpectedOffset, if not nil, makes the append conditional
	// (ProduceToWith only): it happens only if the partition's high
	// watermark is exactly *ExpectedOffset, else the call fails with an
	// *OffsetMismatchError and nothing is appended.
	ExpectedOffset *int64
}

// ProduceReply is the outcome of a produce call.
type ProduceReply struct {
	// Results, one per record in request order.
	Results []Result
	// Replayed is true when the server answered from an earlier attempt
	// with the same key (Idempotent-Replayed: true) and appended nothing.
	Replayed bool
	// IdempotencyKey is the key the call was sent with (the caller's or
	// the generated one).
	IdempotencyKey string
}

// Limits of the API (docs/api.md), the same in both formats.
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
// request. It is ProduceWith with a fresh Idempotency-Key: retried like
// every call, safely (see the package doc on duplicates).
func (c *Client) Produce(ctx context.Context, topic string, recs []Record) ([]Result, error) {
	rep, err := c.ProduceWith(ctx, topic, recs, ProduceOptions{})
	if err != nil {
		return nil, err
	}
	return rep.Results, nil
}

// ProduceTo appends records to one partition, all or nothing: an error
// is the request's. Records must not set Partition. It is ProduceToWith
// with a fresh Idempotency-Key.
func (c *Client) ProduceTo(ctx context.Context, topic string, partition int, recs []Record) ([]Result, error) {
	rep, err := c.ProduceToWith(ctx, topic, partition, recs, ProduceOptions{})
	if err != nil {
		return nil, err
	}
	return rep.Results, nil
}

// ProduceWith is Produce with options. opt.ExpectedOffset must be nil: a
// condition is on one partition (ProduceToWith).
func (c *Client) ProduceWith(ctx context.Context, topic string, recs []Record, opt ProduceOptions) (*ProduceReply, error) {
	if opt.ExpectedOffset != nil {
		return nil, errors.New("client: ExpectedOffset needs a partition: use ProduceToWith")
	}
	return c.produce(ctx, topicPath(topic)+"/records", recs, true, opt)
}

// ProduceToWith is ProduceTo with options: an Idempotency-Key of the
// caller's, a conditional append (ExpectedOffset: an *OffsetMismatchError
// when the high watermark is elsewhere).
func (c *Client) ProduceToWith(ctx context.Context, topic string, partition int, recs []Record, opt ProduceOptions) (*ProduceReply, error) {
	if opt.ExpectedOffset != nil && *opt.ExpectedOffset < 0 {
		return nil, fmt.Errorf("client: ExpectedOffset %d: want 0 or more", *opt.ExpectedOffset)
	}
	rep, err := c.produce(ctx, partitionPath(topic, partition)+"/records", recs, false, opt)
	if err != nil && opt.ExpectedOffset != nil {
		return nil, asMismatch(err, *opt.ExpectedOffset)
	}
	return rep, err
}

func (c *Client) produce(ctx context.Context, path string, recs []Record, perRecord bool, opt ProduceOptions) (*ProduceReply, error) {
	key, err := produceKey(opt.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	body, err := encodeProduce(c.cfg.format, recs, perRecord)
	if err != nil {
		return nil, err
	}
	rq := c.produceRequest(path, body, key)
	if opt.ExpectedOffset != nil {
		if rq.body, err = withExpectedOffset(rq, c.cfg.format, *opt.ExpectedOffset); err != nil {
			return nil, err
		}
	}
	op := "POST " + path
	send := func() (*ProduceReply, error) {
		res, err := c.send(ctx, rq)
		if err != nil {
			return nil, err
		}
		return c.decodeProduceReply(res, len(recs), op)
	}
	rep, err := c.retryProduce(ctx, c.cfg.backoff.MaxElapsed, c.cfg.log, send)
	if err != nil {
		return nil, err
	}
	rep.IdempotencyKey = key
	return rep, nil
}

// retryProduce runs send, retrying what is worth retrying for a request
// that carries an Idempotency-Key (isProduceRetriable) for up to
// maxElapsed (0: sent once).
func (c *Client) retryProduce(ctx context.Context, maxElapsed time.Duration, log *slog.Logger, send func() (*ProduceReply, error)) (*ProduceReply, error) {
	if maxElapsed <= 0 {
		return send()
	}
	return retryIf(ctx, c.cfg.backoff, maxElapsed, log, isProduceRetriable, c.giveUp, send)
}

// isProduceRetriable is IsRetriable for a produce with an
// Idempotency-Key: besides 503 and lost connections, 408 (the body did
// not arrive: nothing was done) and 409 idempotency_key_in_use (an
// earlier attempt is still being appended: once it is done, the retry
// answers its result).
func isProduceRetriable(err error) bool {
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusRequestTimeout || e.Code == CodeIdempotencyKeyInUse) {
		return true
	}
	return IsRetriable(err)
}

// produceKey is the caller's key, checked, or a fresh random one.
func produceKey(key string) (string, error) {
	if key == "" {
		return NewIdempotencyKey(), nil
	}
	if err := ValidIdempotencyKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// NewIdempotencyKey returns a random 128-bit key in hex (32 characters),
// as the client generates for every produce call without one.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// MaxIdempotencyKey is the longest Idempotency-Key (docs/api.md).
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether key is a legal Idempotency-Key: 1 to
// 255 printable ASCII characters (0x20 to 0x7e).
func ValidIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKey {
		return fmt.Errorf("client: Idempotency-Key of %d characters: want 1 to %d", len(key), MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("client: Idempotency-Key has a non-printable character at position %d (byte 0x%02x)", i, c)
		}
	}
	return nil
}

// withExpectedOffset adds expected_offset to a single-partition produce:
// in the JSON body (docs/api.md), or as the query parameter for a binary body
// (docs/api-extensions.md). It returns the body to send.
func withExpectedOffset(rq *request, f Format, expected int64) ([]byte, error) {
	if f == Binary {
		rq.query = url.Values{"expected_offset": {strconv.FormatInt(expected, 10)}}
		return rq.body, nil
	}
	// The body is appendJSONProduce's object: insert before its '}'.
	b := rq.body
	out := make([]byte, 0, len(b)+40)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"expected_offset":`...)
	out = strconv.AppendInt(out, expected, 10)
	out = append(out, '}')
	if len(out) > MaxBodyBytes {
		return nil, fmt.Errorf("%w: a body of %d bytes with expected_offset, at most %d", ErrTooLarge, len(out), MaxBodyBytes)
	}
	return out, nil
}

// The headers of idempotent produce.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

func (c *Client) produceRequest(path string, body []byte, key string) *request {
	rq := &request{method: "POST", path: path, body: body, contentType: "application/json", accept: "application/json", idempotencyKey: key}
	if c.cfg.format == Binary {
		// Version 1 unless a record needs version 2 (headers, a
		// timestamp): a server that predates version 2 still takes
		// the batches it can store.
		mt := wire.MediaTypeOf(wire.VersionOfBody(body))
		rq.contentType, rq.accept = mt, mt
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
		if err := r.check(i); err != nil {
			return nil, err
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
		v := wire.Version
		for i := range recs {
			if len(recs[i].Headers) > 0 || !recs[i].Timestamp.IsZero() {
				v = wire.Version2
				break
			}
		}
		body, err = wire.AppendProduceRequestV(make([]byte, 0, produceSize(recs, f)), v, len(recs), func(i int) wire.Record {
			r := &recs[i]
			p := int32(-1)
			if r.Partition != nil {
				p = int32(*r.Partition)
			}
			out := wire.Record{Key: r.Key, Value: r.Value, Partition: p}
			if !r.Timestamp.IsZero() {
				out.Timestamp, out.HasTimestamp = r.Timestamp.UnixMilli(), true
			}
			if len(r.Headers) > 0 {
				out.Headers = make([]wire.Header, len(r.Headers))
				for j, h := range r.Headers {
					out.Headers[j] = wire.Header{Key: h.Key, Value: h.Value}
				}
			}
			return out
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
		n += recs[i].Size() + 40*len(recs[i].Headers)
	}
	if f == Binary {
		return wire.ProduceRequestSizeV2(len(recs), 0, n)
	}
	return 32 + n*4/3 + len(recs)*40
}

// appendJSONProduce writes docs/api.md's produce body by hand: encoding/json
// would replace invalid UTF-8 with U+FFFD. Text that is all valid UTF-8
// goes as utf8 strings, anything else makes the whole body base64 (header
// keys are always strings).
func appendJSONProduce(dst []byte, recs []Record) []byte {
	b64 := false
	for i := range recs {
		if !utf8.Valid(recs[i].Key) || !utf8.Valid(recs[i].Value) {
			b64 = true
			break
		}
		for _, h := range recs[i].Headers {
			if !utf8.Valid(h.Value) {
				b64 = true
			}
		}
	}
	str := jsonx.AppendString
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
		if len(r.Headers) > 0 {
			dst = append(dst, `,"headers":[`...)
			for j, h := range r.Headers {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"key":`...)
				dst = jsonx.AppendString(dst, []byte(h.Key))
				dst = append(dst, `,"value":`...)
				if h.Value == nil {
					dst = append(dst, "null"...)
				} else {
					dst = str(dst, h.Value)
				}
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		if !r.Timestamp.IsZero() {
			dst = append(dst, `,"timestamp":`...)
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendBase64String(dst, s []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, s)
	return append(dst, '"')
}

// decodeProduceReply is decodeProduce with the Idempotent-Replayed header.
func (c *Client) decodeProduceReply(res *response, n int, op string) (*ProduceReply, error) {
	results, err := c.decodeProduce(res, n, op)
	if err != nil {
		return nil, err
	}
	return &ProduceReply{Results: results, Replayed: replayed(res)}, nil
}

// replayed reports whether the answer says Idempotent-Replayed: true.
func replayed(res *response) bool {
	return strings.EqualFold(strings.TrimSpace(res.header.Get(headerReplayed)), "true")
}

// decodeProduce reads a produce answer in whichever format it came.
func (c *Client) decodeProduce(res *response, n int, op string) ([]Result, error) {
	var out []Result
	if isBinary(res) {
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
	if replayed(res) {
		for i := range out {
			out[i].Replayed = true
		}
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
		rq.accept = fetchAccept
	}
	return rq
}

// fetchAccept asks for binary fetch answers in version 2 (with headers),
// or version 1 from a server that predates it.
var fetchAccept = wire.MediaTypeV2 + ", " + wire.MediaType + ";q=0.9"

// isBinary reports whether an answer is a binary batch (either version).
func isBinary(res *response) bool {
	return wire.VersionOf(res.header.Get("Content-Type")) != 0
}

func decodeFetch(res *response, partition int, op string) (*FetchResult, error) {
	if isBinary(res) {
		b, recs, err := wire.DecodeFetchAnswer(res.body)
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", op, err)
		}
		out := &FetchResult{NextOffset: b.NextOffset, HighWatermark: b.HighWatermark, LogStartOffset: b.LogStartOffset, Messages: make([]Message, len(recs))}
		for i, r := range recs {
			// Keys and values alias this answer's body, which nothing
			// else uses: the caller owns them.
			out.Messages[i] = Message{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
			if len(r.Headers) > 0 {
				hs := make([]Header, len(r.Headers))
				for j, h := range r.Headers {
					hs[j] = Header{Key: h.Key, Value: h.Value}
				}
				out.Messages[i].Headers = hs
			}
		}
		return out, nil
	}
	var body struct {
		Records        []recordJSON `json:"records"`
		NextOffset     int64        `json:"next_offset"`
		HighWatermark  int64        `json:"high_watermark"`
		LogStartOffset int64        `json:"log_start_offset"`
	}
	if err := decodeJSON(res.body, &body, op); err != nil {
		return nil, err
	}
	out := &FetchResult{NextOffset: body.NextOffset, HighWatermark: body.HighWatermark, LogStartOffset: body.LogStartOffset, Messages: make([]Message, len(body.Records))}
	for i := range body.Records {
		r := &body.Records[i]
		m, err := r.message(partition)
		if err != nil {
			return nil, fmt.Errorf("client: %s: record %d %w", op, r.Offset, err)
		}
		out.Messages[i] = m
	}
	return out, nil
}

// recordJSON is a fetched record as a utf8-mode fetch answer (or a
// stream's record event) holds it.
type recordJSON struct {
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding"`
	Headers       []headerJSON `json:"headers"`
}

type headerJSON struct {
	Key           string  `json:"key"`
	KeyEncoding   string  `json:"key_encoding"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding"`
}

// message turns r back into its bytes; an error names the field.
func (r *recordJSON) message(partition int) (Message, error) {
	m := Message{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp}
	var err error
	if m.Key, err = fieldBytes(r.Key, r.KeyEncoding); err != nil {
		return Message{}, fmt.Errorf("key: %w", err)
	}
	if m.Value, err = fieldBytes(r.Value, r.ValueEncoding); err != nil {
		return Message{}, fmt.Errorf("value: %w", err)
	}
	if len(r.Headers) > 0 {
		m.Headers = make([]Header, len(r.Headers))
		for j, h := range r.Headers {
			k, err := fieldBytes(&h.Key, h.KeyEncoding)
			if err != nil {
				return Message{}, fmt.Errorf("header %d key: %w", j, err)
			}
			m.Headers[j].Key = string(k)
			if m.Headers[j].Value, err = fieldBytes(h.Value, h.ValueEncoding); err != nil {
				return Message{}, fmt.Errorf("header %d value: %w", j, err)
			}
		}
	}
	return m, nil
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
