// Package objstore is the object store port: the cold tier (docs/design.md
// "Cold-tier artifact: `.seg` (`pkg/tier`)", "Tiering" and "Reads"). A
// finalized segment is one immutable object; the compactor writes it with
// PutIfAbsent (idempotent: two compactors racing leave one object), and the
// fetch path reads it with ranged Gets through its footer and sparse index.
//
// Adapters, each in a subpackage, all pass the conformance suite in
// package objtest:
//
//	objstore/mem     in memory; the reference for unit tests
//	objstore/local   files under a root directory (the embedded server)
//	objstore/s3      Amazon S3 and S3-compatible emulators
//
// Two wrappers work over any adapter: Counting (requests and bytes per
// operation, in this package) and objstore/faulty (injected failures for
// crash tests).
//
// # Keys
//
// Every adapter accepts exactly the keys CheckKey accepts: non-empty, at
// most MaxKeyLen bytes of valid UTF-8, '/'-separated segments that are
// neither empty, "." nor "..", no leading or trailing '/', no NUL byte.
// Keys sort as Go strings (byte-wise), which is also S3's listing order.
//
// # Consistency
//
// A Put or PutIfAbsent that returned nil is visible to every later Get,
// Head and List, in any process (S3 has been strongly read-after-write
// consistent since December 2020; the local adapter renames atomically).
// An object is replaced or created whole: no reader ever sees part of a
// Put. A write that returned an error other than ErrExists or ErrInvalidKey
// may or may not have happened (a timeout after the store committed it).
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

var (
	// ErrNotFound means no object has the key.
	ErrNotFound = errors.New("objstore: not found")
	// ErrExists means PutIfAbsent found an object under the key. After a
	// retried request it may be the caller's own earlier attempt: callers
	// that must know compare the object with what they meant to write.
	ErrExists = errors.New("objstore: exists")
	// ErrRange means a Get asked for bytes outside the object.
	ErrRange = errors.New("objstore: range not satisfiable")
	// ErrInvalidKey means a key broke the rules in CheckKey. Nothing was
	// sent to the store.
	ErrInvalidKey = errors.New("objstore: invalid key")
)

// MaxKeyLen is the longest key in bytes (S3's limit, with the adapter's
// prefix counted against it by the S3 adapter).
const MaxKeyLen = 1024

// Info describes one stored object.
type Info struct {
	Key  string
	Size int64
}

// Store is the object store port. Implementations are safe for concurrent
// use by many goroutines, and (local, S3) by many processes.
//
// Every method honours ctx: a cancelled or expired context ends the call
// with an error wrapping ctx.Err() (a write cut short this way may still
// have happened, see the package doc).
type Store interface {
	// Put stores size bytes read from body under key, replacing any object
	// there. body must yield at least size bytes (fewer is an error and
	// nothing is stored); bytes past size are not read.
	Put(ctx context.Context, key string, body io.Reader, size int64) error
	// PutIfAbsent stores it only if no object has the key, else an error
	// wrapping ErrExists and the existing object is untouched. Of many
	// concurrent callers for one key exactly one succeeds.
	PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error
	// Get reads n bytes from off, or with n < 0 from off to the end. It
	// returns exactly n bytes, or an error: ErrNotFound if the object is
	// missing, ErrRange if off < 0, off > size, or off+n > size. Get(key,
	// 0, -1) reads a whole object, even an empty one; off == size gives an
	// empty slice. The returned slice belongs to the caller.
	Get(ctx context.Context, key string, off, n int64) ([]byte, error)
	// Head returns the object's key and size, or ErrNotFound.
	Head(ctx context.Context, key string) (Info, error)
	// List returns every object whose key starts with prefix (a plain
	// string prefix, "" for all), sorted by key. It pages internally. A
	// listing concurrent with writes may or may not include them.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// Files is implemented by a Store whose objects are files on this
// machine (objstore/local): a reader of many ranges of an object opens it
// once and reads each range into memory of its own, as a segment file is
// read, where Get would make a slice per range. Counting keeps it.
type Files interface {
	Store
	// OpenObject opens the object under key for reads, or returns an
	// error wrapping ErrNotFound if there is none. The caller closes it.
	// An object is never changed in place (a Put replaces it whole), so
	// an open object reads as it was when opened.
	OpenObject(ctx context.Context, key string) (Object, error)
}

// Object is an object opened for reads (Files.OpenObject). ReadAt is
// io.ReaderAt's: a read past the end is short, with io.EOF.
type Object interface {
	io.ReaderAt
	io.Closer
}

// CheckKey returns an error wrapping ErrInvalidKey if key is not a valid
// object key (see the package doc), else nil. Adapters call it before any
// I/O, so every adapter accepts the same keys, and the local adapter can
// map keys to paths without escaping its root.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidKey, key)
	}
	if strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w: %q has a NUL byte", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty segment", ErrInvalidKey, key)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// PrefixCanMatch reports whether any valid key can start with prefix: it
// is false when the part of prefix before its last '/' is not itself a
// valid key (for example "a//" or "../x"). Adapters return an empty
// listing for such a prefix without asking the store.
func PrefixCanMatch(prefix string) bool {
	if strings.IndexByte(prefix, 0) >= 0 {
		return false
	}
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return true
	}
	return CheckKey(prefix[:i]) == nil
}
