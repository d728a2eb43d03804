package partition

import "fmt"

// DamagedError reports committed records that fail their checks (CRC,
// density, a size that runs past the committed length): offsets [First, Next)
// of the partition cannot be served. Next is the first offset after the
// damage that can be read again, so a consumer may skip to it. It is never
// served as good data and never retried into success: the bytes are damaged
// on disk. errors.Is(err, ErrCorrupt) holds.
type DamagedError struct {
	Topic     string
	Partition int
	First     int64 // first damaged offset
	Next      int64 // first offset past the damage
	Err       error // what the check found (wraps segment.ErrCorrupt or ErrTruncated)
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("partition: records %d to %d of %s/%d are damaged on disk: %v",
		e.First, e.Next-1, e.Topic, e.Partition, e.Err)
}

// Unwrap lets errors.Is match ErrCorrupt and the cause.
func (e *DamagedError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
