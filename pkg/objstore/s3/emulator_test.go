package s3_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
	s3store "github.com/tierlog/tierlog/pkg/objstore/s3"
)

// These tests pin what gofakes3 v1.2.0 does where it matters to the
// adapter, with the raw SDK client, so an upgrade that changes any of it
// shows up here rather than as a puzzling conformance failure.

// The suite passes with the SDK's default checksums too ("when
// supported": CRC32 on uploads, multipart uploads created with a CRC32
// algorithm): gofakes3 v1.2.0 sends no checksums back, so ranged GETs
// have nothing to fail on.
func TestConformanceWithChecksums(t *testing.T) {
	f := newFake(t)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
	c := s3store.NewClient(cfg, s3store.ClientOptions{Endpoint: f.url, Checksums: true})
	if c.Options().RequestChecksumCalculation == aws.RequestChecksumCalculationWhenRequired {
		t.Fatalf("Checksums: true did not keep the SDK default: %v", c.Options().RequestChecksumCalculation)
	}
	objtest.RunWith(t, objtest.Options{ListKeys: 20}, func(t *testing.T) objstore.Store {
		s, err := s3store.New(c, newBucket(t, c), "cs", small...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestGofakes3Ranges(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	bucket := newBucket(t, c)
	ctx := t.Context()
	put := func(key, body string) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("k", "0123456789")
	put("empty", "")
	get := func(key, rng string) (string, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(key), Range: aws.String(rng)})
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(out.Body)
		return b.String(), err
	}
	for _, c := range []struct{ rng, want string }{
		{"bytes=2-4", "234"},
		{"bytes=7-", "789"},
		{"bytes=8-20", "89"}, // an end past the size is clamped, as S3 does
		{"bytes=-3", "789"},
	} {
		got, err := get("k", c.rng)
		if err != nil || got != c.want {
			t.Errorf("GET %s = %q, %v; want %q", c.rng, got, err, c.want)
		}
	}
	// A start at or past the size is 416 InvalidRange, also for an empty
	// object, whatever the range: the adapter asks no range for a whole
	// object and maps off == size itself.
	for _, c := range []struct{ key, rng string }{{"k", "bytes=10-"}, {"k", "bytes=10-12"}, {"empty", "bytes=0-"}} {
		if _, err := get(c.key, c.rng); apiCode(err) != "InvalidRange" {
			t.Errorf("GET %s %s: %v, want InvalidRange", c.key, c.rng, err)
		}
	}
}

func TestGofakes3IfNoneMatch(t *testing.T) {
	f := newFake(t)
	c := f.client(t)
	bucket := newBucket(t, c)
	ctx := t.Context()
	key := aws.String("k")

	// PutObject honours it: 412 PreconditionFailed, object untouched.
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: key, Body: strings.NewReader("first")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: key, Body: strings.NewReader("second"), IfNoneMatch: aws.String("*")})
	if apiCode(err) != "PreconditionFailed" {
		t.Fatalf("conditional PutObject over an object: %v, want PreconditionFailed", err)
	}

	// CompleteMultipartUpload ignores it (real S3 honours it): the object
	// is replaced. Hence the adapter's HEAD before a large PutIfAbsent,
	// and the documented emulator gap for racing large PutIfAbsents.
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	// gofakes3 does not enforce S3's 5 MiB minimum part size either.
	var parts []types.CompletedPart
	for i, body := range []string{"tiny part one ", "tiny part two"} {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &bucket, Key: key, UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: strings.NewReader(body),
		})
		if err != nil {
			t.Fatalf("UploadPart of %d bytes: %v", len(body), err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucket, Key: key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		IfNoneMatch:     aws.String("*"),
	})
	if err != nil {
		t.Fatalf("gofakes3 now refuses a conditional CompleteMultipartUpload (%v): "+
			"it honours If-None-Match there; update the emulator notes in package s3's doc", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	if b.String() != "tiny part one tiny part two" {
		t.Fatalf("object after conditional complete = %q", b.String())
	}
}
