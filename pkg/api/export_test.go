package api

import "slices"

// RouteQueryParams returns the query parameters each route of the route
// table takes, by "METHOD /pattern", for the tests of package api_test.
func RouteQueryParams() map[string][]string {
	out := make(map[string][]string, len(routeTable))
	for _, rt := range routeTable {
		out[rt.Method+" "+rt.Path] = slices.Clone(rt.query.names)
	}
	return out
}
