package api_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
)

// TestRouteTable: every route of api.Routes is served (not a 404 or 405),
// and a method the table does not list on a path is 405 with exactly the
// table's Allow (each GET followed by HEAD).
func TestRouteTable(t *testing.T) {
	h := newServer(t).Config.Handler
	paths := map[string]bool{}
	for _, rt := range api.Routes() {
		paths[rt.Path] = true
		p := concrete(rt.Path)
		for _, m := range []string{rt.Method, headOf(rt.Method)} {
			if m == "" {
				continue
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(m, p, strings.NewReader("{}")))
			if rec.Code == http.StatusNotFound && strings.Contains(rec.Body.String(), `"not_found"`) || rec.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d %s: the table's route is not served", m, p, rec.Code, rec.Body)
			}
		}
	}
	if len(paths) != 17 {
		t.Errorf("%d paths in the route table, want API.md's 17", len(paths))
	}
	for p := range paths {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("OPTIONS", concrete(p), nil))
		allow := api.Allow(p)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != strings.Join(allow, ", ") {
			t.Errorf("OPTIONS %s: %d Allow %q, want 405 Allow %q", p, rec.Code, rec.Header().Get("Allow"), allow)
		}
		if slices.Contains(allow, "GET") != slices.Contains(allow, "HEAD") {
			t.Errorf("%s: Allow %v: GET without HEAD or HEAD without GET", p, allow)
		}
	}
}

func headOf(m string) string {
	if m == http.MethodGet {
		return http.MethodHead
	}
	return ""
}

// concrete fills a pattern's wildcards: {partition} with 0, others with x1.
func concrete(pattern string) string {
	return strings.NewReplacer("{partition}", "0", "{topic}", "x1", "{group}", "x1", "{member}", "m1", "{name}", "x1", "{id}", "0123456789abcdef").Replace(pattern)
}
