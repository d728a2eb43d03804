package lambdafn

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
)

// withToken is ev with "Authorization: Bearer tok" ("" for none).
func withToken(ev events.APIGatewayV2HTTPRequest, tok string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{}
	for k, v := range ev.Headers {
		h[k] = v
	}
	if tok != "" {
		h["authorization"] = "Bearer " + tok
	}
	ev.Headers = h
	return ev
}

// withIAM is ev as API Gateway passes a request it authorized with IAM.
func withIAM(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			AccessKey: "AKIDEXAMPLE", AccountID: "123456789012", UserARN: "arn:aws:iam::123456789012:user/ops"},
	}
	return ev
}

// TestFunctionsTokenAuth: with TIERLOG_AUTH=tokens the produce and fetch
// functions refuse every route but health without a valid token in scope
// (401, 403, nothing changed) and serve it with one; the first token is
// made by an IAM-authorized call to POST /v1/tokens.
func TestFunctionsTokenAuth(t *testing.T) {
	awsEnv(t)
	hot := t.TempDir()
	extra := map[string]string{EnvAuth: AuthTokens}
	produce, produceOut := newFunction(t, "produce", hot, extra)
	fetch, fetchOut := newFunction(t, "fetch", hot, extra)
	ph, fh := produce.HTTP(WriteMethods...), fetch.HTTP(ReadMethods...)
	call := func(h HTTPHandler, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, err := h(lambdaCtx(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	// Bootstrap: unsigned and tokenless is 401; IAM-authorized makes the
	// first admin token.
	adminBody := `{"description":"first","scope":{"topics":{"prefix":""},"groups":{"prefix":""},"operations":["produce","consume","groups","admin"]}}`
	if r := call(ph, event("POST", "/v1/tokens", adminBody)); r.StatusCode != 401 || r.Headers["Www-Authenticate"] != "Bearer" {
		t.Fatalf("POST /v1/tokens without IAM or token: %d %v %s", r.StatusCode, r.Headers, r.Body)
	}
	r := call(ph, withIAM(event("POST", "/v1/tokens", adminBody)))
	if r.StatusCode != 201 {
		t.Fatalf("IAM-authorized POST /v1/tokens: %d %s", r.StatusCode, r.Body)
	}
	var made struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	_ = json.Unmarshal([]byte(r.Body), &made)
	admin := made.Token
	mk := func(body string) string {
		t.Helper()
		r := call(ph, withToken(event("POST", "/v1/tokens", body), admin))
		if r.StatusCode != 201 {
			t.Fatalf("POST /v1/tokens %s: %d %s", body, r.StatusCode, r.Body)
		}
		var m struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal([]byte(r.Body), &m)
		return m.Token
	}
	in := mk(`{"scope":{"topics":{"exact":"orders"},"groups":{"exact":"billing"},"operations":["produce","consume","groups","admin"]}}`)
	other := mk(`{"scope":{"topics":{"exact":"other"},"groups":{"exact":"billing"},"operations":["produce","consume","groups","admin"]}}`)
	revoked := mk(`{"scope":{"topics":{"exact":"orders"},"operations":["consume"]}}`)
	if r := call(ph, withToken(event("DELETE", "/v1/tokens/"+revoked[3:19], ""), admin)); r.StatusCode != 204 {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Body)
	}
	// An expired token, written to the table as it would be once its time
	// passed (the API refuses to make one in the past).
	sec := auth.NewSecret()
	orders := "orders"
	if err := produce.Server().Meta.(meta.TokenStore).PutToken(context.Background(), meta.Token{ID: sec.ID, Hash: sec.Hash,
		ExpiresMs: time.Now().Add(-time.Minute).UnixMilli(), Scope: meta.TokenScope{Topics: &meta.NameSet{Exact: &orders},
			Operations: []string{"produce", "consume", "groups", "admin"}}}); err != nil {
		t.Fatal(err)
	}
	expired := sec.Token
	wrong := in[:len(in)-64] + strings.Repeat("0", 64)

	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/topics", "/v1/topics/orders/partitions/0/offsets", "/v1/groups/billing/offsets?topic=orders"} {
			r := call(fh, withToken(event("GET", p, ""), admin))
			b.WriteString(p + " " + r.Body + "\n")
		}
		return b.String()
	}
	rows := []struct {
		h            HTTPHandler
		method, path string
		body         string
		ok           int
	}{
		{ph, "POST", "/v1/topics", `{"name":"orders"}`, 201},
		{ph, "POST", "/v1/topics/orders/records", `{"records":[{"value":"a"}]}`, 200},
		{ph, "POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"b"}]}`, 200},
		{ph, "PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, 204},
		{ph, "PATCH", "/v1/topics/orders", `{"retention_ms":100000}`, 200},
		{fh, "GET", "/v1/topics/orders", "", 200},
		{fh, "GET", "/v1/topics/orders/partitions/0/records?offset=0", "", 200},
		{fh, "GET", "/v1/topics/orders/partitions/0/offsets", "", 200},
		{fh, "GET", "/v1/groups/billing/offsets?topic=orders", "", 200},
		{fh, "GET", "/v1/tokens", "", 403}, // in scope for topics, but not an all-topics admin
	}
	for _, row := range rows {
		for _, c := range []struct {
			name, tok string
			status    int
		}{
			{"no token", "", 401}, {"malformed", "tl_x", 401}, {"wrong secret", wrong, 401},
			{"expired", expired, 401}, {"revoked", revoked, 401}, {"out of scope", other, 403},
		} {
			before := state()
			r := call(row.h, withToken(event(row.method, row.path, row.body), c.tok))
			if r.StatusCode != c.status || !strings.Contains(r.Body, `"error":{"code":"`) {
				t.Errorf("%s %s, %s: %d %s, want %d", row.method, row.path, c.name, r.StatusCode, r.Body, c.status)
			}
			if after := state(); after != before {
				t.Errorf("%s %s, %s: state changed:\n%s-> %s", row.method, row.path, c.name, before, after)
			}
		}
		if r := call(row.h, withToken(event(row.method, row.path, row.body), in)); r.StatusCode != row.ok {
			t.Errorf("%s %s in scope: %d %s, want %d", row.method, row.path, r.StatusCode, r.Body, row.ok)
		}
	}
	if r := call(fh, event("GET", "/v1/health", "")); r.StatusCode != 200 {
		t.Errorf("health without a token: %d", r.StatusCode)
	}
	for _, out := range []string{produceOut.String(), fetchOut.String()} {
		for _, s := range []string{admin, in, other, revoked, expired} {
			if strings.Contains(out, s[len(s)-64:]) {
				t.Fatal("a secret is in a function's log")
			}
		}
	}
}
