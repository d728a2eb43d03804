package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

func newGroupsCmd() *cobra.Command {
	return groupCmd("groups", "List, describe, delete and reset consumer groups; commit and show offsets",
		`Consumer groups are named sets of committed offsets: for each partition, the
next offset the group will consume (Kafka's convention), and a membership:
'tierlog consume --group G' joins G, reads only the partitions the group
assigns it (several consumers of one group split a topic's partitions),
resumes from the committed offsets and commits to them.`,
		newGroupsListCmd(), newGroupsDescribeCmd(), newGroupsDeleteCmd(), newGroupsResetCmd(),
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
		Use:   "commit GROUP --topic T --partition P --offset N|earliest|latest",
		Short: "Set a group's committed offset for a partition",
		Long: `Set a group's committed offset for one partition: the next offset to consume.
It must lie between the partition's log start offset and its high watermark;
earliest and latest name those two.`,
		Example: `  tierlog groups commit billing --topic orders --partition 0 --offset 42
  tierlog groups commit --group billing --topic orders --partition 0 --offset latest`,
		Args: checkArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, err := groupArg(cmd, args, group)
			if err != nil {
				return err
			}
			for _, r := range [][2]string{{"topic", topic}, {"offset", offset}} {
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
	f.StringVarP(&group, "group", "g", "", "consumer group (or the argument GROUP)")
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
		Use:   "show GROUP [--topic T]",
		Short: "Show a group's committed offsets, with lag",
		Long: `Show a group's committed offset for each partition of a topic (--topic; every
topic the group committed offsets for without it), with its lag: the high
watermark minus the committed offset, the records the group has not consumed
yet. Partitions the group never committed are not shown. A group the server
does not know is an error (exit 1), as for 'groups describe' and 'groups delete'.`,
		Example: `  tierlog groups show billing
  tierlog groups show --group billing --topic orders --format json`,
		Args: checkArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, err := groupArg(cmd, args, group)
			if err != nil {
				return err
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
			gos, err := showOffsets(ctx, cl, group, topic)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				return writeJSONLines(w, gos)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tOFFSET\tLAG\tMETADATA")
			for _, g := range gos {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", g.Topic, g.Partition, g.Offset, g.Lag, strconv.Quote(g.Metadata))
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	f := c.Flags()
	f.StringVarP(&group, "group", "g", "", "consumer group (or the argument GROUP)")
	f.StringVarP(&topic, "topic", "t", "", "only this topic (default: every topic the group committed offsets for)")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

// showOffsets is groups show's offsets: of topic, or of every topic the
// group has offsets for. A group the server does not know is an error.
func showOffsets(ctx context.Context, cl *tlclient.Client, group, topic string) ([]tlclient.GroupOffset, error) {
	if topic != "" {
		gos, err := cl.GroupOffsets(ctx, group, topic)
		if err != nil || len(gos) > 0 {
			return gos, err
		}
	}
	// Nothing for the topic (or no topic given): does the group exist?
	d, err := cl.DescribeGroup(ctx, group)
	if tlclient.IsCode(err, tlclient.CodeGroupNotFound) {
		return nil, groupNotFound(group)
	}
	if err != nil || topic != "" {
		return nil, err
	}
	var offs []tlclient.GroupOffset
	for _, t := range d.OffsetTopics {
		gos, err := cl.GroupOffsets(ctx, group, t)
		if err != nil && !isTopicNotFound(err) {
			return nil, err
		}
		offs = append(offs, gos...)
	}
	return offs, nil
}

// groupArg is the group a groups subcommand names: its one argument or
// --group (-g), either way; both must agree.
func groupArg(c *cobra.Command, args []string, flag string) (string, error) {
	switch {
	case len(args) == 1 && flag != "" && flag != args[0]:
		return "", usagef("group %q and --group %q: give one", args[0], flag)
	case len(args) == 1:
		return args[0], nil
	case flag != "":
		return flag, nil
	}
	return "", usagef("a group is required: %s GROUP, or --group GROUP (see '%s --help')", c.CommandPath(), c.CommandPath())
}

// groupNotFound is the error for a group the server does not know: the
// same for every groups subcommand.
func groupNotFound(group string) error {
	return fmt.Errorf("group %q not found (tierlog groups list shows the groups)", group)
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

func newGroupsListCmd() *cobra.Command {
	var (
		cf     clientFlags
		format string
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups with their live members",
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
			gs, err := cl.Groups(ctx)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				return writeJSONLines(w, gs)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tMEMBERS")
			for _, g := range gs {
				fmt.Fprintf(tw, "%s\t%d\n", g.Group, g.Members)
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newGroupsDescribeCmd() *cobra.Command {
	var (
		cf     clientFlags
		format string
		group  string
	)
	c := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's members, their assignments, and its offsets with lag",
		Args:  checkArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, err := groupArg(cmd, args, group)
			if err != nil {
				return err
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
			d, err := cl.DescribeGroup(ctx, group)
			if tlclient.IsCode(err, tlclient.CodeGroupNotFound) {
				return groupNotFound(group)
			}
			if err != nil {
				return err
			}
			var offs []tlclient.GroupOffset
			for _, topic := range d.OffsetTopics {
				gos, err := cl.GroupOffsets(ctx, d.Group, topic)
				if err != nil && !isTopicNotFound(err) {
					return err
				}
				offs = append(offs, gos...)
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				return writeJSONLine(w, struct {
					tlclient.GroupDescription
					Offsets []tlclient.GroupOffset `json:"offsets"`
				}{d, offs})
			}
			fmt.Fprintf(w, "group %s, generation %d, %d members\n", d.Group, d.Generation, len(d.Members))
			if len(d.Members) > 0 {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "MEMBER\tSESSION_MS\tEXPIRES\tASSIGNMENTS")
				for _, m := range d.Members {
					var as []string
					for _, a := range m.Assignments {
						as = append(as, fmt.Sprintf("%s:%s", a.Topic, joinInts(a.Partitions)))
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.MemberID, m.SessionTimeoutMs, time.UnixMilli(m.ExpiresMs).UTC().Format(time.RFC3339), strings.Join(as, " "))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			fmt.Fprintln(w)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tOFFSET\tLAG")
			for _, o := range offs {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", o.Topic, o.Partition, o.Offset, o.Lag)
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	c.Flags().StringVarP(&group, "group", "g", "", "consumer group (or the argument GROUP)")
	return c
}

func isTopicNotFound(err error) bool {
	var e *tlclient.Error
	return errors.As(err, &e) && e.Code == tlclient.CodeTopicNotFound
}

func joinInts(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func newGroupsDeleteCmd() *cobra.Command {
	var (
		cf    clientFlags
		group string
	)
	c := &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a group: its committed offsets and its membership",
		Long: `Delete a group: every committed offset and its membership. Members still
running find themselves unknown at their next heartbeat and join again.`,
		Args: checkArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, err := groupArg(cmd, args, group)
			if err != nil {
				return err
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			err = cl.DeleteGroup(ctx, group)
			if tlclient.IsCode(err, tlclient.CodeGroupNotFound) {
				return groupNotFound(group)
			}
			return err
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVarP(&group, "group", "g", "", "consumer group (or the argument GROUP)")
	return c
}

func newGroupsResetCmd() *cobra.Command {
	var (
		cf         clientFlags
		group      string
		topic      string
		to         string
		timestamp  string
		partitions []int
		format     string
	)
	c := &cobra.Command{
		Use:   "reset GROUP --topic T (--to earliest|latest|N | --timestamp T) [--partitions 0,2]",
		Short: "Move a group's committed offsets of a topic",
		Long: `Move a group's committed offsets of a topic (all partitions, or --partitions):
to the log start (earliest), the high watermark (latest), an offset N (it must
lie between the two), or the first record at or after a time (--timestamp, ms
since the epoch or RFC 3339). Refused while the group has members: stop its
consumers first. Prints the offsets as 'groups show' does.`,
		Example: `  tierlog groups reset billing --topic orders --to earliest
  tierlog groups reset billing --topic orders --to 42 --partitions 0
  tierlog groups reset billing --topic orders --timestamp 2026-01-02T15:04:05Z`,
		Args: checkArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, err := groupArg(cmd, args, group)
			if err != nil {
				return err
			}
			if err := requireFlag(cmd, "topic", topic); err != nil {
				return err
			}
			if err := outputFormat(format); err != nil {
				return err
			}
			fl := cmd.Flags()
			if fl.Changed("to") == fl.Changed("timestamp") {
				return usagef("give one of --to and --timestamp (see '%s --help')", cmd.CommandPath())
			}
			var r tlclient.Reset
			if fl.Changed("partitions") {
				r.Partitions = partitions
			}
			switch {
			case fl.Changed("timestamp"):
				ts, err := parseTimestamp(timestamp)
				if err != nil {
					return usagef("--timestamp: %v", err)
				}
				r.Timestamp = &ts
			case to == "earliest" || to == "latest":
				r.To = to
			default:
				n, err := strconv.ParseInt(to, 10, 64)
				if err != nil || n < 0 {
					return usagef("--to %q: want earliest, latest or a non-negative offset", to)
				}
				r.Offset = &n
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			gos, err := cl.ResetGroupOffsets(ctx, group, topic, r)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				return writeJSONLines(w, gos)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PARTITION\tOFFSET\tLAG")
			for _, g := range gos {
				fmt.Fprintf(tw, "%d\t%d\t%d\n", g.Partition, g.Offset, g.Lag)
			}
			return tw.Flush()
		},
	}
	addClientFlags(c, &cf, retried)
	f := c.Flags()
	f.StringVarP(&group, "group", "g", "", "consumer group (or the argument GROUP)")
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVar(&to, "to", "", "earliest, latest or an offset")
	f.StringVar(&timestamp, "timestamp", "", "the first record at or after this time: ms since the epoch or RFC 3339")
	f.IntSliceVar(&partitions, "partitions", nil, "partitions to reset (default all)")
	f.StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}
