package client_test

import (
	"testing"

	"github.com/tierlog/tierlog/pkg/client"
)

// TestTopicExtensionFields: cache_enabled and read_ahead_segments
// (docs/api-extensions.md) are sent by CreateTopic when set, defaulted by
// the server when not, and read back by CreateTopic, Topic and Topics.
func TestTopicExtensionFields(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	c := s.client()
	ctx := ctxT(t)

	def, err := c.CreateTopic(ctx, client.TopicSpec{Name: "defaults"})
	if err != nil || !def.CacheEnabled || def.ReadAheadSegments != 1 {
		t.Fatalf("create with defaults: %+v %v; want cache_enabled true, read_ahead_segments 1", def, err)
	}
	set, err := c.CreateTopic(ctx, client.TopicSpec{Name: "tuned", CacheEnabled: client.Bool(false), ReadAheadSegments: client.Int(4)})
	if err != nil || set.CacheEnabled || set.ReadAheadSegments != 4 {
		t.Fatalf("create tuned: %+v %v; want cache_enabled false, read_ahead_segments 4", set, err)
	}
	zero, err := c.CreateTopic(ctx, client.TopicSpec{Name: "zero", ReadAheadSegments: client.Int(0)})
	if err != nil || !zero.CacheEnabled || zero.ReadAheadSegments != 0 {
		t.Fatalf("create read-ahead 0: %+v %v; want read_ahead_segments 0 sent, not defaulted", zero, err)
	}
	if got, err := c.Topic(ctx, "tuned"); err != nil || got != set {
		t.Fatalf("describe: %+v %v, want %+v", got, err, set)
	}
	ts, err := c.Topics(ctx)
	if err != nil || len(ts) != 3 || ts[0] != def || ts[1] != set || ts[2] != zero {
		t.Fatalf("list: %+v %v", ts, err)
	}
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "bad", ReadAheadSegments: client.Int(17)}); !client.IsCode(err, client.CodeInvalidRequest) {
		t.Fatalf("read_ahead_segments 17: %v, want invalid_request", err)
	}
}
