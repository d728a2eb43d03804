package api

import (
	"net/http"
	"time"

	"github.com/tierlog/tierlog/pkg/auth"
)

// Route is one route of docs/api.md: a method and a ServeMux path pattern
// ("/v1/topics/{topic}"). It is the one route table: New serves it, the
// Lambda route filter (pkg/lambdafn) matches paths against it, and the CDK
// stack's API Gateway routes are generated from it (go generate
// ./pkg/lambdafn writes infra/cdk/routes_gen.go; a test fails when that
// file is stale).
type Route struct {
	Method string
	Path   string
}

// routeTable is docs/api.md's routes with the operation and the handler of
// each, in the order New registers them; a path's methods are listed in its
// Allow header in this order, each GET followed by HEAD.
//
// op is what the route does, for access tokens (docs/auth.md): with token
// auth on, the registration refuses a request whose token does not grant
// op on the path's {topic} and {group} before the handler runs; a handler
// whose body names topics or groups checks them with s.authorize after
// decoding and before reading or changing anything. Every row declares
// one (TestEveryRouteDeclaresAnOperation).
//
// query is the route's query parameters, declared beside its handler
// (noParams: none): the registration refuses any other before the
// handler runs (params.check).
var routeTable = []struct {
	Route
	op    auth.Op
	serve func(*server, http.ResponseWriter, *http.Request) error
	query *params // the query parameters the route takes; any other is 400
}{
	{Route{http.MethodGet, "/v1/health"}, auth.Open, (*server).health, noParams},
	{Route{http.MethodGet, "/v1/topics"}, auth.Describe, (*server).listTopics, noParams},
	{Route{http.MethodPost, "/v1/topics"}, auth.Admin, (*server).createTopic, noParams},
	{Route{http.MethodGet, "/v1/topics/{topic}"}, auth.Describe, (*server).getTopic, noParams},
	{Route{http.MethodDelete, "/v1/topics/{topic}"}, auth.Admin, (*server).deleteTopic, noParams},
	{Route{http.MethodPost, "/v1/topics/{topic}/records"}, auth.Produce, (*server).produce, produceQuery},
	{Route{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/records"}, auth.Consume, (*server).fetch, fetchQuery},
	{Route{http.MethodPost, "/v1/topics/{topic}/partitions/{partition}/records"}, auth.Produce, (*server).producePartition, producePartitionQuery},
	{Route{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/offsets"}, auth.Consume, (*server).offsets, offsetsQuery},
	{Route{http.MethodPatch, "/v1/topics/{topic}"}, auth.Admin, (*server).patchTopic, noParams},
	{Route{http.MethodGet, "/v1/groups/{group}/offsets"}, auth.Consume, (*server).groupOffsets, groupOffsetsQuery},
	{Route{http.MethodPut, "/v1/groups/{group}/offsets"}, auth.Groups, (*server).commitGroupOffsets, noParams},
	{Route{http.MethodGet, "/v1/groups"}, auth.Consume, (*server).listGroups, noParams},
	{Route{http.MethodGet, "/v1/groups/{group}"}, auth.Consume, (*server).describeGroup, noParams},
	{Route{http.MethodDelete, "/v1/groups/{group}"}, auth.Admin, (*server).deleteGroup, noParams},
	{Route{http.MethodPost, "/v1/groups/{group}/offsets/reset"}, auth.Admin, (*server).resetGroupOffsets, noParams},
	{Route{http.MethodPost, "/v1/groups/{group}/members"}, auth.Groups, (*server).joinGroup, noParams},
	{Route{http.MethodPost, "/v1/groups/{group}/members/{member}/heartbeat"}, auth.Groups, (*server).heartbeat, noParams},
	{Route{http.MethodDelete, "/v1/groups/{group}/members/{member}"}, auth.Groups, (*server).leaveGroup, noParams},
	{Route{http.MethodPost, "/v1/subscriptions"}, auth.Admin, (*server).createSubscription, noParams},
	{Route{http.MethodGet, "/v1/subscriptions"}, auth.Admin, (*server).listSubscriptions, noParams},
	{Route{http.MethodGet, "/v1/subscriptions/{name}"}, auth.Admin, (*server).getSubscription, noParams},
	{Route{http.MethodPatch, "/v1/subscriptions/{name}"}, auth.Admin, (*server).patchSubscription, noParams},
	{Route{http.MethodDelete, "/v1/subscriptions/{name}"}, auth.Admin, (*server).deleteSubscription, noParams},
	{Route{http.MethodPost, "/v1/tokens"}, auth.ManageTokens, (*server).createToken, noParams},
	{Route{http.MethodGet, "/v1/tokens"}, auth.ManageTokens, (*server).listTokens, noParams},
	{Route{http.MethodDelete, "/v1/tokens/{id}"}, auth.ManageTokens, (*server).revokeToken, noParams},
}

// Routes returns docs/api.md's routes (a copy). A GET route also answers HEAD;
// HEAD is not listed separately.
func Routes() []Route {
	out := make([]Route, len(routeTable))
	for i, rt := range routeTable {
		out[i] = rt.Route
	}
	return out
}

// Allow returns the methods the route table serves on path (a pattern of
// Routes), in Allow-header order: each GET followed by HEAD.
func Allow(path string) []string {
	var allow []string
	for _, rt := range routeTable {
		if rt.Path == path {
			allow = append(allow, rt.Method)
			if rt.Method == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return allow
}

// handlers returns the handler of each route of routeTable.

// UnmatchedRoute is the route label of requests no route pattern matched
// (404 not_found).
const UnmatchedRoute = "unmatched"

// observed counts each request h serves under route, with its status
// (500 if h panicked before answering, which ServeHTTP then answers).
func (s *server) observed(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		returned := false
		defer func() {
			code := http.StatusOK // nothing written: net/http answers 200
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				code = sw.status
			} else if !returned {
				code = http.StatusInternalServerError
			}
			s.requests.Observe(route, r.Method, code, time.Since(start))
		}()
		h(w, r)
		returned = true
	}
}
