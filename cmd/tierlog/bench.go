package main

import (
	"errors"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/internal/bench"
	"github.com/tierlog/tierlog/pkg/segment"
)

// The bench commands: their flags, and the harness of internal/bench
// that runs them.

// benchErr makes the harness's option errors usage errors (exit 2).
func benchErr(err error) error {
	if ue := (*bench.UsageError)(nil); errors.As(err, &ue) {
		return usageError{err}
	}
	return err
}

func newBenchCmd() *cobra.Command {
	o := bench.Opts{}
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce and fetch end to end, against raw disk and direct engine calls",
		Long: `Run produce and fetch workloads and print one table: records/s, MB/s,
p50/p99/p999 request latency, AWS requests per MB where the backend counts
them, and each HTTP workload's ratio to two baselines measured in the same
run: a raw write+fsync of the same bytes per batch, and direct engine calls
(Broker.ProducePartition and Broker.Fetch in this process, fsync per
batch).

Without --url it starts a local server on a temporary data dir. With --out
it writes the table, the machine and the command line into a Markdown file
(between marker comments, so the rest of the file is kept).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchErr(bench.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o))
		},
	}
	f := c.Flags()
	f.StringVar(&o.URL, "url", "", "benchmark this server instead of a local one started for the run")
	f.IntSliceVar(&o.RecordSizes, "record-size", []int{100, 1024}, "record value sizes in bytes")
	f.IntSliceVar(&o.BatchSizes, "batch", []int{100, 1000}, "records per produce request")
	f.IntVar(&o.Partitions, "partitions", 1, "partitions of the benchmark topic")
	f.IntVar(&o.Clients, "clients", 1, "concurrent clients (client i writes partition i mod partitions)")
	f.DurationVar(&o.Duration, "duration", 3*time.Second, "how long each workload runs")
	f.StringSliceVar(&o.Formats, "format", []string{"json", "binary"}, "wire formats for the HTTP workloads")
	f.StringVar(&o.Out, "out", "", "also write the results into this Markdown file (e.g. docs/benchmarks.md)")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	c.AddCommand(newBenchContentionCmd(), newBenchCloudCmd())
	return c
}

func newBenchContentionCmd() *cobra.Command {
	o := bench.ContentionOpts{}
	var delays []string
	c := &cobra.Command{
		Use:   "contention",
		Short: "Many writers, one partition: N aws-backend processes in Lambda mode against dynalite",
		Long: `Measure many writers on one partition, as Lambda runs them: for each
number of writers N and each DynamoDB delay, start N 'tierlog serve
--backend aws' processes (lease released after every batch, the aws
backend's default) sharing one hot dir, with dynalite behind an in-process
proxy that adds the delay to every DynamoDB request and counts them by
operation. One client per process, one request in flight each, sends
batches to partition 0 of a one-partition topic over plain HTTP with no
retries. Per cell: acknowledged requests/s, the share answered 503, p50 and
p99 of the 200s, DynamoDB writes (condition failures included) and reads
per acknowledged request, and hot-tier file-system operations per
acknowledged request (tierlog_hot_fs_ops_total of every process).

Needs dynalite: run 'make test-deps' first (it installs tools/dynalite).
The cold tier is an S3 stub that refuses every request (the compactor is
off, so none should come; any that does is reported).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, d := range delays {
				v, err := time.ParseDuration(d)
				if d == "0" {
					v, err = 0, nil
				}
				if err != nil || v < 0 {
					return usagef("--delay %q: want durations such as 0,5ms", d)
				}
				o.Delays = append(o.Delays, v)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return benchErr(bench.Contention(ctx, cmd.OutOrStdout(), o))
		},
	}
	f := c.Flags()
	f.IntSliceVar(&o.Writers, "writers", []int{1, 2, 4, 8, 16}, "numbers of writer processes, one cell each")
	f.StringSliceVar(&delays, "delay", []string{"0", "5ms"}, "DynamoDB latency: every request takes at least this long (the proxy waits what is left once dynalite answered), one table each")
	f.DurationVar(&o.Duration, "duration", 5*time.Second, "how long each cell's clients send")
	f.IntVar(&o.Records, "records", 10, "records per produce request")
	f.IntVar(&o.RecordBytes, "record-bytes", 100, "bytes per record value")
	f.BoolVar(&o.Markdown, "markdown", false, "print Markdown tables")
	f.StringVar(&o.Dynalite, "dynalite", "", "the dynalite install (default tools/dynalite of the repository holding the working directory)")
	f.StringVar(&o.HotDir, "hot-dir", "", hotDirHelp)
	return c
}

