package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
)

// maxQuoted bounds how much of a client-supplied value an error message
// repeats.
const maxQuoted = 256

// quote is %q of s, cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

// checkTopic validates a topic name before anything else looks at it.
func checkTopic(name string) error {
	if broker.ValidTopicName(name) != nil {
		return badRequest("invalid topic name %s: must match ^[A-Za-z0-9._-]{1,249}$ and not be . or ..", quote(name))
	}
	return nil
}

var groupName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// checkGroup validates a consumer-group name: the topic rule (group names
// end up in metadata keys, so "." and ".." are refused as well).
func checkGroup(name string) error {
	if !groupName.MatchString(name) || name == "." || name == ".." {
		return badRequest("invalid group name %s: must match ^[A-Za-z0-9._-]{1,249}$ and not be . or ..", quote(name))
	}
	return nil
}

// parseNonNegative parses a non-negative base-10 integer of ASCII digits
// only: no sign, no spaces, no exponent, no hex, not empty, at most max.
func parseNonNegative(s string, max int64) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// partitionParam parses the {partition} path segment. Partitions are
// int32 in Kafka; a well-formed number beyond that is refused here, one
// within it but beyond the topic's count is the broker's 404.
func partitionParam(r *http.Request) (int, error) {
	s := r.PathValue("partition")
	n, ok := parseNonNegative(s, math.MaxInt32)
	if !ok {
		return 0, badRequest("partition %s is not a non-negative base-10 integer up to %d", quote(s), math.MaxInt32)
	}
	return int(n), nil
}

// params is the query parameters one route takes. It is declared once,
// beside the handler that reads them, and named in the route table: the
// registration refuses a query string naming any other parameter before
// the handler runs (docs/api.md "Conventions"), and the handler reads the
// query through it, so it cannot read a parameter it did not declare.
// A params is immutable and safe for concurrent use.
type params struct {
	names []string
	// elsewhere explains, for a parameter another route takes, why this
	// one refuses it; the refusal still lists this route's parameters.
	elsewhere map[string]string
}

// noParams is the parameters of a route that takes none.
var noParams = &params{}

// maxSuggestDistance is how close (in edits) an unknown parameter must be
// to one of the route's for the answer to suggest it.
const maxSuggestDistance = 2

// takes reports whether name is one of p's parameters.
func (p *params) takes(name string) bool {
	for _, n := range p.names {
		if n == name {
			return true
		}
	}
	return false
}

// plainAndKnown reports whether raw, a query string without escapes
// ('%', '+') or ';', names only p's parameters: what check's parse would
// find, without building the map the handler's parse builds again (the
// common case, on the fetch path).
func (p *params) plainAndKnown(raw string) bool {
	if strings.ContainsAny(raw, "%+;") {
		return false
	}
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue // url.ParseQuery skips it too
		}
		if name, _, _ := strings.Cut(kv, "="); !p.takes(name) {
			return false
		}
	}
	return true
}

// check refuses a malformed query string, and one naming a parameter
// the route (method and pattern) does not take: 400 naming each such
// parameter, with the closest of the route's own when one is near, and
// listing the route's parameters.
func (p *params) check(r *http.Request, method, pattern string) error {
	if r.URL.RawQuery == "" || p.plainAndKnown(r.URL.RawQuery) {
		return nil
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest("malformed query string %s: %v", quote(r.URL.RawQuery), err)
	}
	var unknown []string
	for name := range v {
		if !p.takes(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	var b strings.Builder
	for i, name := range unknown {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("unknown query parameter ")
		b.WriteString(quote(name))
		if why, ok := p.elsewhere[name]; ok {
			b.WriteString(" (" + why + ")")
		} else if near := p.nearest(name); near != "" {
			b.WriteString(" (did you mean " + strconv.Quote(near) + "?)")
		}
	}
	if len(p.names) == 0 {
		fmt.Fprintf(&b, ": %s %s takes no query parameters", method, pattern)
	} else {
		fmt.Fprintf(&b, ": %s %s takes %s", method, pattern, strings.Join(p.names, ", "))
	}
	return badRequest("%s", b.String())
}

// nearest is the parameter of p closest to name, if it is at most
// maxSuggestDistance edits away (case-insensitively), else "".
func (p *params) nearest(name string) string {
	if len(name) > maxQuoted {
		return ""
	}
	best, bestD := "", maxSuggestDistance+1
	for _, n := range p.names {
		if d := editDistance(strings.ToLower(name), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// query is a parsed query string, read through the route's params.
type query struct {
	v url.Values
	p *params
}

// parse parses r's query string for reading through p. The registration
// has refused what p does not take (check).
func (p *params) parse(r *http.Request) (query, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return query{}, badRequest("malformed query string %s: %v", quote(r.URL.RawQuery), err)
	}
	return query{v: v, p: p}, nil
}

// get returns the single value of name; a parameter given twice is refused
// rather than guessed at. Reading a parameter the route did not declare
// is a programming error: it panics.
func (q query) get(name string) (string, bool, error) {
	if !q.p.takes(name) {
		panic("api: query parameter " + name + " read but not declared in the route's params")
	}
	vs, ok := q.v[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) != 1 {
		return "", false, badRequest("query parameter %s is given %d times; give it once", name, len(vs))
	}
	return vs[0], true, nil
}

// int64Param parses an optional non-negative integer parameter that must fit
// an int64.
func (q query) int64Param(name string) (v int64, present bool, err error) {
	s, ok, err := q.get(name)
	if err != nil || !ok {
		return 0, false, err
	}
	n, valid := parseNonNegative(s, math.MaxInt64)
	if !valid {
		return 0, false, badRequest("query parameter %s=%s is not a non-negative base-10 integer that fits in 64 bits", name, quote(s))
	}
	return n, true, nil
}

// boundedParam parses an optional parameter with a default, a minimum, and
// a cap. Values above the cap are clamped to it, not refused: docs/api.md calls
// these limits "caps", and a client asking for more than the server gives
// is answered with what the server gives (Kafka clamps fetch sizes the same
// way). Values below min are refused.
func (q query) boundedParam(name string, def, min, cap int64) (int64, error) {
	n, ok, err := q.int64Param(name)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return def, nil
	case n < min:
		return 0, badRequest("query parameter %s=%d is below the minimum %d", name, n, min)
	case n > cap:
		return cap, nil
	}
	return n, nil
}

// parseEncoding reads the encoding query parameter.
func parseEncoding(s string) (jsonrec.Encoding, error) {
	switch s {
	case "utf8":
		return jsonrec.UTF8, nil
	case "base64":
		return jsonrec.Base64, nil
	case "json":
		return jsonrec.JSON, nil
	}
	return 0, badRequest("unknown encoding %s: want \"utf8\", \"base64\" or \"json\"", quote(s))
}
