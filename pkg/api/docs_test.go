package api_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
)

// apiDoc is the HTTP API reference, relative to this package.
const apiDoc = "../../docs/api.md"

// The two places docs/api.md names routes in a fixed form: a section
// heading per route ("### `GET /v1/topics/{topic}`") and a row of the
// summary table ("| `GET /v1/topics/{topic}` | ...").
var (
	docRouteHeading = regexp.MustCompile("(?m)^#{2,4} `([A-Z]+) (/[^`]*)`[ \t]*$")
	docRouteRow     = regexp.MustCompile("(?m)^\\| `([A-Z]+) (/[^`]*)` \\|")
)

// TestAPIDocRoutes: docs/api.md has one section and one summary row for
// every route of the route table, and names no route in those forms that
// the table does not have.
func TestAPIDocRoutes(t *testing.T) {
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var table []string
	for _, rt := range api.Routes() {
		table = append(table, rt.Method+" "+rt.Path)
	}
	for _, form := range []struct {
		name string
		re   *regexp.Regexp
	}{
		{"section heading", docRouteHeading},
		{"summary table row", docRouteRow},
	} {
		documented := map[string]int{}
		for _, m := range form.re.FindAllStringSubmatch(doc, -1) {
			documented[m[1]+" "+m[2]]++
		}
		for _, r := range table {
			if documented[r] == 0 {
				t.Errorf("%s has no %s for %s, a route of the route table", apiDoc, form.name, r)
			}
		}
		for r, n := range documented {
			switch {
			case !slices.Contains(table, r):
				t.Errorf("%s has a %s for %s, which the route table does not have", apiDoc, form.name, r)
			case n > 1:
				t.Errorf("%s has %d %ss for %s, want one", apiDoc, n, form.name, r)
			}
		}
	}
}

// TestAPIDocRoutesParse: the patterns above see what they are meant to,
// so that TestAPIDocRoutes cannot pass by matching nothing.
func TestAPIDocRoutesParse(t *testing.T) {
	doc := strings.Join([]string{
		"### `GET /v1/topics/{topic}`",
		"#### `DELETE /v1/groups/{group}`  ",
		"# `GET /v1/health`",                    // a title, not a route section
		"### Create a topic: `POST /v1/topics`", // prose around it
		"| `PUT /v1/groups/{group}/offsets` | `204` |",
		"| route | answer |",
	}, "\n")
	var got []string
	for _, re := range []*regexp.Regexp{docRouteHeading, docRouteRow} {
		for _, m := range re.FindAllStringSubmatch(doc, -1) {
			got = append(got, m[1]+" "+m[2])
		}
	}
	want := []string{"GET /v1/topics/{topic}", "DELETE /v1/groups/{group}", "PUT /v1/groups/{group}/offsets"}
	if !slices.Equal(got, want) {
		t.Errorf("parsed %q, want %q", got, want)
	}
}
