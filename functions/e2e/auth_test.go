package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/dynamo"
)

// TestTokenAuthUnderRIE: the produce and fetch binaries under the RIE with
// TIERLOG_AUTH=tokens, as a stack deployed with -c auth=tokens runs them.
// The first admin token comes from an event API Gateway authorized with
// IAM; then every route is tried with no token, a malformed one, a wrong
// secret, an expired one, a revoked one and one outside its scope (401 or
// 403, nothing changed), and in scope.
func TestTokenAuthUnderRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the functions under the Lambda Runtime Interface Emulator: skipped with -short (make unit); make test runs it")
	}
	binDir := t.TempDir()
	ensureRIE(t)
	buildFunctions(t, binDir)
	ep := startEndpoint(t)
	createResources(t, ep.URL)
	env := append(functionEnv(t, ep.URL, t.TempDir()), "TIERLOG_AUTH=tokens")
	produce := startRIE(t, "produce", binDir+"/produce", env)
	fetch := startRIE(t, "fetch", binDir+"/fetch", env)

	call := func(fn *rie, token, method, target, body string, iam bool) *httpResponse {
		t.Helper()
		h := http.Header{"Content-Type": {"application/json"}}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		ev := apigwEvent(method, target, h, b)
		// apigwEvent plays an IAM-authorized route; with auth=tokens
		// only the token routes are.
		ev.RequestContext.Authorizer = nil
		if iam {
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
					AccessKey: "AKIDEXAMPLE", AccountID: "123456789012", UserARN: "arn:aws:iam::123456789012:user/ops"}}
		}
		return decodeAPIGW(t, fn.invoke(t, ev, nil))
	}
	makeToken := func(by string, iam bool, scope string) (id, token string) {
		t.Helper()
		r := call(produce, by, "POST", "/v1/tokens", `{"scope":`+scope+`}`, iam)
		if r.Status != http.StatusCreated {
			t.Fatalf("POST /v1/tokens %s: %d %s", scope, r.Status, r.Body)
		}
		var m struct{ ID, Token string }
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatal(err)
		}
		return m.ID, m.Token
	}
	if r := call(produce, "", "POST", "/v1/tokens", `{"scope":{"operations":["admin"]}}`, false); r.Status != 401 || r.Headers["Www-Authenticate"] != "Bearer" {
		t.Fatalf("POST /v1/tokens, neither IAM nor token: %d %v %s", r.Status, r.Headers, r.Body)
	}
	_, admin := makeToken("", true, `{"topics":{"prefix":""},"groups":{"prefix":""},"operations":["produce","consume","groups","admin"]}`)
	_, in := makeToken(admin, false, `{"topics":{"exact":"orders"},"groups":{"exact":"billing"},"operations":["produce","consume","groups","admin"]}`)
	_, other := makeToken(admin, false, `{"topics":{"exact":"other"},"groups":{"exact":"audit"},"operations":["produce","consume","groups","admin"]}`)
	revokedID, revoked := makeToken(admin, false, `{"topics":{"exact":"orders"},"groups":{"exact":"billing"},"operations":["produce","consume","groups","admin"]}`)
	if r := call(produce, admin, "DELETE", "/v1/tokens/"+revokedID, "", false); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	wrong := in[:len(in)-64] + strings.Repeat("0", 64)
	// An expired token, written to the table as it stands once its time
	// has passed (the API refuses to make one in the past).
	sec := auth.NewSecret()
	orders, billing := "orders", "billing"
	ddb := dynamodb.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ep.URL) })
	if err := dynamo.New(ddb, table).PutToken(context.Background(), meta.Token{ID: sec.ID, Hash: sec.Hash,
		ExpiresMs: time.Now().Add(-time.Minute).UnixMilli(), Scope: meta.TokenScope{Topics: &meta.NameSet{Exact: &orders},
			Groups: &meta.NameSet{Exact: &billing}, Operations: []string{"produce", "consume", "groups", "admin"}}}); err != nil {
		t.Fatal(err)
	}
	expired := sec.Token

	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/topics", "/v1/topics/orders/partitions/0/offsets", "/v1/groups/billing/offsets?topic=orders"} {
			r := call(fetch, admin, "GET", p, "", false)
			b.WriteString(p + " " + string(r.Body) + "\n")
		}
		return b.String()
	}
	rows := []struct {
		fn           *rie
		method, path string
		body         string
		ok           int
	}{
		{produce, "POST", "/v1/topics", `{"name":"orders"}`, 201},
		{produce, "POST", "/v1/topics/orders/records", `{"records":[{"value":"a"}]}`, 200},
		{produce, "POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"b"}]}`, 200},
		{produce, "PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, 204},
		{produce, "PATCH", "/v1/topics/orders", `{"retention_ms":100000}`, 200},
		{produce, "POST", "/v1/groups/billing/offsets/reset", `{"topic":"orders","to":"earliest"}`, 200},
		{fetch, "GET", "/v1/topics/orders", "", 200},
		{fetch, "GET", "/v1/topics/orders/partitions/0/records?offset=0", "", 200},
		{fetch, "GET", "/v1/topics/orders/partitions/0/offsets", "", 200},
		{fetch, "GET", "/v1/groups/billing/offsets?topic=orders", "", 200},
		{fetch, "GET", "/v1/groups/billing", "", 200},
	}
	for _, row := range rows {
		for _, c := range []struct {
			name, token string
			status      int
			code        string
		}{
			{"no token", "", 401, "unauthorized"}, {"malformed", "tl_x", 401, "unauthorized"},
			{"wrong secret", wrong, 401, "unauthorized"}, {"expired", expired, 401, "unauthorized"},
			{"revoked", revoked, 401, "unauthorized"},
			{"out of scope", other, 403, "forbidden"},
		} {
			before := state()
			r := call(row.fn, c.token, row.method, row.path, row.body, false)
			if r.Status != c.status || !strings.Contains(string(r.Body), `"code":"`+c.code+`"`) {
				t.Errorf("%s %s, %s: %d %s, want %d %s", row.method, row.path, c.name, r.Status, r.Body, c.status, c.code)
			}
			if after := state(); after != before {
				t.Errorf("%s %s, %s: state changed:\n%s-> %s", row.method, row.path, c.name, before, after)
			}
		}
		if r := call(row.fn, in, row.method, row.path, row.body, false); r.Status != row.ok {
			t.Errorf("%s %s in scope: %d %s, want %d", row.method, row.path, r.Status, r.Body, row.ok)
		}
	}
	if r := call(fetch, "", "GET", "/v1/health", "", false); r.Status != 200 {
		t.Errorf("health without a token: %d", r.Status)
	}
	for _, fn := range []*rie{produce, fetch} {
		out := fn.out.String()
		for _, s := range []string{admin, in, other, revoked} {
			if strings.Contains(out, s[len(s)-64:]) {
				t.Errorf("%s logged a secret", fn.name)
			}
		}
	}
}
