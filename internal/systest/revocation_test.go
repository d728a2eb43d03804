package systest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/localstack/emulator"
	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
)

// TestRevocationAcrossProcesses measures the revocation bound between two
// `tierlog serve --auth tokens` processes sharing one DynamoDB table: a
// token revoked through process a is refused by process b, which used it
// just before, within the verifier's cache TTL (docs/auth.md).
func TestRevocationAcrossProcesses(t *testing.T) {
	testenv.SkipShort(t, "two tierlog serve processes")
	emu, err := emulator.New(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(emu)
	t.Cleanup(func() { ts.Close(); emu.Close() })
	env := []string{"AWS_ENDPOINT_URL=" + ts.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	for _, kv := range env { // for the in-process store below
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	const table = "revocation"
	args := []string{"--backend", "aws", "--create-resources", "--hot-dir", t.TempDir(), "--table", table, "--bucket", table,
		"--auth", "tokens", "--compact-interval", "off"}
	a := testenv.StartTierlog(t, env, args...)
	b := testenv.StartTierlog(t, env, args...)

	// The first admin token, written to the table as `tierlog tokens
	// create` would.
	ctx := context.Background()
	client, err := dynamo.NewClientFromEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	_, admin, err := auth.New(dynamo.New(client, table)).Create(ctx, "admin", 0,
		meta.TokenScope{Topics: &meta.NameSet{Prefix: &all}, Groups: &meta.NameSet{Prefix: &all}, Operations: []string{"produce", "consume", "groups", "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(url, method, path, token string, body, out any) int {
		t.Helper()
		code, err := testenv.DoJSONAuth(method, url+path, "Bearer "+token, body, out)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return code
	}
	var made struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if code := call(a.URL, "POST", "/v1/tokens", admin, map[string]any{"scope": map[string]any{
		"topics": map[string]any{"prefix": ""}, "operations": []string{"consume"}}}, &made); code != 201 {
		t.Fatalf("create a token through a: %d", code)
	}
	if code := call(b.URL, "GET", "/v1/topics", made.Token, nil, nil); code != 200 {
		t.Fatalf("b with the new token: %d, want 200", code)
	}
	if code := call(a.URL, "DELETE", "/v1/tokens/"+made.ID, admin, nil, nil); code != 204 {
		t.Fatalf("revoke through a: %d", code)
	}
	start := time.Now()
	if code := call(a.URL, "GET", "/v1/topics", made.Token, nil, nil); code != 401 {
		t.Fatalf("a right after revoking: %d, want 401", code)
	}
	tick := time.NewTicker(5 * time.Millisecond) // the measurement's resolution
	defer tick.Stop()
	for call(b.URL, "GET", "/v1/topics", made.Token, nil, nil) != http.StatusUnauthorized {
		if time.Since(start) > 2*auth.DefaultCacheTTL {
			t.Fatalf("b still accepts the token %v after its revocation", time.Since(start))
		}
		<-tick.C
	}
	took := time.Since(start)
	t.Logf("revoked through process a, refused by process b after %v (cache TTL %v)", took.Round(time.Millisecond), auth.DefaultCacheTTL)
	if took > auth.DefaultCacheTTL+250*time.Millisecond {
		t.Errorf("refused after %v, more than the documented bound %v", took, auth.DefaultCacheTTL)
	}
}
