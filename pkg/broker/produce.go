package broker

import (
	"context"
	"errors"
	"fmt"
)

// Errors of idempotent and conditional produce (API.md additions).
var (
	// ErrIdempotencyKeyInUse means another request with the same
	// Idempotency-Key is still being appended by this process.
	ErrIdempotencyKeyInUse = errors.New("broker: idempotency key in use")
	// ErrIdempotencyKeyReused means the key was used before for a request
	// with other contents: nothing was appended.
	ErrIdempotencyKeyReused = errors.New("broker: idempotency key reused with another request")
	// ErrOffsetMismatch means a conditional append found the high
	// watermark elsewhere than expected: nothing was appended. The error is
	// an *OffsetMismatchError.
	ErrOffsetMismatch = errors.New("broker: offset mismatch")
)

// OffsetMismatchError is a conditional append refused: the partition's
// high watermark was not Expected.
type OffsetMismatchError struct {
	Expected      int64
	HighWatermark int64
}

func (e *OffsetMismatchError) Error() string {
	return fmt.Sprintf("broker: expected_offset %d, but the high watermark is %d", e.Expected, e.HighWatermark)
}

// Is makes errors.Is(err, ErrOffsetMismatch) hold.
func (e *OffsetMismatchError) Is(target error) bool { return target == ErrOffsetMismatch }

// MaxIdempotencyKey is the longest Idempotency-Key (API.md).
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether k is a legal Idempotency-Key: 1 to
// 255 printable ASCII characters (0x20 to 0x7e).
func ValidIdempotencyKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: Idempotency-Key is empty", ErrInvalid)
	}
	if len(k) > MaxIdempotencyKey {
		return fmt.Errorf("%w: Idempotency-Key has %d characters, at most %d", ErrInvalid, len(k), MaxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: Idempotency-Key has a non-printable character at position %d (byte 0x%02x)", ErrInvalid, i, c)
		}
	}
	return nil
}

// ProduceOptions are the conditions of one produce request.
type ProduceOptions struct {
	// IdempotencyKey ("" for none) makes the request idempotent: a request
	// repeated with the same key and the same records within the
	// idempotency window is answered with the first attempt's offsets and
	// appends nothing; with other records it is ErrIdempotencyKeyReused.
	// On the multi-partition route the key covers the whole request, and
	// records without a partition or key are routed by the key, so a
	// retry routes them as the first attempt did.
	IdempotencyKey string
	// ExpectedOffset, if not nil, makes a single-partition append
	// conditional: it happens only if the high watermark is exactly
	// *ExpectedOffset, else *OffsetMismatchError.
	ExpectedOffset *int64
}

// ProduceReply is a produce request's outcome.
type ProduceReply struct {
	// Results, one per record in request order.
	Results []ProduceResult
	// Replayed is true when the request was answered from an earlier
	// attempt with the same Idempotency-Key and appended nothing.
	Replayed bool
}

// ProduceWith is Produce with options.
func (b *Broker) ProduceWith(ctx context.Context, topicName string, recs []ProduceRecord, o ProduceOptions) (ProduceReply, error) {
	res, err := b.Produce(ctx, topicName, recs)
	return ProduceReply{Results: res}, err
}

// ProducePartitionWith is ProducePartition with options.
func (b *Broker) ProducePartitionWith(ctx context.Context, topicName string, p int, recs []ProduceRecord, o ProduceOptions) (ProduceReply, error) {
	res, err := b.ProducePartition(ctx, topicName, p, recs)
	return ProduceReply{Results: res}, err
}
