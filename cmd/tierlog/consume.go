package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

type consumeOpts struct {
	cf        clientFlags
	topic     string
	partition int
	offset    string
	timestamp string
	group     string
	count     int
	follow    bool
	format    string
	keySep    string
	wait      time.Duration
}

func newConsumeCmd() *cobra.Command {
	var o consumeOpts
	c := &cobra.Command{
		Use:   "consume --topic T [--partition P] [--offset N|earliest|latest | --timestamp T] [--group G] [--count N] [--follow]",
		Short: "Consume records and print them, one per line",
		Long: `Consume records of a topic (every partition, or --partition) and print them.

Where to start:
  --offset N          at offset N (an offset out of range is an error)
  --offset earliest   at the log start; with --group, where nothing is committed
  --offset latest     at the high watermark: only records produced from now on
  --timestamp T       at the first record at or after T (ms since the epoch,
                      or RFC 3339)
  --group G           resume from G's committed offsets (else --offset's
                      earliest/latest, default earliest), and commit the
                      position after each printed batch and on exit
Without any of them consumption starts at the earliest offset.

When to stop:
  --count N           after N records, waiting for them if needed
  --follow            never: tail the log until SIGINT or SIGTERM (exit 0)
Otherwise at the end of the log, as it was when the command started.

Output (--format):
  plain   the value, then a newline; with --key-separator SEP, the key (empty
          when absent), SEP, the value. A tombstone prints as an empty value.
          Bytes are printed as stored: produce and consume round-trip a file.
  json    one object per line: partition, offset, timestamp, key, value (null
          when absent); a key or value that is not UTF-8 is base64 with
          key_encoding / value_encoding "base64", as in the HTTP API.`,
		Example: `  tierlog consume --topic orders --partition 0 --offset 0 --count 10
  tierlog consume --topic orders --group billing --follow --format json`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runConsume(cmd, o) },
	}
	addClientFlags(c, &o.cf)
	f := c.Flags()
	f.StringVarP(&o.topic, "topic", "t", "", "topic to consume (required)")
	f.IntVarP(&o.partition, "partition", "p", 0, "only this partition (default: every partition)")
	f.StringVarP(&o.offset, "offset", "o", "", "start at a number, earliest or latest")
	f.StringVar(&o.timestamp, "timestamp", "", "start at the first record at or after this time (ms or RFC 3339)")
	f.StringVarP(&o.group, "group", "g", "", "consumer group to resume from and commit to")
	f.IntVarP(&o.count, "count", "c", 0, "exit after this many records")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep waiting for new records until interrupted")
	f.StringVar(&o.format, "format", "plain", "output format: plain or json")
	f.StringVarP(&o.keySep, "key-separator", "K", "", "plain format: print key, SEP, value")
	f.DurationVar(&o.wait, "wait", tlclient.DefaultWait, "how long one request long-polls at the end of the log (at most 20s)")
	return c
}

