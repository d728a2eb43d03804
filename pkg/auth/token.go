package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Token format (see the package doc). Never change these: tokens in the
// hands of users carry them.
const (
	tokenPrefix = "tl_"
	idHexLen    = 16
	secretHex   = 64
	tokenLen    = len(tokenPrefix) + idHexLen + 1 + secretHex
)

var (
	// ErrUnauthenticated means the request carries no valid token: none,
	// malformed, unknown, wrong secret, expired or revoked (401).
	ErrUnauthenticated = errors.New("auth: unauthenticated")
	// ErrForbidden means a valid token whose scope does not cover the
	// request (403).
	ErrForbidden = errors.New("auth: forbidden")
)

// Secret is a newly made token: its id, the whole token string to hand to
// the user (once), and the hash to store.
type Secret struct {
	ID    string
	Token string
	Hash  string
}

// NewSecret makes a token from crypto/rand.
func NewSecret() Secret {
	var id [idHexLen / 2]byte
	var sec [secretHex / 2]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand, Go 1.24+)
	_, _ = rand.Read(sec[:])
	secret := hex.EncodeToString(sec[:])
	ids := hex.EncodeToString(id[:])
	return Secret{ID: ids, Token: tokenPrefix + ids + "_" + secret, Hash: hashSecret(secret)}
}

// hashSecret is the stored form of a secret: hex SHA-256.
func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// parseToken splits a token string into its id and secret. Its errors
// never quote the token.
func parseToken(tok string) (id, secret string, err error) {
	if len(tok) != tokenLen || !strings.HasPrefix(tok, tokenPrefix) || tok[len(tokenPrefix)+idHexLen] != '_' {
		return "", "", fmt.Errorf("%w: malformed token (want tl_<16 hex>_<64 hex>)", ErrUnauthenticated)
	}
	id = tok[len(tokenPrefix) : len(tokenPrefix)+idHexLen]
	secret = tok[len(tokenPrefix)+idHexLen+1:]
	if !isLowerHex(id) || !isLowerHex(secret) {
		return "", "", fmt.Errorf("%w: malformed token (want tl_<16 hex>_<64 hex>)", ErrUnauthenticated)
	}
	return id, secret, nil
}

// ValidID reports whether id has the form of a token id.
func ValidID(id string) bool { return len(id) == idHexLen && isLowerHex(id) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// secretMatches compares secret's hash with the stored hash in constant
// time.
func secretMatches(secret, storedHash string) bool {
	want, err := hex.DecodeString(storedHash)
	if err != nil || len(want) != sha256.Size {
		return false
	}
	got := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(got[:], want) == 1
}
