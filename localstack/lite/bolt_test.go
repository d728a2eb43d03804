package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tierlog/tierlog/localstack/emulator"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
	s3store "github.com/tierlog/tierlog/pkg/objstore/s3"
)

// serveBolt serves an emulator whose S3 lives in dir's bbolt file on
// 127.0.0.1 and returns an S3 client of its endpoint and the function
// that stops it and releases dir.
func serveBolt(t *testing.T, dir string) (*s3.Client, func() error) {
	t.Helper()
	backend, err := openBolt(dir, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.New(emulator.Options{S3: backend})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(emu)
	c := s3store.NewClient(aws.Config{Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		s3store.ClientOptions{Endpoint: srv.URL, MaxAttempts: 2})
	return c, func() error { srv.Close(); return emu.Close() }
}

// startBolt is serveBolt for the test's lifetime.
func startBolt(t *testing.T, dir string) *s3.Client {
	t.Helper()
	c, stop := serveBolt(t, dir)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

var seq atomic.Int64

func createBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
	b := fmt.Sprintf("bucket-%d", seq.Add(1))
	if err := s3store.CreateBucket(t.Context(), c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBoltConformance runs the object store conformance suite on the
// bbolt backend, its Concurrent cases included.
func TestBoltConformance(t *testing.T) {
	c := startBolt(t, t.TempDir())
	objtest.Run(t, func(t *testing.T) objstore.Store {
		s, err := s3store.New(c, createBucket(t, c), "tierlog/test",
			s3store.WithMultipartThreshold(s3store.MinPartSize), s3store.WithPartSize(s3store.MinPartSize))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// With a data dir, buckets and objects survive a close and reopen; a
// second open of a dir in use fails instead of hanging.
func TestDataDirPersistence(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	c, stop := serveBolt(t, dir)
	bucket := createBucket(t, c)
	big := strings.Repeat("tierlog ", 200_000) // 1.6 MB
	for key, body := range map[string]string{"a/b/seg": big, "a/b/other": "small"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := openBolt(dir, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of a busy data dir: %v, want an in-use error", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	c = startBolt(t, dir)
	get := func(key, rng string) string {
		t.Helper()
		in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
		if rng != "" {
			in.Range = &rng
		}
		out, err := c.GetObject(ctx, in)
		if err != nil {
			t.Fatalf("GetObject %s %s after reopen: %v", key, rng, err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := get("a/b/seg", ""); got != big {
		t.Fatalf("after reopen: %d bytes, want %d", len(got), len(big))
	}
	if got := get("a/b/seg", "bytes=8-14"); got != "tierlog" {
		t.Fatalf("ranged GET after reopen = %q", got)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("a/")})
	if err != nil || len(list.Contents) != 2 {
		t.Fatalf("ListObjectsV2 after reopen = %+v, %v", list, err)
	}
}

// Readers racing an overwriting writer on the bbolt backend see whole
// objects only. s3bolt alone hands out bytes that alias bbolt's memory map
// after its transaction ends, and readers saw torn objects (bolt.go).
func TestDataDirConcurrentOverwrite(t *testing.T) {
	c := startBolt(t, t.TempDir())
	bucket := createBucket(t, c)
	ctx := t.Context()
	version := func(i int) []byte { return bytes.Repeat([]byte{'a' + byte(i%8)}, 16<<10*(1+i%8)) }
	put := func(i int) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("shared"), Body: bytes.NewReader(version(i))})
		return err
	}
	if err := put(0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	wg.Go(func() {
		for i := range 60 {
			if err := put(i); err != nil {
				errc <- err
				return
			}
		}
	})
	for r := range 4 {
		wg.Go(func() {
			for range 60 {
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("shared")})
				if err != nil {
					errc <- err
					return
				}
				b, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					errc <- err
					return
				}
				if v := int(b[0] - 'a'); !bytes.Equal(b, version(v)) {
					errc <- fmt.Errorf("reader %d: torn object: %d bytes starting %q", r, len(b), b[:1])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}
