package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

// defaultURL is where the client commands find the API unless --url or
// $TIERLOG_URL say otherwise.
const defaultURL = "http://" + defaultListen

// clientFlags are the flags every command that talks to a server has.
type clientFlags struct {
	url          string
	binary       bool
	verbose      bool
	retryTimeout time.Duration
	sigv4        bool
	region       string
	quiet        bool // -q of produce and consume: no notices on a terminal, only errors
	token        string
}

// defaultRetryTimeout is --retry-timeout's default.
const defaultRetryTimeout = 30 * time.Second

// clientFlagSet says which of the flags that only some commands mean
// anything for a command has.
type clientFlagSet int

const (
	// retried: the command's requests are retried (reads, commits,
	// produce), so --retry-timeout bounds them. Topic create and delete
	// are sent once and do not have it.
	retried clientFlagSet = 1 << iota
	// records: the command produces or fetches records, so --binary
	// changes their wire format.
	records
)

// addClientFlags adds --url, --token, --verbose, --sigv4 and --region, and
// --retry-timeout and --binary as which says.
func addClientFlags(c *cobra.Command, f *clientFlags, which clientFlagSet) {
	fl := c.Flags()
	f.retryTimeout = defaultRetryTimeout
	fl.StringVarP(&f.url, "url", "b", defaultURL, "the tierlog API: a base URL, or HOST:PORT as kcat's -b (http://; https:// for an AWS host)")
	bindEnv(c, "url")
	if which&records != 0 {
		fl.BoolVar(&f.binary, "binary", false, "send and receive binary batches (application/vnd.tierlog.batch.v1) instead of JSON")
	}
	if which&retried != 0 {
		fl.DurationVar(&f.retryTimeout, "retry-timeout", defaultRetryTimeout, "keep retrying a request the server could not take (503, connection errors)\nthis long before giving up; 0 never retries")
	}
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log retries and requests to stderr")
	fl.BoolVar(&f.sigv4, "sigv4", false, "sign requests with AWS SigV4 (service execute-api) for a deployed stack's IAM-authorized API;\n"+
		"credentials from the AWS SDK's default chain (AWS_ACCESS_KEY_ID..., AWS_PROFILE, SSO, instance roles)")
	bindEnv(c, "sigv4")
	fl.StringVar(&f.region, "region", "", "AWS region for --sigv4 (default: the region in an execute-api URL's host,\nelse the SDK's chain: AWS_REGION, AWS_DEFAULT_REGION, the profile)")
	fl.StringVar(&f.token, "token", "", "access token (tl_<id>_<secret>) for a server with token auth on (docs/auth.md);\nprefer the variable: a flag shows in the process list")
	bindEnv(c, "token")
}

// newClient builds the client the flags describe.
func (f *clientFlags) newClient() (*tlclient.Client, error) {
	opts := []tlclient.Option{
		tlclient.WithLogger(clientLogger(os.Stderr, isTerminal(os.Stderr) && !f.quiet, f.verbose)),
		tlclient.WithUserAgent("tierlog-cli"),
		// A server never reached (not started, wrong --url) is an error
		// at once, not after --retry-timeout.
		tlclient.WithFailFast(),
		tlclient.WithBackoff(tlclient.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: max(f.retryTimeout, 0)}),
	}
	if f.binary {
		opts = append(opts, tlclient.WithFormat(tlclient.Binary))
	}
	if f.token != "" {
		if f.sigv4 {
			return nil, usagef("--token and --sigv4 both authenticate requests: use one")
		}
		opts = append(opts, tlclient.WithToken(f.token))
	}
	if f.sigv4 {
		o, err := f.sigv4Option(context.Background())
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	} else if f.region != "" {
		return nil, usagef("--region is only for --sigv4")
	}
	c, err := tlclient.New(f.url, opts...)
	if err != nil {
		return nil, usageError{fmt.Errorf("--url: %w", err)}
	}
	return c, nil
}

