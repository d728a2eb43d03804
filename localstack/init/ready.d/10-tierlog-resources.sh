#!/bin/bash
# LocalStack ready hook: creates tierlog's DynamoDB table and S3 bucket once
# LocalStack is ready, for `tierlog serve --backend aws` (or the functions
# run under the Runtime Interface Emulator) pointed at LocalStack. The CDK
# stack deployed with `make deploy-local` creates its own table and bucket,
# with generated names; these do not clash with it.
#
# Names come from TIERLOG_TABLE and TIERLOG_BUCKET (default "tierlog"), set
# in docker-compose.yml. Safe to run again: existing resources are kept.
# The table's key schema is pkg/meta/dynamo's (pk S hash, sk S range).
set -euo pipefail

table="${TIERLOG_TABLE:-tierlog}"
bucket="${TIERLOG_BUCKET:-tierlog}"

if awslocal dynamodb describe-table --table-name "$table" >/dev/null 2>&1; then
	echo "tierlog: table $table exists"
else
	awslocal dynamodb create-table \
		--table-name "$table" \
		--attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
		--key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
		--billing-mode PAY_PER_REQUEST >/dev/null
	awslocal dynamodb wait table-exists --table-name "$table"
	echo "tierlog: created table $table"
fi

if awslocal s3api head-bucket --bucket "$bucket" >/dev/null 2>&1; then
	echo "tierlog: bucket $bucket exists"
else
	awslocal s3api create-bucket --bucket "$bucket" >/dev/null
	echo "tierlog: created bucket $bucket"
fi