func runConsume(cmd *cobra.Command, o consumeOpts) error {
	fl := cmd.Flags()
	if err := requireFlag(cmd, "topic", o.topic); err != nil {
		return err
	}
	if err := outputFormat(o.format); err != nil {
		return err
	}
	if fl.Changed("offset") && fl.Changed("timestamp") {
		return usagef("--offset and --timestamp both say where to start; give one")
	}
	if fl.Changed("count") && o.count < 1 {
		return usagef("--count %d: want 1 or more", o.count)
	}
	if o.wait < 0 || o.wait > 20*time.Second {
		return usagef("--wait %v: want 0 to 20s", o.wait)
	}
	sep, err := unescape(o.keySep)
	if err != nil {
		return usagef("--key-separator: %v", err)
	}
	opts := []tlclient.ConsumerOption{tlclient.WithReset(tlclient.ResetEarliest), tlclient.WithWait(o.wait)}
	if fl.Changed("partition") {
		if o.partition < 0 {
			return usagef("--partition %d: want 0 or more", o.partition)
		}
		opts = append(opts, tlclient.WithPartitions(o.partition))
	}
	if fl.Changed("offset") {
		n, named, err := parseOffsetFlag(o.offset)
		if err != nil {
			return err
		}
		switch {
		case named == "latest":
			opts = append(opts, tlclient.WithReset(tlclient.ResetLatest))
		case named == "":
			// An explicit offset out of range is the user's mistake: say
			// so instead of silently starting elsewhere.
			opts = append(opts, tlclient.WithStartOffset(n), tlclient.WithReset(tlclient.ResetNone))
		}
	}
	if fl.Changed("timestamp") {
		ts, err := parseTimestamp(o.timestamp)
		if err != nil {
			return usagef("--timestamp: %v", err)
		}
		opts = append(opts, tlclient.WithStartTimestamp(ts))
	}
	if o.group != "" {
		opts = append(opts, tlclient.WithGroup(o.group))
	}
	cl, err := o.cf.newClient()
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	k, err := cl.NewConsumer(ctx, o.topic, opts...)
	if err != nil {
		if isInterrupt(ctx, err) {
			return nil
		}
		return err
	}
	// Without --follow or --count, stop at the end of the log as it is
	// now.
	var end map[int]int64
	if !o.follow && o.count == 0 {
		end = map[int]int64{}
		for _, p := range k.Partitions() {
			off, err := cl.Offsets(ctx, o.topic, p)
			if err != nil {
				k.Close(context.Background())
				if isInterrupt(ctx, err) {
					return nil
				}
				return err
			}
			end[p] = off.HighWatermark
		}
	}
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
	runErr := consumeLoop(ctx, k, w, o, sep, end)
	flushErr := w.Flush()

	// Commit what was printed, even after an interrupt.
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var commitErr error
	if o.group != "" && flushErr == nil {
		commitErr = k.Commit(cctx)
	}
	k.Close(cctx)
	switch {
	case runErr != nil && !isInterrupt(ctx, runErr):
		return runErr
	case flushErr != nil:
		return fmt.Errorf("write output: %w", flushErr)
	case commitErr != nil:
		return fmt.Errorf("commit offsets of group %s: %w", o.group, commitErr)
	}
	return nil
}

// consumeLoop polls and prints until a stop condition, an error, or ctx
// ends (an interrupt: consumeLoop returns ctx's error).
func consumeLoop(ctx context.Context, k *tlclient.Consumer, w *bufio.Writer, o consumeOpts, sep string, end map[int]int64) error {
	printed := 0
	lastCommit := time.Now()
	done := func() bool {
		if o.count > 0 {
			return printed >= o.count
		}
		if end == nil {
			return false
		}
		for p, hw := range end {
			if pos, _ := k.Position(p); pos < hw {
				return false
			}
		}
		return true
	}
	for !done() {
		max := 0
		if o.count > 0 {
			max = o.count - printed
		}
		msgs, err := k.PollN(ctx, max)
		if err != nil {
			return err
		}
		for i := range msgs {
			if err := printMessage(w, &msgs[i], o.format, sep); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		printed += len(msgs)
		// Flush each batch: a tail shows records as they come, and a
		// committed offset never covers a record not yet written.
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		if o.group != "" && time.Since(lastCommit) >= time.Second {
			if err := k.Commit(ctx); err != nil && !isInterrupt(ctx, err) {
				return fmt.Errorf("commit offsets of group %s: %w", o.group, err)
			}
			lastCommit = time.Now()
		}
	}
	return nil
}

func printMessage(w io.Writer, m *tlclient.Message, format, sep string) error {
	if format == "json" {
		type rec struct {
			Partition     int     `json:"partition"`
			Offset        int64   `json:"offset"`
			Timestamp     int64   `json:"timestamp"`
			Key           *string `json:"key"`
			KeyEncoding   string  `json:"key_encoding,omitempty"`
			Value         *string `json:"value"`
			ValueEncoding string  `json:"value_encoding,omitempty"`
		}
		r := rec{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp}
		r.Key, r.KeyEncoding = textOrBase64(m.Key)
		r.Value, r.ValueEncoding = textOrBase64(m.Value)
		return writeJSONLine(w, &r)
	}
	if sep != "" {
		if _, err := w.Write(m.Key); err != nil {
			return err
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
	}
	if _, err := w.Write(m.Value); err != nil {
		return err
	}
	_, err := w.Write([]byte{'\n'})
	return err
}

// textOrBase64 renders bytes as the HTTP API's utf8 mode does: nil is
// null, valid UTF-8 is text, anything else base64 with its encoding named.
func textOrBase64(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}
