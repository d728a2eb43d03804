package api

import (
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/auth"
)

// TestEveryRouteDeclaresAnOperation: each row of the route table names
// the operation a token needs for it, and only GET /v1/health is open.
func TestEveryRouteDeclaresAnOperation(t *testing.T) {
	for _, rt := range routeTable {
		name := rt.Method + " " + rt.Path
		switch {
		case !rt.op.Declared():
			t.Errorf("%s declares operation %q: want one of auth.Grantable, auth.Describe, auth.ManageTokens or auth.Open", name, rt.op)
		case rt.op == auth.Open && name != "GET /v1/health":
			t.Errorf("%s is open: only GET /v1/health needs no token", name)
		case strings.HasPrefix(rt.Path, "/v1/tokens") && rt.op != auth.ManageTokens:
			t.Errorf("%s declares %q: token routes need auth.ManageTokens", name, rt.op)
		}
	}
}
