package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/pkg/broker"
	tlclient "github.com/tierlog/tierlog/pkg/client"
)

func newTopicsCmd() *cobra.Command {
	return groupCmd("topics", "Create, list, describe, alter and delete topics",
		`Manage topics on a tierlog server.`,
		newTopicsCreateCmd(), newTopicsListCmd(), newTopicsDescribeCmd(), newTopicsAlterCmd(), newTopicsDeleteCmd())
}

func newTopicsCreateCmd() *cobra.Command {
	var (
		cf     clientFlags
		spec   tlclient.TopicSpec
		format string
		nums   = map[string]*int64{}

		cacheEnabled bool
		readAhead    int
		tsType       string
	)
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: `Create a topic. Every setting but the name is optional; the server fills in
its defaults (1 partition, 7 days retention, unlimited bytes, 16 MiB segments,
60 s segment time, cleanup policy delete, cold-tier cache on, 1 segment read
ahead) and the topic is printed as stored.

--cache-enabled and --read-ahead-segments are the cold-tier read settings of
docs/api-extensions.md: with the cache on, the fetching process caches cold
segments' indexes and a cold fetch loads its segment whole plus the next N;
--cache-enabled=false or --read-ahead-segments 0 reads only the index and the
window asked for.

--timestamp-type create makes records carry the producer's timestamp (a
record without one gets the server's clock); append, the default, stamps each
record with the server's clock. It cannot be changed later.

The request is sent once (a retry could answer topic_exists for a create
that worked), so there is no --retry-timeout.`,
		Example: `  tierlog topics create orders --partitions 3
  tierlog topics create audit --retention-ms 86400000 --format json
  tierlog topics create archive --cache-enabled=false
  tierlog topics create replay --read-ahead-segments 4`,
		Args: checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			spec.Name = args[0]
			for name, p := range map[string]**int64{
				"retention-ms": &spec.RetentionMs, "retention-bytes": &spec.RetentionBytes,
				"segment-bytes": &spec.SegmentBytes, "segment-ms": &spec.SegmentMs,
			} {
				if cmd.Flags().Changed(name) {
					*p = nums[name]
				}
			}
			if cmd.Flags().Changed("partitions") && spec.Partitions < 1 {
				return usagef("--partitions %d: want at least 1", spec.Partitions)
			}
			if cmd.Flags().Changed("cache-enabled") {
				spec.CacheEnabled = &cacheEnabled
			}
			if cmd.Flags().Changed("read-ahead-segments") {
				if readAhead < 0 || readAhead > broker.MaxReadAhead {
					return usagef("--read-ahead-segments %d: want 0 to %d", readAhead, broker.MaxReadAhead)
				}
				spec.ReadAheadSegments = &readAhead
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			if cmd.Flags().Changed("timestamp-type") {
				if tsType != broker.TimestampAppend && tsType != broker.TimestampCreate {
					return usagef("--timestamp-type %q: want %s or %s", tsType, broker.TimestampAppend, broker.TimestampCreate)
				}
				spec.TimestampType = tsType
			}
			t, err := cl.CreateTopic(ctx, spec)
			if err != nil {
				return err
			}
			return printTopics(cmd.OutOrStdout(), format, []tlclient.Topic{t})
		},
	}
	addClientFlags(c, &cf, 0) // sent once: no retries
	f := c.Flags()
	f.IntVar(&spec.Partitions, "partitions", 0, "number of partitions (default 1)")
	for _, n := range []struct{ name, help string }{
		{"retention-ms", "keep records this many milliseconds (default 604800000)"},
		{"retention-bytes", "keep at most this many bytes per partition, -1 unlimited (default -1)"},
		{"segment-bytes", "roll segments at this size, 4 KiB to 1 GiB (default 16777216)"},
		{"segment-ms", "roll segments after this many milliseconds (default 60000)"},
	} {
		nums[n.name] = new(int64)
		f.Int64Var(nums[n.name], n.name, 0, n.help)
	}
	f.StringVar(&spec.CleanupPolicy, "cleanup-policy", "", "cleanup policy (default delete)")
	f.BoolVar(&cacheEnabled, "cache-enabled", true, "cache cold-tier indexes and read-ahead segments in the fetching process")
	f.IntVar(&readAhead, "read-ahead-segments", 1, "with the cache on, segments a cold fetch reads ahead, 0 to 16")
	f.StringVar(&tsType, "timestamp-type", broker.TimestampAppend, "record timestamps: append (the server's clock) or create (the producer's)")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newTopicsAlterCmd() *cobra.Command {
	var (
		cf           clientFlags
		patch        tlclient.TopicPatch
		format       string
		partitions   int
		nums         = map[string]*int64{}
		cacheEnabled bool
		readAhead    int
	)
	c := &cobra.Command{
		Use:   "alter NAME [--partitions N] [--retention-ms MS] [--retention-bytes B] [--segment-bytes B] [--segment-ms MS] [--cache-enabled=BOOL] [--read-ahead-segments N]",
		Short: "Change a topic's settings or add partitions",
		Long: `Change a topic's settings; the flags not given stay as they are. The topic is
printed as stored.

--partitions may only grow. As in Kafka, keyed records are routed by a hash of
the key over the partition count, so after growing, a key may go to another
partition than before: records of one key are then in order per partition,
not across the change. Other servers and Lambda containers see the new count
within 5 seconds. --segment-bytes and --segment-ms apply to a partition the
next time a server opens it.`,
		Example: `  tierlog topics alter orders --partitions 6
  tierlog topics alter audit --retention-ms 86400000`,
		Args: checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			fl := cmd.Flags()
			for name, p := range map[string]**int64{
				"retention-ms": &patch.RetentionMs, "retention-bytes": &patch.RetentionBytes,
				"segment-bytes": &patch.SegmentBytes, "segment-ms": &patch.SegmentMs,
			} {
				if fl.Changed(name) {
					*p = nums[name]
				}
			}
			if fl.Changed("partitions") {
				if partitions < 1 {
					return usagef("--partitions %d: want at least 1", partitions)
				}
				patch.Partitions = &partitions
			}
			if fl.Changed("cache-enabled") {
				patch.CacheEnabled = &cacheEnabled
			}
			if fl.Changed("read-ahead-segments") {
				if readAhead < 0 || readAhead > broker.MaxReadAhead {
					return usagef("--read-ahead-segments %d: want 0 to %d", readAhead, broker.MaxReadAhead)
				}
				patch.ReadAheadSegments = &readAhead
			}
			if patch == (tlclient.TopicPatch{}) {
				return usagef("nothing to change: give at least one setting (see '%s --help')", cmd.CommandPath())
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			t, err := cl.UpdateTopic(ctx, args[0], patch)
			if err != nil {
				return err
			}
			return printTopics(cmd.OutOrStdout(), format, []tlclient.Topic{t})
		},
	}
	addClientFlags(c, &cf, retried)
	f := c.Flags()
	f.IntVar(&partitions, "partitions", 0, "grow to this many partitions")
	for _, n := range []struct{ name, help string }{
		{"retention-ms", "keep records this many milliseconds, -1 forever"},
		{"retention-bytes", "keep at most this many bytes per partition, -1 unlimited"},
		{"segment-bytes", "roll segments at this size, 4 KiB to 1 GiB"},
		{"segment-ms", "roll segments after this many milliseconds"},
	} {
		nums[n.name] = new(int64)
		f.Int64Var(nums[n.name], n.name, 0, n.help)
	}
	f.BoolVar(&cacheEnabled, "cache-enabled", true, "cache cold-tier indexes and read-ahead segments in the fetching process")
	f.IntVar(&readAhead, "read-ahead-segments", 1, "with the cache on, segments a cold fetch reads ahead, 0 to 16")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newTopicsListCmd() *cobra.Command {
	var (
		cf     clientFlags
		format string
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List topics, sorted by name",
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
			ts, err := cl.Topics(ctx)
			if err != nil {
				return err
			}
			return printTopics(cmd.OutOrStdout(), format, ts)
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newTopicsDescribeCmd() *cobra.Command {
	var (
		cf     clientFlags
		format string
	)
	c := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's settings and each partition's offsets",
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
			t, err := cl.Topic(ctx, args[0])
			if err != nil {
				return err
			}
			offs := make([]tlclient.Offsets, t.Partitions)
			for p := range offs {
				if offs[p], err = cl.Offsets(ctx, t.Name, p); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				type part struct {
					Partition int `json:"partition"`
					tlclient.Offsets
				}
				out := struct {
					tlclient.Topic
					Offsets []part `json:"offsets"`
				}{Topic: t}
				for p, o := range offs {
					out.Offsets = append(out.Offsets, part{p, o})
				}
				return writeJSONLine(w, out)
			}
			if err := printTopics(w, "plain", []tlclient.Topic{t}); err != nil {
				return err
			}
			fmt.Fprintln(w)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PARTITION\tLOG_START_OFFSET\tHIGH_WATERMARK")
			for p, o := range offs {
				fmt.Fprintf(tw, "%d\t%d\t%d\n", p, o.LogStartOffset, o.HighWatermark)
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newTopicsDeleteCmd() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic and all its records",
		Long: `Delete a topic and all its records. The request is sent once (a retry could
answer topic_not_found for a delete that worked), so there is no --retry-timeout.`,
		Args: checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			return cl.DeleteTopic(ctx, args[0])
		},
	}
	addClientFlags(c, &cf, 0) // sent once: no retries
	return c
}

// printTopics prints topics as a table, or one JSON object per line.
func printTopics(w io.Writer, format string, ts []tlclient.Topic) error {
	if format == "json" {
		return writeJSONLines(w, ts)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPARTITIONS\tRETENTION_MS\tRETENTION_BYTES\tSEGMENT_BYTES\tSEGMENT_MS\tCLEANUP_POLICY\tCACHE_ENABLED\tREAD_AHEAD_SEGMENTS\tTIMESTAMP_TYPE")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%t\t%d\t%s\n", t.Name, t.Partitions, t.RetentionMs, t.RetentionBytes, t.SegmentBytes, t.SegmentMs, t.CleanupPolicy, t.CacheEnabled, t.ReadAheadSegments, t.TimestampType)
	}
	return tw.Flush()
}

// writeJSONLine writes v as one line of JSON, HTML characters unescaped.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLines writes each of vs as one JSON line.
func writeJSONLines[T any](w io.Writer, vs []T) error {
	for _, v := range vs {
		if err := writeJSONLine(w, v); err != nil {
			return err
		}
	}
	return nil
}
