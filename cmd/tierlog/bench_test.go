package main

import (
	"errors"
	"io"
	"testing"
)

// TestBenchUsageErrors: the harness's checks of its options are usage
// errors of the bench commands (exit 2), with their messages, before
// anything starts.
func TestBenchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--partitions", "0"}, "--partitions and --clients must be >= 1 and --duration positive"},
		{[]string{"bench", "--format", "xml"}, `--format "xml": want json or binary`},
		{[]string{"bench", "contention", "--writers", "0"}, "--writers 0: want 1 to 256"},
		{[]string{"bench", "contention", "--writers", "1", "--records", "0"}, "--duration, --records and --record-bytes must be positive"},
		{[]string{"bench", "cloud", "--cells", "0x1"}, `--cells: "0x1": want 1 to 256 writers and 1 to writers partitions`},
		{[]string{"bench", "cloud", "--memory-mb", "64"}, "--cells needs values, --memory-mb at least 128, and the step counts must not be negative"},
		{[]string{"bench", "cloud", "--tier-segment-bytes", "10"}, "--tier-segment-bytes must be at least 4096, --tier-records and --tier-record-bytes positive"},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		var ue usageError
		if !errors.As(err, &ue) || err.Error() != tc.want {
			t.Errorf("%v: got %T %v, want the usage error %q", tc.args, err, err, tc.want)
		}
	}
}
