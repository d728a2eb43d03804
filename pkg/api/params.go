package api

import (
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

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

// query is a parsed query string.
type query url.Values

func parseQuery(r *http.Request) (query, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string %s: %v", quote(r.URL.RawQuery), err)
	}
	return query(v), nil
}

// get returns the single value of name; a parameter given twice is refused
// rather than guessed at.
func (q query) get(name string) (string, bool, error) {
	vs, ok := q[name]
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
