// Package e2e tests the three Lambda functions through the real Lambda
// runtime: each function binary runs under the Runtime Interface Emulator
// (aws-lambda-rie) and is invoked with API Gateway HTTP API (payload 2.0)
// and EventBridge events, against S3 and DynamoDB emulated in the test
// process. The tests live in e2e_test.go and coldstart_test.go; this
// package has no code of its own.
package e2e
