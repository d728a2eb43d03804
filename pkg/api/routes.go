package api

import (
	"net/http"
	"time"
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

// routeTable is docs/api.md's routes with the handler of each, in the order
// New registers them; a path's methods are listed in its Allow header in
// this order, each GET followed by HEAD.
var routeTable = []struct {
	Route
	serve func(*server, http.ResponseWriter, *http.Request) error
}{
	{Route{http.MethodGet, "/v1/health"}, (*server).health},
	{Route{http.MethodGet, "/v1/topics"}, (*server).listTopics},
	{Route{http.MethodPost, "/v1/topics"}, (*server).createTopic},
	{Route{http.MethodGet, "/v1/topics/{topic}"}, (*server).getTopic},
	{Route{http.MethodDelete, "/v1/topics/{topic}"}, (*server).deleteTopic},
	{Route{http.MethodPost, "/v1/topics/{topic}/records"}, (*server).produce},
	{Route{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/records"}, (*server).fetch},
	{Route{http.MethodPost, "/v1/topics/{topic}/partitions/{partition}/records"}, (*server).producePartition},
	{Route{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/offsets"}, (*server).offsets},
	{Route{http.MethodPatch, "/v1/topics/{topic}"}, (*server).patchTopic},
	{Route{http.MethodGet, "/v1/groups/{group}/offsets"}, (*server).groupOffsets},
	{Route{http.MethodPut, "/v1/groups/{group}/offsets"}, (*server).commitGroupOffsets},
	{Route{http.MethodGet, "/v1/groups"}, (*server).listGroups},
	{Route{http.MethodGet, "/v1/groups/{group}"}, (*server).describeGroup},
	{Route{http.MethodDelete, "/v1/groups/{group}"}, (*server).deleteGroup},
	{Route{http.MethodPost, "/v1/groups/{group}/offsets/reset"}, (*server).resetGroupOffsets},
	{Route{http.MethodPost, "/v1/groups/{group}/members"}, (*server).joinGroup},
	{Route{http.MethodPost, "/v1/groups/{group}/members/{member}/heartbeat"}, (*server).heartbeat},
	{Route{http.MethodDelete, "/v1/groups/{group}/members/{member}"}, (*server).leaveGroup},
	{Route{http.MethodPost, "/v1/subscriptions"}, (*server).createSubscription},
	{Route{http.MethodGet, "/v1/subscriptions"}, (*server).listSubscriptions},
	{Route{http.MethodGet, "/v1/subscriptions/{name}"}, (*server).getSubscription},
	{Route{http.MethodPatch, "/v1/subscriptions/{name}"}, (*server).patchSubscription},
	{Route{http.MethodDelete, "/v1/subscriptions/{name}"}, (*server).deleteSubscription},
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
