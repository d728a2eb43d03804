package server_test

import (
	"net/http/httptest"
	"testing"

	"github.com/tierlog/tierlog/localstack/emulator"
)

// useEmulator serves S3 and DynamoDB from an in-process emulator for the
// rest of the test, through the SDK's environment (endpoint, region,
// credentials), and stops it at the end.
func useEmulator(tb testing.TB) {
	tb.Helper()
	emu, err := emulator.New(emulator.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(emu)
	tb.Cleanup(func() { ts.Close(); emu.Close() })
	tb.Setenv("AWS_ENDPOINT_URL", ts.URL)
	tb.Setenv("AWS_REGION", "us-east-1")
	tb.Setenv("AWS_ACCESS_KEY_ID", "test")
	tb.Setenv("AWS_SECRET_ACCESS_KEY", "test")
}
