package broker

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/tierlog/tierlog/internal/apilimit"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/wire"
)

// Errors the broker returns. The API layer maps each to one status code.
var (
	// ErrInvalid means a request value is out of its domain (bad topic name,
	// negative partition count, unknown cleanup policy...).
	ErrInvalid = errors.New("broker: invalid request")
	// ErrTopicNotFound means no topic has that name.
	ErrTopicNotFound = errors.New("broker: topic not found")
	// ErrPartitionNotFound means the partition is outside the topic's range.
	ErrPartitionNotFound = errors.New("broker: partition not found")
	// ErrTopicExists means the topic name is taken.
	ErrTopicExists = errors.New("broker: topic exists")
	// ErrTooLarge means a record or batch is over a size limit.
	ErrTooLarge = errors.New("broker: too large")
	// ErrUnavailable means the partition lease is busy or a commit's outcome
	// is unknown. Retrying is safe.
	ErrUnavailable = errors.New("broker: unavailable")
	// ErrClosed means the broker is shut down.
	ErrClosed = errors.New("broker: closed")
)

// OffsetOutOfRangeError is returned for an offset below the log start or
// above the high watermark.
type OffsetOutOfRangeError struct {
	Offset         int64
	LogStartOffset int64
	HighWatermark  int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("broker: offset %d out of range [%d, %d]", e.Offset, e.LogStartOffset, e.HighWatermark)
}

// Limits of the API (docs/api.md): enforced by the broker so every front end
// shares them.
const (
	MaxRecordBytes   = wire.MaxRecordBytes // key + value of one record
	MaxBatchRecords  = wire.MaxRecords
	MaxFetchRecords  = 10000
	MaxFetchBytes    = 4 << 20
	DefaultMaxFetch  = 500
	DefaultFetchSize = 1 << 20
	MaxWait          = apilimit.MaxWait
	MaxPartitions    = 10000
)

// Topic defaults (docs/api.md).
const (
	DefaultPartitions     = 1
	DefaultRetentionMs    = 604800000
	DefaultRetentionBytes = -1
	DefaultSegmentBytes   = partition.DefaultSegmentBytes
	DefaultSegmentMs      = 60000
	DefaultCleanupPolicy  = "delete"
	DefaultCacheEnabled   = true
	DefaultReadAhead      = 1
	MaxReadAhead          = 16

	MinSegmentBytes = 4 << 10
	MaxSegmentBytes = 1 << 30
)

var topicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// ValidTopicName reports whether name is a legal topic name: Kafka's rule,
// `^[A-Za-z0-9._-]{1,249}$` and not "." or "..". Topic names become file
// paths and object keys, so this runs before any I/O.
func ValidTopicName(name string) error {
	if !topicName.MatchString(name) || name == "." || name == ".." {
		//lint:ignore ST1005 the message ends with the rule it quotes (". or ..") and is an API answer
		return fmt.Errorf("%w: topic name %q must match ^[A-Za-z0-9._-]{1,249}$ and not be . or ..", ErrInvalid, name)
	}
	return nil
}

// TopicSpec is a create-topic request. Nil fields take defaults.
type TopicSpec struct {
	Name           string
	Partitions     *int
	RetentionMs    *int64
	RetentionBytes *int64
	SegmentBytes   *int64
	SegmentMs      *int64
	CleanupPolicy  *string
	// Cold-tier read settings (an docs/api.md extension).
	CacheEnabled      *bool
	ReadAheadSegments *int
	// TimestampType is TimestampAppend (default) or TimestampCreate.
	TimestampType *string
}

// Topic is a topic as stored.
type Topic = meta.TopicConfig

// ProduceRecord is one record to append. Key nil: no key. Value nil:
// tombstone. Partition < 0: choose by key hash, else round-robin.
//
// Headers are stored with the record in order. Timestamp is the producer's
// event time (ms since the Unix epoch, >= 0), used only when HasTimestamp
// is set: on a create-time topic it is the record's timestamp; on an
// append-time topic a record carrying one is ErrInvalid.
type ProduceRecord struct {
	Key          []byte
	Value        []byte
	Partition    int
	Headers      []Header
	Timestamp    int64
	HasTimestamp bool
}

// Header is one record header (segment.Header).
type Header = segment.Header

// Timestamp types of a topic (TopicConfig.TimestampType), as Kafka's
// message.timestamp.type: append time is the server's clock at append
// (non-decreasing within a partition, docs/design.md "Invariants", I6);
// create time is the producer's, defaulting to the server's clock where a
// record has none.
const (
	TimestampAppend = "append"
	TimestampCreate = "create"
)

// ProduceResult is the outcome of one record, in request order. Err is set
// (and Offset is -1) when the record's partition batch failed.
type ProduceResult struct {
	Partition int
	Offset    int64
	Timestamp int64
	Err       error
}

// Record is a stored record.
type Record = segment.Record

// FetchRequest asks for records of one partition from Offset on.
type FetchRequest struct {
	Topic      string
	Partition  int
	Offset     int64
	MaxRecords int           // 0: DefaultMaxFetch
	MaxBytes   int           // 0: DefaultFetchSize
	Wait       time.Duration // wait for data when Offset == high watermark
}

// FetchResult holds the records read and the partition's bounds.
type FetchResult struct {
	Records        []Record
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// Offsets are a partition's bounds.
type Offsets struct {
	LogStartOffset int64
	HighWatermark  int64
}

// TimeOffset answers an offset-for-timestamp query. Found is false when no
// record has a timestamp >= the one asked for; Offset is then the high
// watermark.
type TimeOffset struct {
	Offset    int64
	Timestamp int64
	Found     bool
}

// GroupOffset is a committed group offset with the partition's lag.
type GroupOffset struct {
	meta.GroupOffset
	Lag int64
}
