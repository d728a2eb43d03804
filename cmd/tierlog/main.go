// Command tierlog is tierlog's one binary: `tierlog serve` runs the whole
// log locally on the embedded default; the other subcommands talk to a
// server.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes scripts can trust.
const (
	exitOK      = 0
	exitFailure = 1 // the operation failed
	exitUsage   = 2 // bad flags or arguments
)

// usageError marks errors in how the command was called.
type usageError struct{ error }

// exitError is a failure with its own exit code (an interrupted
// consume --count: 128 plus the signal's number).
type exitError struct {
	error
	code int
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		err = explain(err)
		fmt.Fprintln(os.Stderr, "tierlog:", cliMessage(err))
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return exitFailure
	}
	return exitOK
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "tierlog",
		Short:         "A serverless, tiered, Kafka-style log",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("tierlog {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	// Without this, cobra answers an unknown command itself with a plain
	// error (exit 1); it is a usage error.
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return usageError{fmt.Errorf("unknown command %q for %q (see '%s --help')", args[0], c.CommandPath(), c.CommandPath())}
	}
	root.AddCommand(newServeCmd(), newTopicsCmd(), newProduceCmd(), newConsumeCmd(),
		newOffsetsCmd(), newGroupsCmd(), newSubscriptionsCmd(), newSegmentsCmd(), newRepairCmd(), newTokensCmd(), newBenchCmd(), newVersionCmd(),
		newConsoleCmd())
	return root
}
