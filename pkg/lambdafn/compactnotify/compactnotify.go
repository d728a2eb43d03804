// Package compactnotify sends the compactor function produce's "segment
// rolled" events: one asynchronous Lambda invoke (InvocationType Event) per
// event. It is its own package so that only the produce function links the
// Lambda client.
package compactnotify

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/tierlog/tierlog/pkg/lambdafn"
)

// Invoker is the part of the Lambda client the notifier uses.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Notifier invokes one function asynchronously. Safe for concurrent use.
type Notifier struct {
	client   Invoker
	function string
}

var _ lambdafn.Notifier = (*Notifier)(nil)

// New returns a Notifier for function with a Lambda client from the SDK's
// default configuration (AWS_ENDPOINT_URL_LAMBDA or AWS_ENDPOINT_URL point
// it elsewhere) and apiOptions added to its middleware (X-Ray). Its
// signature is lambdafn.NotifierFactory's.
func New(ctx context.Context, function string, apiOptions []func(*middleware.Stack) error) (lambdafn.Notifier, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("compactnotify: load AWS config: %w", err)
	}
	client := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		o.APIOptions = append(o.APIOptions, apiOptions...)
		o.RetryMaxAttempts = 2 // the caller's timeout bounds the whole call anyway
	})
	return NewWithClient(client, function), nil
}

// NewWithClient returns a Notifier over client.
func NewWithClient(client Invoker, function string) *Notifier {
	return &Notifier{client: client, function: function}
}

// Notify sends ev as one asynchronous invoke. Lambda queues it and answers
// 202 at once; the compactor runs on its own.
func (n *Notifier) Notify(ctx context.Context, ev lambdafn.RolledEvent) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("compactnotify: encode: %w", err)
	}
	_, err = n.client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(n.function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("compactnotify: invoke %s: %w", n.function, err)
	}
	return nil
}
