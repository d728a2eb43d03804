package objstore

import (
	"errors"
	"fmt"
	"io"
)

// ReadBody reads exactly size bytes from body, for adapters. A body that
// ends early gives an error wrapping io.ErrUnexpectedEOF; a negative size
// is an error. Bytes past size are left unread.
func ReadBody(body io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("objstore: negative size %d", size)
	}
	if body == nil {
		if size == 0 {
			return []byte{}, nil
		}
		return nil, fmt.Errorf("objstore: nil body for %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(body, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("objstore: reading body of %d bytes: %w", size, err)
	}
	return b, nil
}

// Span resolves a Get's off and n against an object of size bytes, for
// adapters: it returns the byte range [start, end) to read, or an error
// wrapping ErrRange as Store.Get documents.
func Span(key string, off, n, size int64) (start, end int64, err error) {
	if off < 0 || off > size {
		return 0, 0, fmt.Errorf("%w: key %q off %d size %d", ErrRange, key, off, size)
	}
	if n < 0 {
		return off, size, nil
	}
	if n > size-off {
		return 0, 0, fmt.Errorf("%w: key %q off %d n %d size %d", ErrRange, key, off, n, size)
	}
	return off, off + n, nil
}
