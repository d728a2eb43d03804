package client

import (
	"context"
	"errors"
	"net/url"
	"time"
)

// Error codes of consumer-group membership (docs/api.md "Consumer groups").
const (
	// CodeGroupNotFound (404): an admin route named an unknown group.
	CodeGroupNotFound = "group_not_found"
	// CodeMemberNotFound (404): the member is unknown or its session
	// expired: join again.
	CodeMemberNotFound = "member_not_found"
	// CodeStaleGeneration (409): a commit or heartbeat carried an old
	// generation, or a commit or reset without membership reached a group
	// that has members.
	CodeStaleGeneration = "stale_generation"
	// CodeNotAssigned (409): a member committed a partition it is not
	// assigned.
	CodeNotAssigned = "not_assigned"
)

// Assignment is a member's partitions of one topic.
type Assignment struct {
	Topic      string `json:"topic"`
	Partitions []int  `json:"partitions"`
}

// Membership is a group member's view: its id, the group's generation
// and its assignments.
type Membership struct {
	MemberID    string       `json:"member_id"`
	Generation  int64        `json:"generation"`
	Assignments []Assignment `json:"assignments"`
}

// Partitions returns the member's partitions of topic.
func (m *Membership) Partitions(topic string) []int {
	for _, a := range m.Assignments {
		if a.Topic == topic {
			return a.Partitions
		}
	}
	return nil
}

func groupPath(group string) string { return "/v1/groups/" + url.PathEscape(group) }

// JoinGroup joins group as a new member subscribed to topics, with a
// session timeout (0: the server's default, 30 s). Sent once: a lost
// answer leaves a member that expires by itself.
func (c *Client) JoinGroup(ctx context.Context, group string, topics []string, session time.Duration) (Membership, error) {
	body := map[string]any{"topics": topics}
	if session > 0 {
		body["session_timeout_ms"] = session.Milliseconds()
	}
	var m Membership
	res, err := c.sendJSON(ctx, "POST", groupPath(group)+"/members", body, false)
	if err != nil {
		return m, err
	}
	return m, decodeJSON(res.body, &m, "POST "+groupPath(group)+"/members")
}

// Heartbeat keeps a member alive and returns the group's generation and
// the member's current assignments. An expired member is an *Error with
// code member_not_found.
func (c *Client) Heartbeat(ctx context.Context, group, member string) (Membership, error) {
	p := groupPath(group) + "/members/" + url.PathEscape(member) + "/heartbeat"
	var m Membership
	res, err := c.sendJSON(ctx, "POST", p, struct{}{}, true)
	if err != nil {
		return m, err
	}
	return m, decodeJSON(res.body, &m, "POST "+p)
}

// LeaveGroup removes a member; its partitions go to the others.
func (c *Client) LeaveGroup(ctx context.Context, group, member string) error {
	_, err := c.do(ctx, &request{method: "DELETE", path: groupPath(group) + "/members/" + url.PathEscape(member), accept: "application/json"}, true)
	return err
}

// CommitGroupOffsetsAs commits offsets as a member of generation: refused
// (409 stale_generation, not_assigned; 404 member_not_found) unless the
// generation is current and every partition is the member's.
func (c *Client) CommitGroupOffsetsAs(ctx context.Context, group, member string, generation int64, offsets []GroupOffset) error {
	type entry struct {
		Topic     string `json:"topic"`
		Partition int    `json:"partition"`
		Offset    int64  `json:"offset"`
		Metadata  string `json:"metadata"`
	}
	body := struct {
		Offsets    []entry `json:"offsets"`
		MemberID   string  `json:"member_id"`
		Generation int64   `json:"generation"`
	}{Offsets: make([]entry, len(offsets)), MemberID: member, Generation: generation}
	for i, o := range offsets {
		body.Offsets[i] = entry{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata}
	}
	_, err := c.sendJSON(ctx, "PUT", groupPath(group)+"/offsets", body, true)
	return err
}

// GroupSummary is one group of Groups.
type GroupSummary struct {
	Group   string `json:"group"`
	Members int    `json:"members"`
}

