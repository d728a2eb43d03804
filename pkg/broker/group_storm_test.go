package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
)

// TestGroupStorm: 12 members of one group join, heartbeat, commit and leave
// as fast as they can, through two broker processes on one store: every
// request is answered; none runs out of retries on the group item ("too
// many concurrent changes", 503).
func TestGroupStorm(t *testing.T) {
	ctx := context.Background()
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	var brokers [2]*Broker
	for i := range brokers {
		if brokers[i], err = New(ctx, Config{DataDir: dir, Meta: st}); err != nil {
			t.Fatal(err)
		}
		defer brokers[i].Close()
	}
	if _, err := brokers[0].CreateTopic(ctx, TopicSpec{Name: "orders", Partitions: ptr(4)}); err != nil {
		t.Fatal(err)
	}
	var requests, unavailable atomic.Int64
	var other sync.Map
	count := func(err error) {
		requests.Add(1)
		switch {
		case err == nil, errors.Is(err, ErrMemberNotFound), errors.Is(err, ErrStaleGeneration), errors.Is(err, ErrNotAssigned):
		case errors.Is(err, ErrUnavailable):
			unavailable.Add(1)
		default:
			other.Store(err.Error(), true)
		}
	}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := brokers[w%2]
			for range 25 {
				m, err := b.JoinGroup(ctx, "g", []string{"orders"}, 10*time.Second)
				count(err)
				if err != nil {
					continue
				}
				for range 2 {
					_, err := b.Heartbeat(ctx, "g", m.MemberID, &m.Generation)
					count(err)
				}
				count(b.CommitGroupOffsets(ctx, "g", []meta.GroupOffset{{Topic: "orders", Partition: w % 4, Offset: 0}}))
				count(b.LeaveGroup(ctx, "g", m.MemberID))
			}
		}()
	}
	wg.Wait()
	other.Range(func(k, _ any) bool { t.Errorf("error: %v", k); return true })
	t.Logf("%d requests, %d answered unavailable (%.2f%%)", requests.Load(), unavailable.Load(), 100*float64(unavailable.Load())/float64(requests.Load()))
	if n := unavailable.Load(); n > 0 {
		t.Errorf("%d of %d requests ran out of retries on the group item", n, requests.Load())
	}
}
