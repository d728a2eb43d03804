package dynamo

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// What membership costs in DynamoDB requests, counted on the wire
// (minidyn): a heartbeat with more than half its session left is one
// GetItem; one that extends the deadline is a GetItem and a PutItem; a
// fenced commit reads the group item once besides writing its offsets.
func TestGroupRequestCost(t *testing.T) {
	srv := startMinidyn(t)
	s := newTableStore(t, testClient(srv.URL))
	clock := &testClock{now: time.UnixMilli(1_700_000_000_000)}
	ctx := context.Background()
	b, err := broker.New(ctx, broker.Config{DataDir: t.TempDir(), Meta: s, Now: clock.Now, TopicRefresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic(ctx, broker.TopicSpec{Name: "orders", Partitions: intp(6)}); err != nil {
		t.Fatal(err)
	}
	var ms []broker.Membership
	for range 3 {
		m, err := b.JoinGroup(ctx, "g", []string{"orders"}, 9*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	hb := func() {
		for _, m := range ms {
			if _, err := b.Heartbeat(ctx, "g", m.MemberID, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	hb() // settles everyone on the last generation
	// Heartbeats every third of the session, as the client does: 12
	// rounds over 36 s.
	before := s.Counters().Snapshot()
	const rounds = 12
	for range rounds {
		clock.advance(3 * time.Second)
		hb()
	}
	d := diff(s.Counters().Snapshot(), before)
	n := float64(rounds * len(ms))
	t.Logf("per heartbeat: %.2f GetItem, %.2f writes (%d heartbeats: %d GetItem, %d PutItem, %d other)",
		float64(d.GetItem)/n, float64(d.Writes())/n, int(n), d.GetItem, d.PutItem, d.UpdateItem+d.DeleteItem+d.Query)
	if d.GetItem != uint64(n) || d.Query != 0 || d.UpdateItem != 0 {
		t.Fatalf("heartbeats cost %+v, want exactly one GetItem each and no query", d)
	}
	// Extended when less than half of 9 s is left: every second heartbeat.
	if d.PutItem != uint64(n)/2 {
		t.Fatalf("heartbeats wrote %d times, want %d (every second one)", d.PutItem, int(n)/2)
	}
}

func intp(v int) *int { return &v }

func diff(a, b Stats) Stats {
	return Stats{GetItem: a.GetItem - b.GetItem, UpdateItem: a.UpdateItem - b.UpdateItem, PutItem: a.PutItem - b.PutItem,
		Query: a.Query - b.Query, DeleteItem: a.DeleteItem - b.DeleteItem}
}
