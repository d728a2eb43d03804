package dynamo

import (
	"net/http/httptest"
	"testing"

	"github.com/truora/minidyn/server"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

// startMinidyn serves minidyn's DynamoDB HTTP API on 127.0.0.1 for the
// test's lifetime and returns a client for it.
func startMinidyn(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(server.NewServer())
	t.Cleanup(srv.Close)
	return srv
}

func TestConformanceMinidyn(t *testing.T) {
	srv := startMinidyn(t)
	metatest.Run(t, storeFactory(testClient(srv.URL)))
}

func TestTokenConformanceMinidyn(t *testing.T) {
	srv := startMinidyn(t)
	newStore := storeFactory(testClient(srv.URL))
	metatest.RunTokens(t, func(t *testing.T) meta.TokenStore { return newStore(t).(meta.TokenStore) })
}
