package lambdafn

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeExtensionsAPI answers an internal extension as Lambda's Extensions
// API does: register, then one INVOKE event; the next ask for an event is
// reported on asked and held until the test ends.
func fakeExtensionsAPI(t *testing.T, requestID string) (addr string, asked chan struct{}) {
	return fakeExtensionsAPIDeadline(t, requestID, time.Now().Add(time.Minute).UnixMilli())
}

// fakeExtensionsAPIDeadline is fakeExtensionsAPI with the INVOKE event's
// deadlineMs (0: none in the event).
func fakeExtensionsAPIDeadline(t *testing.T, requestID string, deadlineMs int64) (addr string, asked chan struct{}) {
	asked = make(chan struct{}, 1)
	done := make(chan struct{})
	var nexts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/2020-01-01/extension/register"):
			if r.Header.Get("Lambda-Extension-Name") == "" {
				http.Error(w, "no name", http.StatusBadRequest)
				return
			}
			w.Header().Set("Lambda-Extension-Identifier", "ext-1")
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/2020-01-01/extension/event/next"):
			if nexts.Add(1) == 1 {
				fmt.Fprintf(w, `{"eventType":"INVOKE","requestId":%q,"deadlineMs":%d}`, requestID, deadlineMs)
				return
			}
			asked <- struct{}{}
			<-done
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return strings.TrimPrefix(srv.URL, "http://"), asked
}

// The extension asks for its next event (which lets Lambda freeze the
// environment) only once the invocation's handler returned and the work it
// detached is done.
func TestAfterAnswerWaitsForHandlerAndDetachedWork(t *testing.T) {
	addr, asked := fakeExtensionsAPI(t, "req-1")
	var notified atomic.Bool
	a, err := startAfterAnswer(addr, func() { notified.Store(true) })
	if err != nil {
		t.Fatal(err)
	}
	release, ran := make(chan struct{}), make(chan struct{})
	a.detach(func() { <-release; close(ran) })
	a.handlerReturned("req-1")
	select {
	case <-asked:
		t.Fatal("asked for the next event while detached work was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-ran
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("never asked for the next event after the work ended")
	}
	if !notified.Load() {
		t.Fatal("the after-work hook did not run before the next event")
	}
}

// Without the handler's return, the work being done is not enough, whether
// or not the event gives a deadline.
func TestAfterAnswerWaitsForTheHandler(t *testing.T) {
	for _, deadline := range []int64{time.Now().Add(time.Minute).UnixMilli(), 0} {
		t.Run(fmt.Sprint("deadline=", deadline != 0), func(t *testing.T) { testAfterAnswerWaitsForTheHandler(t, deadline) })
	}
}

func testAfterAnswerWaitsForTheHandler(t *testing.T, deadlineMs int64) {
	addr, asked := fakeExtensionsAPIDeadline(t, "req-2", deadlineMs)
	a, err := startAfterAnswer(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.handlerReturned("another-request")
	select {
	case <-asked:
		t.Fatal("asked for the next event before req-2's handler returned")
	case <-time.After(50 * time.Millisecond):
	}
	a.handlerReturned("req-2")
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("never asked for the next event after the handler returned")
	}
}

func TestAfterAnswerRegistrationRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := startAfterAnswer(strings.TrimPrefix(srv.URL, "http://"), nil); err == nil {
		t.Fatal("registration refused by the API: no error")
	}
}
