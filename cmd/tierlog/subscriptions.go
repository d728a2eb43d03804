package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

func newSubscriptionsCmd() *cobra.Command {
	return groupCmd("subscriptions", "Create, list, describe, pause, resume and delete subscriptions (push delivery)",
		`A subscription delivers a topic's records to a Lambda function or an HTTP
webhook, in batches shaped as Lambda's Kafka events, at least once and in order
per partition. Its progress is the consumer group named after it ('tierlog
groups show --group NAME --topic T'). 'tierlog serve' runs the deliverers
in-process. docs/subscriptions.md has the details.`,
		newSubsCreateCmd(), newSubsListCmd(), newSubsDescribeCmd(),
		newSubsEnableCmd("pause", false), newSubsEnableCmd("resume", true), newSubsDeleteCmd())
}

// subscriptionStart converts -o (consume's kcat forms) into a
// subscription's start: beginning, end, an offset, or s@TIME.
func subscriptionStart(s string) (json.RawMessage, error) {
	sp, err := parseStart(s)
	if err != nil {
		return nil, err
	}
	switch sp.kind {
	case "beginning":
		return json.RawMessage(`"earliest"`), nil
	case "end":
		return json.RawMessage(`"latest"`), nil
	case "offset":
		return fmt.Appendf(nil, `{"offset":%d}`, sp.n), nil
	case "time":
		return fmt.Appendf(nil, `{"timestamp":%d}`, sp.n), nil
	}
	return nil, usagef("--start %q: a subscription starts at beginning, end, an offset N or s@TIME", s)
}

