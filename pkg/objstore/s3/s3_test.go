package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
	s3store "github.com/tierlog/tierlog/pkg/objstore/s3"
)

// fake is an in-process gofakes3 server on 127.0.0.1 that records the
// requests it serves.
type fake struct {
	url  string
	mu   sync.Mutex
	reqs []string // "METHOD query-keys", e.g. "PUT partNumber,uploadId"
	n    atomic.Int64
	// intercept, if set, may answer a request itself (returning true)
	// instead of gofakes3.
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	h := gofakes3.New(s3mem.New()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		q := r.URL.Query()
		var ks []string
		for k := range q {
			ks = append(ks, k)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Method+" "+strings.Join(slices.Sorted(slices.Values(ks)), ","))
		intercept := f.intercept
		f.mu.Unlock()
		if intercept != nil && intercept(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// count returns how many recorded requests start with prefix.
func (f *fake) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func (f *fake) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = nil
}

// client returns an SDK client for the fake, built by NewClient with
// static credentials, as a test would point one at any emulator.
func (f *fake) client(t *testing.T) *s3.Client {
	t.Helper()
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	}
	return s3store.NewClient(cfg, s3store.ClientOptions{Endpoint: f.url, MaxAttempts: 2})
}

var bucketSeq atomic.Int64

func newBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
	b := fmt.Sprintf("bucket-%d", bucketSeq.Add(1))
	if err := s3store.CreateBucket(t.Context(), c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// small makes the multipart path run on the suite's large object (12 MiB,
// 6 MiB with -short).
var small = []s3store.Option{
	s3store.WithMultipartThreshold(s3store.MinPartSize),
	s3store.WithPartSize(s3store.MinPartSize),
}

func TestConformance(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	objtest.Run(t, func(t *testing.T) objstore.Store {
		s, err := s3store.New(c, newBucket(t, c), "tierlog/test", small...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The suite again with no store prefix and default (single-part) sizes.
func TestConformanceNoPrefix(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	objtest.RunWith(t, objtest.Options{LargeSize: -1}, func(t *testing.T) objstore.Store {
		s, err := s3store.New(c, newBucket(t, c), "")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMultipartRequests(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	bucket := newBucket(t, c)
	s, err := s3store.New(c, bucket, "p", append(small, s3store.WithConcurrency(2))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	f.reset()
	small := bytes.Repeat([]byte("s"), s3store.MinPartSize) // at the threshold: one PutObject
	if err := s.Put(ctx, "small", bytes.NewReader(small), int64(len(small))); err != nil {
		t.Fatal(err)
	}
	if n := f.count("PUT "); n != 1 || f.count("POST") != 0 {
		t.Fatalf("Put at the threshold: %d PUTs, %d POSTs; want 1 PutObject", n, f.count("POST"))
	}

	f.reset()
	big := bytes.Repeat([]byte("0123456789abcdef"), (11<<20)/16) // 11 MiB: parts of 5, 5, 1
	if err := s.Put(ctx, "big", bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatal(err)
	}
	if got := f.count("PUT partNumber,uploadId"); got != 3 {
		t.Fatalf("UploadPart requests = %d, want 3", got)
	}
	if f.count("POST uploads") != 1 || f.count("POST uploadId") != 1 {
		t.Fatalf("want one Create and one Complete, got %v", f.reqs)
	}
	got, err := s.Get(ctx, "big", 5<<20-2, 4)
	if err != nil || !bytes.Equal(got, big[5<<20-2:5<<20+2]) {
		t.Fatalf("Get across a part boundary = %q, %v", got, err)
	}

	// A short body aborts the upload: no part is left behind.
	f.reset()
	if err := s.Put(ctx, "short", bytes.NewReader(big[:7<<20]), int64(len(big))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short multipart body: %v, want io.ErrUnexpectedEOF", err)
	}
	if f.count("DELETE uploadId") != 1 {
		t.Fatalf("no AbortMultipartUpload after a failed upload: %v", f.reqs)
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left open", len(ups.Uploads))
	}

	// A large PutIfAbsent of an existing key stops at the HEAD.
	f.reset()
	err = s.PutIfAbsent(ctx, "big", bytes.NewReader(big), int64(len(big)))
	if !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("large PutIfAbsent over an object: %v, want ErrExists", err)
	}
	if f.count("PUT") != 0 || f.count("POST") != 0 {
		t.Fatalf("large PutIfAbsent of an existing key uploaded: %v", f.reqs)
	}
}

func TestPrefixIsolation(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	bucket := newBucket(t, c)
	a, err := s3store.New(c, bucket, "a/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3store.New(c, bucket, "a/b")
	if err != nil {
		t.Fatal(err)
	}
	root, err := s3store.New(c, bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := a.Put(ctx, "k", strings.NewReader("in a"), 4); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "k", strings.NewReader("in b"), 4); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Get(ctx, "k", 0, -1); err != nil || string(got) != "in a" {
		t.Fatalf("a.Get = %q, %v", got, err)
	}
	// a sees b's object under its own prefix, as keys "b/k": prefixes nest.
	infos, err := a.List(ctx, "")
	if err != nil || len(infos) != 2 || infos[0].Key != "b/k" || infos[1].Key != "k" {
		t.Fatalf("a.List = %v, %v", infos, err)
	}
	infos, err = b.List(ctx, "")
	if err != nil || len(infos) != 1 || infos[0].Key != "k" {
		t.Fatalf("b.List = %v, %v", infos, err)
	}
	infos, err = root.List(ctx, "")
	if err != nil || len(infos) != 2 || infos[0].Key != "a/b/k" {
		t.Fatalf("root.List = %v, %v", infos, err)
	}
	// The prefix counts against the key length limit.
	long := strings.Repeat("x", objstore.MaxKeyLen-1)
	if err := b.Put(ctx, long, strings.NewReader(""), 0); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Fatalf("Put of a key too long with the prefix: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	bad := []struct {
		name   string
		bucket string
		prefix string
		opts   []s3store.Option
	}{
		{"no bucket", "", "", nil},
		{"bad prefix", "b", "a//b", nil},
		{"dot prefix", "b", "../x", nil},
		{"tiny parts", "b", "", []s3store.Option{s3store.WithPartSize(1 << 20)}},
		{"huge threshold", "b", "", []s3store.Option{s3store.WithMultipartThreshold(6 << 30)}},
		{"zero concurrency", "b", "", []s3store.Option{s3store.WithConcurrency(-1)}},
	}
	for _, tc := range bad {
		if _, err := s3store.New(c, tc.bucket, tc.prefix, tc.opts...); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
	if _, err := s3store.New(nil, "b", ""); err == nil {
		t.Error("New(nil client) succeeded")
	}
}

func TestCreateBucketTwice(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	for range 2 {
		if err := s3store.CreateBucket(t.Context(), c, "twice"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s3store.CreateBucket(t.Context(), c, "Not_A_Valid_Bucket"); err == nil {
		t.Fatal("CreateBucket of an invalid name succeeded")
	}
}

func TestMissingBucketIsNotNotFound(t *testing.T) {
	f := newFake(t)
	s, err := s3store.New(f.client(t), "no-such-bucket", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(t.Context(), "k", 0, -1)
	if err == nil || errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get in a missing bucket: %v, want an error other than ErrNotFound", err)
	}
}

func TestNewClientFromEnv(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")

	if _, err := s3store.NewClientFromEnv(t.Context()); err == nil {
		t.Fatal("NewClientFromEnv without region or endpoint succeeded")
	}

	for _, env := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, f.url)
			c, err := s3store.NewClientFromEnv(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			o := c.Options()
			if !o.UsePathStyle || o.Region != "us-east-1" ||
				o.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired ||
				o.ResponseChecksumValidation != aws.ResponseChecksumValidationWhenRequired {
				t.Fatalf("client options: path style %v, region %q, checksums %v/%v",
					o.UsePathStyle, o.Region, o.RequestChecksumCalculation, o.ResponseChecksumValidation)
			}
			if got := o.Retryer.MaxAttempts(); got != s3store.DefaultMaxAttempts {
				t.Fatalf("retryer max attempts = %d", got)
			}
			bucket := "env-" + strings.ToLower(strings.ReplaceAll(env, "_", "-"))
			if err := s3store.CreateBucket(t.Context(), c, bucket); err != nil {
				t.Fatal(err)
			}
			s, err := s3store.New(c, bucket, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(t.Context(), "k", strings.NewReader("hello world"), 11); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(t.Context(), "k", 6, 5); err != nil || string(got) != "world" {
				t.Fatalf("ranged Get through an env client = %q, %v", got, err)
			}
		})
	}
}

func TestCountingOverS3(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	inner, err := s3store.New(c, newBucket(t, c), "")
	if err != nil {
		t.Fatal(err)
	}
	var ctr objstore.Counters
	s := objstore.Counting(inner, &ctr)
	ctx := context.Background()
	f.n.Store(0)
	if err := s.Put(ctx, "a", strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a", 2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// One Store call, one HTTP request, for each of these.
	if got := f.n.Load(); got != 3 {
		t.Fatalf("server saw %d requests for Put, Get, Head; want 3", got)
	}
	snap := ctr.Snapshot()
	if snap["put"] != 1 || snap["get"] != 1 || snap["head"] != 1 || snap["bytes_up"] != 10 || snap["bytes_down"] != 3 {
		t.Fatalf("counters = %v", snap)
	}
}

// conflictOnce answers the first n conditional writes with 409
// ConditionalRequestConflict, as S3 does when another conditional write
// of the key is in flight.
func (f *fake) conflictOnce(n int) {
	var left atomic.Int64
	left.Store(int64(n))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("If-None-Match") == "" || left.Add(-1) < 0 {
			return false
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+
			`<Error><Code>ConditionalRequestConflict</Code><Message>A conflicting operation occurred.</Message></Error>`)
		return true
	}
}

func TestConditionalConflict(t *testing.T) {
	f := newFake(t)
	c := f.client(t) // two attempts
	s, err := s3store.New(c, newBucket(t, c), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// One 409 is retried by the client and the write goes through.
	f.conflictOnce(1)
	if err := s.PutIfAbsent(ctx, "a", strings.NewReader("body"), 4); err != nil {
		t.Fatalf("PutIfAbsent after one 409: %v", err)
	}
	if got, err := s.Get(ctx, "a", 0, -1); err != nil || string(got) != "body" {
		t.Fatalf("Get = %q, %v", got, err)
	}

	// A 409 on every attempt is reported as ErrExists.
	f.conflictOnce(2)
	err = s.PutIfAbsent(ctx, "b", strings.NewReader("body"), 4)
	if !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("PutIfAbsent after persistent 409s: %v, want ErrExists", err)
	}
	// A plain Put never sends If-None-Match.
	f.conflictOnce(1)
	if err := s.Put(ctx, "c", strings.NewReader("body"), 4); err != nil {
		t.Fatal(err)
	}
}
