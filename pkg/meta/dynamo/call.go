package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
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
// error already translated: wrapping meta.ErrUnavailable when the outcome
// is unknown or the service could not be reached in time, else wrapping
// the SDK error with the operation's name.
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
			return res, fmt.Errorf("%w: dynamodb %s: %w", meta.ErrUnavailable, op, err)
		}
		if kind == kindUnknown && write {
			res.ambiguous = true
		}
		if kind == kindFatal {
			if res.ambiguous {
				return res, fmt.Errorf("%w: dynamodb %s, after an attempt of unknown outcome: %w", meta.ErrUnavailable, op, err)
			}
			return res, fmt.Errorf("dynamo: %s: %w", op, err)
		}
		if attempt >= s.opts.maxAttempts {
			return res, fmt.Errorf("%w: dynamodb %s: %d attempts: %w", meta.ErrUnavailable, op, attempt, err)
		}
		if werr := sleep(ctx, s.backoff(attempt)); werr != nil {
			return res, fmt.Errorf("%w: dynamodb %s: %w (last error: %w)", meta.ErrUnavailable, op, werr, err)
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
