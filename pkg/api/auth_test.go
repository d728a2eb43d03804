package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/server"
)

// stepClock is a clock the tests move by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// authServer is the local server with token auth on, a hand-moved clock,
// and every log line (debug included) kept.
type authServer struct {
	t    *testing.T
	url  string
	clk  *stepClock
	log  *syncBuffer
	srv  *server.Server
	http *http.Client
}

func newAuthServer(t *testing.T, dataDir string) *authServer {
	t.Helper()
	clk := &stepClock{t: time.Now()}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := server.Open(context.Background(), server.Config{DataDir: dataDir, CompactInterval: -1, Logger: log,
		Auth: server.AuthTokens, AuthOptions: []auth.Option{auth.WithClock(clk.Now)}})
	if err != nil {
		t.Fatalf("server.Open: %v", err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Errorf("server.Close: %v", err)
		}
	})
	return &authServer{t: t, url: hs.URL, clk: clk, log: logs, srv: s, http: hs.Client()}
}

// call sends method path with body (nil, a string, or JSON of anything
// else) and the Authorization header "Bearer <token>" (none for "").
func (a *authServer) call(token, method, path string, body any) response {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	res, err := a.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

func (a *authServer) must(token, method, path string, body any, want int, out any) response {
	a.t.Helper()
	r := a.call(token, method, path, body)
	if r.status != want {
		a.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			a.t.Fatal(err)
		}
	}
	return r
}

type madeToken struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// bootstrap makes the first admin token straight through the verifier,
// as `tierlog tokens create --data-dir` and the first start do.
func (a *authServer) bootstrap() string {
	a.t.Helper()
	all := ""
	_, secret, err := a.srv.Tokens.Create(context.Background(), "admin", 0, meta.TokenScope{
		Topics: &meta.NameSet{Prefix: &all}, Groups: &meta.NameSet{Prefix: &all},
		Operations: []string{"produce", "consume", "groups", "admin"}})
	if err != nil {
		a.t.Fatal(err)
	}
	return "Bearer " + secret
}

func (a *authServer) token(admin string, scope map[string]any, expiresAt int64) madeToken {
	a.t.Helper()
	body := map[string]any{"description": "test", "scope": scope}
	if expiresAt != 0 {
		body["expires_at"] = expiresAt
	}
	var m madeToken
	a.must(admin, "POST", "/v1/tokens", body, http.StatusCreated, &m)
	return m
}

// state is everything the matrix's requests could change, read with the
// admin token: topics, records and offsets, groups and their offsets and
// members, tokens.
func (a *authServer) state(admin string) string {
	a.t.Helper()
	var b strings.Builder
	for _, p := range []string{"/v1/topics", "/v1/topics/orders/partitions/0/offsets", "/v1/groups",
		"/v1/groups/billing/offsets?topic=orders", "/v1/tokens"} {
		r := a.call(admin, "GET", p, nil)
		fmt.Fprintf(&b, "%s %d %s\n", p, r.status, r.body)
	}
	r := a.call(admin, "GET", "/v1/groups/billing", nil)
	if r.status == http.StatusOK {
		var g struct {
			Generation int64 `json:"generation"`
			Members    []struct {
				MemberID string `json:"member_id"`
			} `json:"members"`
		}
		_ = json.Unmarshal(r.body, &g)
		fmt.Fprintf(&b, "group %d %v\n", g.Generation, g.Members)
	}
	return b.String()
}

func scopeAll(prefix *string) scopeArg {
	return scopeArg{Topics: &nameArg{Prefix: prefix}, Groups: &nameArg{Prefix: prefix},
		Operations: []string{"produce", "consume", "groups", "admin"}}
}

type nameArg struct {
	Prefix *string  `json:"prefix,omitempty"`
	Exact  *string  `json:"exact,omitempty"`
	Names  []string `json:"names,omitempty"`
}

type scopeArg struct {
	Topics     *nameArg `json:"topics,omitempty"`
	Groups     *nameArg `json:"groups,omitempty"`
	Operations []string `json:"operations"`
}

