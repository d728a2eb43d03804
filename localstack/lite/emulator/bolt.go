package emulator

import (
	"bytes"
	"io"
	"sync"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
)

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
}

var _ gofakes3.Backend = (*boltBackend)(nil)

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
