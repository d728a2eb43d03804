package emulator_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/tierlog/tierlog/localstack/emulator"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
	s3store "github.com/tierlog/tierlog/pkg/objstore/s3"
)

// The adapters' conformance suites, through one emulator endpoint, with the
// clients built the way tierlog builds them.

// TestObjstoreConformance runs objtest with S3 in memory (the lite
// command's tests run it on its bbolt backend).
func TestObjstoreConformance(t *testing.T) {
	url := start(t, emulator.Options{})
	c := s3store.NewClient(aws.Config{Credentials: creds}, s3store.ClientOptions{Endpoint: url, MaxAttempts: 2})
	objtest.Run(t, func(t *testing.T) objstore.Store {
		b := unique("objtest")
		if err := s3store.CreateBucket(t.Context(), c, b); err != nil {
			t.Fatal(err)
		}
		s, err := s3store.New(c, b, "tierlog/test",
			s3store.WithMultipartThreshold(s3store.MinPartSize), s3store.WithPartSize(s3store.MinPartSize))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The DynamoDB client is the SDK default (response CRC validation on), as
// in production.
func TestMetaConformance(t *testing.T) {
	url := start(t, emulator.Options{})
	client := ddbClient(url)
	metatest.Run(t, func(t *testing.T) meta.Store {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		table := unique("metatest")
		if err := dynamo.CreateTable(ctx, client, table); err != nil {
			t.Fatal(err)
		}
		s := dynamo.New(client, table)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
