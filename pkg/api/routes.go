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

// routeTable is docs/api.md's routes, in the order New registers them; a
// path's methods are listed in its Allow header in this order, each GET
// followed by HEAD.
var routeTable = []Route{
	{http.MethodGet, "/v1/health"},
	{http.MethodGet, "/v1/topics"},
	{http.MethodPost, "/v1/topics"},
	{http.MethodGet, "/v1/topics/{topic}"},
	{http.MethodDelete, "/v1/topics/{topic}"},
	{http.MethodPost, "/v1/topics/{topic}/records"},
	{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/records"},
	{http.MethodPost, "/v1/topics/{topic}/partitions/{partition}/records"},
	{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/offsets"},
	{http.MethodPatch, "/v1/topics/{topic}"},
	{http.MethodGet, "/v1/groups/{group}/offsets"},
	{http.MethodPut, "/v1/groups/{group}/offsets"},
	{http.MethodGet, "/v1/groups"},
	{http.MethodGet, "/v1/groups/{group}"},
	{http.MethodDelete, "/v1/groups/{group}"},
	{http.MethodPost, "/v1/groups/{group}/offsets/reset"},
	{http.MethodPost, "/v1/groups/{group}/members"},
	{http.MethodPost, "/v1/groups/{group}/members/{member}/heartbeat"},
	{http.MethodDelete, "/v1/groups/{group}/members/{member}"},
}

// Routes returns docs/api.md's routes (a copy). A GET route also answers HEAD;
// HEAD is not listed separately.
func Routes() []Route { return append([]Route(nil), routeTable...) }

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
func (s *server) handlers() map[Route]http.HandlerFunc {
	return map[Route]http.HandlerFunc{
		{http.MethodGet, "/v1/health"}:                                         s.health,
		{http.MethodGet, "/v1/topics"}:                                         s.listTopics,
		{http.MethodPost, "/v1/topics"}:                                        s.createTopic,
		{http.MethodGet, "/v1/topics/{topic}"}:                                 s.getTopic,
		{http.MethodDelete, "/v1/topics/{topic}"}:                              s.deleteTopic,
		{http.MethodPost, "/v1/topics/{topic}/records"}:                        s.produce,
		{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/records"}:  s.fetch,
		{http.MethodPost, "/v1/topics/{topic}/partitions/{partition}/records"}: s.producePartition,
		{http.MethodGet, "/v1/topics/{topic}/partitions/{partition}/offsets"}:  s.offsets,
		{http.MethodGet, "/v1/groups/{group}/offsets"}:                         s.groupOffsets,
		{http.MethodPut, "/v1/groups/{group}/offsets"}:                         s.commitGroupOffsets,
		{http.MethodPatch, "/v1/topics/{topic}"}:                               s.patchTopic,
		{http.MethodGet, "/v1/groups"}:                                         s.listGroups,
		{http.MethodGet, "/v1/groups/{group}"}:                                 s.describeGroup,
		{http.MethodDelete, "/v1/groups/{group}"}:                              s.deleteGroup,
		{http.MethodPost, "/v1/groups/{group}/offsets/reset"}:                  s.resetGroupOffsets,
		{http.MethodPost, "/v1/groups/{group}/members"}:                        s.joinGroup,
		{http.MethodPost, "/v1/groups/{group}/members/{member}/heartbeat"}:     s.heartbeat,
		{http.MethodDelete, "/v1/groups/{group}/members/{member}"}:             s.leaveGroup,
	}
}

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
