package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
)

// Access tokens (docs/auth.md). Each route of the route table declares its
// operation; admit checks it against the path's {topic} and {group} before
// the handler runs, and handlers check the topics and groups their bodies
// name with authorize, after decoding and before reading or changing
// anything.

// Error codes of token auth (docs/api.md). Never change them.
const (
	codeUnauthorized  = "unauthorized"
	codeForbidden     = "forbidden"
	codeTokenNotFound = "token_not_found"
)

// extraRouteOp is what a WithRoute route (GET /metrics) needs with token
// auth on: a token granting admin.
const extraRouteOp = auth.Admin

// maxTokenDescription bounds a token's description, in bytes.
const maxTokenDescription = 1024

// WithAuth turns token auth on: every route but GET /v1/health needs
// "Authorization: Bearer <token>" that v accepts and whose scope covers
// the request, and the token routes manage v's tokens. v must not be nil.
func WithAuth(v *auth.Verifier) Option {
	return func(c *config) { c.auth, c.enforce = v, true }
}

// WithTokenRoutes serves the token routes over v without requiring tokens
// anywhere (auth off: tokens can be made before auth is turned on, and
// behind API Gateway's IAM auth). Without WithAuth or WithTokenRoutes the
// token routes answer 404 not_found.
func WithTokenRoutes(v *auth.Verifier) Option {
	return func(c *config) { c.auth, c.enforce = v, false }
}

// WithTrusted admits, with token auth on, every request trusted reports
// true for as if it carried a token granting everything: a request that
// API Gateway has already authorized with IAM (pkg/lambdafn). Nil trusts
// none, the default.
func WithTrusted(trusted func(*http.Request) bool) Option {
	return func(c *config) { c.trusted = trusted }
}

type tokenKey struct{}

// principal is who a request acts as with token auth on: a token, or
// everything (trusted).
type principal struct {
	tok     meta.Token
	trusted bool
}

// admit authenticates r and checks op on its path's topic and group. With
// token auth off it admits everything. The request it returns carries the
// principal for authorize.
func (s *server) admit(r *http.Request, op auth.Op) (*http.Request, error) {
	if !s.enforce || op == auth.Open {
		return r, nil
	}
	if s.trusted != nil && s.trusted(r) {
		return r.WithContext(context.WithValue(r.Context(), tokenKey{}, principal{trusted: true})), nil
	}
	tok, err := s.auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		return r, err
	}
	var topics, groups []string
	if t := r.PathValue("topic"); t != "" {
		topics = []string{t}
	}
	if g := r.PathValue("group"); g != "" {
		groups = []string{g}
	}
	if err := auth.Check(tok, op, topics, groups); err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), tokenKey{}, principal{tok: tok})), nil
}

// authorize checks that r's token grants op on every one of topics and
// groups: the names a body (or query) carries, which admit could not see.
// Handlers call it after decoding and before anything is read or changed.
// With token auth off it is nil.
func (s *server) authorize(r *http.Request, op auth.Op, topics, groups []string) error {
	if !s.enforce {
		return nil
	}
	p, ok := r.Context().Value(tokenKey{}).(principal)
	switch {
	case !ok:
		// An open route asking: no token was checked.
		return fmt.Errorf("%w: no token was checked for this route", auth.ErrForbidden)
	case p.trusted:
		return nil
	}
	return auth.Check(p.tok, op, topics, groups)
}

// stillAdmitted checks again, for a request that lives on (a stream),
// that the token it was admitted with is still good: not revoked, not
// expired. A token's scope never changes, so its checks hold while it does.
func (s *server) stillAdmitted(r *http.Request) error {
	if !s.enforce {
		return nil
	}
	if p, ok := r.Context().Value(tokenKey{}).(principal); !ok || p.trusted {
		return nil // an open route, or one API Gateway authorized
	}
	_, err := s.auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
	return err
}

// visible reports whether a list answer may show the topic (group false)
// or group named name to r's token: always with token auth off.
func (s *server) visible(r *http.Request, group bool, name string) bool {
	if !s.enforce {
		return true
	}
	p, _ := r.Context().Value(tokenKey{}).(principal)
	return p.trusted || auth.Visible(p.tok, group, name)
}

