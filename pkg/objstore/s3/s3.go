// Package s3 is the objstore.Store adapter for Amazon S3 and S3-compatible
// emulators (gofakes3, LocalStack), over aws-sdk-go-v2.
//
// Object keys are "<prefix>/<key>" in one bucket. Requests per call:
//
//	Put, PutIfAbsent   1 PutObject up to the multipart threshold (default
//	                   16 MiB); above it CreateMultipartUpload, one
//	                   UploadPart per part (default 8 MiB, up to 4 at once),
//	                   CompleteMultipartUpload; AbortMultipartUpload on any
//	                   failure. A large PutIfAbsent first sends a HEAD, so a
//	                   re-run does not upload what is already there.
//	Get                1 GetObject with "Range: bytes=off-end" (none for the
//	                   whole object); plus a HEAD when n == 0, or when n < 0
//	                   and off is at or past the end
//	Head, Delete       1 request
//	List               1 ListObjectsV2 per 1,000 keys
//
// PutIfAbsent sends "If-None-Match: *" on PutObject or on
// CompleteMultipartUpload (S3 conditional writes). 412 PreconditionFailed
// and 409 ConditionalRequestConflict become objstore.ErrExists. Clients
// from NewClient retry a 409 first, as S3 asks.
//
// Errors are translated here and nowhere else: NoSuchKey or a bare 404
// becomes objstore.ErrNotFound (NoSuchBucket does not: that is a setup
// error), InvalidRange or 416 becomes objstore.ErrRange. The SDK's error
// stays in the chain for errors.As.
//
// Retries and timeouts belong to the client: NewClient and
// NewClientFromEnv configure the SDK's standard retryer; each call's
// deadline comes from its ctx.
//
// Emulator gap (gofakes3 v1.2.0): it honours If-None-Match on PutObject
// but ignores it on CompleteMultipartUpload, so two racing PutIfAbsent
// calls of one large object can both succeed there. Real S3 honours both.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// S3's limits.
const (
	MinPartSize  = 5 << 20 // every part but the last
	MaxPartCount = 10_000
	MaxPutSize   = 5 << 30 // one PutObject
)

// Defaults.
const (
	DefaultMultipartThreshold = 16 << 20
	DefaultPartSize           = 8 << 20
	DefaultConcurrency        = 4
)

// abortTimeout bounds AbortMultipartUpload after a failure, which runs
// even when the caller's ctx has ended.
const abortTimeout = 30 * time.Second

// api is the part of *s3.Client the Store uses.
type api interface {
	s3.ListObjectsV2APIClient
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

var _ api = (*s3.Client)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	threshold   int64
	partSize    int64
	concurrency int
}

// WithMultipartThreshold sets the size above which Put uses a multipart
// upload (default 16 MiB, at most 5 GiB). A single-part body is held in
// memory while it is sent, so the threshold bounds that memory.
func WithMultipartThreshold(n int64) Option { return func(o *options) { o.threshold = n } }

// WithPartSize sets the multipart part size (default 8 MiB, at least
// 5 MiB). It grows by itself when an object would need more than 10,000
// parts.
func WithPartSize(n int64) Option { return func(o *options) { o.partSize = n } }

// WithConcurrency sets how many parts upload at once (default 4). Memory
// for a multipart upload is about concurrency × part size.
func WithConcurrency(n int) Option { return func(o *options) { o.concurrency = n } }

// applyDefaults is the one place defaults are set and options checked.
func applyDefaults(opts []Option) (options, error) {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	if o.threshold == 0 {
		o.threshold = DefaultMultipartThreshold
	}
	if o.partSize == 0 {
		o.partSize = DefaultPartSize
	}
	if o.concurrency == 0 {
		o.concurrency = DefaultConcurrency
	}
	switch {
	case o.threshold < 0 || o.threshold > MaxPutSize:
		return o, fmt.Errorf("objstore/s3: multipart threshold %d outside [0, %d]", o.threshold, int64(MaxPutSize))
	case o.partSize < MinPartSize || o.partSize > MaxPutSize:
		return o, fmt.Errorf("objstore/s3: part size %d outside [%d, %d]", o.partSize, MinPartSize, int64(MaxPutSize))
	case o.concurrency < 1:
		return o, fmt.Errorf("objstore/s3: concurrency %d < 1", o.concurrency)
	}
	return o, nil
}

// Store is the S3 adapter. Safe for concurrent use.
type Store struct {
	api       api
	bucket    string
	prefix    string // "" or ending in "/"
	checksums bool   // the client adds request checksums (WhenSupported)
	o         options
}

var _ objstore.Store = (*Store)(nil)

