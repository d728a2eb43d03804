package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

func newGroupsCmd() *cobra.Command {
	return groupCmd("groups", "Commit and show consumer-group offsets",
		`Consumer groups are named sets of committed offsets: for each partition, the
next offset the group will consume (Kafka's convention). 'tierlog consume
--group G' resumes from them and commits to them.`,
		newGroupsCommitCmd(), newGroupsShowCmd())
}

func newGroupsCommitCmd() *cobra.Command {
	var (
		cf        clientFlags
		group     string
		topic     string
		partition int
		offset    string
		metadata  string
	)
	c := &cobra.Command{
		Use:   "commit --group G --topic T --partition P --offset N|earliest|latest",
		Short: "Set a group's committed offset for a partition",
		Long: `Set a group's committed offset for one partition: the next offset to consume.
It must lie between the partition's log start offset and its high watermark;
earliest and latest name those two.`,
		Example: `  tierlog groups commit --group billing --topic orders --partition 0 --offset 42
  tierlog groups commit --group billing --topic orders --partition 0 --offset latest`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, r := range [][2]string{{"group", group}, {"topic", topic}, {"offset", offset}} {
				if err := requireFlag(cmd, r[0], r[1]); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("partition") {
				return usagef("--partition is required (see '%s --help')", cmd.CommandPath())
			}
			if partition < 0 {
				return usagef("--partition %d: want 0 or more", partition)
			}
			n, named, err := parseOffsetFlag(offset)
			if err != nil {
				return err
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			if named != "" {
				o, err := cl.Offsets(ctx, topic, partition)
				if err != nil {
					return err
				}
				n = o.HighWatermark
				if named == "earliest" {
					n = o.LogStartOffset
				}
			}
			return cl.CommitGroupOffsets(ctx, group, []tlclient.GroupOffset{{Topic: topic, Partition: partition, Offset: n, Metadata: metadata}})
		},
	}
	addClientFlags(c, &cf, retried)
	f := c.Flags()
	f.StringVarP(&group, "group", "g", "", "consumer group (required)")
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.IntVarP(&partition, "partition", "p", 0, "partition (required)")
	f.StringVarP(&offset, "offset", "o", "", "next offset to consume: a number, earliest or latest (required)")
	f.StringVar(&metadata, "metadata", "", "metadata to store with the offset (at most 4 KiB)")
	return c
}

func newGroupsShowCmd() *cobra.Command {
	var (
		cf     clientFlags
		group  string
		topic  string
		format string
	)
	c := &cobra.Command{
		Use:   "show --group G --topic T",
		Short: "Show a group's committed offsets for a topic, with lag",
		Long: `Show a group's committed offset for each partition of a topic, with its lag:
the high watermark minus the committed offset, the records the group has not
consumed yet. Partitions the group never committed are not shown.`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, r := range [][2]string{{"group", group}, {"topic", topic}} {
				if err := requireFlag(cmd, r[0], r[1]); err != nil {
					return err
				}
			}
			if err := outputFormat(format); err != nil {
				return err
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			gos, err := cl.GroupOffsets(ctx, group, topic)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				for _, g := range gos {
					if err := writeJSONLine(w, g); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PARTITION\tOFFSET\tLAG\tMETADATA")
			for _, g := range gos {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%s\n", g.Partition, g.Offset, g.Lag, strconv.Quote(g.Metadata))
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	f := c.Flags()
	f.StringVarP(&group, "group", "g", "", "consumer group (required)")
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

// parseOffsetFlag reads --offset: a non-negative number, or earliest /
// latest (returned in named).
func parseOffsetFlag(s string) (n int64, named string, err error) {
	switch s {
	case "earliest", "latest":
		return 0, s, nil
	}
	n, err = strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, "", usagef("--offset %q: want a non-negative number, earliest or latest", s)
	}
	return n, "", nil
}

// partitionsOf returns the partition the flag names, or all of the topic's.
func partitionsOf(ctx context.Context, cl *tlclient.Client, topic string, given bool, p int) ([]int, error) {
	if given {
		if p < 0 {
			return nil, usagef("--partition %d: want 0 or more", p)
		}
		return []int{p}, nil
	}
	t, err := cl.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	ps := make([]int, t.Partitions)
	for i := range ps {
		ps[i] = i
	}
	return ps, nil
}
