package testenv

import (
	"testing"
	"time"
)

// EventuallyEvery is how often Eventually looks again.
const EventuallyEvery = 10 * time.Millisecond

// Eventually calls check until it returns nil and fails t with check's
// last error once within has passed. It is for a state that announces
// itself by no event a test can wait on (a port that starts listening, a
// goroutine parked in a wait, a metric an asynchronous job moves): a test
// waits for an event with a channel or a hook, never with Eventually.
// check runs on the caller's goroutine, so it may call t.Fatal itself.
func Eventually(t testing.TB, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(EventuallyEvery)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v: %v", within, err)
		}
		<-tick.C
	}
}