// New returns a Store keeping objects in bucket under prefix ("" for the
// bucket's root; a trailing '/' is optional). prefix must itself be a
// valid key (objstore.CheckKey). The client should come from NewClient or
// NewClientFromEnv, or be configured the same way.
func New(client *s3.Client, bucket, prefix string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("objstore/s3: nil client")
	}
	checksums := client.Options().RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired
	return newStore(client, checksums, bucket, prefix, opts...)
}

func newStore(c api, checksums bool, bucket, prefix string, opts ...Option) (*Store, error) {
	if bucket == "" {
		return nil, errors.New("objstore/s3: empty bucket name")
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		if err := objstore.CheckKey(prefix); err != nil {
			return nil, fmt.Errorf("objstore/s3: prefix: %w", err)
		}
		prefix += "/"
	}
	o, err := applyDefaults(opts)
	if err != nil {
		return nil, err
	}
	return &Store{api: c, bucket: bucket, prefix: prefix, checksums: checksums, o: o}, nil
}

// objectKey checks key and returns its S3 key.
func (s *Store) objectKey(key string) (string, error) {
	if err := objstore.CheckKey(key); err != nil {
		return "", err
	}
	k := s.prefix + key
	if len(k) > objstore.MaxKeyLen {
		return "", fmt.Errorf("%w: %d bytes with the store prefix, longer than %d",
			objstore.ErrInvalidKey, len(k), objstore.MaxKeyLen)
	}
	return k, nil
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	return s.put(ctx, key, body, size, false)
}

// PutIfAbsent implements objstore.Store.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	return s.put(ctx, key, body, size, true)
}

func (s *Store) put(ctx context.Context, key string, body io.Reader, size int64, ifAbsent bool) error {
	op := objstore.OpPut
	if ifAbsent {
		op = objstore.OpPutIfAbsent
	}
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("objstore/s3: %s %q: negative size %d", op, key, size)
	}
	if size > s.o.threshold {
		if ifAbsent {
			// Cheap early answer for a re-run; the conditional complete
			// is what decides a race.
			_, err := s.head(ctx, k)
			if err == nil {
				return fmt.Errorf("%w: key %q", objstore.ErrExists, key)
			}
			if err := translate(op, key, err); !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
		}
		return s.putMultipart(ctx, op, key, k, body, size, ifAbsent)
	}
	b, err := objstore.ReadBody(body, size)
	if err != nil {
		return fmt.Errorf("objstore/s3: %s %q: %w", op, key, err)
	}
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &k,
		Body:          bytes.NewReader(b),
		ContentLength: aws.Int64(size),
	}
	if ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := s.api.PutObject(ctx, in); err != nil {
		return translate(op, key, err)
	}
	return nil
}

