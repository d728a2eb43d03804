package lambdafn

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/tierlog/tierlog/pkg/meta"
)

// RolledEvent is the payload produce sends the compactor when a request
// sealed segments: {"tierlog_event":"segment_rolled","partitions":[...]}.
// Never change the field names: a compactor of another version may read
// it (an unknown payload makes the compactor do a full pass).
type RolledEvent struct {
	Event      string            `json:"tierlog_event"`
	Partitions []RolledPartition `json:"partitions"`
}

// RolledPartition names one partition that sealed a segment.
type RolledPartition struct {
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int    `json:"partition"`
}

// EventSegmentRolled is RolledEvent.Event.
const EventSegmentRolled = "segment_rolled"

// Notifier delivers a RolledEvent to the compactor function
// (package compactnotify: an asynchronous Lambda invoke).
type Notifier interface {
	Notify(ctx context.Context, ev RolledEvent) error
}

// NotifierFactory builds the Notifier for the named compactor function;
// apiOptions instrument its AWS client (X-Ray).
type NotifierFactory func(ctx context.Context, function string, apiOptions []func(*middleware.Stack) error) (Notifier, error)

// notify sends ONE event naming keys, waiting at most timeout: the request
// answers after it, so nothing is left running once the answer is out
// (docs/lambda.md "Lambda rules"). A failure is logged, never returned: the
// schedule picks the segments up. It returns the number of events sent (0
// or 1).
func notify(ctx context.Context, n Notifier, timeout time.Duration, keys []meta.PartitionKey, log *slog.Logger) int {
	ev := RolledEvent{Event: EventSegmentRolled}
	for _, k := range keys {
		ev.Partitions = append(ev.Partitions, RolledPartition{Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	start := time.Now()
	if err := n.Notify(ctx, ev); err != nil {
		log.WarnContext(ctx, "notify compactor", "partitions", len(keys), "err", err)
		return 0
	}
	log.DebugContext(ctx, "notified compactor", "partitions", len(keys), "took_ms", time.Since(start).Milliseconds())
	return 1
}