func newSubsCreateCmd() *cobra.Command {
	var (
		cf                clientFlags
		sub               tlclient.Subscription
		lambdaFn, webhook string
		start, onFailure  string
		retries           int
		maxAge            int64
		disabled          bool
		format            string
	)
	c := &cobra.Command{
		Use:   "create NAME --topic T (--lambda FUNCTION | --webhook URL)",
		Short: "Create a subscription",
		Long: `Create a subscription of a topic to a Lambda function (invoked RequestResponse;
AWS_ENDPOINT_URL_LAMBDA points 'tierlog serve' at an emulator) or an HTTP
webhook (POST). Settings not given take the server's defaults: start latest,
batches of up to 100 records and 5,242,880 bytes sent at once, retries until
the target takes them (max retry attempts -1, max record age -1), no
on_failure topic.

--start takes kcat's forms: beginning (earliest), end (latest), an offset, or
s@MS for the first record at or after a timestamp.`,
		Example: `  tierlog subscriptions create billing --topic orders --webhook http://127.0.0.1:9000/hook
  tierlog subscriptions create billing-fn --topic orders --lambda billing --start beginning \
      --batch-size 500 --max-retry-attempts 3 --bisect --on-failure orders-dlq`,
		Args: checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag(cmd, "topic", sub.Topic); err != nil {
				return err
			}
			if err := outputFormat(format); err != nil {
				return err
			}
			sub.Name = args[0]
			switch {
			case (lambdaFn == "") == (webhook == ""):
				return usagef("give one target: --lambda FUNCTION or --webhook URL (see '%s --help')", cmd.CommandPath())
			case lambdaFn != "":
				sub.Target = tlclient.SubscriptionTarget{Type: "lambda", Function: lambdaFn}
			default:
				sub.Target = tlclient.SubscriptionTarget{Type: "http", URL: webhook}
			}
			if start != "" {
				s, err := subscriptionStart(start)
				if err != nil {
					return err
				}
				sub.Start = s
			}
			if onFailure != "" {
				sub.OnFailure = &tlclient.SubscriptionTopic{Topic: onFailure}
			}
			if cmd.Flags().Changed("max-retry-attempts") {
				sub.MaxRetryAttempts = &retries
			}
			if cmd.Flags().Changed("max-record-age-ms") {
				sub.MaxRecordAgeMs = &maxAge
			}
			if disabled {
				sub.Enabled = tlclient.Bool(false)
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			got, err := cl.CreateSubscription(ctx, sub)
			if err != nil {
				return err
			}
			return printSubscription(cmd, got, format)
		},
	}
	addClientFlags(c, &cf, 0)
	f := c.Flags()
	f.StringVarP(&sub.Topic, "topic", "t", "", "topic to deliver (required)")
	f.StringVar(&lambdaFn, "lambda", "", "target: a Lambda function name or ARN")
	f.StringVar(&webhook, "webhook", "", "target: an http(s) URL to POST batches to")
	f.StringVarP(&start, "start", "o", "", "where to start on every partition: beginning, end, an offset or s@MS (default end)")
	f.IntVar(&sub.BatchSize, "batch-size", 0, "records per batch, 1 to 10000 (default 100)")
	f.Int64Var(&sub.BatchWindowMs, "batch-window-ms", 0, "wait up to this long for a fuller batch, 0 to 300000 (default 0)")
	f.IntVar(&sub.MaxBatchBytes, "max-batch-bytes", 0, "bytes per event, envelope included, up to 6000000 (default 5242880)")
	f.IntVar(&sub.ParallelizationFactor, "parallelization-factor", 0, "concurrent batches per partition by key hash, 1 to 10 (default 1)")
	f.IntVar(&retries, "max-retry-attempts", -1, "retries of a failing batch before its records are given up; -1: until max-record-age-ms")
	f.Int64Var(&maxAge, "max-record-age-ms", -1, "give up records older than this, 60000 to 604800000; -1: never")
	f.BoolVar(&sub.BisectBatchOnError, "bisect", false, "halve a failing batch before retrying it")
	f.StringVar(&onFailure, "on-failure", "", "topic that receives given-up records")
	f.BoolVar(&disabled, "disabled", false, "create it paused")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func printSubscription(cmd *cobra.Command, s tlclient.Subscription, format string) error {
	w := cmd.OutOrStdout()
	if format == "json" {
		return writeJSONLine(w, s)
	}
	target := s.Target.URL
	if s.Target.Type == "lambda" {
		target = "lambda:" + s.Target.Function
	}
	onFailure := "-"
	if s.OnFailure != nil {
		onFailure = s.OnFailure.Topic
	}
	enabled := s.Enabled == nil || *s.Enabled
	fmt.Fprintf(w, "subscription %s: topic %s -> %s, enabled %v, start %s\n", s.Name, s.Topic, target, enabled, s.Start)
	fmt.Fprintf(w, "batch size %d, window %d ms, max bytes %d, parallelization %d, retries %s, max age %s, bisect %v, on_failure %s\n",
		s.BatchSize, s.BatchWindowMs, s.MaxBatchBytes, s.ParallelizationFactor, numOrNone(s.MaxRetryAttempts), numOrNone(s.MaxRecordAgeMs),
		s.BisectBatchOnError, onFailure)
	if st := s.Status; st != nil {
		fmt.Fprintf(w, "state %s, delivered %d, failed attempts %d, sent to on_failure %d, dropped %d\n",
			st.State, st.Delivered, st.FailedAttempts, st.SentToOnFailure, st.Dropped)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PARTITION\tCOMMITTED\tLAG\tLAST_ERROR")
		for _, p := range st.Partitions {
			last := "-"
			if p.LastError != nil {
				last = strconv.Quote(*p.LastError)
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\n", p.Partition, p.CommittedOffset, p.Lag, last)
		}
		return tw.Flush()
	}
	return nil
}

func numOrNone[T int | int64](p *T) string {
	if p == nil || *p < 0 {
		return "unbounded"
	}
	return strconv.FormatInt(int64(*p), 10)
}

func newSubsListCmd() *cobra.Command {
	var (
		cf     clientFlags
		format string
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List subscriptions",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			subs, err := cl.Subscriptions(ctx)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				return writeJSONLines(w, subs)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTOPIC\tTARGET\tENABLED")
			for _, s := range subs {
				target := s.Target.URL
				if s.Target.Type == "lambda" {
					target = "lambda:" + s.Target.Function
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", s.Name, s.Topic, target, s.Enabled == nil || *s.Enabled)
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newSubsDescribeCmd() *cobra.Command {
	var (
		cf     clientFlags
		format string
	)
	c := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a subscription with its delivery status per partition",
		Args:  checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			s, err := cl.Subscription(ctx, args[0])
			if err != nil {
				return err
			}
			return printSubscription(cmd, s, format)
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newSubsEnableCmd(use string, enabled bool) *cobra.Command {
	var cf clientFlags
	short := "Pause a subscription: its deliverers stop after the batch in flight"
	if enabled {
		short = "Resume a paused subscription from its committed offsets"
	}
	c := &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Args:  checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			_, err = cl.UpdateSubscription(ctx, args[0], tlclient.SubscriptionPatch{Enabled: &enabled})
			return err
		},
	}
	addClientFlags(c, &cf, retried)
	return c
}

func newSubsDeleteCmd() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a subscription and its consumer group",
		Long: `Delete a subscription: its deliverers stop and its consumer group (the
committed offsets) goes with it. Sent once (a retry could answer
subscription_not_found for a delete that worked).`,
		Args: checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			return cl.DeleteSubscription(ctx, args[0])
		},
	}
	addClientFlags(c, &cf, 0)
	return c
}
