package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tierlog/tierlog/pkg/meta"
)

// The DynamoDB operations this package sends; Counters has one field each.
const (
	opGetItem    = "GetItem"
	opUpdateItem = "UpdateItem"
	opPutItem    = "PutItem"
	opQuery      = "Query"
	opDeleteItem = "DeleteItem"
)

// Counters counts requests. One Counters may be shared by several Stores
// (WithCounters). Safe for concurrent use.
type Counters struct {
	getItem, updateItem, putItem, query, deleteItem atomic.Uint64
	condFailed, leaseConflicts, retries, throttled  atomic.Uint64
}

// Stats is a snapshot of Counters.
type Stats struct {
	// Requests by operation: one per HTTP attempt, retries included.
	GetItem, UpdateItem, PutItem, Query, DeleteItem uint64
	// ConditionalCheckFailed counts every refused condition.
	ConditionalCheckFailed uint64
	// LeaseConflicts counts the refused Acquires (ErrLeaseHeld) and
	// Commits (ErrFenced) among them.
	LeaseConflicts uint64
	// Retries counts attempts after the first; Throttled the throttling
	// errors among the failed attempts.
	Retries, Throttled uint64
}

// Writes is the number of write requests in s.
func (s Stats) Writes() uint64 { return s.UpdateItem + s.PutItem + s.DeleteItem }

// Snapshot reads the counters. Each field is read atomically; the set is
// not one atomic cut.
func (c *Counters) Snapshot() Stats {
	return Stats{
		GetItem: c.getItem.Load(), UpdateItem: c.updateItem.Load(), PutItem: c.putItem.Load(),
		Query: c.query.Load(), DeleteItem: c.deleteItem.Load(),
		ConditionalCheckFailed: c.condFailed.Load(), LeaseConflicts: c.leaseConflicts.Load(),
		Retries: c.retries.Load(), Throttled: c.throttled.Load(),
	}
}

func (c *Counters) request(op string) {
	switch op {
	case opGetItem:
		c.getItem.Add(1)
	case opUpdateItem:
		c.updateItem.Add(1)
	case opPutItem:
		c.putItem.Add(1)
	case opQuery:
		c.query.Add(1)
	case opDeleteItem:
		c.deleteItem.Add(1)
	}
}

// errClosed is returned by every method after Close.
var errClosed = errors.New("dynamo: store closed")

// noSDKRetry switches the SDK's own retries off for one call: the loop in
// call owns the policy and sees every attempt.
func noSDKRetry(o *dynamodb.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 0
}

// sdkCall is one attempt of one DynamoDB operation.
type sdkCall func(ctx context.Context, optFns ...func(*dynamodb.Options)) error

// errKind classifies a failed attempt.
type errKind int

const (
	kindFatal     errKind = iota // not retried
	kindNotDone                  // retried; the request was certainly not applied
	kindUnknown                  // retried; the request may have been applied
	kindCondition                // ConditionalCheckFailed: the caller decides
)

// throttleCodes are the error codes that mean "slow down": the request was
// rejected before it was applied.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"ThrottledException":                     true,
	"RequestThrottledException":              true,
	"RequestLimitExceeded":                   true,
	"TooManyRequestsException":               true,
	"SlowDown":                               true,
	// An item locked by a transaction refuses the write; not applied.
	"TransactionConflictException": true,
}

const codeConditionalCheckFailed = "ConditionalCheckFailedException"

func classify(err error) (errKind, bool) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		if code == codeConditionalCheckFailed {
			return kindCondition, false
		}
		if throttleCodes[code] {
			return kindNotDone, true
		}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500 {
		return kindUnknown, false
	}
	if apiErr != nil {
		return kindFatal, false // a 4xx the service answered
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return kindNotDone, false
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) || errors.Is(err, context.DeadlineExceeded) {
		return kindUnknown, false
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return kindUnknown, false
	}
	return kindFatal, false
}

// conditionItem returns the item a ConditionalCheckFailed carried (with
// ReturnValuesOnConditionCheckFailure ALL_OLD), or nil.
func conditionItem(err error) map[string]types.AttributeValue {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item
	}
	return nil
}

func isCondition(err error) bool {
	k, _ := classify(err)
	return err != nil && k == kindCondition
}

// result is what call tells its caller besides the error.
type result struct {
	// ambiguous: an earlier attempt of this write may have been applied.
	ambiguous bool
}

