package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Topic is a topic as the server stores it.
type Topic struct {
	Name           string `json:"name"`
	Partitions     int    `json:"partitions"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionBytes int64  `json:"retention_bytes"`
	SegmentBytes   int64  `json:"segment_bytes"`
	SegmentMs      int64  `json:"segment_ms"`
	CleanupPolicy  string `json:"cleanup_policy"`
	// Cold-tier read settings (docs/api-extensions.md): whether the
	// fetching process caches cold segments' indexes, and how many
	// segments a cold fetch reads ahead with the cache on (0 to 16).
	CacheEnabled      bool `json:"cache_enabled"`
	ReadAheadSegments int  `json:"read_ahead_segments"`
	// TimestampType is "append" (the server's clock) or "create" (the
	// producer's Record.Timestamp, the clock where a record has none).
	TimestampType string `json:"timestamp_type"`
}

// TopicSpec is a create-topic request. Zero Partitions, nil pointers and an
// empty CleanupPolicy take the server's defaults (CacheEnabled true,
// ReadAheadSegments 1: docs/api-extensions.md).
type TopicSpec struct {
	Name              string
	Partitions        int
	RetentionMs       *int64
	RetentionBytes    *int64
	SegmentBytes      *int64
	SegmentMs         *int64
	CleanupPolicy     string
	CacheEnabled      *bool
	ReadAheadSegments *int
	// TimestampType is "append" or "create"; empty takes the server's
	// default (append).
	TimestampType string
}

// Int64 returns a pointer to v, for TopicSpec's optional numbers.
func Int64(v int64) *int64 { return &v }

// Int returns a pointer to v, for TopicSpec.ReadAheadSegments.
func Int(v int) *int { return &v }

// Bool returns a pointer to v, for TopicSpec.CacheEnabled.
func Bool(v bool) *bool { return &v }

// Offsets are a partition's bounds.
type Offsets struct {
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

// TimeOffset answers an offset-for-timestamp query: the earliest offset
// whose timestamp is at or after the one asked for. Found is false when no
// record is that late; Offset is then the high watermark.
type TimeOffset struct {
	Offset    int64
	Timestamp int64
	Found     bool
}

// GroupOffset is a consumer group's committed offset for one partition:
// the next offset to consume. Lag (high watermark minus Offset) is filled
// in by GroupOffsets and ignored by CommitGroupOffsets.
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
	Lag       int64  `json:"lag"`
}

func topicPath(topic string) string { return "/v1/topics/" + url.PathEscape(topic) }

func partitionPath(topic string, partition int) string {
	return topicPath(topic) + "/partitions/" + strconv.Itoa(partition)
}

// getJSON GETs path (retrying) and decodes the answer into out.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, out any) error {
	res, err := c.do(ctx, &request{method: "GET", path: path, query: q, accept: "application/json"}, true)
	if err != nil {
		return err
	}
	return decodeJSON(res.body, out, "GET "+path)
}

func decodeJSON(body []byte, out any, op string) error {
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("client: %s: decode answer: %w", op, err)
	}
	return nil
}

func (c *Client) sendJSON(ctx context.Context, method, path string, in any, repeatable bool) (*response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: encode: %w", method, path, err)
	}
	return c.do(ctx, &request{method: method, path: path, body: body, contentType: "application/json", accept: "application/json"}, repeatable)
}

// Health checks that the server answers GET /v1/health.
func (c *Client) Health(ctx context.Context) error {
	var out struct {
		Status string `json:"status"`
	}
	if err := c.getJSON(ctx, "/v1/health", nil, &out); err != nil {
		return err
	}
	if out.Status != "ok" {
		return fmt.Errorf("client: health: status %q", out.Status)
	}
	return nil
}

// CreateTopic creates a topic and returns it as stored (defaults filled
// in). An existing name is an *Error with code topic_exists. Sent once.
func (c *Client) CreateTopic(ctx context.Context, spec TopicSpec) (Topic, error) {
	body := map[string]any{"name": spec.Name}
	if spec.Partitions != 0 {
		body["partitions"] = spec.Partitions
	}
	for k, v := range map[string]*int64{
		"retention_ms": spec.RetentionMs, "retention_bytes": spec.RetentionBytes,
		"segment_bytes": spec.SegmentBytes, "segment_ms": spec.SegmentMs,
	} {
		if v != nil {
			body[k] = *v
		}
	}
	if spec.CleanupPolicy != "" {
		body["cleanup_policy"] = spec.CleanupPolicy
	}
	if spec.CacheEnabled != nil {
		body["cache_enabled"] = *spec.CacheEnabled
	}
	if spec.ReadAheadSegments != nil {
		body["read_ahead_segments"] = *spec.ReadAheadSegments
	}
	if spec.TimestampType != "" {
		body["timestamp_type"] = spec.TimestampType
	}
	res, err := c.sendJSON(ctx, "POST", "/v1/topics", body, false)
	if err != nil {
		return Topic{}, err
	}
	var t Topic
	return t, decodeJSON(res.body, &t, "POST /v1/topics")
}

// Topics lists every topic, sorted by name.
func (c *Client) Topics(ctx context.Context) ([]Topic, error) {
	var out struct {
		Topics []Topic `json:"topics"`
	}
	return out.Topics, c.getJSON(ctx, "/v1/topics", nil, &out)
}

// Topic describes one topic.
func (c *Client) Topic(ctx context.Context, name string) (Topic, error) {
	var t Topic
	return t, c.getJSON(ctx, topicPath(name), nil, &t)
}

// DeleteTopic deletes a topic and its records. Sent once: after an unknown
// outcome a retry could answer topic_not_found for a delete that worked.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	_, err := c.do(ctx, &request{method: "DELETE", path: topicPath(name), accept: "application/json"}, false)
	return err
}

// Offsets returns a partition's log start offset and high watermark.
func (c *Client) Offsets(ctx context.Context, topic string, partition int) (Offsets, error) {
	var o Offsets
	return o, c.getJSON(ctx, partitionPath(topic, partition)+"/offsets", nil, &o)
}

// OffsetForTimestamp returns the earliest offset whose timestamp is at or
// after ts (milliseconds since the epoch), like Kafka's ListOffsets.
func (c *Client) OffsetForTimestamp(ctx context.Context, topic string, partition int, ts int64) (TimeOffset, error) {
	var out struct {
		Offset    int64  `json:"offset"`
		Timestamp *int64 `json:"timestamp"`
	}
	q := url.Values{"timestamp": {strconv.FormatInt(ts, 10)}}
	if err := c.getJSON(ctx, partitionPath(topic, partition)+"/offsets", q, &out); err != nil {
		return TimeOffset{}, err
	}
	to := TimeOffset{Offset: out.Offset, Found: out.Timestamp != nil}
	if to.Found {
		to.Timestamp = *out.Timestamp
	}
	return to, nil
}

// CommitGroupOffsets stores a group's offsets (each the next offset to
// consume), all or none. An offset outside its partition's bounds is an
// *Error with code offset_out_of_range. Retried: storing the same offsets
// twice is harmless.
func (c *Client) CommitGroupOffsets(ctx context.Context, group string, offsets []GroupOffset) error {
	type entry struct {
		Topic     string `json:"topic"`
		Partition int    `json:"partition"`
		Offset    int64  `json:"offset"`
		Metadata  string `json:"metadata"`
	}
	body := struct {
		Offsets []entry `json:"offsets"`
	}{Offsets: make([]entry, len(offsets))}
	for i, o := range offsets {
		body.Offsets[i] = entry{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata}
	}
	_, err := c.sendJSON(ctx, "PUT", "/v1/groups/"+url.PathEscape(group)+"/offsets", body, true)
	return err
}

// GroupOffsets returns a group's committed offsets for a topic, each with
// its partition's lag. Partitions without a committed offset are absent;
// an unknown group has none.
func (c *Client) GroupOffsets(ctx context.Context, group, topic string) ([]GroupOffset, error) {
	var out struct {
		Offsets []GroupOffset `json:"offsets"`
	}
	q := url.Values{"topic": {topic}}
	return out.Offsets, c.getJSON(ctx, "/v1/groups/"+url.PathEscape(group)+"/offsets", q, &out)
}

// FetchOptions bound one fetch. Zero values take the server's defaults
// (500 records, 1 MiB, no wait).
type FetchOptions struct {
	MaxRecords int
	MaxBytes   int
	// Wait long-polls: when the offset is the high watermark, the server
	// waits up to Wait (at most 20 s) for records to arrive.
	Wait time.Duration
}

// FetchResult is what one fetch read. Messages own their bytes.
type FetchResult struct {
	Messages       []Message
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// Message is a consumed record. A nil Key means no key; a nil Value is a
// tombstone. Timestamp is the record's: the server's clock at append, or
// on a create-time topic the producer's.
type Message struct {
	// Topic is the record's topic when a Consumer or MultiConsumer
	// returned it; "" from Client.Fetch and Stream (the caller named it).
	Topic     string
	Partition int
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	// Headers in the order they were produced; nil when it has none.
	Headers []Header
}

// Time is the record's timestamp as a time.Time.
func (m *Message) Time() time.Time { return time.UnixMilli(m.Timestamp) }
