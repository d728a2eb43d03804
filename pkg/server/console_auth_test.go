package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tierlog/tierlog/pkg/server"
)

// TestConsoleUnderTokenAuth: with token auth on, the console's pages load
// without a token (a browser navigating cannot send one), and its data
// needs one, as /metrics does.
func TestConsoleUnderTokenAuth(t *testing.T) {
	s, err := server.Open(context.Background(), server.Config{DataDir: t.TempDir(), CompactInterval: -1,
		Auth: server.AuthTokens, Console: true})
	if err != nil {
		t.Fatalf("server.Open: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	for _, c := range []struct {
		path string
		want int
	}{
		{"/ui/", http.StatusOK},
		{"/ui/app.js", http.StatusOK},
		{"/ui/api/server", http.StatusUnauthorized},
		{"/ui/%61pi/server", http.StatusUnauthorized},
		{"/metrics", http.StatusUnauthorized},
		{"/v1/topics", http.StatusUnauthorized},
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		if rec.Code != c.want {
			t.Errorf("GET %s without a token: %d, want %d: %s", c.path, rec.Code, c.want, rec.Body)
		}
	}
	// Spellings of the data's path that are not it are no way around
	// the token: they reach no data.
	for _, p := range []string{"/ui//api/server", "/ui/./api/server", "/ui/x/../api/server", "/ui/api/../api/server"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code == http.StatusOK {
			t.Errorf("GET %s without a token: 200: %s", p, rec.Body)
		}
	}
}
