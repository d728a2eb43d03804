package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tierlog/tierlog/pkg/broker"
)

// produceOffset is one entry of a produce answer: offset and timestamp on
// success, error instead of them when the record's partition batch failed.
type produceOffset struct {
	Partition int        `json:"partition"`
	Offset    *int64     `json:"offset,omitempty"`
	Timestamp *int64     `json:"timestamp,omitempty"`
	Error     *errorBody `json:"error,omitempty"`
}

type produceResponse struct {
	Offsets           []produceOffset `json:"offsets"`
	FailedRecordCount int             `json:"failed_record_count"`
}

// Headers of idempotent produce (docs/api.md).
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	paramExpectedOffset  = "expected_offset"
)

// expectedOffsetElsewhere is why the routed produce refuses expected_offset.
const expectedOffsetElsewhere = "expected_offset is only allowed on the single-partition route " +
	"(POST /v1/topics/{topic}/partitions/{partition}/records): a condition on one partition's high watermark"

// The produce routes' query parameters: the single-partition route takes
// expected_offset (expectedOffset reads it), the routed one refuses it
// with the reason.
var (
	producePartitionQuery = &params{names: []string{paramExpectedOffset}}
	produceQuery          = &params{elsewhere: map[string]string{paramExpectedOffset: expectedOffsetElsewhere}}
)

// POST /v1/topics/{topic}/records
func (s *server) produce(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Vary", "Accept") // the answer's format follows Accept
	topic := r.PathValue("topic")
	if err := checkTopic(topic); err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	body, release, err := readProduceRequest(w, r, true)
	defer release()
	if err != nil {
		return err
	}
	if body.expected != nil { // in the query: refused as the route's params say
		return badRequest("%s", expectedOffsetElsewhere)
	}
	rep, err := s.b.ProduceWith(r.Context(), topic, body.recs, broker.ProduceOptions{IdempotencyKey: key})
	if err != nil {
		return keyed(err, key)
	}
	for i := range rep.Results {
		if e := rep.Results[i].Err; e != nil {
			rep.Results[i].Err = keyed(e, key)
		}
	}
	if rep.Replayed {
		w.Header().Set(headerReplayed, "true")
	}
	s.writeProduce(w, r, body.recs, rep.Results)
	return nil
}

// POST /v1/topics/{topic}/partitions/{partition}/records: all or nothing,
// so any failure is the request's.
func (s *server) producePartition(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Vary", "Accept")
	topic := r.PathValue("topic")
	if err := checkTopic(topic); err != nil {
		return err
	}
	part, err := partitionParam(r)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	body, release, err := readProduceRequest(w, r, false)
	defer release()
	if err != nil {
		return err
	}
	expected, err := expectedOffset(r, body.expected)
	if err != nil {
		return err
	}
	rep, err := s.b.ProducePartitionWith(r.Context(), topic, part, body.recs,
		broker.ProduceOptions{IdempotencyKey: key, ExpectedOffset: expected})
	if err == nil {
		for _, pr := range rep.Results {
			if pr.Err != nil {
				err = pr.Err
				break
			}
		}
	}
	if err != nil {
		return keyed(err, key)
	}
	if rep.Replayed {
		w.Header().Set(headerReplayed, "true")
	}
	s.writeProduce(w, r, body.recs, rep.Results)
	return nil
}

// idempotencyKey is the request's Idempotency-Key header: "" when absent,
// else a legal key (broker.ValidIdempotencyKey) or 400. A header repeated
// with one value is that value; with different values it is 400 (which
// one the client meant is a guess).
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values(headerIdempotencyKey)
	if len(vs) == 0 {
		return "", nil
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return "", badRequest("%s is given %d times with different values; give it once", headerIdempotencyKey, len(vs))
		}
	}
	if err := broker.ValidIdempotencyKey(vs[0]); err != nil {
		return "", badRequest("%s; want 1 to %d printable ASCII characters (0x20 to 0x7e)",
			publicMessage(err), broker.MaxIdempotencyKey)
	}
	return vs[0], nil
}

// expectedOffset is the single-partition route's condition: the JSON
// body's expected_offset, or the query parameter expected_offset (the
// only way for a binary body); both at once is 400.
func expectedOffset(r *http.Request, inBody *int64) (*int64, error) {
	q, err := producePartitionQuery.parse(r)
	if err != nil {
		return nil, err
	}
	n, inQuery, err := q.int64Param(paramExpectedOffset)
	switch {
	case err != nil:
		return nil, err
	case inQuery && inBody != nil:
		return nil, badRequest("expected_offset is given both in the query (%d) and in the body (%d); give it once", n, *inBody)
	case inQuery:
		return &n, nil
	}
	return inBody, nil
}

// keyedError is an idempotency error of the request with key, so that
// the answer names the key.
type keyedError struct {
	key string
	err error
}

func (e *keyedError) Error() string {
	return fmt.Sprintf("Idempotency-Key %s: %v", quote(e.key), e.err)
}
func (e *keyedError) Unwrap() error { return e.err }

// keyed wraps the idempotency errors of a request with key in a
// keyedError; other errors are returned as they are.
func keyed(err error, key string) error {
	if key != "" && (errors.Is(err, broker.ErrIdempotencyKeyInUse) || errors.Is(err, broker.ErrIdempotencyKeyReused)) {
		return &keyedError{key: key, err: err}
	}
	return err
}

// produceBody is a decoded produce body.
type produceBody struct {
	recs     []broker.ProduceRecord
	expected *int64 // the JSON body's expected_offset; never set by a binary body
}

// readProduceBody decodes a produce body in the format its Content-Type
// names: a binary batch for wire.MediaType, JSON for anything else.
//
// Records alias the body, which comes from a pool: release returns it
// once the records have been appended (the broker copies them).
func readProduceBody(w http.ResponseWriter, r *http.Request, allowPartition bool) ([]broker.ProduceRecord, func(), error) {
	body, release, err := readProduceRequest(w, r, allowPartition)
	return body.recs, release, err
}

// readProduceRequest is readProduceBody with the JSON body's
// expected_offset.
func readProduceRequest(w http.ResponseWriter, r *http.Request, allowPartition bool) (produceBody, func(), error) {
	if sendsBinary(r) {
		recs, release, err := readBinaryProduce(w, r, allowPartition)
		return produceBody{recs: recs}, release, err
	}
	recs, expected, release, err := readProduceJSON(w, r, allowPartition)
	return produceBody{recs: recs, expected: expected}, release, err
}

func (s *server) writeProduce(w http.ResponseWriter, r *http.Request, recs []broker.ProduceRecord, res []broker.ProduceResult) {
	if len(res) != len(recs) {
		s.writeError(w, r, fmt.Errorf("broker returned %d results for %d records", len(res), len(recs)))
		return
	}
	if wantsBinary(r) {
		s.writeProduceBinary(w, r, res)
		return
	}
	if s.writeProduceJSON(w, res) { // no record failed (jsonbody.go)
		return
	}
	out := produceResponse{Offsets: make([]produceOffset, len(res))}
	// One backing array for every offset and timestamp pointer.
	nums := make([]int64, 2*len(res))
	for i, pr := range res {
		e := &out.Offsets[i]
		e.Partition = pr.Partition
		if pr.Err != nil {
			e.Error = s.recordError(r, pr.Err)
			out.FailedRecordCount++
			continue
		}
		nums[2*i], nums[2*i+1] = pr.Offset, pr.Timestamp
		e.Offset, e.Timestamp = &nums[2*i], &nums[2*i+1]
	}
	s.writeJSON(w, r, http.StatusOK, &out)
}
