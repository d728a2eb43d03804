package broker

import (
	"sort"
	"sync"
)

// MaxGroupLags bounds how many (group, topic, partition) lags a Broker
// remembers for metrics; lags of further keys are not recorded (counted in
// GroupLagsDropped).
const MaxGroupLags = 1000

// GroupLag is a consumer group's lag on one partition (high watermark minus
// the committed offset), as this process last computed it: when the group's
// offsets were committed or read through it.
type GroupLag struct {
	Group     string
	Topic     string
	Partition int
	Lag       int64
}

type lagKey struct {
	group, topic string
	partition    int
}

// lags is what GroupLags reports. Safe for concurrent use; nothing else is
// taken while its lock is held.
type lags struct {
	mu      sync.Mutex
	m       map[lagKey]int64
	dropped int64
}

func (l *lags) record(group, topic string, partition int, lag int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := lagKey{group, topic, partition}
	if _, ok := l.m[k]; !ok && len(l.m) >= MaxGroupLags {
		l.dropped++
		return
	}
	if l.m == nil {
		l.m = map[lagKey]int64{}
	}
	l.m[k] = lag
}

// forget drops a deleted topic's lags.
func (l *lags) forget(topic string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if k.topic == topic {
			delete(l.m, k)
		}
	}
}

// GroupLags returns the group lags this process last computed, sorted by
// group, topic and partition, and how many keys were not recorded because
// MaxGroupLags were already. It does no I/O.
func (b *Broker) GroupLags() ([]GroupLag, int64) {
	b.lags.mu.Lock()
	out := make([]GroupLag, 0, len(b.lags.m))
	for k, v := range b.lags.m {
		out = append(out, GroupLag{Group: k.group, Topic: k.topic, Partition: k.partition, Lag: v})
	}
	dropped := b.lags.dropped
	b.lags.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, c := out[i], out[j]
		if a.Group != c.Group {
			return a.Group < c.Group
		}
		if a.Topic != c.Topic {
			return a.Topic < c.Topic
		}
		return a.Partition < c.Partition
	})
	return out, dropped
}