// Groups lists every group with its live member count, sorted by name.
func (c *Client) Groups(ctx context.Context) ([]GroupSummary, error) {
	var out struct {
		Groups []GroupSummary `json:"groups"`
	}
	return out.Groups, c.getJSON(ctx, "/v1/groups", nil, &out)
}

// GroupMember is a live member as DescribeGroup shows it.
type GroupMember struct {
	MemberID         string       `json:"member_id"`
	Topics           []string     `json:"topics"`
	SessionTimeoutMs int64        `json:"session_timeout_ms"`
	ExpiresMs        int64        `json:"expires_ms"`
	Assignments      []Assignment `json:"assignments"`
}

// GroupDescription is a group's membership and the topics it has
// committed offsets for.
type GroupDescription struct {
	Group        string        `json:"group"`
	Generation   int64         `json:"generation"`
	Members      []GroupMember `json:"members"`
	OffsetTopics []string      `json:"offset_topics"`
}

// DescribeGroup returns a group's live members and offset topics.
func (c *Client) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	var out GroupDescription
	return out, c.getJSON(ctx, groupPath(group), nil, &out)
}

// DeleteGroup removes a group's offsets and membership.
func (c *Client) DeleteGroup(ctx context.Context, group string) error {
	_, err := c.do(ctx, &request{method: "DELETE", path: groupPath(group), accept: "application/json"}, true)
	return err
}

// Reset says where ResetGroupOffsets moves offsets: To "earliest" or
// "latest", or Timestamp, or Offset (exactly one); Partitions nil: all.
type Reset struct {
	To         string
	Timestamp  *int64
	Offset     *int64
	Partitions []int
}

// ResetGroupOffsets moves a group's offsets of topic (refused while the
// group has members) and returns them as GroupOffsets does.
func (c *Client) ResetGroupOffsets(ctx context.Context, group, topic string, r Reset) ([]GroupOffset, error) {
	body := map[string]any{"topic": topic}
	if r.To != "" {
		body["to"] = r.To
	}
	if r.Timestamp != nil {
		body["timestamp"] = *r.Timestamp
	}
	if r.Offset != nil {
		body["offset"] = *r.Offset
	}
	if r.Partitions != nil {
		body["partitions"] = r.Partitions
	}
	p := groupPath(group) + "/offsets/reset"
	res, err := c.sendJSON(ctx, "POST", p, body, true)
	if err != nil {
		return nil, err
	}
	var out struct {
		Offsets []GroupOffset `json:"offsets"`
	}
	return out.Offsets, decodeJSON(res.body, &out, "POST "+p)
}

// TopicPatch is a topic update: nil fields stay. Partitions may only grow.
type TopicPatch struct {
	Partitions        *int   `json:"partitions,omitempty"`
	RetentionMs       *int64 `json:"retention_ms,omitempty"`
	RetentionBytes    *int64 `json:"retention_bytes,omitempty"`
	SegmentBytes      *int64 `json:"segment_bytes,omitempty"`
	SegmentMs         *int64 `json:"segment_ms,omitempty"`
	CacheEnabled      *bool  `json:"cache_enabled,omitempty"`
	ReadAheadSegments *int   `json:"read_ahead_segments,omitempty"`
}

// UpdateTopic applies patch (PATCH /v1/topics/{topic}) and returns the
// topic as stored.
func (c *Client) UpdateTopic(ctx context.Context, name string, patch TopicPatch) (Topic, error) {
	var t Topic
	res, err := c.sendJSON(ctx, "PATCH", topicPath(name), patch, true)
	if err != nil {
		return t, err
	}
	return t, decodeJSON(res.body, &t, "PATCH "+topicPath(name))
}

// isFenced reports whether err says the member's view of the group is out
// of date: rejoin or refresh the membership.
func isFenced(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeStaleGeneration, CodeNotAssigned, CodeMemberNotFound:
		return true
	}
	return false
}

func isMemberGone(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeMemberNotFound
}
