package api

import (
	"regexp"
	"strings"
)

// The layers below the API name themselves in their errors ("broker:
// topic exists: \"orders\""), as Go errors do. An answer's message is for
// the API's users: publicMessage says the same without the package names,
// and the code (topic_exists) already says the kind, so a message starts
// with what it is about (`topic "orders" exists`).

// pkgPrefix is a package name starting the text of an error, or of a
// wrapped error after ": ".
var pkgPrefix = regexp.MustCompile(`(^|: )(?:broker|partition|meta|segment|tier|compactor|local|dynamo|objstore|wire|api): `)

// rewrites turn the broker's sentinel forms, once without their package
// names, into sentences.
var rewrites = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^topic exists: (".*")$`), `topic $1 exists`},
	{regexp.MustCompile(`^topic not found: (".*")$`), `topic $1 not found`},
	{regexp.MustCompile(`^partition not found: (record \d+: )?(partition \d+ of topic ".*") \(partitions: (\d+)\)$`), `$1$2 not found (partitions: $3)`},
	{regexp.MustCompile(`^invalid request: `), ``},
	{regexp.MustCompile(`^too large: `), ``},
}

// publicMessage is err's text without Go package prefixes.
func publicMessage(err error) string {
	msg := pkgPrefix.ReplaceAllString(err.Error(), "$1")
	for _, r := range rewrites {
		if r.re.MatchString(msg) {
			msg = r.re.ReplaceAllString(msg, r.repl)
		}
	}
	return strings.TrimSpace(msg)
}
