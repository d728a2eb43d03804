package api

import (
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

// POST /v1/topics/{topic}/records
func (s *server) produce(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Vary", "Accept") // the answer's format follows Accept
	topic := r.PathValue("topic")
	if err := checkTopic(topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	recs, release, err := readProduceBody(w, r, true)
	defer release()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.b.Produce(r.Context(), topic, recs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeProduce(w, r, recs, res)
}

// POST /v1/topics/{topic}/partitions/{partition}/records: all or nothing,
// so any failure is the request's.
func (s *server) producePartition(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Vary", "Accept")
	topic := r.PathValue("topic")
	if err := checkTopic(topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	part, err := partitionParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	recs, release, err := readProduceBody(w, r, false)
	defer release()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.b.ProducePartition(r.Context(), topic, part, recs)
	if err == nil {
		for _, pr := range res {
			if pr.Err != nil {
				err = pr.Err
				break
			}
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeProduce(w, r, recs, res)
}

// readProduceBody decodes a produce body in the format its Content-Type
// names: a binary batch for wire.MediaType, JSON for anything else.
//
// Binary records alias the body, which comes from a pool: release returns
// it once the records have been appended (the broker copies them).
func readProduceBody(w http.ResponseWriter, r *http.Request, allowPartition bool) ([]broker.ProduceRecord, func(), error) {
	if sendsBinary(r) {
		return readBinaryProduce(w, r, allowPartition)
	}
	recs, err := readProduce(w, r, allowPartition)
	return recs, func() {}, err
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
