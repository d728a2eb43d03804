package client

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// retryAfterBackOff is exponential backoff with jitter that never waits
// less than the server asked for. The operation records the Retry-After
// of its last error in hint before failing; NextBackOff takes the larger
// of the two, adding up to 20% jitter to a hint so that clients told the
// same Retry-After do not come back in one herd.
type retryAfterBackOff struct {
	exp  *backoff.ExponentialBackOff
	hint time.Duration
}

var _ backoff.BackOff = (*retryAfterBackOff)(nil)

func newBackOff(b Backoff) *retryAfterBackOff {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval = b.Initial
	exp.MaxInterval = b.Max
	exp.Multiplier = 2
	exp.RandomizationFactor = 0.5
	return &retryAfterBackOff{exp: exp}
}

func (b *retryAfterBackOff) NextBackOff() time.Duration {
	d := b.exp.NextBackOff()
	if h := b.hint; h > 0 {
		h += time.Duration(rand.Int64N(int64(h)/5 + 1))
		d = max(d, h)
	}
	b.hint = 0
	return d
}

func (b *retryAfterBackOff) Reset() {
	b.exp.Reset()
	b.hint = 0
}

// retry runs op until it succeeds, fails with an error that is not
// retriable (or that giveUp, if not nil, says to stop at), maxElapsed
// passes, or ctx ends. It returns op's last error.
func retry[T any](ctx context.Context, sched Backoff, maxElapsed time.Duration, log *slog.Logger, giveUp func(error) bool, op func() (T, error)) (T, error) {
	return retryIf(ctx, sched, maxElapsed, log, IsRetriable, giveUp, op)
}

// retryIf is retry with the predicate of what is retriable.
func retryIf[T any](ctx context.Context, sched Backoff, maxElapsed time.Duration, log *slog.Logger, retriable, giveUp func(error) bool, op func() (T, error)) (T, error) {
	bo := newBackOff(sched)
	attempt := 0
	return backoff.Retry(ctx, func() (T, error) {
		attempt++
		v, err := op()
		if err == nil {
			return v, nil
		}
		if !retriable(err) || (giveUp != nil && giveUp(err)) {
			return v, backoff.Permanent(err)
		}
		var e *Error
		if errors.As(err, &e) {
			bo.hint = e.RetryAfter
		}
		return v, err
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(maxElapsed),
		backoff.WithNotify(func(err error, wait time.Duration) {
			log.LogAttrs(ctx, slog.LevelWarn, "retrying", slog.Int("attempt", attempt),
				slog.Duration("wait", wait), slog.String("err", err.Error()))
		}))
}
