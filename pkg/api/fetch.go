package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/wire"
)

// Fetch limits (docs/api.md). Values above a cap are clamped to it (see
// boundedParam); values below the minimum are 400.
const (
	maxWaitMs = int64(broker.MaxWait / time.Millisecond) // 20,000
)

// GET /v1/topics/{topic}/partitions/{partition}/records?offset=N
// [&max_records=][&max_bytes=][&wait_ms=][&encoding=]
func (s *server) fetch(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Vary", "Accept")
	req, enc, err := fetchParams(r)
	if err != nil {
		return err
	}
	if s.streams(r) { // Accept: text/event-stream (sse.go)
		s.fetchStream(w, r, req, enc)
		return nil
	}
	// Answers are encoded through the broker, which keeps those asked for
	// again (fan-out readers) and answers them with the same bytes.
	format, ctype, encode, pool := fetchFormatJSON[enc], contentTypeJSON, encodeFetchJSON(enc), &jsonOutPool
	if v := binaryVersion(r); v != 0 {
		format, ctype, encode, pool = fetchFormatBinary[v], wire.MediaTypeOf(v), encodeFetchBinary(v), &binPool
	}
	bp := pool.Get().(*[]byte)
	body, shared, err := s.b.FetchAnswer(r.Context(), req, format, (*bp)[:0], encode)
	defer func() {
		if !shared && cap(body) <= maxPooledBuffer {
			*bp = body[:0]
		}
		pool.Put(bp)
	}()
	if err != nil {
		if oor := (*broker.OffsetOutOfRangeError)(nil); errors.As(err, &oor) {
			err = fmt.Errorf("topic %q partition %d: %w", req.Topic, req.Partition, err)
		}
		return err
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// The names of fetch answer encodings for FetchAnswer: one per encoding
// of JSON and per binary layout version.
var (
	fetchFormatJSON   = [...]string{jsonrec.UTF8: "json-utf8", jsonrec.Base64: "json-base64", jsonrec.JSON: "json-json"}
	fetchFormatBinary = [...]string{wire.Version: "binary-v1", wire.Version2: "binary-v2"}
)

// fetchQuery is the fetch route's query parameters (docs/api.md "Fetch"),
// read by fetchParams.
var fetchQuery = &params{names: []string{"offset", "max_records", "max_bytes", "wait_ms", "encoding"}}

func fetchParams(r *http.Request) (broker.FetchRequest, jsonrec.Encoding, error) {
	var req broker.FetchRequest
	req.Topic = r.PathValue("topic")
	if err := checkTopic(req.Topic); err != nil {
		return req, 0, err
	}
	var err error
	if req.Partition, err = partitionParam(r); err != nil {
		return req, 0, err
	}
	q, err := fetchQuery.parse(r)
	if err != nil {
		return req, 0, err
	}
	off, ok, err := q.int64Param("offset")
	if err != nil {
		return req, 0, err
	}
	if !ok {
		return req, 0, badRequest("query parameter offset is required")
	}
	req.Offset = off
	maxRecords, err := q.boundedParam("max_records", broker.DefaultMaxFetch, 1, broker.MaxFetchRecords)
	if err != nil {
		return req, 0, err
	}
	maxBytes, err := q.boundedParam("max_bytes", broker.DefaultFetchSize, 1, broker.MaxFetchBytes)
	if err != nil {
		return req, 0, err
	}
	waitMs, err := q.boundedParam("wait_ms", 0, 0, maxWaitMs)
	if err != nil {
		return req, 0, err
	}
	req.MaxRecords, req.MaxBytes = int(maxRecords), int(maxBytes)
	req.Wait = time.Duration(waitMs) * time.Millisecond
	enc := jsonrec.UTF8
	if s, ok, err := q.get("encoding"); err != nil {
		return req, 0, err
	} else if ok {
		if enc, err = parseEncoding(s); err != nil {
			return req, 0, err
		}
	}
	return req, enc, nil
}

type offsetsResponse struct {
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

type timeOffsetResponse struct {
	Offset    int64  `json:"offset"`
	Timestamp *int64 `json:"timestamp"` // null when no record is that late
}

// offsetsQuery is the offsets route's query parameters.
var offsetsQuery = &params{names: []string{"timestamp"}}

// GET /v1/topics/{topic}/partitions/{partition}/offsets[?timestamp=T]
func (s *server) offsets(w http.ResponseWriter, r *http.Request) error {
	topic := r.PathValue("topic")
	if err := checkTopic(topic); err != nil {
		return err
	}
	part, err := partitionParam(r)
	if err != nil {
		return err
	}
	q, err := offsetsQuery.parse(r)
	if err != nil {
		return err
	}
	ts, byTime, err := q.int64Param("timestamp")
	if err != nil {
		return err
	}
	if !byTime {
		o, err := s.b.Offsets(r.Context(), topic, part)
		if err != nil {
			return err
		}
		s.writeJSON(w, r, http.StatusOK, offsetsResponse{LogStartOffset: o.LogStartOffset, HighWatermark: o.HighWatermark})
		return nil
	}
	to, err := s.b.OffsetForTime(r.Context(), topic, part, ts)
	if err != nil {
		return err
	}
	out := timeOffsetResponse{Offset: to.Offset}
	if to.Found {
		out.Timestamp = &to.Timestamp
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}
