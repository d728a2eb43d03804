package api_test

import (
	"regexp"
	"strings"
	"testing"
)

// goPackage is a Go package name starting an error's text.
var goPackage = regexp.MustCompile(`(^|: )(broker|partition|meta|segment|tier|compactor|api|wire): `)

// TestMessagesWithoutPackagePrefixes: the broker's errors reach the
// answer as sentences about the request, without "broker:" and other Go
// package names, with docs/api.md's statuses and codes unchanged.
func TestMessagesWithoutPackagePrefixes(t *testing.T) {
	s := newServer(t)
	s.ok("POST", "/v1/topics", `{"name":"orders"}`, 201, nil)
	s.ok("POST", "/v1/topics/orders/records", `{"records":[{"value":"a"}]}`, 200, nil)
	big := strings.Repeat("x", 1<<20+1)
	cases := []struct {
		what, method, path, body string
		status                   int
		code, message            string
	}{
		{"exists", "POST", "/v1/topics", `{"name":"orders"}`, 409, "topic_exists", `topic "orders" exists`},
		{"not found", "GET", "/v1/topics/nope", "", 404, "topic_not_found", `topic "nope" not found`},
		{"partition not found", "GET", "/v1/topics/orders/partitions/5/offsets", "", 404, "partition_not_found",
			`partition 5 of topic "orders" not found (partitions: 1)`},
		{"record's partition not found", "POST", "/v1/topics/orders/records", `{"records":[{"value":"x","partition":3}]}`, 404, "partition_not_found",
			`record 0: partition 3 of topic "orders" not found (partitions: 1)`},
		{"invalid", "POST", "/v1/topics", `{"name":"c","cleanup_policy":"compact"}`, 400, "invalid_request",
			`cleanup_policy "compact": only "delete" is supported`},
		{"out of range", "GET", "/v1/topics/orders/partitions/0/records?offset=10", "", 416, "offset_out_of_range",
			`topic "orders" partition 0: offset 10 out of range [0, 1]`},
		{"too large", "POST", "/v1/topics/orders/partitions/0/records", `{"records":[{"value":"` + big + `"}]}`, 413, "payload_too_large", ""},
	}
	for _, c := range cases {
		var body any
		if c.body != "" {
			body = c.body
		}
		msg := checkError(t, c.what, s.do(c.method, c.path, body), c.status, c.code)
		if c.message != "" && msg != c.message {
			t.Errorf("%s: message %q, want %q", c.what, msg, c.message)
		}
		if goPackage.MatchString(msg) {
			t.Errorf("%s: message %q names a Go package", c.what, msg)
		}
	}
}
