package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// afterAnswer runs the work a produce leaves after its answer
// (partition.Config.Detach: a lone writer's checkpoint) after the function
// has returned, and keeps the execution environment from freezing until
// that work is done (docs/lambda.md, "Lambda rules").
//
// It is an internal extension of the Lambda Extensions API, registered for
// INVOKE events: Lambda freezes the environment only once the runtime has
// posted the response and every extension has asked for its next event. So
// for each invocation it waits until the handler of that invocation has
// returned and no detached work is left, and only then asks for the next
// event. The response goes back to API Gateway when the handler returns,
// without waiting for it.
//
// One invocation at a time (Lambda's model, MaxConcurrency 1); with more,
// the function runs that work before its answer instead.
type afterAnswer struct {
	mu       sync.Mutex
	changed  *sync.Cond
	running  int             // detached functions not yet done
	returned map[string]bool // invocations whose handler returned, until the extension saw them
	// then runs once an invocation's detached work is done, before the
	// extension asks for the next event: the compactor's notice of any
	// segment sealed after the handler sent its own (none today: a lone
	// writer's round seals before its answer), so a roll is never left
	// for the next invocation to announce.
	then func()

	api *extensionAPI
	id  string
}

// maxInvocation is the longest a Lambda invocation may run.
const maxInvocation = 15 * time.Minute

// extensionName names the extension to Lambda (and in its logs).
const extensionName = "tierlog-after-answer"

// startAfterAnswer registers the extension at runtimeAPI (the
// AWS_LAMBDA_RUNTIME_API address) and starts its loop. It must run before
// the runtime asks for its first invocation: Lambda takes registrations
// only during Init.
func startAfterAnswer(runtimeAPI string, then func()) (*afterAnswer, error) {
	a := &afterAnswer{returned: map[string]bool{}, then: then, api: &extensionAPI{base: "http://" + runtimeAPI + "/2020-01-01/extension/", hc: &http.Client{}}}
	a.changed = sync.NewCond(&a.mu)
	id, err := a.api.register(extensionName)
	if err != nil {
		return nil, err
	}
	a.id = id
	go a.loop()
	return a, nil
}

// detach runs fn on a goroutine the extension waits for.
func (a *afterAnswer) detach(fn func()) {
	a.mu.Lock()
	a.running++
	a.mu.Unlock()
	go func() {
		defer func() {
			a.mu.Lock()
			a.running--
			a.changed.Broadcast()
			a.mu.Unlock()
		}()
		fn()
	}()
}

// handlerReturned marks invocation requestID's handler as returned: its
// response is on its way.
func (a *afterAnswer) handlerReturned(requestID string) {
	a.mu.Lock()
	a.returned[requestID] = true
	a.changed.Broadcast()
	a.mu.Unlock()
}

// loop asks for each event, and for an invocation waits for its handler to
// return and the detached work to end before it asks for the next. An
// error of the Extensions API ends it: Lambda then ends the environment.
func (a *afterAnswer) loop() {
	for {
		ev, err := a.api.next(a.id)
		if err != nil {
			return
		}
		if ev.EventType != "INVOKE" {
			continue
		}
		// A handler that never runs (an event the runtime could not
		// decode) is waited for until the invocation's deadline.
		deadline := time.UnixMilli(ev.DeadlineMs)
		if ev.DeadlineMs <= 0 { // an event without one: Lambda's longest invocation
			deadline = time.Now().Add(maxInvocation)
		}
		t := time.AfterFunc(time.Until(deadline), func() {
			a.mu.Lock()
			a.changed.Broadcast()
			a.mu.Unlock()
		})
		a.mu.Lock()
		for (!a.returned[ev.RequestID] && time.Now().Before(deadline)) || a.running > 0 {
			a.changed.Wait()
		}
		delete(a.returned, ev.RequestID)
		a.mu.Unlock()
		t.Stop()
		if a.then != nil {
			a.then()
		}
	}
}

// extensionAPI is a client of the Lambda Extensions API: the two calls an
// internal extension makes, register and next. aws-lambda-go keeps its own
// client unexported.
type extensionAPI struct {
	base string
	hc   *http.Client
}

type extensionEvent struct {
	EventType  string `json:"eventType"`
	RequestID  string `json:"requestId"`
	DeadlineMs int64  `json:"deadlineMs"`
}

func (c *extensionAPI) register(name string) (string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.base+"register", bytes.NewReader([]byte(`{"events":["INVOKE"]}`)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Lambda-Extension-Name", name)
	res, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("register extension: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("register extension: %s", res.Status)
	}
	id := res.Header.Get("Lambda-Extension-Identifier")
	if id == "" {
		return "", fmt.Errorf("register extension: no identifier in the answer")
	}
	return id, nil
}

func (c *extensionAPI) next(id string) (extensionEvent, error) {
	var ev extensionEvent
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, c.base+"event/next", nil)
	if err != nil {
		return ev, err
	}
	req.Header.Set("Lambda-Extension-Identifier", id)
	res, err := c.hc.Do(req)
	if err != nil {
		return ev, fmt.Errorf("next extension event: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, res.Body)
		return ev, fmt.Errorf("next extension event: %s", res.Status)
	}
	err = json.NewDecoder(res.Body).Decode(&ev)
	return ev, err
}
