package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// MultiConsumer reads several topics with one Poll: kgo's one client
// consuming many topics. It is a Consumer per topic, each made with the
// same options (a group consumer is then a member of the group per
// topic: each topic's partitions are split among the members reading
// that topic), and Poll takes the next batch any of them fetched, each
// Message naming its Topic. Poll and PollN must not be called from two
// goroutines at once; Commit and Close may be called from any. Per-topic
// operations (Seek, Pause, Resume, Position) are on Consumer(topic); never
// call that Consumer's Poll.
type MultiConsumer struct {
	topics []string
	ks     []*Consumer
	next   int // where the search for pending records starts: fairness
}

// NewMultiConsumer starts a consumer of topics (at least one, no
// duplicates), with opts applied to each topic's Consumer (see
// NewConsumer). If one topic's consumer cannot start, those started are
// closed and the error returned.
func (c *Client) NewMultiConsumer(ctx context.Context, topics []string, opts ...ConsumerOption) (*MultiConsumer, error) {
	if len(topics) == 0 {
		return nil, errors.New("client: NewMultiConsumer needs at least one topic")
	}
	m := &MultiConsumer{topics: slices.Clone(topics)}
	for i, t := range topics {
		if slices.Contains(topics[:i], t) {
			return nil, fmt.Errorf("client: topic %q given twice", t)
		}
	}
	for _, t := range topics {
		k, err := c.NewConsumer(ctx, t, opts...)
		if err != nil {
			_ = m.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		m.ks = append(m.ks, k)
	}
	return m, nil
}

// Topics are the topics read, in the order given.
func (m *MultiConsumer) Topics() []string { return slices.Clone(m.topics) }

// Consumer is topic's Consumer, for Seek, Pause, Resume, Position and
// Partitions; nil for a topic not read.
func (m *MultiConsumer) Consumer(topic string) *Consumer {
	if i := slices.Index(m.topics, topic); i >= 0 {
		return m.ks[i]
	}
	return nil
}

// Poll waits for records of any topic and returns them: at most one
// fetched batch of one partition per call, as Consumer.Poll.
func (m *MultiConsumer) Poll(ctx context.Context) ([]Message, error) { return m.PollN(ctx, 0) }

// PollN is Poll returning at most max records (max <= 0: no limit).
func (m *MultiConsumer) PollN(ctx context.Context, max int) ([]Message, error) {
	n := len(m.ks)
	for _, k := range m.ks {
		if k.ctx.Err() != nil {
			return nil, ErrClosed
		}
	}
	// Records left from an earlier call first, each topic in turn.
	for i := range n {
		k := m.ks[(m.next+i)%n]
		k.dropStale()
		if len(k.pending) > 0 {
			m.next = (m.next + i + 1) % n
			return k.handOut(max), nil
		}
	}
	// Then whichever topic's fetchers hand over first.
	cases := make([]reflect.SelectCase, 0, 2*n+1)
	for _, k := range m.ks {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(k.batches)})
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, k := range m.ks {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(k.ctx.Done())})
	}
	for {
		chosen, v, _ := reflect.Select(cases)
		switch {
		case chosen == n:
			return nil, ctx.Err()
		case chosen > n:
			return nil, ErrClosed
		}
		k := m.ks[chosen]
		if err := k.take(v.Interface().(fetched)); err != nil {
			return nil, err
		}
		if len(k.pending) > 0 {
			return k.handOut(max), nil
		}
	}
}

// Commit commits every topic's positions (Consumer.Commit), all of them
// even if one fails; the errors joined.
func (m *MultiConsumer) Commit(ctx context.Context) error {
	var errs []error
	for _, k := range m.ks {
		if err := k.Commit(ctx); err != nil {
			errs = append(errs, fmt.Errorf("topic %q: %w", k.topic, err))
		}
	}
	return errors.Join(errs...)
}

// Close closes every topic's Consumer (Consumer.Close); the errors joined.
func (m *MultiConsumer) Close(ctx context.Context) error {
	var errs []error
	for _, k := range m.ks {
		if err := k.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("topic %q: %w", k.topic, err))
		}
	}
	return errors.Join(errs...)
}
