package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newOffsetsCmd() *cobra.Command {
	var (
		cf        clientFlags
		topic     string
		partition int
		timestamp string
		format    string
	)
	c := &cobra.Command{
		Use:   "offsets --topic T [--partition P] [--timestamp T]",
		Short: "Show partition bounds, or the first offset at a time",
		Long: `Show each partition's log start offset and high watermark (the offset the
next record will get). With --timestamp, show instead the earliest offset whose
timestamp is at or after it (Kafka's ListOffsets); a partition with no record
that late shows its high watermark and timestamp "-".`,
		Example: `  tierlog offsets --topic orders
  tierlog offsets --topic orders --partition 0 --timestamp 2025-06-01T00:00:00Z`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlag(cmd, "topic", topic); err != nil {
				return err
			}
			if err := outputFormat(format); err != nil {
				return err
			}
			var ts int64
			byTime := cmd.Flags().Changed("timestamp")
			if byTime {
				var err error
				if ts, err = parseTimestamp(timestamp); err != nil {
					return usagef("--timestamp: %v", err)
				}
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			parts, err := partitionsOf(ctx, cl, topic, cmd.Flags().Changed("partition"), partition)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			if format == "plain" {
				if byTime {
					fmt.Fprintln(tw, "PARTITION\tOFFSET\tTIMESTAMP")
				} else {
					fmt.Fprintln(tw, "PARTITION\tLOG_START_OFFSET\tHIGH_WATERMARK")
				}
			}
			for _, p := range parts {
				if byTime {
					to, err := cl.OffsetForTimestamp(ctx, topic, p, ts)
					if err != nil {
						return err
					}
					if format == "json" {
						var at *int64
						if to.Found {
							at = &to.Timestamp
						}
						if err := writeJSONLine(w, struct {
							Partition int    `json:"partition"`
							Offset    int64  `json:"offset"`
							Timestamp *int64 `json:"timestamp"`
						}{p, to.Offset, at}); err != nil {
							return err
						}
						continue
					}
					at := "-"
					if to.Found {
						at = fmt.Sprint(to.Timestamp)
					}
					fmt.Fprintf(tw, "%d\t%d\t%s\n", p, to.Offset, at)
					continue
				}
				o, err := cl.Offsets(ctx, topic, p)
				if err != nil {
					return err
				}
				if format == "json" {
					if err := writeJSONLine(w, struct {
						Partition      int   `json:"partition"`
						LogStartOffset int64 `json:"log_start_offset"`
						HighWatermark  int64 `json:"high_watermark"`
					}{p, o.LogStartOffset, o.HighWatermark}); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(tw, "%d\t%d\t%d\n", p, o.LogStartOffset, o.HighWatermark)
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	f := c.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.IntVarP(&partition, "partition", "p", 0, "only this partition (default: every partition)")
	f.StringVar(&timestamp, "timestamp", "", "milliseconds since the epoch, or RFC 3339")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}
