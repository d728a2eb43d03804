package emulator_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tierlog/tierlog/localstack/emulator"
	tlserver "github.com/tierlog/tierlog/pkg/server"
)

// TestTierlogServeAWS is localstack/README.md's "without Docker" walkthrough
// in one process: `tierlog serve --backend aws --create-resources` (the
// same pkg/server assembly) against the emulator through AWS_ENDPOINT_URL
// alone, then the curl steps, and a compactor pass that tiers a rolled
// segment into the bucket.
func TestTierlogServeAWS(t *testing.T) {
	endpoint := start(t, emulator.Options{})
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	// Nothing from the machine's AWS setup may leak in.
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3",
		"AWS_ENDPOINT_URL_DYNAMODB", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_REQUEST_CHECKSUM_CALCULATION"} {
		t.Setenv(k, "")
	}
	none := t.TempDir() + "/none"
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)

	hot := t.TempDir()
	open := func() *tlserver.Server {
		s, err := tlserver.Open(t.Context(), tlserver.Config{
			Backend: tlserver.BackendAWS, HotDir: hot, Table: "tierlog", Bucket: "tierlog",
			CreateResources: true, CompactInterval: -1,
		})
		if err != nil {
			t.Fatalf("server.Open: %v", err)
		}
		return s
	}
	s := open()
	t.Cleanup(func() { _ = s.Close() })
	// --create-resources again: the table and the bucket exist.
	if err := open().Close(); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(s.Handler())
	t.Cleanup(api.Close)

	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, api.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		var out map[string]any
		if len(b) == 0 {
			return out
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
		return out
	}

	call("POST", "/v1/topics", `{"name":"orders","partitions":3,"segment_bytes":4096}`, http.StatusCreated)
	call("POST", "/v1/topics/orders/records",
		`{"records":[{"key":"customer-1","value":"first order"},{"value":"pinned","partition":0},{"key":"customer-1","value":"second order"}]}`,
		http.StatusOK)
	call("POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"a"},{"value":"b"},{"key":"k","value":null}]}`, http.StatusOK)
	got := call("GET", "/v1/topics/orders/partitions/0/records?offset=0", "", http.StatusOK)
	if recs, _ := got["records"].([]any); len(recs) < 4 {
		t.Fatalf("fetch = %v, want at least the 4 records pinned or produced to partition 0", got)
	}
	off := call("GET", "/v1/topics/orders/partitions/0/offsets", "", http.StatusOK)
	hw, _ := off["high_watermark"].(float64)
	if hw < 4 {
		t.Fatalf("offsets = %v", off)
	}
	call("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":2,"metadata":""}]}`, http.StatusNoContent)
	g := call("GET", "/v1/groups/billing/offsets?topic=orders", "", http.StatusOK)
	if o, _ := g["offsets"].([]any); len(o) != 1 {
		t.Fatalf("group offsets = %v", g)
	}

	// Roll segments on partition 1 and tier them.
	v := strings.Repeat("x", 900)
	for range 8 {
		call("POST", "/v1/topics/orders/partitions/1/records", `{"records":[{"value":"`+v+`"},{"value":"`+v+`"}]}`, http.StatusOK)
	}
	st, err := s.Compactor.Run(t.Context())
	if err != nil || st.Finalized == 0 {
		t.Fatalf("compactor pass: %+v, %v; want segments finalized", st, err)
	}
	list, err := s3Client(endpoint).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("tierlog")})
	if err != nil || len(list.Contents) != st.Finalized {
		t.Fatalf("bucket after compaction: %d objects, %v; want %d", len(list.Contents), err, st.Finalized)
	}
	got = call("GET", "/v1/topics/orders/partitions/1/records?offset=0", "", http.StatusOK)
	if recs, _ := got["records"].([]any); len(recs) == 0 {
		t.Fatalf("fetch after compaction = %v", got)
	}
}
