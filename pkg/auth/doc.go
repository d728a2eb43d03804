// Package auth is tierlog's access tokens (docs/auth.md): their format,
// their scope, and the Verifier that turns an Authorization header into a
// token and decides what it may touch.
//
// # Format
//
//	tl_<id>_<secret>
//	   id:     16 lowercase hex digits (8 random bytes), the token's name
//	           in lists, logs and revocation; not secret
//	   secret: 64 lowercase hex digits (32 random bytes from crypto/rand)
//
// Only SHA-256(secret) is stored (meta.Token.Hash). A fast hash is enough:
// the secret is 256 random bits, so there is no dictionary to try and no
// guess that a slow key-derivation function would make dearer; a stolen
// table gives hashes nobody can invert. It also keeps an uncached
// verification at one store read and one hash. Hashes are compared with
// crypto/subtle.ConstantTimeCompare.
//
// # Scope
//
// A token names topics and groups (a prefix, one exact name, or a list;
// absent: none) and operations: produce, consume, groups and admin. A
// request needs one operation (the route declares it) on every topic and
// group it touches. Describing a topic (GET /v1/topics/{topic}) is implied
// by produce, consume and admin, as Kafka's WRITE, READ and ALTER imply
// DESCRIBE. Token routes need admin with the topics scope {"prefix":""}.
//
// # Revocation
//
// A Verifier caches what it read of a token (or that there was none) for
// at most its cache TTL (DefaultCacheTTL, 2 s): a token revoked through
// any server or function instance is refused by every other within that
// bound, and at once by the instance that revoked it. Expiry is checked
// on every request against the Verifier's clock, never cached.
package auth
