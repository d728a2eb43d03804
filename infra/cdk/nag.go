package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// cdk-nag AwsSolutions findings this stack keeps on purpose. Each
// suppression is as narrow as cdk-nag allows: one rule, on one resource
// (and its children), limited with appliesTo to the exact finding. Every
// other AwsSolutions rule passes; TestNagAwsSolutions fails on any new
// unsuppressed error, and TestNagSuppressionsAreExactlyThese on any
// suppression added or dropped without updating this file.
//
// Rules that fire and why they are suppressed:
//
//	rule  resource                  finding                         reason
//	S1    the cold-tier bucket      server access logs disabled     reasonS1
//	IAM4  each function role        AWSLambdaVPCAccessExecutionRole reasonIAM4VPC
//	IAM5  each function role policy Resource::*  (X-Ray)            reasonIAM5XRay
//	IAM5  each function role policy Resource::<Bucket.Arn>/*        reasonIAM5Objects
const (
	reasonS1 = "The bucket is the private cold tier of this stack: public access is blocked, " +
		"TLS 1.2+ is enforced, and only the three function roles (through the S3 gateway " +
		"endpoint, whose policy admits only this bucket) can reach it. Every S3 call they make " +
		"is an X-Ray subsegment. Server access logs would add a second, retained bucket per " +
		"deployment (itself failing S1) for no reader; enable CloudTrail S3 data events at the " +
		"account level if object-level auditing is required."
	reasonIAM4VPC = "AWSLambdaVPCAccessExecutionRole grants the EC2 network-interface actions " +
		"(CreateNetworkInterface, DescribeNetworkInterfaces, DescribeSubnets, " +
		"DeleteNetworkInterface, Assign/UnassignPrivateIpAddresses) that Lambda needs to place " +
		"a function in a VPC. AWS maintains it as the documented minimum; the Describe actions " +
		"have no resource-level permissions, and Lambda validates the role against these " +
		"actions when the function is created. It is the only managed policy: logging is an " +
		"inline grant on the function's own log group (no AWSLambdaBasicExecutionRole)."
	reasonIAM5XRay = "Resource::* belongs only to xray:PutTraceSegments and " +
		"xray:PutTelemetryRecords, which CDK adds for active tracing: X-Ray supports no " +
		"resource-level permissions for these actions, so '*' is the only valid resource " +
		"(TestFunctionPolicies checks no other action has it)."
	reasonIAM5Objects = "<Bucket.Arn>/* is the set of segment objects. Object keys are " +
		"<prefix>/<topic>/<partition>/<offset>.seg, created and deleted at run time as " +
		"topics and segments come and go, so they cannot be listed in a policy. The wildcard " +
		"is confined to this stack's bucket, and each role gets only the object actions it " +
		"uses (fetch GetObject; produce GetObject DeleteObject; compactor GetObject PutObject " +
		"DeleteObject)."
)

// reasonAPIG4Tokens explains the routes without API Gateway authorization
// of an auth=tokens stack.
const reasonAPIG4Tokens = "With auth=tokens the API's routes are authorized by the functions, not API Gateway: " +
	"every route but GET /v1/health requires an access token (Authorization: Bearer), verified against the " +
	"DynamoDB table with a constant-time hash comparison before anything is read or changed (docs/auth.md). " +
	"The token routes keep IAM authorization."

// addTokenAuthSuppression records reasonAPIG4Tokens on the API's routes.
func addTokenAuthSuppression(api awsapigatewayv2.HttpApi) {
	cdknag.NagSuppressions_AddResourceSuppressions(api, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-APIG4"),
		Reason: jsii.String(reasonAPIG4Tokens),
	}}, jsii.Bool(true))
}

// bucketObjectsFinding matches the IAM5 finding for "<bucket ARN>/*"
// whatever logical ID CDK gives the bucket.
const bucketObjectsFinding = `/^Resource::<Bucket[0-9A-F]{8}\.Arn>\/\*$/`

// addNagSuppressions records the suppressions above as cdk_nag metadata
// on the resources. It changes nothing else in the template.
func addNagSuppressions(roles []awsiam.IRole, bucket awss3.Bucket) {
	cdknag.NagSuppressions_AddResourceSuppressions(bucket, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String(reasonS1),
	}}, jsii.Bool(false))
	vpcAccessARN := "Policy::arn:<AWS::Partition>:iam::aws:policy/" + vpcAccessPolicy
	for _, role := range roles {
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{
			{
				Id:        jsii.String("AwsSolutions-IAM4"),
				Reason:    jsii.String(reasonIAM4VPC),
				AppliesTo: &[]any{vpcAccessARN},
			},
			{
				Id:        jsii.String("AwsSolutions-IAM5"),
				Reason:    jsii.String(reasonIAM5XRay),
				AppliesTo: &[]any{"Resource::*"},
			},
			{
				Id:        jsii.String("AwsSolutions-IAM5"),
				Reason:    jsii.String(reasonIAM5Objects),
				AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String(bucketObjectsFinding)}},
			},
		}, jsii.Bool(true)) // children: the role's DefaultPolicy carries the IAM5 findings
	}
}
