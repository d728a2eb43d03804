// Package subscribe is push delivery: a subscription attaches a target (an
// HTTP webhook or a Lambda function) to a topic and delivers its records at
// least once, in order per partition, in batches shaped like Lambda's
// Kafka events (event.go). Its progress is the consumer group named after
// it. One deliverer per partition (deliver.go) holds a lease on the
// partition's delivery item in the metadata store and commits the group
// offset only after the target took a batch or the records were handed to
// the on_failure topic. docs/internals.md "Push delivery" has the protocol.
//
// Files: spec.go (the definition, its defaults and validation), event.go
// (the event and the answer), target.go (targets), deliver.go (one
// partition's deliverer), service.go (create, list, describe, patch,
// delete), runner.go (running deliverers in a process), stats.go (counters).
package subscribe

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Errors. The API maps each to one status code.
var (
	// ErrInvalid means a definition or patch is out of range.
	ErrInvalid = errors.New("subscribe: invalid")
	// ErrNotFound means no subscription has the name.
	ErrNotFound = errors.New("subscribe: subscription not found")
	// ErrExists means the name is taken.
	ErrExists = errors.New("subscribe: subscription exists")
)

// Defaults and bounds of a definition (docs/subscriptions.md). Each is
// defined here only.
const (
	DefaultBatchSize      = 100
	MaxBatchSize          = 10000
	MaxBatchWindowMs      = 300000
	DefaultMaxBatchBytes  = 5242880
	MaxMaxBatchBytes      = 6000000
	MaxParallelization    = 10
	MaxRetryAttemptsLimit = 10000
	MinRecordAgeMs        = 60000
	MaxRecordAgeMs        = 604800000

	StartLatest   = "latest"
	StartEarliest = "earliest"

	TargetHTTP   = "http"
	TargetLambda = "lambda"
)

// Subscription is a subscription as stored and answered: every field with
// its default filled in.
type Subscription struct {
	Name                  string     `json:"name"`
	Topic                 string     `json:"topic"`
	Target                Target     `json:"target"`
	Start                 Start      `json:"start"`
	BatchSize             int        `json:"batch_size"`
	BatchWindowMs         int64      `json:"batch_window_ms"`
	MaxBatchBytes         int        `json:"max_batch_bytes"`
	ParallelizationFactor int        `json:"parallelization_factor"`
	MaxRetryAttempts      int        `json:"max_retry_attempts"`
	MaxRecordAgeMs        int64      `json:"max_record_age_ms"`
	BisectBatchOnError    bool       `json:"bisect_batch_on_error"`
	OnFailure             *OnFailure `json:"on_failure"`
	Enabled               bool       `json:"enabled"`
	// ID tells incarnations of one name apart: a deliverer of a deleted
	// subscription never acts for a new one of the same name.
	ID        string `json:"id"`
	CreatedMs int64  `json:"created_ms"`
}

// Target is where batches go: {"type":"lambda","function":NAME_OR_ARN} or
// {"type":"http","url":"http(s)://..."}.
type Target struct {
	Type     string `json:"type"`
	Function string `json:"function,omitempty"`
	URL      string `json:"url,omitempty"`
}

// OnFailure is the destination of given-up records.
type OnFailure struct {
	Topic string `json:"topic"`
}

// Start is where a new subscription begins on every partition:
// "latest", "earliest", {"timestamp":ms} or {"offset":N}.
type Start struct {
	Position  string `json:"-"` // StartLatest, StartEarliest or "" with one of the below
	Timestamp *int64 `json:"-"`
	Offset    *int64 `json:"-"`
}

// MarshalJSON writes the form the API accepts.
func (s Start) MarshalJSON() ([]byte, error) {
	switch {
	case s.Timestamp != nil:
		return json.Marshal(map[string]int64{"timestamp": *s.Timestamp})
	case s.Offset != nil:
		return json.Marshal(map[string]int64{"offset": *s.Offset})
	case s.Position == "":
		return json.Marshal(StartLatest)
	}
	return json.Marshal(s.Position)
}