// tokenJSON is a token in answers; Token (the secret) only in a create's.
type tokenJSON struct {
	ID          string          `json:"id"`
	Token       string          `json:"token,omitempty"`
	Description string          `json:"description"`
	ExpiresAt   *int64          `json:"expires_at"`
	CreatedAt   int64           `json:"created_at"`
	Scope       meta.TokenScope `json:"scope"`
}

func toTokenJSON(t meta.Token) tokenJSON {
	out := tokenJSON{ID: t.ID, Description: t.Description, CreatedAt: t.CreatedMs, Scope: t.Scope}
	if t.ExpiresMs != 0 {
		e := t.ExpiresMs
		out.ExpiresAt = &e
	}
	if out.Scope.Operations == nil {
		out.Scope.Operations = []string{}
	}
	return out
}

// createTokenRequest is the body of POST /v1/tokens.
type createTokenRequest struct {
	Description *string          `json:"description"`
	ExpiresAt   *int64           `json:"expires_at"`
	Scope       *meta.TokenScope `json:"scope"`
}

// tokensOff is the answer of a token route on a server without tokens.
func tokensOff() error {
	return &apiError{status: http.StatusNotFound, code: codeNotFound,
		msg: "access tokens are not enabled on this server (tierlog serve --auth tokens)"}
}

// POST /v1/tokens
func (s *server) createToken(w http.ResponseWriter, r *http.Request) error {
	if s.auth == nil {
		return tokensOff()
	}
	var req createTokenRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Scope == nil {
		return badRequest("scope is required: {\"topics\":...,\"groups\":...,\"operations\":[...]}")
	}
	if err := auth.ValidateScope(*req.Scope); err != nil {
		return badRequest("%s", err.Error())
	}
	var desc string
	if req.Description != nil {
		desc = *req.Description
	}
	if len(desc) > maxTokenDescription {
		return badRequest("description is %d bytes, more than %d", len(desc), maxTokenDescription)
	}
	var expires int64
	if req.ExpiresAt != nil {
		now := s.auth.Now().UnixMilli()
		if *req.ExpiresAt <= now {
			return badRequest("expires_at %d is not in the future (now %d)", *req.ExpiresAt, now)
		}
		expires = *req.ExpiresAt
	}
	if p, ok := r.Context().Value(tokenKey{}).(principal); ok && !p.trusted && !auth.Within(*req.Scope, p.tok.Scope) {
		return fmt.Errorf("%w: token %s may not create a token wider than itself", auth.ErrForbidden, p.tok.ID)
	}
	t, secret, err := s.auth.Create(r.Context(), desc, expires, *req.Scope)
	if err != nil {
		return err
	}
	out := toTokenJSON(t)
	out.Token = secret
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, r, http.StatusCreated, &out)
	return nil
}

// GET /v1/tokens
func (s *server) listTokens(w http.ResponseWriter, r *http.Request) error {
	if s.auth == nil {
		return tokensOff()
	}
	ts, err := s.auth.Tokens(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Tokens []tokenJSON `json:"tokens"`
	}{Tokens: make([]tokenJSON, len(ts))}
	for i, t := range ts {
		out.Tokens[i] = toTokenJSON(t)
	}
	s.writeJSON(w, r, http.StatusOK, &out)
	return nil
}

// DELETE /v1/tokens/{id}
func (s *server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	if s.auth == nil {
		return tokensOff()
	}
	id := r.PathValue("id")
	if !auth.ValidID(id) {
		return badRequest("invalid token id %s: want 16 lowercase hex digits", quote(id))
	}
	if err := s.auth.Revoke(r.Context(), id); err != nil {
		if errors.Is(err, meta.ErrNotFound) {
			return &apiError{status: http.StatusNotFound, code: codeTokenNotFound, msg: fmt.Sprintf("token %s not found", id)}
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// authRefusal classifies the errors of package auth, or reports false.
func authRefusal(err error) (classification, bool) {
	var status int
	var code string
	var sentinel error
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		status, code, sentinel = http.StatusUnauthorized, codeUnauthorized, auth.ErrUnauthenticated
	case errors.Is(err, auth.ErrForbidden):
		status, code, sentinel = http.StatusForbidden, codeForbidden, auth.ErrForbidden
	default:
		return classification{}, false
	}
	// The message is the error's own without the sentinel's words (the
	// code says them); it names a token by its id at most: package auth
	// never puts a secret in an error.
	msg := strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
	return classification{status: status, body: errorResponse{Error: errorBody{Code: code, Message: msg}}}, true
}
