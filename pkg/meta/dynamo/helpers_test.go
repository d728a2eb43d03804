package dynamo

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tierlog/tierlog/pkg/meta"
)

// testClient is an SDK client for an emulator at endpoint: static
// credentials, us-east-1, no response CRC check (minidyn sends none that
// matches).
func testClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:                          "us-east-1",
		BaseEndpoint:                    aws.String(endpoint),
		Credentials:                     credentials.NewStaticCredentialsProvider("test", "test", ""),
		DisableValidateResponseChecksum: true,
	})
}

var tableSeq atomic.Int64

// uniqueTable names a fresh table.
func uniqueTable(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), tableSeq.Add(1))
}

// newTableStore creates a fresh table on client and returns a Store on it,
// closed at the end of the test.
func newTableStore(t *testing.T, client *dynamodb.Client, opts ...Option) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	name := uniqueTable("tierlog")
	if err := CreateTable(ctx, client, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	s := New(client, name, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// storeFactory adapts newTableStore to metatest.Run.
func storeFactory(client *dynamodb.Client) func(t *testing.T) meta.Store {
	return func(t *testing.T) meta.Store { return newTableStore(t, client) }
}
