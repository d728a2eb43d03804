// Package lambdatarget invokes a subscription's Lambda function target:
// Invoke with InvocationType RequestResponse, the event as payload. The
// client comes from the SDK's default configuration, so
// AWS_ENDPOINT_URL_LAMBDA (or AWS_ENDPOINT_URL) points it at the Runtime
// Interface Emulator or LocalStack. It is its own package so that only the
// wiring that runs subscriptions links the Lambda client.
package lambdatarget

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/tierlog/tierlog/pkg/subscribe"
)

// Client is the part of the Lambda client a target uses.
type Client interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Invoker invokes one function. Safe for concurrent use.
type Invoker struct {
	client   Client
	function string
}

// New returns a Invoker for function over client.
func New(client Client, function string) *Invoker {
	return &Invoker{client: client, function: function}
}

var _ subscribe.Invoker = (*Invoker)(nil)

// Invoke sends event and returns the function's answer payload. A function
// error (X-Amz-Function-Error: an unhandled error or a timeout inside the
// function) fails the batch, as does an error of the call itself. So does
// a payload that is the runtime's error document ({"errorMessage":...,
// "errorType":...}) without the header: the Runtime Interface Emulator
// answers a function error so.
func (i *Invoker) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	out, err := i.client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(i.function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        event,
	})
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", i.function, err)
	}
	if out.FunctionError != nil {
		return nil, fmt.Errorf("function %s error %s: %.200s", i.function, *out.FunctionError, out.Payload)
	}
	if isErrorDocument(out.Payload) {
		return nil, fmt.Errorf("function %s error: %.200s", i.function, out.Payload)
	}
	return out.Payload, nil
}

// isErrorDocument reports whether payload is a Lambda runtime's error
// answer: an object with errorMessage and errorType (and maybe
// stackTrace), nothing else.
func isErrorDocument(payload []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(payload, &doc) != nil {
		return false
	}
	_, msg := doc["errorMessage"]
	_, typ := doc["errorType"]
	_, trace := doc["stackTrace"]
	n := 2
	if trace {
		n = 3
	}
	return msg && typ && len(doc) == n
}

// Factory makes Invokers over one client built from the SDK's default
// configuration on first use (a process without Lambda targets never
// loads it). Its Invoker method fits subscribe.HTTPTargets.
type Factory struct {
	once   sync.Once
	client Client
	err    error
}

// Invoker returns an Invoker for function.
func (f *Factory) Invoker(function string) (subscribe.Invoker, error) {
	f.once.Do(func() {
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			f.err = fmt.Errorf("lambdatarget: load AWS config: %w", err)
			return
		}
		// No SDK retries: a failed invocation is the deliverer's to retry,
		// with its backoff and its count.
		f.client = lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.RetryMaxAttempts = 1 })
	})
	if f.err != nil {
		return nil, f.err
	}
	return New(f.client, function), nil
}
