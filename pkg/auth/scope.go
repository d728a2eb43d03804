package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Op is what a route does, as the route table declares it.
type Op string

// The operations a token may be granted (docs/api.md "Access tokens").
// Never change them: stored tokens name them.
const (
	Produce Op = "produce"
	Consume Op = "consume"
	Groups  Op = "groups"
	Admin   Op = "admin"
)

// Operations routes declare that no token is granted by name.
const (
	// Open routes need no token (GET /v1/health).
	Open Op = "open"
	// Describe reads one topic's configuration: any of produce, consume
	// or admin implies it (Kafka's WRITE, READ, ALTER imply DESCRIBE).
	Describe Op = "describe"
	// ManageTokens is the token routes: admin with the topics scope
	// {"prefix":""}.
	ManageTokens Op = "tokens"
)

// Grantable are the operations a scope may list, in docs/api.md's order.
var Grantable = []Op{Produce, Consume, Groups, Admin}

// Declared reports whether op is one a route may declare.
func (op Op) Declared() bool {
	return slices.Contains(Grantable, op) || op == Open || op == Describe || op == ManageTokens
}

// ValidateScope checks a scope as a create request carries it: each name
// set has exactly one of prefix, exact and a non-empty names, and the
// operations are one or more of Grantable, without repeats.
func ValidateScope(s meta.TokenScope) error {
	for _, ns := range []struct {
		what string
		set  *meta.NameSet
	}{{"scope.topics", s.Topics}, {"scope.groups", s.Groups}} {
		if ns.set == nil {
			continue
		}
		n := 0
		if ns.set.Prefix != nil {
			n++
		}
		if ns.set.Exact != nil {
			n++
		}
		if ns.set.Names != nil {
			n++
			if len(ns.set.Names) == 0 {
				return fmt.Errorf("%s.names is empty", ns.what)
			}
		}
		if n != 1 {
			return fmt.Errorf("%s must have exactly one of prefix, exact and names", ns.what)
		}
		if ns.set.Exact != nil && *ns.set.Exact == "" {
			return fmt.Errorf("%s.exact is empty", ns.what)
		}
	}
	if len(s.Operations) == 0 {
		return fmt.Errorf("scope.operations is empty: want one or more of %s", grantableList())
	}
	for i, op := range s.Operations {
		if !slices.Contains(Grantable, Op(op)) {
			return fmt.Errorf("scope.operations: unknown operation %q: want %s", op, grantableList())
		}
		if slices.Contains(s.Operations[:i], op) {
			return fmt.Errorf("scope.operations: %q twice", op)
		}
	}
	return nil
}

func grantableList() string {
	s := make([]string, len(Grantable))
	for i, op := range Grantable {
		s[i] = string(op)
	}
	return strings.Join(s, ", ")
}

// matches reports whether name is in set (nil: no name is).
func matches(set *meta.NameSet, name string) bool {
	switch {
	case set == nil:
		return false
	case set.Prefix != nil:
		return strings.HasPrefix(name, *set.Prefix)
	case set.Exact != nil:
		return name == *set.Exact
	default:
		return slices.Contains(set.Names, name)
	}
}

func allNames(set *meta.NameSet) bool { return set != nil && set.Prefix != nil && *set.Prefix == "" }

// grants reports whether the scope allows op itself, implications
// included.
func grants(s meta.TokenScope, op Op) bool {
	has := func(o Op) bool { return slices.Contains(s.Operations, string(o)) }
	switch op {
	case Open:
		return true
	case Describe:
		return has(Produce) || has(Consume) || has(Admin)
	case ManageTokens:
		return has(Admin) && allNames(s.Topics)
	}
	return has(op)
}

// Check reports whether tok may do op on every one of topics and groups:
// nil, or an error wrapping ErrForbidden that names the token's id and
// the first operation, topic or group it does not cover.
func Check(tok meta.Token, op Op, topics, groups []string) error {
	if op == Open {
		return nil
	}
	if !grants(tok.Scope, op) {
		if op == ManageTokens {
			return fmt.Errorf("%w: token %s may not manage tokens (needs admin with the topics scope {\"prefix\":\"\"})", ErrForbidden, tok.ID)
		}
		return fmt.Errorf("%w: token %s does not grant %s", ErrForbidden, tok.ID, op)
	}
	for _, t := range topics {
		if !matches(tok.Scope.Topics, t) {
			return fmt.Errorf("%w: token %s does not cover topic %q", ErrForbidden, tok.ID, t)
		}
	}
	for _, g := range groups {
		if !matches(tok.Scope.Groups, g) {
			return fmt.Errorf("%w: token %s does not cover group %q", ErrForbidden, tok.ID, g)
		}
	}
	return nil
}

// Visible reports whether a list answer may show topic (groups: false)
// or group (true) name to tok: the name is in its scope. Lists are
// filtered rather than refused, as Kafka filters metadata by DESCRIBE.
func Visible(tok meta.Token, group bool, name string) bool {
	if group {
		return matches(tok.Scope.Groups, name)
	}
	return matches(tok.Scope.Topics, name)
}

// Within reports whether every topic, group and operation inner grants is
// also granted by outer: a token may only create tokens no wider than
// itself.
func Within(inner, outer meta.TokenScope) bool {
	for _, op := range inner.Operations {
		if !slices.Contains(outer.Operations, op) {
			return false
		}
	}
	return setWithin(inner.Topics, outer.Topics) && setWithin(inner.Groups, outer.Groups)
}

// setWithin reports whether every name of in is in out.
func setWithin(in, out *meta.NameSet) bool {
	switch {
	case in == nil:
		return true
	case out == nil:
		return false
	case in.Prefix != nil:
		return out.Prefix != nil && strings.HasPrefix(*in.Prefix, *out.Prefix)
	case in.Exact != nil:
		return matches(out, *in.Exact)
	}
	for _, n := range in.Names {
		if !matches(out, n) {
			return false
		}
	}
	return true
}
