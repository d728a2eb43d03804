package dynamo

import (
	"os"
	"sync"
	"testing"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

// dynalite is one dynalite process shared by this package's tests, started
// on first use and killed by TestMain.
var dynalite struct {
	once sync.Once
	proc *testenv.Process
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	dynalite.proc.Stop()
	os.Exit(code)
}

func TestConformanceDynalite(t *testing.T) {
	metatest.Run(t, storeFactory(testClient(dynaliteEndpoint(t))))
}

// dynaliteEndpoint returns the URL of the shared dynalite, starting it
// (and installing it with npm ci) the first time. Missing node or npm is a
// failure, not a skip: CI installs them. With -short (make unit) it skips
// the test: dynalite is a Node.js process.
func dynaliteEndpoint(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs dynalite (Node.js): skipped with -short (make unit); make test runs it")
	}
	dynalite.once.Do(func() { dynalite.proc, dynalite.err = testenv.StartDynalite() })
	if dynalite.err != nil {
		t.Fatalf("dynalite: %v", dynalite.err)
	}
	return dynalite.proc.Endpoint
}

func TestTokenConformanceDynalite(t *testing.T) {
	newStore := storeFactory(testClient(dynaliteEndpoint(t)))
	metatest.RunTokens(t, func(t *testing.T) meta.TokenStore { return newStore(t).(meta.TokenStore) })
}