func scopeMap(s scopeArg) map[string]any {
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// TestAuthMatrix: every route of the route table with no token, a
// malformed one, a wrong secret, an expired, a revoked, one outside the
// scope (other names; and the right names without the route's operation)
// and one in scope. Refusals are 401 (with WWW-Authenticate: Bearer) or
// 403 in the error shape, and change nothing; in scope answers the
// route's success. No secret is ever in a log line or an answer.
func TestAuthMatrix(t *testing.T) {
	a := newAuthServer(t, t.TempDir())
	admin := a.bootstrap()
	var secrets []string
	secrets = append(secrets, admin[len(admin)-64:])

	// The data the routes touch: topic orders with a record, group
	// billing with an offset.
	a.must(admin, "POST", "/v1/topics", map[string]any{"name": "orders"}, 201, nil)
	a.must(admin, "POST", "/v1/topics", map[string]any{"name": "other"}, 201, nil)
	a.must(admin, "POST", "/v1/topics/orders/records", `{"records":[{"value":"a"},{"value":"b"}]}`, 200, nil)
	a.must(admin, "PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, 204, nil)

	ops := []string{"produce", "consume", "groups", "admin"}
	inScope := scopeArg{Topics: &nameArg{Names: []string{"orders", "fresh"}}, Groups: &nameArg{Names: []string{"billing", "subs1"}}, Operations: ops}
	otherNames := scopeArg{Topics: &nameArg{Names: []string{"other"}}, Groups: &nameArg{Names: []string{"audit"}}, Operations: ops}
	in := a.token(admin, scopeMap(inScope), 0)
	out := a.token(admin, scopeMap(otherNames), 0)
	expiring := a.token(admin, scopeMap(inScope), a.clk.Now().Add(time.Minute).UnixMilli())
	revoked := a.token(admin, scopeMap(inScope), 0)
	sacrifice := a.token(admin, scopeMap(inScope), 0)
	for _, m := range []madeToken{in, out, expiring, revoked, sacrifice} {
		secrets = append(secrets, strings.TrimPrefix(m.Token, "tl_"+m.ID+"_"))
	}
	a.must(admin, "DELETE", "/v1/tokens/"+revoked.ID, nil, 204, nil)
	a.clk.Add(2 * time.Minute) // expiring has expired
	wrong := "Bearer tl_" + in.ID + "_" + strings.Repeat("0", 64)

	// Tokens with the right names but without the operation a route
	// needs: by the route's operation.
	all := ""
	without := map[auth.Op]string{}
	for op, grant := range map[auth.Op][]string{
		auth.Produce: {"consume", "groups", "admin"}, auth.Consume: {"produce", "groups", "admin"},
		auth.Groups: {"produce", "consume", "admin"}, auth.Admin: {"produce", "consume", "groups"},
		auth.Describe: {"groups"},
	} {
		s := inScope
		s.Operations = grant
		without[op] = "Bearer " + a.token(admin, scopeMap(s), 0).Token
	}
	noAdmin := scopeAll(&all)
	noAdmin.Operations = []string{"produce", "consume", "groups"}
	without[auth.ManageTokens] = "Bearer " + a.token(admin, scopeMap(noAdmin), 0).Token

	var member string
	type row struct {
		method, path string
		body         any
		op           auth.Op
		ok           int
		// listed: a list route, which answers out-of-scope tokens 200
		// with what their scope covers (here nothing of orders/billing).
		listed bool
		tokens bool // a token route: in scope is the admin token
	}
	rows := []row{
		{"GET", "/v1/health", nil, auth.Open, 200, false, false},
		{"GET", "/v1/topics", nil, auth.Describe, 200, true, false},
		{"POST", "/v1/topics", `{"name":"fresh"}`, auth.Admin, 201, false, false},
		{"GET", "/v1/topics/orders", nil, auth.Describe, 200, false, false},
		{"PATCH", "/v1/topics/orders", `{"retention_ms":1000000}`, auth.Admin, 200, false, false},
		{"POST", "/v1/topics/orders/records", `{"records":[{"value":"c"}]}`, auth.Produce, 200, false, false},
		{"POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"d"}]}`, auth.Produce, 200, false, false},
		{"GET", "/v1/topics/orders/partitions/0/records?offset=0", nil, auth.Consume, 200, false, false},
		{"GET", "/v1/topics/orders/partitions/0/offsets", nil, auth.Consume, 200, false, false},
		{"GET", "/v1/groups/billing/offsets?topic=orders", nil, auth.Consume, 200, false, false},
		{"PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":2}]}`, auth.Groups, 204, false, false},
		{"GET", "/v1/groups", nil, auth.Consume, 200, true, false},
		{"GET", "/v1/groups/billing", nil, auth.Consume, 200, false, false},
		{"POST", "/v1/groups/billing/offsets/reset", `{"topic":"orders","to":"earliest"}`, auth.Admin, 200, false, false},
		{"POST", "/v1/groups/billing/members", `{"topics":["orders"]}`, auth.Groups, 201, false, false},
		{"POST", "/v1/groups/billing/members/{member}/heartbeat", nil, auth.Groups, 200, false, false},
		{"DELETE", "/v1/groups/billing/members/{member}", nil, auth.Groups, 204, false, false},
		{"POST", "/v1/subscriptions", `{"name":"subs1","topic":"orders","target":{"type":"http","url":"http://127.0.0.1:9/"},"enabled":false}`, auth.Admin, 201, false, false},
		{"GET", "/v1/subscriptions", nil, auth.Admin, 200, true, false},
		{"GET", "/v1/subscriptions/subs1", nil, auth.Admin, 200, false, false},
		{"PATCH", "/v1/subscriptions/subs1", `{"batch_size":10}`, auth.Admin, 200, false, false},
		{"DELETE", "/v1/subscriptions/subs1", nil, auth.Admin, 204, false, false},
		{"DELETE", "/v1/groups/billing", nil, auth.Admin, 204, false, false},
		{"DELETE", "/v1/topics/fresh", nil, auth.Admin, 204, false, false},
		{"POST", "/v1/tokens", `{"scope":{"operations":["consume"]}}`, auth.ManageTokens, 201, false, true},
		{"GET", "/v1/tokens", nil, auth.ManageTokens, 200, false, true},
		{"DELETE", "/v1/tokens/" + sacrifice.ID, nil, auth.ManageTokens, 204, false, true},
	}
	covered := map[string]bool{}
	for _, rt := range rows {
		pattern := strings.NewReplacer("orders", "{topic}", "fresh", "{topic}", "billing", "{group}", "subs1", "{name}",
			"/partitions/0/", "/partitions/{partition}/", sacrifice.ID, "{id}").Replace(strings.SplitN(rt.path, "?", 2)[0])
		covered[rt.method+" "+pattern] = true
		path := strings.ReplaceAll(rt.path, "{member}", member)
		cases := []struct {
			name, token string
			status      int
			code        string
		}{
			{"no token", "", 401, "unauthorized"},
			{"malformed", "Bearer tl_nonsense", 401, "unauthorized"},
			{"wrong secret", wrong, 401, "unauthorized"},
			{"expired", "Bearer " + expiring.Token, 401, "unauthorized"},
			{"revoked", "Bearer " + revoked.Token, 401, "unauthorized"},
			{"other names", "Bearer " + out.Token, 403, "forbidden"},
			{"without the operation", without[rt.op], 403, "forbidden"},
		}
		if rt.op == auth.Open {
			for i := range cases {
				cases[i].status, cases[i].code = rt.ok, ""
			}
		}
		for _, c := range cases {
			if c.name == "without the operation" && rt.op == auth.Open {
				continue
			}
			status, code := c.status, c.code
			if rt.listed && c.name == "other names" {
				status, code = rt.ok, ""
			}
			before := a.state(admin)
			r := a.call(c.token, rt.method, path, rt.body)
			if r.status != status {
				t.Errorf("%s %s, %s: %d %s, want %d", rt.method, path, c.name, r.status, r.body, status)
				continue
			}
			if code != "" {
				checkError(t, rt.method+" "+path+" "+c.name, r, status, code)
				if status == 401 && r.header.Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("%s %s, %s: WWW-Authenticate %q, want Bearer", rt.method, path, c.name, r.header.Get("WWW-Authenticate"))
				}
			}
			if rt.listed && c.name == "other names" && (bytes.Contains(r.body, []byte(`"orders"`)) || bytes.Contains(r.body, []byte(`"billing"`))) {
				t.Errorf("%s %s, %s: the list shows names outside the scope: %s", rt.method, path, c.name, r.body)
			}
			if after := a.state(admin); after != before {
				t.Errorf("%s %s, %s (%d): state changed:\n%s\n-> %s", rt.method, path, c.name, r.status, before, after)
			}
		}
		good := "Bearer " + in.Token
		if rt.tokens {
			good = admin
		}
		r := a.call(good, rt.method, path, rt.body)
		if r.status != rt.ok {
			t.Fatalf("%s %s in scope: %d %s, want %d", rt.method, path, r.status, r.body, rt.ok)
		}
		if strings.HasSuffix(rt.path, "/members") {
			var m struct {
				MemberID string `json:"member_id"`
			}
			_ = json.Unmarshal(r.body, &m)
			member = m.MemberID
		}
		if rt.method == "POST" && rt.path == "/v1/tokens" {
			var m madeToken
			_ = json.Unmarshal(r.body, &m)
			secrets = append(secrets, strings.TrimPrefix(m.Token, "tl_"+m.ID+"_"))
		}
		if rt.path == "/v1/tokens" && rt.method == "GET" && bytes.Contains(r.body, []byte(`"token"`)) {
			t.Errorf("GET /v1/tokens shows secrets: %s", r.body)
		}
	}
	for _, route := range apiRoutes() {
		if !covered[route] {
			t.Errorf("the matrix has no row for %s", route)
		}
	}
	metrics := a.call(admin, "GET", "/metrics", nil)
	if metrics.status != 200 {
		t.Errorf("GET /metrics with the admin token: %d", metrics.status)
	}
	if r := a.call(without[auth.Admin], "GET", "/metrics", nil); r.status != 403 {
		t.Errorf("GET /metrics without admin: %d, want 403", r.status)
	}
	logs := a.log.String()
	if !strings.Contains(logs, "request") {
		t.Fatal("the server logged nothing: the secret check below would prove nothing")
	}
	for _, s := range secrets {
		if len(s) != 64 {
			t.Fatalf("secret %q: not the 64 hex digits of a token", s)
		}
		if strings.Contains(logs, s) || strings.Contains(string(metrics.body), s) {
			t.Errorf("a secret is in the log or the metrics")
		}
	}
}

func apiRoutes() []string {
	var out []string
	for _, rt := range api.Routes() {
		out = append(out, rt.Method+" "+rt.Path)
	}
	return out
}

// TestAuthBodyNames: topics and groups named in bodies and queries are
// checked against the scope like those in paths, before anything is read
// or changed.
func TestAuthBodyNames(t *testing.T) {
	a := newAuthServer(t, t.TempDir())
	admin := a.bootstrap()
	for _, name := range []string{"orders", "payments"} {
		a.must(admin, "POST", "/v1/topics", map[string]any{"name": name}, 201, nil)
	}
	a.must(admin, "POST", "/v1/topics/payments/records", `{"records":[{"value":"a"}]}`, 200, nil)
	orders, billing := "orders", "billing"
	tok := "Bearer " + a.token(admin, scopeMap(scopeArg{Topics: &nameArg{Exact: &orders}, Groups: &nameArg{Exact: &billing},
		Operations: []string{"produce", "consume", "groups", "admin"}}), 0).Token
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":0},{"topic":"payments","partition":0,"offset":1}]}`},
		{"POST", "/v1/groups/billing/members", `{"topics":["orders","payments"]}`},
		{"POST", "/v1/groups/billing/offsets/reset", `{"topic":"payments","to":"latest"}`},
		{"GET", "/v1/groups/billing/offsets?topic=payments", ""},
		{"POST", "/v1/topics", `{"name":"payments2"}`},
	} {
		before := a.state(admin)
		var body any
		if c.body != "" {
			body = c.body
		}
		r := a.call(tok, c.method, c.path, body)
		msg := checkError(t, c.method+" "+c.path, r, 403, "forbidden")
		if !strings.Contains(msg, "payments") {
			t.Errorf("%s %s: message %q does not name the topic outside the scope", c.method, c.path, msg)
		}
		if after := a.state(admin); after != before {
			t.Errorf("%s %s: state changed on a refusal:\n%s\n-> %s", c.method, c.path, before, after)
		}
	}
	// The same with the body inside the scope is served.
	a.must(tok, "PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":0}]}`, 204, nil)
	var list struct {
		Topics []struct {
			Name string `json:"name"`
		} `json:"topics"`
	}
	a.must(tok, "GET", "/v1/topics", nil, 200, &list)
	if len(list.Topics) != 1 || list.Topics[0].Name != "orders" {
		t.Errorf("GET /v1/topics with a token for orders: %+v", list.Topics)
	}
	// A group's description names only the offset topics the token
	// covers, as Kafka's offset fetch leaves out topics the principal may
	// not describe.
	a.must(admin, "PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"payments","partition":0,"offset":1}]}`, 204, nil)
	var desc struct {
		OffsetTopics []string `json:"offset_topics"`
	}
	a.must(admin, "GET", "/v1/groups/billing", nil, 200, &desc)
	if len(desc.OffsetTopics) != 2 {
		t.Fatalf("GET /v1/groups/billing as admin: offset_topics %v, want orders and payments", desc.OffsetTopics)
	}
	a.must(tok, "GET", "/v1/groups/billing", nil, 200, &desc)
	if len(desc.OffsetTopics) != 1 || desc.OffsetTopics[0] != "orders" {
		t.Errorf("GET /v1/groups/billing with a token for orders: offset_topics %v, want [orders]", desc.OffsetTopics)
	}
}

