package meta

import (
	"context"
	"errors"
	"slices"
)

// ErrTokenExists means PutToken found the token id taken.
var ErrTokenExists = errors.New("meta: token exists")

// Token is an access token as stored (docs/auth.md): never its secret,
// only the secret's SHA-256 (Hash, hex). Items are keyed by ID and are
// written once: a token is never changed, only deleted (revoked).
type Token struct {
	ID          string     `json:"id"`
	Hash        string     `json:"hash"` // hex SHA-256 of the secret
	Description string     `json:"description"`
	CreatedMs   int64      `json:"created_ms"`
	ExpiresMs   int64      `json:"expires_ms,omitempty"` // unix ms; 0: never
	Scope       TokenScope `json:"scope"`
}

// TokenScope is what a token may touch: the topics and groups (nil: none)
// and the operations (docs/api.md "Access tokens"). Its JSON is the API's.
type TokenScope struct {
	Topics     *NameSet `json:"topics,omitempty"`
	Groups     *NameSet `json:"groups,omitempty"`
	Operations []string `json:"operations"`
}

// NameSet is a set of topic or group names: exactly one of Prefix (every
// name starting with it; "" is every name), Exact (one name) or Names
// (those names) is set. Its JSON is the API's ({"prefix":"p"},
// {"exact":"n"} or {"names":["a","b"]}).
type NameSet struct {
	Prefix *string  `json:"prefix,omitempty"`
	Exact  *string  `json:"exact,omitempty"`
	Names  []string `json:"names,omitempty"`
}

// Clone returns a deep copy of t.
func (t Token) Clone() Token {
	t.Scope.Topics = t.Scope.Topics.clone()
	t.Scope.Groups = t.Scope.Groups.clone()
	t.Scope.Operations = slices.Clone(t.Scope.Operations)
	return t
}

func (n *NameSet) clone() *NameSet {
	if n == nil {
		return nil
	}
	c := *n
	if n.Prefix != nil {
		p := *n.Prefix
		c.Prefix = &p
	}
	if n.Exact != nil {
		e := *n.Exact
		c.Exact = &e
	}
	c.Names = slices.Clone(n.Names)
	return &c
}

// TokenStore keeps access tokens. Implementations are safe for concurrent
// use; every method is a single-item read or a single-item conditional
// write, like Store's. meta/mem, meta/local and meta/dynamo implement it
// beside Store (meta/metatest.RunTokens checks them).
type TokenStore interface {
	// PutToken stores t if no token has its ID, else ErrTokenExists.
	PutToken(ctx context.Context, t Token) error
	// Token returns the token with id, or ErrNotFound.
	Token(ctx context.Context, id string) (Token, error)
	// Tokens returns every token, sorted by ID.
	Tokens(ctx context.Context) ([]Token, error)
	// DeleteToken removes the token with id, or answers ErrNotFound if
	// there is none.
	DeleteToken(ctx context.Context, id string) error
}
