package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/broker"
)

// topicJSON is a topic as docs/api.md shows it: the seven configuration fields
// of the create request, defaults filled in. The store's internal fields
// (the incarnation id that names files, the creation time) are left out:
// they are not part of the contract, and adding fields later is allowed
// while removing them is not.
type topicJSON struct {
	Name           string `json:"name"`
	Partitions     int    `json:"partitions"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionBytes int64  `json:"retention_bytes"`
	SegmentBytes   int64  `json:"segment_bytes"`
	SegmentMs      int64  `json:"segment_ms"`
	CleanupPolicy  string `json:"cleanup_policy"`
	// Extensions (docs/api-extensions.md): cold-tier read settings.
	CacheEnabled      bool `json:"cache_enabled"`
	ReadAheadSegments int  `json:"read_ahead_segments"`
	// "append" or "create" (docs/api.md "Topics", timestamp_type).
	TimestampType string `json:"timestamp_type"`
}

func toTopicJSON(t broker.Topic) topicJSON {
	return topicJSON{
		Name:           t.Name,
		Partitions:     t.Partitions,
		RetentionMs:    t.RetentionMs,
		RetentionBytes: t.RetentionBytes,
		SegmentBytes:   t.SegmentBytes,
		SegmentMs:      t.SegmentMs,
		CleanupPolicy:  t.CleanupPolicy,

		CacheEnabled:      t.CacheEnabled,
		ReadAheadSegments: t.ReadAheadSegments,
		TimestampType:     timestampType(t),
	}
}

// timestampType is the topic's timestamp type; items written before it
// existed have none and are append-time.
func timestampType(t broker.Topic) string {
	if t.TimestampType == "" {
		return broker.TimestampAppend
	}
	return t.TimestampType
}

// createTopicRequest is the body of POST /v1/topics. Absent or null fields
// take the broker's defaults; wrong JSON types are refused by the decoder.
type createTopicRequest struct {
	Name           *string `json:"name"`
	Partitions     *int32  `json:"partitions"`
	RetentionMs    *int64  `json:"retention_ms"`
	RetentionBytes *int64  `json:"retention_bytes"`
	SegmentBytes   *int64  `json:"segment_bytes"`
	SegmentMs      *int64  `json:"segment_ms"`
	CleanupPolicy  *string `json:"cleanup_policy"`

	CacheEnabled      *bool   `json:"cache_enabled"`
	ReadAheadSegments *int32  `json:"read_ahead_segments"`
	TimestampType     *string `json:"timestamp_type"`
}

// POST /v1/topics
func (s *server) createTopic(w http.ResponseWriter, r *http.Request) error {
	var req createTopicRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return badRequest("name is required")
	}
	if err := checkTopic(*req.Name); err != nil {
		return err
	}
	if err := s.authorize(r, auth.Admin, []string{*req.Name}, nil); err != nil {
		return err
	}
	spec := broker.TopicSpec{
		Name:           *req.Name,
		RetentionMs:    req.RetentionMs,
		RetentionBytes: req.RetentionBytes,
		SegmentBytes:   req.SegmentBytes,
		SegmentMs:      req.SegmentMs,
		CleanupPolicy:  req.CleanupPolicy,
		TimestampType:  req.TimestampType,
	}
	spec.CacheEnabled = req.CacheEnabled
	if req.ReadAheadSegments != nil {
		n := int(*req.ReadAheadSegments)
		spec.ReadAheadSegments = &n
	}
	if req.Partitions != nil {
		p := int(*req.Partitions)
		spec.Partitions = &p
	}
	t, err := s.b.CreateTopic(r.Context(), spec)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusCreated, toTopicJSON(t))
	return nil
}

// GET /v1/topics
func (s *server) listTopics(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.b.Topics(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Topics []topicJSON `json:"topics"`
	}{Topics: make([]topicJSON, 0, len(ts))}
	for _, t := range ts {
		if s.visible(r, false, t.Name) { // a token lists the topics it covers
			out.Topics = append(out.Topics, toTopicJSON(t))
		}
	}
	// docs/api.md promises name order; the broker lists sorted already, and this
	// keeps the contract here whatever the store does.
	slices.SortFunc(out.Topics, func(a, b topicJSON) int { return strings.Compare(a.Name, b.Name) })
	s.writeJSON(w, r, http.StatusOK, &out)
	return nil
}

// GET /v1/topics/{topic}
func (s *server) getTopic(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("topic")
	if err := checkTopic(name); err != nil {
		return err
	}
	t, err := s.b.Topic(r.Context(), name)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toTopicJSON(t))
	return nil
}

// DELETE /v1/topics/{topic}
func (s *server) deleteTopic(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("topic")
	if err := checkTopic(name); err != nil {
		return err
	}
	if err := s.b.DeleteTopic(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// patchTopicRequest is the body of PATCH /v1/topics/{topic}: the settings
// that may change. The topic's other fields are known but fixed for its
// life: naming one is 400.
type patchTopicRequest struct {
	Partitions        *int32 `json:"partitions"`
	RetentionMs       *int64 `json:"retention_ms"`
	RetentionBytes    *int64 `json:"retention_bytes"`
	SegmentBytes      *int64 `json:"segment_bytes"`
	SegmentMs         *int64 `json:"segment_ms"`
	CacheEnabled      *bool  `json:"cache_enabled"`
	ReadAheadSegments *int32 `json:"read_ahead_segments"`

	Name          json.RawMessage `json:"name"`
	CleanupPolicy json.RawMessage `json:"cleanup_policy"`
	TimestampType json.RawMessage `json:"timestamp_type"`
}

// PATCH /v1/topics/{topic}
func (s *server) patchTopic(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("topic")
	if err := checkTopic(name); err != nil {
		return err
	}
	var req patchTopicRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"name", req.Name}, {"cleanup_policy", req.CleanupPolicy}, {"timestamp_type", req.TimestampType}} {
		if f.raw != nil {
			return badRequest("%s cannot be changed; PATCH takes partitions, retention_ms, retention_bytes, segment_bytes, segment_ms, cache_enabled and read_ahead_segments", f.name)
		}
	}
	patch := broker.TopicPatch{
		RetentionMs:    req.RetentionMs,
		RetentionBytes: req.RetentionBytes,
		SegmentBytes:   req.SegmentBytes,
		SegmentMs:      req.SegmentMs,
		CacheEnabled:   req.CacheEnabled,
	}
	if req.Partitions != nil {
		n := int(*req.Partitions)
		patch.Partitions = &n
	}
	if req.ReadAheadSegments != nil {
		n := int(*req.ReadAheadSegments)
		patch.ReadAheadSegments = &n
	}
	t, err := s.b.UpdateTopic(r.Context(), name, patch)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toTopicJSON(t))
	return nil
}