func newBenchCloudCmd() *cobra.Command {
	o := bench.CloudOpts{}
	var cells string
	c := &cobra.Command{
		Use:   "cloud",
		Short: "The write path as Lambda on EFS would see it: hot-tier latency, API Gateway overhead, DynamoDB delay, and what it costs",
		Long: `Measure produce, tiering and reading with the latencies of the cloud
charged: every hot-tier file-system call of the servers waits the latency of
its NFS round trip under --profile (tierlog serve --hot-fs-latency), every
DynamoDB request at least --delay (the proxy of 'tierlog bench contention':
dynalite's own time counts in it, as the local disk's does in the
profile's), and the
client waits --overhead before each request (API Gateway and a warm Lambda).

Cells (--cells, WRITERSxPARTITIONS): that many 'tierlog serve --backend aws'
processes in Lambda mode on one shared hot dir, one client each, one
request in flight, writer i on partition i mod PARTITIONS; the machinery of
'tierlog bench contention'. Per cell: ok requests/s per partition, p50/p99,
hot-tier operations per produce by kind, durable EFS round trips per
produce, DynamoDB reads and writes per produce, the first produce of a cold
process, and what a million produces and a GB cost (docs/cost.md).

Then: a tiering step (one server writes --tier-segments sealed segments,
then the compactor runs once, in this process, against an in-process S3
(gofakes3) whose requests are counted): S3 and DynamoDB requests per MiB
finalized. A reader step: a long-poll consumer on a second process, its
delivery latency after each commit. With --strace N, an strace step: N
produces of one server counted by strace (attached for just those) and by
its tierlog_hot_fs_ops_total.

Needs dynalite: run 'make test-deps' first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Cells, err = bench.ParseCells(cells); err != nil {
				return usagef("--cells: %v", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return benchErr(bench.Cloud(ctx, cmd.OutOrStdout(), o))
		},
	}
	f := c.Flags()
	o.Profile, _ = segment.ParseLatencyProfile("efs-regional")
	f.Var(latencyFlag{&o.Profile}, "profile", "hot-tier latency profile: "+strings.Join(segment.LatencyProfileNames(), ", "))
	f.DurationVar(&o.Overhead, "overhead", 10*time.Millisecond, "waited by the client before each request: API Gateway plus a warm Lambda")
	f.DurationVar(&o.Delay, "delay", 5*time.Millisecond, "DynamoDB latency: every request takes at least this long (the proxy waits what is left once dynalite answered)")
	f.StringVar(&cells, "cells", "1x1,2x1,8x1,16x1,8x8", "cells, WRITERSxPARTITIONS, comma-separated")
	f.DurationVar(&o.Duration, "duration", 4*time.Second, "how long each cell's clients send")
	f.IntVar(&o.Records, "records", 10, "records per produce request")
	f.IntVar(&o.RecordBytes, "record-bytes", 100, "bytes per record value")
	f.IntVar(&o.MemoryMB, "memory-mb", 1024, "memory of the produce and compactor functions, for the cost columns")
	f.IntVar(&o.TierSegments, "tier-segments", 2, "segments the tiering step seals and finalizes (0: no tiering step)")
	f.Int64Var(&o.TierSegmentBytes, "tier-segment-bytes", 16<<20, "segment_bytes of the tiering step's topic")
	f.IntVar(&o.TierRecords, "tier-records", 1024, "records per produce request of the tiering step")
	f.IntVar(&o.TierRecordBytes, "tier-record-bytes", 1024, "bytes per record value of the tiering step")
	f.IntVar(&o.ReaderSamples, "reader-samples", 50, "commits the long-poll consumer waits for (0: no reader step)")
	f.IntVar(&o.StraceProduces, "strace", 0, "produces of one server counted by strace and by its counters (0: no strace step)")
	f.Float64SliceVar(&o.Rates, "cost-rates", []float64{1, 10}, "MB/s (10^6 B/s) of the cost-at-a-rate table")
	f.IntSliceVar(&o.Batches, "cost-batches", []int{1, 10, 100}, "records per produce request of the cost-at-a-rate table")
	f.IntVar(&o.RecBytes, "cost-record-bytes", 1024, "record size of the cost-at-a-rate table")
	f.BoolVar(&o.Markdown, "markdown", false, "print Markdown")
	f.StringVar(&o.Dynalite, "dynalite", "", "the dynalite install (default tools/dynalite of the repository holding the working directory)")
	f.StringVar(&o.HotDir, "hot-dir", "", hotDirHelp)
	return c
}

// hotDirHelp is the help of --hot-dir, of bench contention and bench
// cloud.
const hotDirHelp = "where the servers' shared hot directory is made (default the system's temporary directory); " +
	"on a memory file system (/dev/shm) a latency profile's charge is all a call costs, without this machine's disk time beyond it"
