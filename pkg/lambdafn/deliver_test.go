package lambdafn

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go/middleware"
)

// Produce wakes the delivery function after committed records, at most
// once per DeliverWakeInterval; the delivery function's pass delivers every
// record to the subscription's webhook and returns.
func TestDeliverFunction(t *testing.T) {
	awsEnv(t)
	hot := t.TempDir()
	var got atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got.Add(int64(strings.Count(string(body), `"offset":`)))
	}))
	defer web.Close()
	waker := &fakeNotifier{}
	factory := func(_ context.Context, function string, _ []func(*middleware.Stack) error) (Notifier, error) {
		if function != "the-deliverer" {
			t.Errorf("factory got function %q", function)
		}
		return waker, nil
	}
	produce, _ := newFunction(t, "produce", hot, map[string]string{EnvDeliverFunction: "the-deliverer"}, WithDeliverWaker(factory))
	deliver, _ := newFunction(t, "deliver", hot, nil)
	ph, dh := produce.HTTP(WriteMethods...), deliver.Deliver()
	call := func(method, path, body string, status int) {
		t.Helper()
		resp, err := ph(lambdaCtx(), event(method, path, body))
		if err != nil || resp.StatusCode != status {
			t.Fatalf("%s %s: %d %s (%v)", method, path, resp.StatusCode, resp.Body, err)
		}
	}
	call("POST", "/v1/topics", `{"name":"orders","partitions":2}`, 201)
	call("POST", "/v1/subscriptions", `{"name":"hook","topic":"orders","target":{"type":"http","url":"`+web.URL+`"}}`, 201)
	if len(waker.events) != 0 {
		t.Fatalf("woken without records: %+v", waker.events)
	}
	for range 3 {
		call("POST", "/v1/topics/orders/records", `{"records":[{"value":"a","partition":0},{"value":"b","partition":1}]}`, 200)
	}
	if len(waker.events) != 1 || waker.events[0].Event != EventRecordsCommitted {
		t.Fatalf("wake-ups %+v: want one records_committed (debounced)", waker.events)
	}
	payload, _ := json.Marshal(waker.events[0])
	res, err := dh(lambdaCtx(), payload)
	if err != nil || res.Trigger != EventRecordsCommitted || res.Delivered != 6 || res.Partitions != 2 || got.Load() != 6 {
		t.Fatalf("deliver = %+v, %v; webhook got %d; want 6 records of 2 partitions", res, err, got.Load())
	}
	// Nothing new: the scheduled pass delivers nothing and returns.
	sched := []byte(`{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`)
	if res, err := dh(lambdaCtx(), sched); err != nil || res.Trigger != ModeScheduled || res.Delivered != 0 || res.Busy != 0 {
		t.Fatalf("scheduled = %+v, %v", res, err)
	}
}
