package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/tierlog/tierlog/pkg/auth"
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
	// A member's commit (docs/api.md "Consumer groups"): both or neither.
	MemberID   *string `json:"member_id"`
	Generation *int64  `json:"generation"`
}

// PUT /v1/groups/{group}/offsets
func (s *server) commitGroupOffsets(w http.ResponseWriter, r *http.Request) error {
	group := r.PathValue("group")
	if err := checkGroup(group); err != nil {
		return err
	}
	var req commitRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	offs, err := convertCommit(req)
	if err != nil {
		return err
	}
	topics := make([]string, 0, 1)
	for _, o := range offs {
		if !slices.Contains(topics, o.Topic) {
			topics = append(topics, o.Topic)
		}
	}
	if err := s.authorize(r, auth.Groups, topics, nil); err != nil {
		return err
	}
	var fence *broker.MemberFence
	switch {
	case req.MemberID != nil && req.Generation != nil:
		fence = &broker.MemberFence{MemberID: *req.MemberID, Generation: *req.Generation}
	case req.MemberID != nil:
		return badRequest("generation is required with member_id")
	case req.Generation != nil:
		return badRequest("member_id is required with generation")
	}
	if err := s.b.CommitGroupOffsetsAs(r.Context(), group, fence, offs); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
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

// offsetsAnswer is the body GET .../offsets answers (and an offsets reset).
func offsetsAnswer(gos []broker.GroupOffset) any {
	out := struct {
		Offsets []groupOffsetJSON `json:"offsets"`
	}{Offsets: make([]groupOffsetJSON, len(gos))}
	for i, g := range gos {
		out.Offsets[i] = groupOffsetJSON{Topic: g.Topic, Partition: g.Partition, Offset: g.Offset, Metadata: g.Metadata, Lag: g.Lag}
	}
	return &out
}

// groupOffsetsQuery is the group offsets route's query parameters.
var groupOffsetsQuery = &params{names: []string{"topic"}}

// GET /v1/groups/{group}/offsets?topic=T
func (s *server) groupOffsets(w http.ResponseWriter, r *http.Request) error {
	group := r.PathValue("group")
	if err := checkGroup(group); err != nil {
		return err
	}
	q, err := groupOffsetsQuery.parse(r)
	if err != nil {
		return err
	}
	topic, ok, err := q.get("topic")
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("query parameter topic is required")
	}
	if err := checkTopic(topic); err != nil {
		return err
	}
	if err := s.authorize(r, auth.Consume, []string{topic}, nil); err != nil {
		return err
	}
	gos, err := s.b.GroupOffsets(r.Context(), group, topic)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, offsetsAnswer(gos))
	return nil
}

// groupPath checks the {group} path value.
func groupPath(r *http.Request) (string, error) {
	group := r.PathValue("group")
	return group, checkGroup(group)
}

type groupSummaryJSON struct {
	Group   string `json:"group"`
	Members int    `json:"members"`
}

// GET /v1/groups
func (s *server) listGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := s.b.Groups(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Groups []groupSummaryJSON `json:"groups"`
	}{Groups: make([]groupSummaryJSON, 0, len(gs))}
	for _, g := range gs {
		if s.visible(r, true, g.Group) { // a token lists the groups it covers
			out.Groups = append(out.Groups, groupSummaryJSON{Group: g.Group, Members: g.Members})
		}
	}
	s.writeJSON(w, r, http.StatusOK, &out)
	return nil
}

type assignmentJSON struct {
	Topic      string `json:"topic"`
	Partitions []int  `json:"partitions"`
}

func toAssignments(as []meta.TopicPartitions) []assignmentJSON {
	out := make([]assignmentJSON, 0, len(as))
	for _, a := range as {
		ps := a.Partitions
		if ps == nil {
			ps = []int{}
		}
		out = append(out, assignmentJSON{Topic: a.Topic, Partitions: ps})
	}
	return out
}

type memberJSON struct {
	MemberID         string           `json:"member_id"`
	Topics           []string         `json:"topics"`
	SessionTimeoutMs int64            `json:"session_timeout_ms"`
	ExpiresMs        int64            `json:"expires_ms"`
	Assignments      []assignmentJSON `json:"assignments"`
}

// GET /v1/groups/{group} (docs/api.md): live members, the
// generation, and the topics the group has offsets for.
func (s *server) describeGroup(w http.ResponseWriter, r *http.Request) error {
	group, err := groupPath(r)
	if err != nil {
		return err
	}
	d, err := s.b.DescribeGroup(r.Context(), group)
	if err != nil {
		return err
	}
	out := struct {
		Group        string       `json:"group"`
		Generation   int64        `json:"generation"`
		Members      []memberJSON `json:"members"`
		OffsetTopics []string     `json:"offset_topics"`
	}{Group: d.Group, Generation: d.Generation, Members: make([]memberJSON, len(d.Members)), OffsetTopics: []string{}}
	for _, t := range d.OffsetTopics {
		if s.visible(r, false, t) { // the token's topics only, as in the lists
			out.OffsetTopics = append(out.OffsetTopics, t)
		}
	}
	for i, m := range d.Members {
		out.Members[i] = memberJSON{MemberID: m.ID, Topics: m.Topics, SessionTimeoutMs: m.SessionTimeoutMs, ExpiresMs: m.ExpiresMs, Assignments: toAssignments(m.Assignments)}
	}
	s.writeJSON(w, r, http.StatusOK, &out)
	return nil
}

