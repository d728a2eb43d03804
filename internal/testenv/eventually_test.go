package testenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	calls := 0
	Eventually(t, time.Minute, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("check called %d times, want 3", calls)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	r := &fatalRecorder{TB: t}
	calls := 0
	func() {
		defer func() {
			if p := recover(); p != r {
				t.Fatalf("Eventually did not fail: recovered %v", p)
			}
		}()
		Eventually(r, 3*EventuallyEvery, func() error {
			calls++
			return errors.New("still " + strings.Repeat("x", calls))
		})
	}()
	if calls < 2 {
		t.Errorf("check called %d times within the deadline, want it looked again", calls)
	}
	if want := "still " + strings.Repeat("x", calls); !strings.Contains(r.msg, want) {
		t.Errorf("failure %q does not carry the last error %q", r.msg, want)
	}
}
