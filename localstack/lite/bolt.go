package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"
)

// boltFile is the name of the S3 object file under --data-dir.
const boltFile = "s3.bolt"

// openBolt opens (creating them if need be) dir and the S3 object file
// dir/s3.bolt in it, waiting at most lockTimeout for the file lock: only
// one process may use a data dir at a time. Close the backend to release
// it.
func openBolt(dir string, lockTimeout time.Duration) (*boltBackend, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(dir, boltFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%s is in use by another process (waited %v)", path, lockTimeout)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &boltBackend{inner: s3bolt.New(db), close: sync.OnceValue(db.Close)}, nil
}

// boltBackend makes gofakes3's s3bolt backend safe under concurrent
// requests.
//
// s3bolt decodes stored objects with gopkg.in/mgo.v2/bson, which returns
// []byte fields as slices of its input: the Contents and Hash that
// GetObject and HeadObject return point into bbolt's memory map after the
// read transaction has ended. A later write transaction may reuse those
// pages, and a concurrent reader then streams a torn object (objtest's
// Concurrent/WholeObjects case caught it), or grow and remap the file, and
// the process dies with "unexpected fault address"
// (TestDataDirConcurrentOverwrite shows both within a few runs without
// this wrapper).
//
// The fix: every write runs under mu's write lock, and GetObject and
// HeadObject copy what they return before releasing mu's read lock, so no
// write transaction runs while aliased bytes are live. PutObject reads the
// request body before taking the lock, so a slow upload does not stall
// other requests.
//
// boltBackend is safe for concurrent use.
type boltBackend struct {
	inner *s3bolt.Backend
	mu    sync.RWMutex
	close func() error // closes the bbolt file once
}

var _ gofakes3.Backend = (*boltBackend)(nil)
var _ io.Closer = (*boltBackend)(nil)

// Close releases the bbolt file and its lock; later calls return the
// first one's error.
func (b *boltBackend) Close() error {
	if err := b.close(); err != nil {
		return fmt.Errorf("close %s: %w", boltFile, err)
	}
	return nil
}

// detach returns obj with its contents and hash copied out of bbolt's
// memory. It consumes and closes obj.Contents.
func detach(obj *gofakes3.Object) (*gofakes3.Object, error) {
	obj.Hash = bytes.Clone(obj.Hash)
	if obj.Contents == nil {
		return obj, nil
	}
	b, err := io.ReadAll(obj.Contents)
	cerr := obj.Contents.Close()
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	obj.Contents = io.NopCloser(bytes.NewReader(b))
	return obj, nil
}

func (b *boltBackend) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	obj, err := b.inner.GetObject(bucket, key, rng)
	if err != nil {
		return nil, err
	}
	return detach(obj)
}

func (b *boltBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	obj, err := b.inner.HeadObject(bucket, key)
	if err != nil {
		return nil, err
	}
	return detach(obj)
}

func (b *boltBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.inner.ListBuckets()
}

func (b *boltBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.inner.ListBucket(name, prefix, page)
}

func (b *boltBackend) BucketExists(name string) (bool, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.inner.BucketExists(name)
}

func (b *boltBackend) CreateBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.CreateBucket(name)
}

func (b *boltBackend) DeleteBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.DeleteBucket(name)
}

func (b *boltBackend) ForceDeleteBucket(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.ForceDeleteBucket(name)
}

func (b *boltBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	body, err := gofakes3.ReadAll(input, size)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.PutObject(bucket, key, meta, bytes.NewReader(body), int64(len(body)), cond)
}

func (b *boltBackend) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.DeleteObject(bucket, key)
}

func (b *boltBackend) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.DeleteMulti(bucket, keys...)
}

// CopyObject runs wholly under the write lock: s3bolt reads the source
// (aliased bytes) and then writes the copy.
func (b *boltBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inner.CopyObject(srcBucket, srcKey, dstBucket, dstKey, meta)
}