// DELETE /v1/groups/{group}
func (s *server) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	group, err := groupPath(r)
	if err != nil {
		return err
	}
	if err := s.b.DeleteGroup(r.Context(), group); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resetRequest is the body of POST /v1/groups/{group}/offsets/reset.
type resetRequest struct {
	Topic      *string `json:"topic"`
	To         *string `json:"to"`
	Timestamp  *int64  `json:"timestamp"`
	Offset     *int64  `json:"offset"`
	Partitions []int32 `json:"partitions"`
}

// POST /v1/groups/{group}/offsets/reset
func (s *server) resetGroupOffsets(w http.ResponseWriter, r *http.Request) error {
	group, err := groupPath(r)
	if err != nil {
		return err
	}
	var req resetRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Topic == nil {
		return badRequest("topic is required")
	}
	if err := checkTopic(*req.Topic); err != nil {
		return err
	}
	if err := s.authorize(r, auth.Admin, []string{*req.Topic}, nil); err != nil {
		return err
	}
	rr := broker.ResetRequest{Topic: *req.Topic, Timestamp: req.Timestamp, Offset: req.Offset}
	if req.To != nil {
		if *req.To == "" {
			return badRequest(`to "" must be "earliest" or "latest"`)
		}
		rr.To = *req.To
	}
	if req.Partitions != nil {
		rr.Partitions = make([]int, len(req.Partitions))
		for i, p := range req.Partitions {
			if p < 0 {
				return badRequest("partitions[%d] %d is negative", i, p)
			}
			rr.Partitions[i] = int(p)
		}
	}
	gos, err := s.b.ResetGroupOffsets(r.Context(), group, rr)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, offsetsAnswer(gos))
	return nil
}

// joinRequest is the body of POST /v1/groups/{group}/members.
type joinRequest struct {
	Topics           []string `json:"topics"`
	SessionTimeoutMs *int64   `json:"session_timeout_ms"`
}

type membershipJSON struct {
	MemberID    string           `json:"member_id"`
	Generation  int64            `json:"generation"`
	Assignments []assignmentJSON `json:"assignments"`
}

func toMembershipJSON(m broker.Membership) membershipJSON {
	return membershipJSON{MemberID: m.MemberID, Generation: m.Generation, Assignments: toAssignments(m.Assignments)}
}

// POST /v1/groups/{group}/members
func (s *server) joinGroup(w http.ResponseWriter, r *http.Request) error {
	group, err := groupPath(r)
	if err != nil {
		return err
	}
	var req joinRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Topics) == 0 {
		return badRequest("topics is required: an array of 1 to %d topic names", broker.MaxGroupTopics)
	}
	if len(req.Topics) > broker.MaxGroupTopics {
		return badRequest("topics has %d names, at most %d", len(req.Topics), broker.MaxGroupTopics)
	}
	for i, t := range req.Topics {
		if broker.ValidTopicName(t) != nil {
			return badRequest("topics[%d]: invalid topic name %s: must match ^[A-Za-z0-9._-]{1,249}$ and not be . or ..", i, quote(t))
		}
	}
	session := broker.DefaultSessionTimeout
	if req.SessionTimeoutMs != nil {
		ms := *req.SessionTimeoutMs
		if ms < broker.MinSessionTimeout.Milliseconds() || ms > broker.MaxSessionTimeout.Milliseconds() {
			return badRequest("session_timeout_ms %d must be %d to %d", ms, broker.MinSessionTimeout.Milliseconds(), broker.MaxSessionTimeout.Milliseconds())
		}
		session = time.Duration(ms) * time.Millisecond
	}
	if err := s.authorize(r, auth.Groups, req.Topics, nil); err != nil {
		return err
	}
	m, err := s.b.JoinGroup(r.Context(), group, req.Topics, session)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusCreated, toMembershipJSON(m))
	return nil
}

// heartbeatRequest is the optional body of a heartbeat.
type heartbeatRequest struct {
	Generation *int64 `json:"generation"`
}

// POST /v1/groups/{group}/members/{member}/heartbeat: no body, {} or
// {"generation":N}.
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	group, err := groupPath(r)
	if err != nil {
		return err
	}
	member := r.PathValue("member")
	body, err := io.ReadAll(limitBody(w, r))
	if err != nil {
		return bodyError(err)
	}
	var req heartbeatRequest
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		if err := readJSON(w, r, &req); err != nil {
			return err
		}
	}
	m, err := s.b.Heartbeat(r.Context(), group, member, req.Generation)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toMembershipJSON(m))
	return nil
}

// DELETE /v1/groups/{group}/members/{member}
func (s *server) leaveGroup(w http.ResponseWriter, r *http.Request) error {
	group, err := groupPath(r)
	if err != nil {
		return err
	}
	if err := s.b.LeaveGroup(r.Context(), group, r.PathValue("member")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