// sigv4Option is the client's SigV4 signing: credentials from the AWS
// SDK's default chain (resolved, and refreshed, when a request is signed),
// region from --region, else the execute-api URL's host, else the chain.
func (f *clientFlags) sigv4Option(ctx context.Context) (tlclient.Option, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("--sigv4: AWS configuration: %w", err)
	}
	region := f.region
	if region == "" {
		region = urlRegion(f.url)
	}
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil, usagef("--sigv4 needs a region: --region, AWS_REGION, or a profile with one")
	}
	return tlclient.WithSigV4(cfg.Credentials, region), nil
}

// urlRegion is REGION of an API Gateway URL, https://ID.execute-api.REGION.amazonaws.com[.cn]/...,
// or "" for any other URL.
func urlRegion(raw string) string {
	u, err := tlclient.ParseURL(raw)
	if err != nil {
		return ""
	}
	labels := strings.Split(u.Hostname(), ".")
	if len(labels) >= 5 && labels[1] == "execute-api" && labels[3] == "amazonaws" {
		return labels[2]
	}
	return ""
}

// usagef is a usage error: exit code 2.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// checkArgs wraps a cobra argument validator so that its errors are usage
// errors (exit 2) with a pointer to --help.
func checkArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := v(c, args); err != nil {
			return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
		}
		return nil
	}
}

// groupCmd is a command that only holds subcommands: alone it prints its
// help; with an unknown subcommand it is a usage error.
func groupCmd(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return usagef("unknown command %q for %q (see '%s --help')", args[0], c.CommandPath(), c.CommandPath())
		},
	}
	c.AddCommand(subs...)
	return c
}

// requireFlag is a usage error unless the string flag is set.
func requireFlag(c *cobra.Command, name, value string) error {
	if value == "" {
		return usagef("--%s is required (see '%s --help')", name, c.CommandPath())
	}
	return nil
}

// signalContext is cancelled by SIGINT or SIGTERM, with the signal as its
// cause (signalExitCode reads it).
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			cancel(signalCause{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

// signalCause is the cause of a signalContext a signal cancelled.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return c.sig.String() + " signal received" }

// signalExitCode is the shell's exit code for the signal that cancelled a
// signalContext: 143 for SIGTERM, else 130 (SIGINT).
func signalExitCode(ctx context.Context) int {
	var c signalCause
	if errors.As(context.Cause(ctx), &c) && c.sig == syscall.SIGTERM {
		return 128 + int(syscall.SIGTERM)
	}
	return 128 + int(syscall.SIGINT)
}

// requestContext bounds a one-shot API call.
func requestContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signalContext(parent)
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	return tctx, func() { cancel(); stop() }
}

// outputFormat validates --format.
func outputFormat(s string) error {
	if s != "plain" && s != "json" {
		return usagef("--format %q: want plain or json", s)
	}
	return nil
}

// unescape turns \t, \n, \r, \0 and \\ in a separator into the bytes they
// name, so --key-separator '\t' works without shell quoting tricks.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("trailing backslash in %q", s)
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\':
			b.WriteByte('\\')
		default:
			return "", fmt.Errorf(`unknown escape \%c in %q (known: \t \n \r \0 \\)`, s[i], s)
		}
	}
	return b.String(), nil
}

// parseTimestamp reads milliseconds since the epoch, an RFC 3339 time, or
// a time relative to now: -DURATION, that long ago (-1h, -90m, -30s).
func parseTimestamp(s string) (int64, error) {
	return parseTimestampAt(s, time.Now())
}

// parseTimestampAt is parseTimestamp with now given.
func parseTimestampAt(s string, now time.Time) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("timestamp %d is negative (a time ago is a duration: -1h)", n)
		}
		return n, nil
	}
	if ago, ok := strings.CutPrefix(s, "-"); ok {
		d, err := time.ParseDuration(ago)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("timestamp %q: want -DURATION ago such as -1h, -15m or -30s", s)
		}
		return max(now.Add(-d).UnixMilli(), 0), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("timestamp %q: want milliseconds since the epoch, RFC 3339 (2025-01-02T15:04:05Z) or -DURATION ago (-1h)", s)
	}
	return t.UnixMilli(), nil
}

// isInterrupt reports whether err comes from a cancelled context (SIGINT
// or SIGTERM through signalContext).
func isInterrupt(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err()))
}

// closeQuietly closes c, ignoring the error (read-only files).
func closeQuietly(c io.Closer) { _ = c.Close() }
