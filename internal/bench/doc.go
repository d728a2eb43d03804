// Package bench is the load harness behind `tierlog bench`: end-to-end
// produce and fetch against raw disk and direct engine calls (Run), many
// writers on one partition against dynalite (Contention), and the write
// path with the cloud's latencies charged and priced (Cloud, with the list
// prices of docs/cost.md). The CLI (cmd/tierlog) defines the commands and
// their flags and calls these; what they print is the commands' output.
//
// The harness starts `tierlog serve` processes (ContentionOpts.ServerBin,
// by default the running executable) and dynalite (tools/dynalite); every
// server it starts listens on 127.0.0.1 and is stopped before it returns.
package bench

import (
	"context"
	"fmt"
	"io"
)

// UsageError is an error in the options, as the command's flags gave
// them: the CLI answers it as a usage error.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Contention runs `tierlog bench contention` and prints its tables to
// stdout, as text or (o.Markdown) Markdown.
func Contention(ctx context.Context, stdout io.Writer, o ContentionOpts) error {
	cells, err := runContention(ctx, o)
	if err != nil {
		return err
	}
	if o.Markdown {
		fmt.Fprint(stdout, renderContentionMarkdown(cells))
	} else {
		fmt.Fprint(stdout, renderContentionText(cells))
	}
	return nil
}

// Cloud runs `tierlog bench cloud` and prints its report to stdout, as
// text or (o.Markdown) Markdown.
func Cloud(ctx context.Context, stdout io.Writer, o CloudOpts) error {
	res, err := runCloud(ctx, o)
	if err != nil {
		return err
	}
	if o.Markdown {
		fmt.Fprint(stdout, renderCloudMarkdown(res))
	} else {
		fmt.Fprint(stdout, renderCloudText(res))
	}
	return nil
}
