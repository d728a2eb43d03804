package objtest_test

import (
	"testing"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/objstore/faulty"
	"github.com/tierlog/tierlog/pkg/objstore/mem"
	"github.com/tierlog/tierlog/pkg/objstore/objtest"
)

// The suite checks itself against the reference in-memory store: a failure
// here is a bug in the suite (or in mem), not in an adapter.
func TestMem(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objstore.Store { return mem.New() })
}

// The wrappers must be transparent when they have nothing to do.
func TestCounting(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objstore.Store {
		return objstore.Counting(mem.New(), new(objstore.Counters))
	})
}

func TestFaultyNoRules(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objstore.Store { return faulty.New(mem.New()) })
}