// TestTokenRoutes: the create request's checks, revocation, and a token
// that may not create one wider than itself.
func TestTokenRoutes(t *testing.T) {
	a := newAuthServer(t, t.TempDir())
	admin := a.bootstrap()
	now := a.clk.Now().UnixMilli()
	for _, c := range []struct{ body, want string }{
		{`{}`, "scope is required"},
		{`{"scope":{"operations":[]}}`, "operations"},
		{`{"scope":{"operations":["write"]}}`, "write"},
		{`{"scope":{"operations":["consume"],"topics":{"prefix":"a","exact":"b"}}}`, "exactly one"},
		{`{"scope":{"operations":["consume"],"topics":{"glob":"a*"}}}`, "glob"},
		{`{"scope":{"operations":["consume"]},"expires_at":` + fmt.Sprint(now-1) + `}`, "not in the future"},
		{`{"scope":{"operations":["consume"]},"owner":"x"}`, "owner"},
	} {
		r := a.call(admin, "POST", "/v1/tokens", c.body)
		if msg := checkError(t, c.body, r, 400, "invalid_request"); !strings.Contains(msg, c.want) {
			t.Errorf("%s: message %q does not say %q", c.body, msg, c.want)
		}
	}
	var made struct {
		ID        string   `json:"id"`
		Token     string   `json:"token"`
		ExpiresAt *int64   `json:"expires_at"`
		CreatedAt int64    `json:"created_at"`
		Scope     scopeArg `json:"scope"`
	}
	exp := now + 3_600_000
	orders := "orders"
	r := a.must(admin, "POST", "/v1/tokens", map[string]any{"description": "dash", "expires_at": exp,
		"scope": scopeMap(scopeArg{Topics: &nameArg{Prefix: &orders}, Operations: []string{"consume", "admin"}})}, 201, &made)
	if made.ExpiresAt == nil || *made.ExpiresAt != exp || made.CreatedAt != now || !strings.HasPrefix(made.Token, "tl_"+made.ID+"_") ||
		made.Scope.Topics == nil || made.Scope.Topics.Prefix == nil || *made.Scope.Topics.Prefix != "orders" {
		t.Errorf("create answer: %s", r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("create answer Cache-Control %q, want no-store", r.header.Get("Cache-Control"))
	}
	// A narrower admin may not manage tokens at all (topics scope is not
	// {"prefix":""}); an all-topics admin without groups may not create
	// one with groups.
	checkError(t, "narrow admin creates", a.call("Bearer "+made.Token, "POST", "/v1/tokens", `{"scope":{"operations":["consume"]}}`), 403, "forbidden")
	all := ""
	topicsAdmin := "Bearer " + a.token(admin, scopeMap(scopeArg{Topics: &nameArg{Prefix: &all}, Operations: []string{"admin", "consume"}}), 0).Token
	a.must(topicsAdmin, "POST", "/v1/tokens", `{"scope":{"topics":{"exact":"x"},"operations":["consume"]}}`, 201, nil)
	msg := checkError(t, "wider", a.call(topicsAdmin, "POST", "/v1/tokens", `{"scope":{"groups":{"prefix":""},"operations":["consume"]}}`), 403, "forbidden")
	if !strings.Contains(msg, "wider") {
		t.Errorf("wider token refused with %q", msg)
	}
	checkError(t, "produce beyond", a.call(topicsAdmin, "POST", "/v1/tokens", `{"scope":{"operations":["produce"]}}`), 403, "forbidden")

	checkError(t, "bad id", a.call(admin, "DELETE", "/v1/tokens/XYZ", nil), 400, "invalid_request")
	checkError(t, "unknown id", a.call(admin, "DELETE", "/v1/tokens/0123456789abcdef", nil), 404, "token_not_found")
	a.must("Bearer "+made.Token, "GET", "/v1/topics/orders", nil, 404, nil) // valid token: topic_not_found
	a.must(admin, "DELETE", "/v1/tokens/"+made.ID, nil, 204, nil)
	checkError(t, "revoked", a.call("Bearer "+made.Token, "GET", "/v1/topics/orders", nil), 401, "unauthorized")
	checkError(t, "revoke again", a.call(admin, "DELETE", "/v1/tokens/"+made.ID, nil), 404, "token_not_found")
}

// TestStreamEndsOnRevocation: a stream opened with a token ends with an
// unauthorized error event once the token is revoked, instead of
// delivering the next record.
func TestStreamEndsOnRevocation(t *testing.T) {
	a := newAuthServer(t, t.TempDir())
	admin := a.bootstrap()
	a.must(admin, "POST", "/v1/topics", map[string]any{"name": "orders"}, 201, nil)
	a.must(admin, "POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"first"}]}`, 200, nil)
	orders := "orders"
	tok := a.token(admin, scopeMap(scopeArg{Topics: &nameArg{Exact: &orders}, Operations: []string{"consume"}}), 0)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/topics/orders/partitions/0/records?offset=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	res, err := a.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	st := &sseStream{res: res, r: bufio.NewReader(res.Body), cancel: cancel, t: t}
	defer st.close()
	if res.StatusCode != 200 {
		t.Fatalf("open stream: %d", res.StatusCode)
	}
	nextEvent := func() sseEvent {
		t.Helper()
		for {
			ev, err := st.next()
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if !ev.comment {
				return ev
			}
		}
	}
	if ev := nextEvent(); !strings.Contains(ev.data, "first") {
		t.Fatalf("first event %+v, want the record", ev)
	}
	a.must(admin, "DELETE", "/v1/tokens/"+tok.ID, nil, 204, nil)
	a.clk.Add(2 * auth.DefaultCacheTTL) // past any cached verdict
	a.must(admin, "POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"second"}]}`, 200, nil)
	ev := nextEvent()
	if ev.event != "error" || !strings.Contains(ev.data, "unauthorized") || strings.Contains(ev.data, "second") {
		t.Fatalf("after revocation the stream sent %+v, want an unauthorized error event", ev)
	}
	if _, err := st.next(); err == nil {
		t.Error("the stream went on after its error event")
	}
}
