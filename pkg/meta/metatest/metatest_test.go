package metatest_test

import (
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

// The suite checks itself against the reference in-memory store: a failure
// here is a bug in the suite (or in mem), not in an adapter.
func TestMem(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store { return mem.New() })
}

func TestMemTokens(t *testing.T) {
	metatest.RunTokens(t, func(t *testing.T) meta.TokenStore { return mem.New() })
}
