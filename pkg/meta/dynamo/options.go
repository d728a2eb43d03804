package dynamo

import "time"

// Option configures a Store.
type Option func(*options)

type options struct {
	callTimeout    time.Duration
	attemptTimeout time.Duration
	maxAttempts    int
	baseBackoff    time.Duration
	maxBackoff     time.Duration
	counters       *Counters
}

// Defaults, applied in one place (applyDefaults).
const (
	DefaultCallTimeout = 5 * time.Second
	DefaultMaxAttempts = 8
	DefaultBaseBackoff = 25 * time.Millisecond
	DefaultMaxBackoff  = time.Second
)

// WithCallTimeout bounds each Store method, retries included, to d (the
// caller's ctx deadline still applies when earlier). 0 leaves only ctx.
// Default DefaultCallTimeout.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithAttemptTimeout bounds each HTTP attempt to d, so a hung connection is
// abandoned and retried within the call's budget. A write whose attempt
// timed out has an unknown outcome (see the package doc). 0, the default,
// leaves attempts bounded by the call only.
func WithAttemptTimeout(d time.Duration) Option {
	return func(o *options) { o.attemptTimeout = d }
}

// WithRetry sets the retry policy: at most maxAttempts attempts per
// operation, waiting a random duration up to base*2^(n-1), capped at max,
// after the n-th failure. maxAttempts 1 disables retries.
func WithRetry(maxAttempts int, base, max time.Duration) Option {
	return func(o *options) { o.maxAttempts, o.baseBackoff, o.maxBackoff = maxAttempts, base, max }
}

// WithCounters makes the Store count into c, which may be shared.
func WithCounters(c *Counters) Option { return func(o *options) { o.counters = c } }

func applyDefaults(opts []Option) options {
	o := options{
		callTimeout: DefaultCallTimeout,
		maxAttempts: DefaultMaxAttempts,
		baseBackoff: DefaultBaseBackoff,
		maxBackoff:  DefaultMaxBackoff,
	}
	for _, fn := range opts {
		fn(&o)
	}
	if o.callTimeout < 0 {
		o.callTimeout = 0
	}
	if o.attemptTimeout < 0 {
		o.attemptTimeout = 0
	}
	if o.maxAttempts < 1 {
		o.maxAttempts = 1
	}
	if o.baseBackoff < 0 {
		o.baseBackoff = 0
	}
	if o.maxBackoff < o.baseBackoff {
		o.maxBackoff = o.baseBackoff
	}
	if o.counters == nil {
		o.counters = new(Counters)
	}
	return o
}
