package api

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/wire"
)

// Binary batches (docs/api-binary.md, package wire) are negotiated per
// request and per direction:
//
//   - a produce body is binary when its Content-Type is exactly
//     wire.MediaType or wire.MediaTypeV2 (parameters ignored; version 2
//     carries headers and producer timestamps); any other Content-Type, or none,
//     is JSON as before: curl sends application/x-www-form-urlencoded, and
//     docs/api.md has no 415;
//   - a produce or fetch answer is binary when Accept names wire.MediaType
//     or wire.MediaTypeV2 with a q other than 0, in version 2 if it names
//     that (a version 1 fetch answer leaves headers out); "*/*" and
//     anything else answer JSON;
//   - errors are JSON whatever the Accept, in docs/api.md's shape.

// mediaPrefix is what the binary media types of every version share.
var mediaPrefix = strings.TrimSuffix(wire.MediaType, "1")

// sendsBinary reports whether the request body is a binary batch (of
// either version: the body's own version byte decides its layout).
func sendsBinary(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if !containsFold(ct, mediaPrefix) {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && wire.VersionOf(mt) != 0
}

// wantsBinary reports whether the Accept header asks for binary answers.
func wantsBinary(r *http.Request) bool { return binaryVersion(r) != 0 }

// binaryVersion is the layout version of binary answers the Accept
// header asks for: 2 when it lists version 2's media type, else 1 when it
// lists version 1's (with a q other than 0), else 0 (JSON).
func binaryVersion(r *http.Request) int {
	v := 0
	for _, h := range r.Header.Values("Accept") {
		if !containsFold(h, mediaPrefix) {
			continue
		}
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || wire.VersionOf(mt) == 0 {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			v = max(v, wire.VersionOf(mt))
		}
	}
	return v
}

// containsFold is a cheap pre-check before parsing a media type.
func containsFold(s, sub string) bool {
	if len(s) < len(sub) {
		return false
	}
	return strings.Contains(strings.ToLower(s), sub)
}

// bodyPool recycles binary produce bodies: a 1 MiB batch would otherwise
// cost a fresh (zeroed) 1 MiB allocation per request.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readPooledBody reads the body into a pooled buffer; release gives it back.
func readPooledBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), error) {
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	release := func() {
		if buf.Cap() <= 2*maxBodyBytes {
			bodyPool.Put(buf)
		}
	}
	if cl := r.ContentLength; cl > 0 && cl <= maxBodyBytes {
		buf.Grow(int(cl) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(limitBody(w, r)); err != nil {
		return nil, release, bodyError(err)
	}
	return buf.Bytes(), release, nil
}

// readBinaryProduce decodes a binary produce body into the broker's
// records, with the same rules as readProduce: 1 to 10,000 records, at
// most 1 MiB each (413), no per-record partition on the partition route.
func readBinaryProduce(w http.ResponseWriter, r *http.Request, allowPartition bool) ([]broker.ProduceRecord, func(), error) {
	body, release, err := readPooledBody(w, r)
	if err != nil {
		return nil, release, err
	}
	recs, err := decodeBinaryProduce(body, allowPartition)
	return recs, release, err
}

func decodeBinaryProduce(body []byte, allowPartition bool) ([]broker.ProduceRecord, error) {
	if len(body) == 0 {
		return nil, badRequest("request body is empty; want a %s batch", wire.MediaType)
	}
	recs, err := wire.DecodeProduceRequest(body)
	if err != nil {
		return nil, wireError(err)
	}
	if len(recs) == 0 {
		return nil, badRequest("records is empty: send 1 to %d records", broker.MaxBatchRecords)
	}
	out := make([]broker.ProduceRecord, len(recs))
	for i, rec := range recs {
		if !allowPartition && rec.Partition >= 0 {
			return nil, badRequest("records[%d].partition is not allowed here: the partition is in the path", i)
		}
		out[i] = broker.ProduceRecord{Key: rec.Key, Value: rec.Value, Partition: int(rec.Partition),
			Timestamp: rec.Timestamp, HasTimestamp: rec.HasTimestamp}
		if len(rec.Headers) > 0 {
			out[i].Headers = make([]broker.Header, len(rec.Headers))
			for j, h := range rec.Headers {
				out[i].Headers[j] = broker.Header{Key: h.Key, Value: h.Value}
			}
		}
	}
	return out, nil
}

// wireError classifies a decoding error: over a limit is 413, the rest 400.
func wireError(err error) error {
	if errors.Is(err, wire.ErrTooLarge) {
		return tooLarge("binary batch: %v", err)
	}
	return badRequest("binary batch (%s): %v", wire.MediaType, err)
}

// writeProduceBinary answers a produce in the binary format: one entry per
// record, failed entries with their classified error.
func (s *server) writeProduceBinary(w http.ResponseWriter, r *http.Request, res []broker.ProduceResult) {
	v := binaryVersion(r)
	s.writeBinary(w, r, v, func(dst []byte) ([]byte, error) {
		return wire.AppendProduceAnswerV(dst, v, len(res), func(i int) wire.Result {
			pr := &res[i]
			out := wire.Result{Partition: int32(pr.Partition), Offset: pr.Offset, Timestamp: pr.Timestamp}
			if pr.Err != nil {
				e := s.recordError(r, pr.Err)
				out.ErrCode, out.ErrMessage = e.Code, e.Message
			}
			return out
		})
	})
}

// encodeFetchBinary returns FetchAnswer's encoder of binary fetch answers
// in layout version v.
func encodeFetchBinary(v int) func(dst []byte, res *broker.FetchResult) ([]byte, error) {
	return func(dst []byte, res *broker.FetchResult) ([]byte, error) {
		bounds := wire.Bounds{NextOffset: res.NextOffset, HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
		var hs []wire.Header // every record's headers, converted once
		if v == wire.Version2 {
			n := 0
			for i := range res.Records {
				n += len(res.Records[i].Headers)
			}
			if n > 0 {
				hs = make([]wire.Header, 0, n)
			}
		}
		out, err := wire.AppendFetchAnswerV(dst, v, bounds, len(res.Records), func(i int) wire.FetchedRecord {
			rec := &res.Records[i]
			out := wire.FetchedRecord{Offset: rec.Offset, Timestamp: rec.Timestamp, Key: rec.Key, Value: rec.Value}
			if hs != nil && len(rec.Headers) > 0 {
				start := len(hs)
				for _, h := range rec.Headers {
					hs = append(hs, wire.Header{Key: h.Key, Value: h.Value})
				}
				out.Headers = hs[start:len(hs):len(hs)]
			}
			return out
		})
		if err != nil {
			return nil, fmt.Errorf("encode binary answer: %w", err)
		}
		return out, nil
	}
}

// binPool holds output buffers of binary answers, like bufPool for JSON.
var binPool = sync.Pool{New: func() any { return new([]byte) }}

// writeBinary encodes a 200 answer into a pooled buffer and sends it.
// Nothing is written if encoding fails: the client gets a JSON 500.
func (s *server) writeBinary(w http.ResponseWriter, r *http.Request, version int, encode func([]byte) ([]byte, error)) {
	bp := binPool.Get().(*[]byte)
	out, err := encode((*bp)[:0])
	defer func() {
		if cap(out) <= maxPooledBuffer {
			*bp = out[:0]
			binPool.Put(bp)
		}
	}()
	if err != nil {
		s.writeError(w, r, fmt.Errorf("encode binary answer: %w", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", wire.MediaTypeOf(version))
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
