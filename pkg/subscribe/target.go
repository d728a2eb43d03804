package subscribe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// Invoker sends one event to a target and returns the target's answer
// body. An error means the invocation failed as a whole: a non-2xx answer,
// a function error, a timeout. Implementations are safe for concurrent use.
type Invoker interface {
	Invoke(ctx context.Context, event []byte) ([]byte, error)
}

// Targets resolves a subscription's target to its Invoker. The process
// wiring supplies it: HTTP targets always, Lambda targets where a Lambda
// client is configured (package subscribe/lambdatarget).
type Targets func(t Target) (Invoker, error)

// maxAnswerBytes bounds the answer body read from a target: a
// batchItemFailures list of 10,000 offsets fits with room to spare.
const maxAnswerBytes = 1 << 20

// HTTPInvoker POSTs events to a webhook.
type HTTPInvoker struct {
	Client *http.Client
	URL    string
}

// Invoke POSTs event; a 2xx answer is a successful invocation.
func (h HTTPInvoker) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(event))
	if err != nil {
		return nil, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("webhook answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("webhook answered %d: %.200s", resp.StatusCode, body)
	}
	return body, nil
}

// HTTPTargets resolves http targets with client (nil: http.DefaultClient)
// and lambda targets with lambda (nil: lambda targets are refused).
func HTTPTargets(client *http.Client, lambda func(function string) (Invoker, error)) Targets {
	return func(t Target) (Invoker, error) {
		switch t.Type {
		case TargetHTTP:
			return HTTPInvoker{Client: client, URL: t.URL}, nil
		case TargetLambda:
			if lambda == nil {
				return nil, fmt.Errorf("no Lambda client configured for target %s", t.Function)
			}
			return lambda(t.Function)
		}
		return nil, fmt.Errorf("%w: target type %q", ErrInvalid, t.Type)
	}
}