// putMultipart uploads body in parts, up to s.o.concurrency at once, and
// aborts the upload if anything fails.
func (s *Store) putMultipart(ctx context.Context, op objstore.Op, key, k string, body io.Reader, size int64, ifAbsent bool) (err error) {
	if body == nil {
		return fmt.Errorf("objstore/s3: %s %q: nil body for %d bytes", op, key, size)
	}
	partSize := max(s.o.partSize, (size+MaxPartCount-1)/MaxPartCount)
	nparts := int((size + partSize - 1) / partSize)

	create := &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &k}
	var algo types.ChecksumAlgorithm
	if s.checksums {
		algo = types.ChecksumAlgorithmCrc32
		create.ChecksumAlgorithm = algo
	}
	out, err := s.api.CreateMultipartUpload(ctx, create)
	if err != nil {
		return translate(op, key, err)
	}
	id := out.UploadId
	defer func() {
		if err == nil {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		_, aerr := s.api.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &k, UploadId: id})
		var nsu *types.NoSuchUpload
		if aerr != nil && !errors.As(aerr, &nsu) {
			err = errors.Join(err, fmt.Errorf("objstore/s3: aborting upload of %q: %w", key, aerr))
		}
	}()

	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	parts := make([]types.CompletedPart, nparts)
	pool := make(chan []byte, s.o.concurrency)
	for range s.o.concurrency {
		pool <- nil // buffers are made on first use
	}
	var wg sync.WaitGroup
	for i := range nparts {
		var buf []byte
		select {
		case buf = <-pool:
		case <-pctx.Done():
		}
		if pctx.Err() != nil {
			break
		}
		n := min(partSize, size-int64(i)*partSize)
		if int64(cap(buf)) < n {
			buf = make([]byte, partSize)
		}
		buf = buf[:n]
		if _, rerr := io.ReadFull(body, buf); rerr != nil {
			if errors.Is(rerr, io.EOF) {
				rerr = io.ErrUnexpectedEOF
			}
			cancel(fmt.Errorf("objstore/s3: %s %q: reading part %d of body of %d bytes: %w", op, key, i+1, size, rerr))
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { pool <- buf }()
			in := &s3.UploadPartInput{
				Bucket:            &s.bucket,
				Key:               &k,
				UploadId:          id,
				PartNumber:        aws.Int32(int32(i + 1)),
				Body:              bytes.NewReader(buf),
				ContentLength:     aws.Int64(n),
				ChecksumAlgorithm: algo,
			}
			up, uerr := s.api.UploadPart(pctx, in)
			if uerr != nil {
				cancel(translate(op, key, uerr))
				return
			}
			parts[i] = types.CompletedPart{
				PartNumber:        in.PartNumber,
				ETag:              up.ETag,
				ChecksumCRC32:     up.ChecksumCRC32,
				ChecksumCRC32C:    up.ChecksumCRC32C,
				ChecksumCRC64NVME: up.ChecksumCRC64NVME,
				ChecksumMD5:       up.ChecksumMD5,
				ChecksumSHA1:      up.ChecksumSHA1,
				ChecksumSHA256:    up.ChecksumSHA256,
				ChecksumSHA512:    up.ChecksumSHA512,
				ChecksumXXHASH128: up.ChecksumXXHASH128,
			}
		}()
	}
	wg.Wait()
	if cause := context.Cause(pctx); cause != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("objstore/s3: %s %q: %w", op, key, context.Cause(ctx))
		}
		return cause
	}

	complete := &s3.CompleteMultipartUploadInput{
		Bucket:          &s.bucket,
		Key:             &k,
		UploadId:        id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	if ifAbsent {
		complete.IfNoneMatch = aws.String("*")
	}
	if _, err := s.api.CompleteMultipartUpload(ctx, complete); err != nil {
		return translate(op, key, err)
	}
	return nil
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if off < 0 || (n > 0 && off > math.MaxInt64-n) {
		return nil, fmt.Errorf("%w: key %q off %d n %d", objstore.ErrRange, key, off, n)
	}
	if n == 0 {
		// An empty range cannot be asked of S3: check off against the size.
		size, err := s.head(ctx, k)
		if err != nil {
			return nil, translate(objstore.OpGet, key, err)
		}
		if _, _, err := objstore.Span(key, off, 0, size); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &k}
	switch {
	case n > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := s.api.GetObject(ctx, in)
	if err != nil {
		err = translate(objstore.OpGet, key, err)
		if n < 0 && errors.Is(err, objstore.ErrRange) {
			// S3 refuses "bytes=size-", but Get(size, -1) is an empty read.
			size, herr := s.head(ctx, k)
			if herr != nil {
				return nil, translate(objstore.OpGet, key, herr)
			}
			if off == size {
				return []byte{}, nil
			}
		}
		return nil, err
	}
	defer out.Body.Close()

	want := aws.ToInt64(out.ContentLength)
	if out.ContentLength == nil {
		want = -1
	}
	if n > 0 && want >= 0 && want < n {
		// S3 clamps a range that runs past the end.
		return nil, fmt.Errorf("%w: key %q off %d n %d, only %d bytes there (%s)",
			objstore.ErrRange, key, off, n, want, aws.ToString(out.ContentRange))
	}
	var b []byte
	switch {
	case n > 0:
		b = make([]byte, n)
		_, err = io.ReadFull(out.Body, b)
	case want >= 0:
		b = make([]byte, want)
		_, err = io.ReadFull(out.Body, b)
	default:
		b, err = io.ReadAll(out.Body)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("objstore/s3: get %q: reading body: %w", key, err)
	}
	return b, nil
}

// head returns the size of object k; errors are untranslated.
func (s *Store) head(ctx context.Context, k string) (int64, error) {
	out, err := s.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &k})
	if err != nil {
		return 0, err
	}
	return aws.ToInt64(out.ContentLength), nil
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return objstore.Info{}, err
	}
	size, err := s.head(ctx, k)
	if err != nil {
		return objstore.Info{}, translate(objstore.OpHead, key, err)
	}
	return objstore.Info{Key: key, Size: size}, nil
}

// List implements objstore.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]objstore.Info, error) {
	if !objstore.PrefixCanMatch(prefix) {
		return nil, nil
	}
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket}
	if p := s.prefix + prefix; p != "" {
		in.Prefix = &p
	}
	var out []objstore.Info
	pages := s3.NewListObjectsV2Paginator(s.api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, translate(objstore.OpList, prefix, err)
		}
		for _, o := range page.Contents {
			k, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok {
				continue
			}
			out = append(out, objstore.Info{Key: k, Size: aws.ToInt64(o.Size)})
		}
	}
	// S3 lists in UTF-8 byte order, which is Go's string order; an
	// emulator might not.
	slices.SortFunc(out, func(a, b objstore.Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &k})
	if err != nil {
		err = translate(objstore.OpDelete, key, err)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}
