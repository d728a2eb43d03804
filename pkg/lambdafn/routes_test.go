package lambdafn

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

func TestRouteMethods(t *testing.T) {
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/v1/health", []string{"GET", "HEAD"}},
		{"/v1/topics", []string{"GET", "HEAD", "POST"}},
		{"/v1/topics/orders", []string{"GET", "HEAD", "DELETE", "PATCH"}},
		{"/v1/topics/..", []string{"GET", "HEAD", "DELETE", "PATCH"}}, // a name the API refuses (400), not a route miss
		{"/v1/topics/orders/records", []string{"POST"}},
		{"/v1/topics/orders/partitions/3/records", []string{"GET", "HEAD", "POST"}},
		{"/v1/topics/orders/partitions/3/offsets", []string{"GET", "HEAD"}},
		{"/v1/groups/g/offsets", []string{"GET", "HEAD", "PUT"}},
		{"/v1/groups", []string{"GET", "HEAD"}},
		{"/v1/groups/g", []string{"GET", "HEAD", "DELETE"}},
		{"/v1/groups/g/members/m-1/heartbeat", []string{"POST"}},
		{"/v1/groups/g/members/m-1", []string{"DELETE"}},
		{"/v1/topics//records", nil},
		{"/v1/topics/orders/", nil},
		{"/metrics", nil},
		{"/", nil},
		{"", nil},
		{"/v2/topics", nil},
		{"/v1/topics/orders/partitions/3/records/extra", nil},
	} {
		if got := routeMethods(c.path); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.path, got, c.want)
		}
	}
}

func TestRouteFilter(t *testing.T) {
	var served []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = append(served, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "15")
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	produce := &routeFilter{function: "produce", methods: WriteMethods, next: next}
	fetch := &routeFilter{function: "fetch", methods: ReadMethods, next: next}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-42"})
	for _, c := range []struct {
		h             http.Handler
		method, path  string
		status        int
		code, allow   string
		passed, empty bool
	}{
		{produce, "POST", "/v1/topics", 200, "", "", true, false},
		{produce, "PUT", "/v1/groups/g/offsets", 200, "", "", true, false},
		{produce, "DELETE", "/v1/topics/t", 200, "", "", true, false},
		{produce, "GET", "/v1/topics/t", 405, "method_not_allowed", "GET, HEAD, DELETE, PATCH", false, false},
		{produce, "PATCH", "/v1/topics/t", 200, "", "", true, false},
		{produce, "POST", "/v1/groups/g/members/m-1/heartbeat", 200, "", "", true, false},
		{produce, "GET", "/v1/health", 405, "method_not_allowed", "GET, HEAD", false, false},
		{produce, "OPTIONS", "/v1/topics", 405, "method_not_allowed", "GET, HEAD, POST", false, false},
		{produce, "POST", "/nope", 404, "not_found", "", false, false},
		{fetch, "GET", "/v1/topics/t/partitions/0/records", 200, "", "", true, false},
		{fetch, "HEAD", "/v1/topics/t/partitions/0/offsets", 200, "", "", true, true},
		{fetch, "POST", "/v1/topics/t/records", 405, "method_not_allowed", "POST", false, false},
		{fetch, "PUT", "/v1/groups/g/offsets", 405, "method_not_allowed", "GET, HEAD, PUT", false, false},
		{fetch, "GET", "/metrics", 404, "not_found", "", false, false},
		{fetch, "HEAD", "/metrics", 404, "not_found", "", false, true},
		// What API Gateway's $default route sends fetch: anything no
		// route names, in docs/api.md's shape.
		{fetch, "PATCH", "/v1/topics/t", 405, "method_not_allowed", "GET, HEAD, DELETE, PATCH", false, false},
		{fetch, "GET", "/v1/groups", 200, "", "", true, false},
		{fetch, "OPTIONS", "/v1/health", 405, "method_not_allowed", "GET, HEAD", false, false},
		{fetch, "DELETE", "/v2/anything", 404, "not_found", "", false, false},
		{fetch, "GET", "/", 404, "not_found", "", false, false},
	} {
		served = nil
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil).WithContext(ctx))
		name := c.h.(*routeFilter).function + " " + c.method + " " + c.path
		if rec.Code != c.status || (len(served) == 1) != c.passed {
			t.Errorf("%s: status %d served %v, want %d passed %v", name, rec.Code, served, c.status, c.passed)
			continue
		}
		if c.empty != (rec.Body.Len() == 0) {
			t.Errorf("%s: body %q", name, rec.Body.String())
		}
		if c.code == "" {
			continue
		}
		if rec.Header().Get("Allow") != c.allow || rec.Header().Get("X-Request-Id") != "req-42" ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v", name, rec.Header())
		}
		if c.method == "HEAD" {
			continue
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != c.code || body.Error.Message == "" {
			t.Errorf("%s: body %q (%v)", name, rec.Body.String(), err)
		}
	}
}
