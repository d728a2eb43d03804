package s3

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Client defaults.
const (
	DefaultMaxAttempts = 5
	DefaultMaxBackoff  = 2 * time.Second
	// emulatorRegion is used when an endpoint is set and no region is:
	// emulators accept any region, but the SDK wants one to sign with.
	emulatorRegion = "us-east-1"
)

// ClientOptions configures NewClient. The zero value gives the defaults.
type ClientOptions struct {
	// Endpoint is the base URL of an S3-compatible endpoint (an emulator
	// such as gofakes3 or LocalStack); "" keeps cfg's endpoint resolution
	// (AWS). Setting it turns on path-style addressing.
	Endpoint string
	// PathStyle puts the bucket in the URL path instead of the host name,
	// as emulators need.
	PathStyle bool
	// MaxAttempts is how many times a request is tried, the first try
	// included (default 5). 1 turns retries off.
	MaxAttempts int
	// MaxBackoff caps the delay between attempts (default 2 s). Delays
	// grow exponentially with full jitter (the SDK's standard retryer).
	MaxBackoff time.Duration
	// Checksums keeps cfg's request checksum calculation and response
	// checksum validation (the SDK's default is "when supported": CRC32 on
	// every upload, validation of whole-object GETs). Off, both are "when
	// required", which emulators need: gofakes3 fails ranged GETs
	// otherwise (localstack/README.md).
	Checksums bool
}

// NewClient returns an S3 client built from cfg with tierlog's settings:
//   - the SDK's standard retryer (retry.NewStandard) with co's attempts
//     and backoff, also retrying 409 ConditionalRequestConflict (a
//     conditional write racing another, which S3 says to retry);
//   - request checksums and response checksum validation "when required"
//     unless co.Checksums (see there). Segments carry their own CRCs,
//     which readers check end to end;
//   - co.Endpoint and path-style addressing for emulators, with region
//     us-east-1 if cfg has none.
//
// Each call's deadline comes from its ctx; there is no client timeout.
func NewClient(cfg aws.Config, co ClientOptions) *s3.Client {
	attempts := co.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	backoff := co.MaxBackoff
	if backoff <= 0 {
		backoff = DefaultMaxBackoff
	}
	cfg = cfg.Copy()
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = backoff
			o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(retryConflict))
		})
	}
	if !co.Checksums {
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	if co.Endpoint != "" && cfg.Region == "" {
		cfg.Region = emulatorRegion
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if co.Endpoint != "" {
			o.BaseEndpoint = aws.String(co.Endpoint)
		}
		o.UsePathStyle = co.PathStyle || co.Endpoint != ""
	})
}

// retryConflict marks 409 ConditionalRequestConflict as retryable.
func retryConflict(err error) aws.Ternary {
	if code, _ := errorCode(err); code == codeConditionConflict {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// NewClientFromEnv loads the SDK's default configuration (environment,
// shared config files, container or instance role) and returns
// NewClient's client. AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, points
// it at an emulator with path-style addressing (unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true); AWS_REGION sets the
// region, which is required without an endpoint. Checksums are "when
// required" (see ClientOptions.Checksums) unless
// AWS_REQUEST_CHECKSUM_CALCULATION is when_supported, in which case the
// SDK's settings from the environment and config files stand.
func NewClientFromEnv(ctx context.Context) (*s3.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("objstore/s3: loading AWS config: %w", err)
	}
	co := ClientOptions{
		Checksums: strings.EqualFold(os.Getenv("AWS_REQUEST_CHECKSUM_CALCULATION"), "when_supported"),
	}
	if !strings.EqualFold(os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		co.Endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
		if co.Endpoint == "" {
			co.Endpoint = os.Getenv("AWS_ENDPOINT_URL")
		}
	}
	if co.Endpoint == "" && cfg.Region == "" {
		return nil, errors.New("objstore/s3: no AWS region (set AWS_REGION)")
	}
	return NewClient(cfg, co), nil
}

// CreateBucket creates bucket in the client's region if it does not
// exist. A bucket the caller already owns is not an error: S3 says
// BucketAlreadyOwnedByYou, and some emulators (gofakes3) say
// BucketAlreadyExists for any existing bucket, so that answer is
// accepted when the caller can HEAD the bucket (someone else's would
// answer 403).
func CreateBucket(ctx context.Context, client *s3.Client, bucket string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if r := client.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(r),
		}
	}
	_, err := client.CreateBucket(ctx, in)
	if err == nil {
		return nil
	}
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	var exists *types.BucketAlreadyExists
	if errors.As(err, &exists) {
		if _, herr := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); herr == nil {
			return nil
		}
	}
	return fmt.Errorf("objstore/s3: creating bucket %q: %w", bucket, err)
}