// call runs one DynamoDB operation under the store's retry policy and
// timeouts. It returns nil, a ConditionalCheckFailed error as the SDK gave
// it (the caller maps it to a sentinel, minding res.ambiguous), or an
// *opError: wrapping meta.ErrUnavailable when the outcome is unknown or the
// service could not be reached in time, else a fatal error; both wrap the
// SDK error.
func (s *Store) call(ctx context.Context, op string, write bool, fn sdkCall) (res result, err error) {
	if s.closed.Load() {
		return res, errClosed
	}
	if s.opts.callTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.callTimeout)
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			s.counters.retries.Add(1)
		}
		s.counters.request(op)
		actx, cancel := ctx, context.CancelFunc(func() {})
		if s.opts.attemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, s.opts.attemptTimeout)
		}
		err = fn(actx, noSDKRetry)
		cancel()
		if err == nil {
			return res, nil
		}
		kind, throttled := classify(err)
		if throttled {
			s.counters.throttled.Add(1)
		}
		if kind == kindCondition {
			s.counters.condFailed.Add(1)
			return res, err
		}
		if ctx.Err() != nil {
			// The call's own deadline or the caller's cancellation.
			return res, unavailable(op, fmt.Sprintf("attempt %d", attempt), err)
		}
		if kind == kindUnknown && write {
			res.ambiguous = true
		}
		if kind == kindFatal {
			if res.ambiguous {
				return res, unavailable(op, "after an attempt of unknown outcome", err)
			}
			return res, &opError{op: op, err: err}
		}
		if attempt >= s.opts.maxAttempts {
			return res, unavailable(op, fmt.Sprintf("%d attempts", attempt), err)
		}
		if werr := sleep(ctx, s.backoff(attempt)); werr != nil {
			return res, unavailable(op, fmt.Sprintf("%d attempts, then %v", attempt, werr), errors.Join(err, werr))
		}
	}
}

// backoff is the wait after the attempt-th failure: full jitter over an
// exponential ceiling, base*2^(attempt-1) capped at maxBackoff.
func (s *Store) backoff(attempt int) time.Duration {
	ceil := s.opts.baseBackoff << min(attempt-1, 30)
	if ceil <= 0 || ceil > s.opts.maxBackoff {
		ceil = s.opts.maxBackoff
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil) + 1
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// opError is a failed DynamoDB operation. Its message names the operation
// and what failed (the service's error code and message, an HTTP status, a
// timeout, a transport error) but not the SDK error's own text, which
// carries the service's request id: a client may see the message. The SDK
// error stays in the chain, so errors.As finds the SDK's types (the
// request id is awshttp.ResponseError's RequestID) and errors.Is finds
// context.DeadlineExceeded.
type opError struct {
	op          string
	unavailable bool   // wraps meta.ErrUnavailable
	context     string // what the retry loop adds ("4 attempts")
	err         error
}

func unavailable(op, context string, err error) *opError {
	return &opError{op: op, unavailable: true, context: context, err: err}
}

func (e *opError) Error() string {
	var b strings.Builder
	if e.unavailable {
		b.WriteString(meta.ErrUnavailable.Error())
		b.WriteString(": ")
	}
	b.WriteString("dynamodb ")
	b.WriteString(e.op)
	if e.context != "" {
		b.WriteString(" (")
		b.WriteString(e.context)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(describe(e.err))
	return b.String()
}

func (e *opError) Unwrap() []error {
	if e.unavailable {
		return []error{meta.ErrUnavailable, e.err}
	}
	return []error{e.err}
}

// describe says what err is without the SDK's text, which names the
// request id whenever the service answered.
func describe(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if msg := apiErr.ErrorMessage(); msg != "" {
			return apiErr.ErrorCode() + ": " + msg
		}
		return apiErr.ErrorCode()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() != 0 {
		return fmt.Sprintf("HTTP %d", respErr.HTTPStatusCode())
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr.Error() // "dial tcp 10.0.0.1:443: connect: connection refused"
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return "request send failed"
	}
	// No response, so no request id: the error's own text.
	return err.Error()
}

// atVersion is the condition of a versioned item's write: the stored item
// is at version, or none is stored for version 0.
func atVersion(version uint64) (cond string, names map[string]string, values map[string]types.AttributeValue) {
	if version == 0 {
		return "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil
	}
	return "#ver = :ver", map[string]string{"#ver": attrVersion}, map[string]types.AttributeValue{":ver": num(version)}
}

// putAtVersion puts item if the stored one is at version (atVersion).
func (s *Store) putAtVersion(ctx context.Context, item map[string]types.AttributeValue, version uint64) (result, error) {
	cond, names, values := atVersion(version)
	return s.call(ctx, opPutItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 s.table,
			Item:                      item,
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}, o...)
		return err
	})
}

// deleteAtVersion deletes the item at key if it is at version (atVersion).
func (s *Store) deleteAtVersion(ctx context.Context, key map[string]types.AttributeValue, version uint64) (result, error) {
	cond, names, values := atVersion(version)
	return s.call(ctx, opDeleteItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 s.table,
			Key:                       key,
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}, o...)
		return err
	})
}