// UnmarshalJSON reads "latest", "earliest", {"timestamp":ms} or {"offset":N}.
func (s *Start) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		if str != StartLatest && str != StartEarliest {
			return fmt.Errorf("%w: start %q: want \"latest\", \"earliest\", {\"timestamp\":ms} or {\"offset\":n}", ErrInvalid, str)
		}
		*s = Start{Position: str}
		return nil
	}
	var obj struct {
		Timestamp *int64 `json:"timestamp"`
		Offset    *int64 `json:"offset"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || (obj.Timestamp == nil) == (obj.Offset == nil) {
		return fmt.Errorf("%w: start: want \"latest\", \"earliest\", {\"timestamp\":ms} or {\"offset\":n}", ErrInvalid)
	}
	if (obj.Timestamp != nil && *obj.Timestamp < 0) || (obj.Offset != nil && *obj.Offset < 0) {
		return fmt.Errorf("%w: start: timestamp and offset must be >= 0", ErrInvalid)
	}
	*s = Start{Timestamp: obj.Timestamp, Offset: obj.Offset}
	return nil
}

// Spec is a create request: nil fields take their defaults.
type Spec struct {
	Name                  string     `json:"name"`
	Topic                 string     `json:"topic"`
	Target                *Target    `json:"target"`
	Start                 *Start     `json:"start"`
	BatchSize             *int       `json:"batch_size"`
	BatchWindowMs         *int64     `json:"batch_window_ms"`
	MaxBatchBytes         *int       `json:"max_batch_bytes"`
	ParallelizationFactor *int       `json:"parallelization_factor"`
	MaxRetryAttempts      *int       `json:"max_retry_attempts"`
	MaxRecordAgeMs        *int64     `json:"max_record_age_ms"`
	BisectBatchOnError    *bool      `json:"bisect_batch_on_error"`
	OnFailure             *OnFailure `json:"on_failure"`
	Enabled               *bool      `json:"enabled"`
}

// Patch is an update: the fields PATCH may change, nil for unchanged.
// OnFailure set with an empty topic removes the destination.
type Patch struct {
	Enabled            *bool      `json:"enabled"`
	BatchSize          *int       `json:"batch_size"`
	BatchWindowMs      *int64     `json:"batch_window_ms"`
	MaxBatchBytes      *int       `json:"max_batch_bytes"`
	MaxRetryAttempts   *int       `json:"max_retry_attempts"`
	MaxRecordAgeMs     *int64     `json:"max_record_age_ms"`
	BisectBatchOnError *bool      `json:"bisect_batch_on_error"`
	OnFailure          *OnFailure `json:"on_failure"`
}

var nameRule = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// checkName applies the topic-name rule to a subscription name.
func checkName(name string) error {
	if !nameRule.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("%w: subscription name %q must match ^[A-Za-z0-9._-]{1,249}$ and be neither %q nor %q", ErrInvalid, name, ".", "..")
	}
	return nil
}

func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// fromSpec applies the defaults and validates: the one place both happen.
func fromSpec(sp Spec) (Subscription, error) {
	s := Subscription{
		Name:                  sp.Name,
		Topic:                 sp.Topic,
		Start:                 or(sp.Start, Start{Position: StartLatest}),
		BatchSize:             or(sp.BatchSize, DefaultBatchSize),
		BatchWindowMs:         or(sp.BatchWindowMs, 0),
		MaxBatchBytes:         or(sp.MaxBatchBytes, DefaultMaxBatchBytes),
		ParallelizationFactor: or(sp.ParallelizationFactor, 1),
		MaxRetryAttempts:      or(sp.MaxRetryAttempts, -1),
		MaxRecordAgeMs:        or(sp.MaxRecordAgeMs, -1),
		BisectBatchOnError:    or(sp.BisectBatchOnError, false),
		OnFailure:             sp.OnFailure,
		Enabled:               or(sp.Enabled, true),
	}
	if err := checkName(s.Name); err != nil {
		return s, err
	}
	if s.Topic == "" {
		return s, fmt.Errorf("%w: topic is required", ErrInvalid)
	}
	if sp.Target == nil {
		return s, fmt.Errorf("%w: target is required", ErrInvalid)
	}
	s.Target = *sp.Target
	if err := s.Target.check(); err != nil {
		return s, err
	}
	if s.Start.Position == "" && s.Start.Timestamp == nil && s.Start.Offset == nil {
		s.Start.Position = StartLatest
	}
	if s.ParallelizationFactor < 1 || s.ParallelizationFactor > MaxParallelization {
		return s, fmt.Errorf("%w: parallelization_factor %d: want 1 to %d", ErrInvalid, s.ParallelizationFactor, MaxParallelization)
	}
	return s, s.checkTunables()
}

// checkTunables validates the fields PATCH may change.
func (s *Subscription) checkTunables() error {
	switch {
	case s.BatchSize < 1 || s.BatchSize > MaxBatchSize:
		return fmt.Errorf("%w: batch_size %d: want 1 to %d", ErrInvalid, s.BatchSize, MaxBatchSize)
	case s.BatchWindowMs < 0 || s.BatchWindowMs > MaxBatchWindowMs:
		return fmt.Errorf("%w: batch_window_ms %d: want 0 to %d", ErrInvalid, s.BatchWindowMs, MaxBatchWindowMs)
	case s.MaxBatchBytes < minBatchBytes || s.MaxBatchBytes > MaxMaxBatchBytes:
		return fmt.Errorf("%w: max_batch_bytes %d: want %d to %d", ErrInvalid, s.MaxBatchBytes, minBatchBytes, MaxMaxBatchBytes)
	case s.MaxRetryAttempts < -1 || s.MaxRetryAttempts > MaxRetryAttemptsLimit:
		return fmt.Errorf("%w: max_retry_attempts %d: want -1 or 0 to %d", ErrInvalid, s.MaxRetryAttempts, MaxRetryAttemptsLimit)
	case s.MaxRecordAgeMs != -1 && (s.MaxRecordAgeMs < MinRecordAgeMs || s.MaxRecordAgeMs > MaxRecordAgeMs):
		return fmt.Errorf("%w: max_record_age_ms %d: want -1 or %d to %d", ErrInvalid, s.MaxRecordAgeMs, MinRecordAgeMs, MaxRecordAgeMs)
	case s.OnFailure != nil && s.OnFailure.Topic == "":
		return fmt.Errorf("%w: on_failure.topic is required", ErrInvalid)
	case s.OnFailure != nil && s.OnFailure.Topic == s.Topic:
		return fmt.Errorf("%w: on_failure.topic %q is the subscription's own topic", ErrInvalid, s.Topic)
	}
	return nil
}

func (t Target) check() error {
	switch t.Type {
	case TargetHTTP:
		if t.Function != "" {
			return fmt.Errorf("%w: target.function is for type lambda", ErrInvalid)
		}
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: target.url %q: want an http:// or https:// URL", ErrInvalid, t.URL)
		}
	case TargetLambda:
		if t.URL != "" {
			return fmt.Errorf("%w: target.url is for type http", ErrInvalid)
		}
		if t.Function == "" || len(t.Function) > 170 || strings.ContainsAny(t.Function, " /\t\n") {
			return fmt.Errorf("%w: target.function %q: want a function name or ARN", ErrInvalid, t.Function)
		}
	default:
		return fmt.Errorf("%w: target.type %q: want \"lambda\" or \"http\"", ErrInvalid, t.Type)
	}
	return nil
}

// apply returns s with p applied, validated.
func (s Subscription) apply(p Patch) (Subscription, error) {
	s.Enabled = or(p.Enabled, s.Enabled)
	s.BatchSize = or(p.BatchSize, s.BatchSize)
	s.BatchWindowMs = or(p.BatchWindowMs, s.BatchWindowMs)
	s.MaxBatchBytes = or(p.MaxBatchBytes, s.MaxBatchBytes)
	s.MaxRetryAttempts = or(p.MaxRetryAttempts, s.MaxRetryAttempts)
	s.MaxRecordAgeMs = or(p.MaxRecordAgeMs, s.MaxRecordAgeMs)
	s.BisectBatchOnError = or(p.BisectBatchOnError, s.BisectBatchOnError)
	if p.OnFailure != nil {
		s.OnFailure = p.OnFailure
		if p.OnFailure.Topic == "" {
			s.OnFailure = nil
		}
	}
	return s, s.checkTunables()
}
