package server

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
	"github.com/tierlog/tierlog/pkg/objstore"
	objs3 "github.com/tierlog/tierlog/pkg/objstore/s3"
)

// openAWS builds the DynamoDB metadata store and the S3 object store from
// the SDK's standard configuration sources (AWS_ENDPOINT_URL and the
// service-specific AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_S3,
// AWS_REGION, credentials), with cfg.APIOptions added to both clients.
func openAWS(ctx context.Context, cfg Config) (meta.Store, objstore.Store, func() map[string]int64, error) {
	ddb, err := dynamo.NewClientFromEnv(ctx, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, cfg.APIOptions...)
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dynamodb client: %w", err)
	}
	s3c, err := objs3.NewClientFromEnv(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("s3 client: %w", err)
	}
	if len(cfg.APIOptions) > 0 {
		// A copy of the client with the extra middleware: same resolved
		// options (endpoint, retryer, checksums) otherwise.
		s3c = s3.New(s3c.Options(), func(o *s3.Options) {
			o.APIOptions = append(o.APIOptions, cfg.APIOptions...)
		})
	}
	if cfg.CreateResources {
		if err := dynamo.CreateTable(ctx, ddb, cfg.Table); err != nil {
			return nil, nil, nil, fmt.Errorf("create table %q: %w", cfg.Table, err)
		}
		if err := objs3.CreateBucket(ctx, s3c, cfg.Bucket); err != nil {
			return nil, nil, nil, fmt.Errorf("create bucket %q: %w", cfg.Bucket, err)
		}
	}
	m := dynamo.New(ddb, cfg.Table)
	o, err := objs3.New(s3c, cfg.Bucket, cfg.Prefix)
	if err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	counters := func() map[string]int64 {
		st := m.Counters().Snapshot()
		return map[string]int64{
			"GetItem": int64(st.GetItem), "UpdateItem": int64(st.UpdateItem), "PutItem": int64(st.PutItem),
			"Query": int64(st.Query), "DeleteItem": int64(st.DeleteItem),
		}
	}
	return m, o, counters, nil
}
