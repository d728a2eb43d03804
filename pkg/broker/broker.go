package broker

import (
	"context"
	"errors"

	"github.com/tierlog/tierlog/pkg/meta"
)

var errTODO = errors.New("broker: not implemented yet")

// Broker is the entry point: topics, routing, produce and fetch. It is safe
// for concurrent use.
type Broker struct{}

// New opens a broker.
func New(ctx context.Context, cfg Config) (*Broker, error) { return nil, errTODO }

// Config configures a Broker.
type Config struct {
	// DataDir holds the hot tier: <DataDir>/<topic>~<id>/<partition>/.
	DataDir string
	// Meta is the metadata store.
	Meta meta.Store
}

// CreateTopic validates spec, fills defaults and stores the topic.
func (b *Broker) CreateTopic(ctx context.Context, spec TopicSpec) (Topic, error) {
	return Topic{}, errTODO
}

// Topic returns a topic or ErrTopicNotFound.
func (b *Broker) Topic(ctx context.Context, name string) (Topic, error) { return Topic{}, errTODO }

// Topics lists topics sorted by name.
func (b *Broker) Topics(ctx context.Context) ([]Topic, error) { return nil, errTODO }

// DeleteTopic deletes a topic and its data.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error { return errTODO }

// Produce appends records, routing each to a partition; records bound for
// one partition form one atomic batch in request order. The error is for
// the whole request (unknown topic, bad partition, too large); per-partition
// failures are in the results.
func (b *Broker) Produce(ctx context.Context, topic string, recs []ProduceRecord) ([]ProduceResult, error) {
	return nil, errTODO
}

// ProducePartition appends recs to one partition, all or nothing.
func (b *Broker) ProducePartition(ctx context.Context, topic string, partition int, recs []ProduceRecord) ([]ProduceResult, error) {
	return nil, errTODO
}

// Fetch reads records.
func (b *Broker) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	return FetchResult{}, errTODO
}

// Offsets returns a partition's log start offset and high watermark.
func (b *Broker) Offsets(ctx context.Context, topic string, partition int) (Offsets, error) {
	return Offsets{}, errTODO
}

// OffsetForTime returns the earliest offset whose timestamp is >= ts.
func (b *Broker) OffsetForTime(ctx context.Context, topic string, partition int, ts int64) (TimeOffset, error) {
	return TimeOffset{}, errTODO
}

// CommitGroupOffsets stores group offsets after checking each is within its
// partition's [log start, high watermark].
func (b *Broker) CommitGroupOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error {
	return errTODO
}

// GroupOffsets returns a group's offsets for a topic with lag.
func (b *Broker) GroupOffsets(ctx context.Context, group, topic string) ([]GroupOffset, error) {
	return nil, errTODO
}

// Close flushes and closes every partition.
func (b *Broker) Close() error { return errTODO }
