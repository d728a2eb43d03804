package broker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// A long-poll waiting on a topic ends as soon as the topic does, with
// what ended it: a delete answers ErrTopicNotFound, Close ErrClosed. The
// fetch's own context expires far below its wait, so a long-poll that
// waits it out fails.
func TestLongPollEndsWithItsTopic(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(*Broker) error
		want error
	}{
		{"delete", func(b *Broker) error { return b.DeleteTopic(context.Background(), "s") }, ErrTopicNotFound},
		{"close", func(b *Broker) error { return b.Close() }, ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBroker(t, mem.New(), t.TempDir())
			defer b.Close()
			if _, err := b.CreateTopic(context.Background(), TopicSpec{Name: "s"}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), MaxWait/2)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := b.Fetch(ctx, FetchRequest{Topic: "s", Offset: 0, Wait: MaxWait})
				done <- err
			}()
			waitForWaiters(t, 1)
			if err := c.end(b); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, c.want) || ctx.Err() != nil {
				t.Errorf("long-poll after %s: %v (its context: %v), want %v", c.name, err, ctx.Err(), c.want)
			}
		})
	}
}

// waitForWaiters waits until at least n goroutines wait in a long-poll
// for a partition's next commit (a long-poll parks with no event a test
// can wait on).
func waitForWaiters(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	testenv.Eventually(t, 10*time.Second, func() error {
		if got := strings.Count(string(buf[:runtime.Stack(buf, true)]), "partition.(*Log).Wait("); got < n {
			return fmt.Errorf("%d long-polls waiting, want %d", got, n)
		}
		return nil
	})
}
