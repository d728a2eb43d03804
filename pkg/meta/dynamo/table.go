package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CreateTable creates table with the key schema this package needs (pk S
// hash, sk S range) and on-demand billing, unless it exists
// (ResourceInUseException is success), then waits until DescribeTable
// reports it ACTIVE. It polls DescribeTable itself rather than using the
// SDK's TableExists waiter, which minidyn does not satisfy. It does not
// check an existing table's key schema.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", table, err)
	}
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("dynamo: describe table %s: %w", table, err)
		}
		if out.Table == nil || out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "" {
			return nil
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("dynamo: table %s still %s: %w", table, out.Table.TableStatus, err)
		}
	}
}

// NewClientFromEnv builds a DynamoDB client from the environment with
// config.LoadDefaultConfig: AWS_REGION, the credential chain, and
// AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL for an emulator (dynalite,
// LocalStack). optFns adjust the client (for minidyn, set
// DisableValidateResponseChecksum). The Store retries by itself, whatever
// retryer the client has.
func NewClientFromEnv(ctx context.Context, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamo: load AWS config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, optFns...), nil
}
