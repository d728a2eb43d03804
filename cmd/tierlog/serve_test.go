package main

import (
	"errors"
	"testing"
	"time"

	tlserver "github.com/tierlog/tierlog/pkg/server"
)

// TestServeBodyReadTimeout: --body-read-timeout defaults to the server's
// default, TIERLOG_BODY_READ_TIMEOUT overrides the default, the flag
// overrides both, and an unreadable variable is a usage error.
func TestServeBodyReadTimeout(t *testing.T) {
	parse := func(args ...string) time.Duration {
		t.Helper()
		c := newServeCmd()
		if err := c.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		d, err := c.Flags().GetDuration("body-read-timeout")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Setenv("TIERLOG_BODY_READ_TIMEOUT", "")
	if d := parse(); d != tlserver.DefaultBodyReadTimeout {
		t.Errorf("default %v, want %v", d, tlserver.DefaultBodyReadTimeout)
	}
	t.Setenv("TIERLOG_BODY_READ_TIMEOUT", "2s")
	if d := parse(); d != 2*time.Second {
		t.Errorf("from env %v, want 2s", d)
	}
	if d := parse("--body-read-timeout", "750ms"); d != 750*time.Millisecond {
		t.Errorf("from flag %v, want 750ms", d)
	}
	t.Setenv("TIERLOG_BODY_READ_TIMEOUT", "soon")
	c := newServeCmd()
	// A bad address too: should the variable pass, serve fails at once.
	c.SetArgs([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:-1"})
	var ue usageError
	if err := c.Execute(); !errors.As(err, &ue) {
		t.Errorf("serve with TIERLOG_BODY_READ_TIMEOUT=soon: %v, want a usage error", err)
	}
}
