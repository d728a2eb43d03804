package lambdafn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/server"
)

// apiRoutes must match package api's routes exactly: for every path, the
// API's own 405 (for a method no route serves) names the same methods.
func TestRoutesMatchAPI(t *testing.T) {
	srv, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	for _, rt := range apiRoutes {
		path := "/" + strings.ReplaceAll(strings.Join(rt.segs, "/"), "{}", "x1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("OPTIONS", path, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("OPTIONS %s: %d %s, want the API's 405", path, rec.Code, rec.Body)
			continue
		}
		if got, want := rec.Header().Get("Allow"), strings.Join(rt.methods, ", "); got != want {
			t.Errorf("%s: the API allows %q, the route filter thinks %q", path, got, want)
		}
	}
	// And a path the filter does not know is not a route of the API.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/topics/x1/partitions/x1/other", nil))
	if rec.Code != http.StatusNotFound || routeMethods("/v1/topics/x1/partitions/x1/other") != nil {
		t.Errorf("unknown path: API %d", rec.Code)
	}
}
