package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
)

// maxCommitOffsets bounds the entries of one group commit, like the
// records of one produce. More is 413 payload_too_large.
const maxCommitOffsets = broker.MaxBatchRecords

type commitEntry struct {
	Topic     json.RawMessage `json:"topic"`
	Partition json.RawMessage `json:"partition"`
	Offset    json.RawMessage `json:"offset"`
	Metadata  json.RawMessage `json:"metadata"`
}

// commitRequest is the body of a group commit. Offsets stays raw so that
// decodeArray can count entries while decoding them: a 5 MiB body of "{}"
// entries is refused at entry 10,001, not after a million allocations.
type commitRequest struct {
	Offsets json.RawMessage `json:"offsets"`
}

// PUT /v1/groups/{group}/offsets
func (s *server) commitGroupOffsets(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	if err := checkGroup(group); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req commitRequest
	if err := readJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	offs, err := convertCommit(req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.b.CommitGroupOffsets(r.Context(), group, offs); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// convertCommit checks every entry before anything is stored: topic and
// partition and offset required, metadata optional ("" when absent or
// null), and no (topic, partition) twice, which would leave the stored
// offset to chance.
func convertCommit(req commitRequest) ([]meta.GroupOffset, error) {
	entries, err := decodeArray[commitEntry](req.Offsets, "offsets", maxCommitOffsets)
	switch {
	case err != nil:
		return nil, err
	case entries == nil:
		return nil, badRequest("offsets is required: an array of 1 to %d entries", maxCommitOffsets)
	case len(entries) == 0:
		return nil, badRequest("offsets is empty: send 1 to %d entries", maxCommitOffsets)
	}
	type tp struct {
		topic     string
		partition int
	}
	seen := make(map[tp]int, len(entries))
	out := make([]meta.GroupOffset, len(entries))
	for i, e := range entries {
		at := func(f string) string { return fmt.Sprintf("offsets[%d].%s", i, f) }
		if isNull(e.Topic) {
			return nil, badRequest("%s is required", at("topic"))
		}
		topic, err := rawString(e.Topic, at("topic"))
		if err != nil {
			return nil, err
		}
		if err := checkTopic(string(topic)); err != nil {
			return nil, err
		}
		if isNull(e.Partition) {
			return nil, badRequest("%s is required", at("partition"))
		}
		p, err := rawInt(e.Partition, at("partition"), math.MaxInt32)
		if err != nil {
			return nil, err
		}
		if isNull(e.Offset) {
			return nil, badRequest("%s is required", at("offset"))
		}
		off, err := rawInt(e.Offset, at("offset"), math.MaxInt64)
		if err != nil {
			return nil, err
		}
		var md []byte
		if !isNull(e.Metadata) {
			if md, err = rawString(e.Metadata, at("metadata")); err != nil {
				return nil, err
			}
			if len(md) > maxMetadataBytes {
				return nil, tooLarge("%s is %d bytes, more than %d", at("metadata"), len(md), maxMetadataBytes)
			}
		}
		k := tp{string(topic), int(p)}
		if j, dup := seen[k]; dup {
			return nil, badRequest("offsets[%d] repeats topic %s partition %d of offsets[%d]", i, quote(k.topic), k.partition, j)
		}
		seen[k] = i
		out[i] = meta.GroupOffset{Topic: k.topic, Partition: k.partition, Offset: off, Metadata: string(md)}
	}
	return out, nil
}

type groupOffsetJSON struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
	Lag       int64  `json:"lag"`
}

// GET /v1/groups/{group}/offsets?topic=T
func (s *server) groupOffsets(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	if err := checkGroup(group); err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := parseQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	topic, ok, err := q.get("topic")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !ok {
		s.writeError(w, r, badRequest("query parameter topic is required"))
		return
	}
	if err := checkTopic(topic); err != nil {
		s.writeError(w, r, err)
		return
	}
	gos, err := s.b.GroupOffsets(r.Context(), group, topic)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Offsets []groupOffsetJSON `json:"offsets"`
	}{Offsets: make([]groupOffsetJSON, len(gos))}
	for i, g := range gos {
		out.Offsets[i] = groupOffsetJSON{Topic: g.Topic, Partition: g.Partition, Offset: g.Offset, Metadata: g.Metadata, Lag: g.Lag}
	}
	s.writeJSON(w, r, http.StatusOK, &out)
}
