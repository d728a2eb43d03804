package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
)

// Source is what subscriptions use of the log: *broker.Broker implements it.
type Source interface {
	Topic(ctx context.Context, name string) (broker.Topic, error)
	Offsets(ctx context.Context, topic string, p int) (broker.Offsets, error)
	OffsetForTime(ctx context.Context, topic string, p int, ts int64) (broker.TimeOffset, error)
	Fetch(ctx context.Context, req broker.FetchRequest) (broker.FetchResult, error)
	Produce(ctx context.Context, topic string, recs []broker.ProduceRecord) ([]broker.ProduceResult, error)
	GroupOffsets(ctx context.Context, group, topic string) ([]broker.GroupOffset, error)
	CommitGroupOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error
	DeleteGroup(ctx context.Context, group string) error
}

var _ Source = (*broker.Broker)(nil)

// Clock is the time a deliverer runs on: the real one, or a test's.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Defaults of Config.
const (
	DefaultInvokeTimeout = 60 * time.Second
	DefaultRetryBase     = time.Second
	DefaultRetryMax      = time.Minute
	DefaultRescan        = 10 * time.Second
)

// Config configures a Service and its Runner. Store, Source and Owner are
// required; the rest default (applyDefaults).
type Config struct {
	Store  meta.SubscriptionStore
	Source Source
	// Targets resolves targets; nil means HTTPTargets(nil, nil): webhooks
	// only.
	Targets Targets
	// Owner names this process as a deliverer (lease owner).
	Owner string
	// SourceARN is the eventSourceArn of a topic's events; nil means the
	// topic name.
	SourceARN func(topic string) string
	// InvokeTimeout bounds one invocation; a target that has not answered
	// by then failed the batch. Default DefaultInvokeTimeout.
	InvokeTimeout time.Duration
	// LeaseTTL is how long a deliverer's lease lives without a write.
	// Default, and never less than, 2 x InvokeTimeout: a lease is renewed
	// before an attempt when less than half of it is left, so it outlives
	// any invocation.
	LeaseTTL time.Duration
	// RetryBase and RetryMax shape the backoff between attempts: RetryBase
	// doubled per failed attempt, at most RetryMax.
	RetryBase, RetryMax time.Duration
	// Rescan is how often a Runner looks for subscriptions other processes
	// created or changed (its own are seen at once). Default DefaultRescan.
	Rescan time.Duration
	Logger *slog.Logger
	Stats  *Stats
	// Clock: nil is the real clock.
	Clock Clock
}

// applyDefaults is the one place Config's defaults and checks are.
func (c *Config) applyDefaults() error {
	if c.Store == nil || c.Source == nil {
		return errors.New("subscribe: Config needs Store and Source")
	}
	if c.Owner == "" {
		return fmt.Errorf("%w: Config.Owner is required", ErrInvalid)
	}
	if c.Targets == nil {
		c.Targets = HTTPTargets(nil, nil)
	}
	if c.SourceARN == nil {
		c.SourceARN = func(topic string) string { return topic }
	}
	if c.InvokeTimeout <= 0 {
		c.InvokeTimeout = DefaultInvokeTimeout
	}
	c.LeaseTTL = max(c.LeaseTTL, 2*c.InvokeTimeout)
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	c.RetryMax = max(c.RetryMax, c.RetryBase)
	if c.Rescan <= 0 {
		c.Rescan = DefaultRescan
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Stats == nil {
		c.Stats = NewStats()
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return nil
}
