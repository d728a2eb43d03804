package api_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
)

// samplePath is pattern with each {wildcard} filled in.
func samplePath(pattern string) string {
	return strings.NewReplacer("{topic}", "orders", "{partition}", "0", "{group}", "billing",
		"{member}", "m1", "{name}", "sub1", "{id}", "tok1").Replace(pattern)
}

// TestQueryStrictEveryRoute: on every route (and HEAD beside each GET), a
// parameter the route does not take is 400 invalid_request naming it and
// listing the route's parameters, whatever else the request gets right.
func TestQueryStrictEveryRoute(t *testing.T) {
	s := newServer(t)
	s.createTopic("orders", 1)
	for _, rt := range api.Routes() {
		name := rt.Method + " " + rt.Path
		takes := api.RouteQueryParams()[name]
		path := samplePath(rt.Path) + "?bogus_param=1"
		if len(takes) > 0 { // every parameter it takes, given well, and one it does not
			path = samplePath(rt.Path) + "?" + takes[0] + "=0&bogus_param=1"
		}
		r := s.do(rt.Method, path, `{}`)
		msg := checkError(t, name+" ?bogus_param", r, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(msg, `unknown query parameter "bogus_param"`) {
			t.Errorf("%s: message %q does not name bogus_param", name, msg)
		}
		if len(takes) == 0 {
			if !strings.Contains(msg, name+" takes no query parameters") {
				t.Errorf("%s: message %q does not say the route takes no query parameters", name, msg)
			}
		} else if !strings.Contains(msg, name+" takes "+strings.Join(takes, ", ")) {
			t.Errorf("%s: message %q does not list %v", name, msg, takes)
		}
		if strings.Contains(msg, "did you mean") {
			t.Errorf("%s: message %q suggests a parameter for bogus_param", name, msg)
		}
		if rt.Method == http.MethodGet {
			if h := s.do(http.MethodHead, path, nil); h.status != http.StatusBadRequest {
				t.Errorf("HEAD %s: status %d, want 400", path, h.status)
			}
		}
	}
}

// TestQueryDidYouMean: a misspelt parameter is named, with the route's
// parameter it is close to (at most two edits), and not mistaken for a
// missing one.
func TestQueryDidYouMean(t *testing.T) {
	s := newServer(t)
	s.createTopic("orders", 1)
	const fetch = "/v1/topics/orders/partitions/0/records"
	for _, c := range []struct {
		path, want, wantNot string
	}{
		{fetch + "?ofset=0", `unknown query parameter "ofset" (did you mean "offset"?)`, "required"},
		{fetch + "?offset=0&Wait_MS=100", `unknown query parameter "Wait_MS" (did you mean "wait_ms"?)`, ""},
		{fetch + "?offset=0&max_record=5&encodeing=json", `unknown query parameter "encodeing" (did you mean "encoding"?); ` +
			`unknown query parameter "max_record" (did you mean "max_records"?)`, ""},
		{fetch + "?offset=0&partition=0", `unknown query parameter "partition": GET`, "did you mean"},
		{"/v1/topics/orders/partitions/0/offsets?timestmp=5", `(did you mean "timestamp"?)`, ""},
		{"/v1/groups/billing/offsets?topics=orders", `(did you mean "topic"?)`, "required"},
		{"/v1/topics?limit=10", `unknown query parameter "limit": GET /v1/topics takes no query parameters`, "did you mean"},
	} {
		msg := checkError(t, c.path, s.do("GET", c.path, nil), http.StatusBadRequest, "invalid_request")
		if !strings.Contains(msg, c.want) {
			t.Errorf("GET %s: message %q, want it to contain %q", c.path, msg, c.want)
		}
		if c.wantNot != "" && strings.Contains(msg, c.wantNot) {
			t.Errorf("GET %s: message %q contains %q", c.path, msg, c.wantNot)
		}
	}
	// The routed produce refuses expected_offset with the reason.
	msg := checkError(t, "routed produce ?expected_offset", s.do("POST", "/v1/topics/orders/records?expected_offset=0",
		`{"records":[{"value":"x"}]}`), http.StatusBadRequest, "invalid_request")
	if !strings.Contains(msg, "only allowed on the single-partition route") {
		t.Errorf("routed produce ?expected_offset: message %q does not say where it is allowed", msg)
	}
	// A malformed query string is refused on a route that takes none too.
	checkError(t, "malformed query", s.do("GET", "/v1/topics?%zz", nil), http.StatusBadRequest, "invalid_request")
	// An empty query, and a trailing &, are no parameters.
	s.ok("GET", "/v1/topics?", nil, http.StatusOK, nil)
	s.ok("GET", fetch+"?offset=0&", nil, http.StatusOK, nil)
}

// docParamTable is a docs/api.md parameter table's row; docParamQuery a
// parameter in a query string of a route's section (an example or prose).
var (
	docParamTable = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")
	docParamQuery = regexp.MustCompile(`[?&]([a-z_]+)=`)
	docSectionEnd = regexp.MustCompile(`(?m)^#{2,3} `)
)

// docQueryParams returns, for each route section of doc, the query
// parameters it documents: the rows of its "| parameter |" table and the
// names in its query strings, up to the next section of level 2 or 3.
func docQueryParams(doc string) map[string][]string {
	out := map[string][]string{}
	for _, loc := range docRouteHeading.FindAllStringSubmatchIndex(doc, -1) {
		route := doc[loc[2]:loc[3]] + " " + doc[loc[4]:loc[5]]
		sec := doc[loc[1]:]
		if end := docSectionEnd.FindStringIndex(sec); end != nil {
			sec = sec[:end[0]]
		}
		set := map[string]bool{}
		if i := strings.Index(sec, "| parameter |"); i >= 0 {
			table := sec[i:]
			if j := strings.Index(table, "\n\n"); j >= 0 {
				table = table[:j]
			}
			for _, m := range docParamTable.FindAllStringSubmatch(table, -1) {
				set[m[1]] = true
			}
		}
		for _, m := range docParamQuery.FindAllStringSubmatch(sec, -1) {
			set[m[1]] = true
		}
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		sort.Strings(names)
		out[route] = names
	}
	return out
}

// TestQueryParamsDocumented: docs/api.md documents, in each route's
// section, exactly the query parameters the route takes, and the server
// accepts each documented one (an answer that is not "unknown query
// parameter"), so the declarations and the docs cannot drift.
func TestQueryParamsDocumented(t *testing.T) {
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := docQueryParams(string(b))
	s := newServer(t)
	s.createTopic("orders", 1)
	total := 0
	for route, takes := range api.RouteQueryParams() {
		takes = slices.Sorted(slices.Values(takes))
		doc := documented[route]
		if !slices.Equal(doc, takes) {
			t.Errorf("%s: %s documents query parameters %v, the route takes %v", route, apiDoc, doc, takes)
		}
		method, pattern, _ := strings.Cut(route, " ")
		for _, p := range doc {
			total++
			body := ""
			if method == http.MethodPost {
				body = `{"records":[{"value":"x"}]}`
			}
			r := s.do(method, samplePath(pattern)+"?"+p+"=0", body)
			if r.status == http.StatusBadRequest && strings.Contains(string(r.body), "unknown query parameter") {
				t.Errorf("%s ?%s=0, documented: refused as unknown: %s", route, p, r.body)
			}
		}
	}
	if total < 7 { // offset, max_records, max_bytes, wait_ms, encoding, timestamp, topic, expected_offset
		t.Errorf("%s: %d documented query parameters found, want at least 7: does the parse still see them?", apiDoc, total)
	}
}

// TestDocQueryParamsParse: the parse above sees a parameter table and a
// query string, and stops at the next section.
func TestDocQueryParamsParse(t *testing.T) {
	doc := strings.Join([]string{
		"### `GET /v1/a`",
		"",
		"| parameter | default |",
		"|---|---|",
		"| `offset` | required |",
		"",
		"| field | meaning |",
		"| `not_a_param` | a body field |",
		"curl 'localhost:8080/v1/a?wait_ms=5&encoding=json'",
		"#### Sub-section of the same route: `?timestamp=T`",
		"### `GET /v1/b`",
		"With `?topic=T`.",
		"### Conditional thing",
		"`?elsewhere=1`",
	}, "\n")
	got := docQueryParams(doc)
	want := map[string][]string{"GET /v1/a": {"encoding", "offset", "timestamp", "wait_ms"}, "GET /v1/b": {"topic"}}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: parsed %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("parsed routes %v, want %v", got, want)
	}
}
