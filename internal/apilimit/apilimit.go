// Package apilimit holds the bounds and defaults of the HTTP API
// (docs/api.md) that both sides apply: the server, which enforces them,
// and the Go client, which checks its options against them before a
// request is sent. Each is defined here once.
package apilimit

import "time"

// A group member's session timeout (session_timeout_ms): the default when
// a join names none, and the range a join may name.
const (
	DefaultSessionTimeout = 30 * time.Second
	MinSessionTimeout     = time.Second
	MaxSessionTimeout     = 300 * time.Second
)

// MaxWait bounds a fetch's long-poll (wait_ms).
const MaxWait = 20 * time.Second
