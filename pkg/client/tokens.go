package client

import (
	"context"
	"net/url"
)

// NameSet is a set of topic or group names in a token's scope: exactly
// one of Prefix (every name starting with it; "" is every name), Exact or
// Names.
type NameSet struct {
	Prefix *string  `json:"prefix,omitempty"`
	Exact  *string  `json:"exact,omitempty"`
	Names  []string `json:"names,omitempty"`
}

// TokenScope is what a token may touch: topics and groups (nil: none) and
// operations ("produce", "consume", "groups", "admin").
type TokenScope struct {
	Topics     *NameSet `json:"topics,omitempty"`
	Groups     *NameSet `json:"groups,omitempty"`
	Operations []string `json:"operations"`
}

// Token is an access token as the server lists it. Secret is set only in
// CreateToken's answer: the whole token to hand out, shown once.
type Token struct {
	ID          string     `json:"id"`
	Secret      string     `json:"token,omitempty"`
	Description string     `json:"description"`
	ExpiresAt   *int64     `json:"expires_at"` // unix ms; nil: never
	CreatedAt   int64      `json:"created_at"`
	Scope       TokenScope `json:"scope"`
}

// TokenSpec is a create-token request. ExpiresAt (unix ms) 0 never expires.
type TokenSpec struct {
	Description string
	ExpiresAt   int64
	Scope       TokenScope
}

// CreateToken makes an access token (POST /v1/tokens; docs/auth.md). Sent
// once: a retry could make a second token.
func (c *Client) CreateToken(ctx context.Context, spec TokenSpec) (Token, error) {
	body := map[string]any{"scope": spec.Scope}
	if spec.Description != "" {
		body["description"] = spec.Description
	}
	if spec.ExpiresAt != 0 {
		body["expires_at"] = spec.ExpiresAt
	}
	res, err := c.sendJSON(ctx, "POST", "/v1/tokens", body, false)
	if err != nil {
		return Token{}, err
	}
	var t Token
	return t, decodeJSON(res.body, &t, "POST /v1/tokens")
}

// Tokens lists the access tokens, sorted by id, without secrets.
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	var out struct {
		Tokens []Token `json:"tokens"`
	}
	if err := c.getJSON(ctx, "/v1/tokens", nil, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// RevokeToken revokes the token with id; an unknown id is an *Error with
// code token_not_found.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	_, err := c.do(ctx, &request{method: "DELETE", path: "/v1/tokens/" + url.PathEscape(id), accept: "application/json"}, false)
	return err
}
