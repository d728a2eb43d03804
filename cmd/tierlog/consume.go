package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

type consumeOpts struct {
	cf        clientFlags
	topic     string
	partition int
	offsets   []string // -o, up to twice: a start and e@T
	timestamp string
	group     string
	count     int
	follow    bool
	stream    bool
	exitAtEnd bool
	format    string
	json      bool
	keySep    string
	delim     string
	nullStr   bool
	wait      time.Duration
}

func newConsumeCmd() *cobra.Command {
	var o consumeOpts
	c := &cobra.Command{
		Use:   "consume [TOPIC | --topic T] [--partition P] [-o beginning|end|stored|N|-N|s@T] [--group G] [-c N] [-e] [-f FMT | -J]",
		Short: "Consume records and print them, one per line",
		Long: `Consume records of a topic (every partition, or --partition) and print them.
The short flags are kcat's, and so are the defaults: start at the earliest
offset, follow the log until interrupted (-e: exit at its end).

Where to start (-o, --offset):
  beginning, earliest  at the log start; with --group, where nothing is committed
  end, latest          at the high watermark: only records produced from now on
  stored               at --group's committed offsets (the log start where
                       nothing is committed); the same as --group alone
  N                    at offset N of each partition (out of range: an error)
  -N                   N records before the high watermark of each partition
                       (from the log start if it holds fewer)
  s@T                  at the first record at or after time T (ms since the
                       epoch, RFC 3339, or -DURATION ago: s@-1h); also
                       --timestamp T
  e@T                  (with a start, -o twice as kcat: -o s@-1h -o e@-5m)
                       stop each partition before its first record at or
                       after time T; exit once every partition did (or at
                       the end with -e)
  --group G            resume from G's committed offsets unless -o says
                       otherwise, and commit the position after each printed
                       batch (so a kill -9 repeats at most the batch being
                       printed) and on exit. Without --partition the consumer
                       joins G: consumers of one group split the partitions,
                       and a partition moved to another keeps going from
                       its committed offset
Without any of them consumption starts at the earliest offset.

When to stop:
  -c N, --count N     after N records, waiting for them if needed; SIGINT or
                      SIGTERM before N is a failure (exit 130 or 143), so a
                      script never mistakes a short read for N records
  -e, --exit          at the end of the log as it was when the command started
                      (with -c, at whichever comes first)
  --follow            never: tail the log until SIGINT or SIGTERM (exit 0);
                      the default, as in kcat
  --stream            while following (and without --group): tail over the
                      server's event streams (Server-Sent Events), one per
                      partition, instead of long polls; against a server that
                      does not stream (API Gateway) it long-polls as before
Without -c or -e, consume follows the log. Without -c, SIGINT and SIGTERM end
consumption normally (exit 0, as kcat).

Output (-f, --format):
  plain   the value, then -D (default a newline); with -K SEP, the key (empty
          when absent), SEP, the value. A tombstone prints as an empty value,
          or NULL with -Z. Bytes are printed as stored: produce and consume
          round-trip a file.
  json    one object per line, as the HTTP API answers records: topic,
          partition, offset, timestamp, key, value (null when absent); a key
          or value that is not UTF-8 is base64 with key_encoding /
          value_encoding "base64"; headers (only when the record has any) as
          [{"key":..,"value":..}], a value not UTF-8 base64 with
          "value_encoding":"base64" on its header.
  -J      kcat's JSON envelope, one object per line: topic, partition,
          offset, tstype ("create" or "logappend"), ts, broker (-1: no
          broker ids here), headers (only when the record has any) as a flat
          list ["k1","v1","k2","v2"], key, payload (null when absent). A key
          or payload that is not UTF-8 is base64 with key_encoding /
          payload_encoding "base64"; header values not all UTF-8 are all
          base64, with headers_encoding "base64".
  FMT     a kcat template: %t topic, %p partition, %o offset, %T timestamp
          (ms), %k key, %K key length, %s value, %S value length (-1 for
          null), %h headers as key=value pairs joined by "," (a null value:
          the key alone; empty when none), %H the number of headers, %%
          a percent sign; escapes \n \t \r \0 \\. Nothing is added: end the
          template with \n.`,
		Example: `  tierlog consume -b 127.0.0.1:8080 -t orders -e              # everything, then exit
  tierlog consume orders -o end                                # follow new records
  tierlog consume --topic orders --partition 0 --offset 0 --count 10 -e
  tierlog consume -t orders -o -5 -e -f '%p/%o %k=%s\n'
  tierlog consume -t orders -e -J | jq .payload
  tierlog consume --topic orders --group billing --format json`,
		Args: checkArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("topic") && o.topic != args[0] {
					return usagef("topic %q and --topic %q: give one", args[0], o.topic)
				}
				o.topic = args[0]
			}
			return runConsume(cmd, o)
		},
	}
	addClientFlags(c, &o.cf, retried|records)
	f := c.Flags()
	f.StringVarP(&o.topic, "topic", "t", "", "topic to consume (required)")
	f.IntVarP(&o.partition, "partition", "p", 0, "only this partition (default, or -1: every partition)")
	f.StringArrayVarP(&o.offsets, "offset", "o", nil, "start at beginning, end, stored, N, -N or s@TIME; e@TIME: stop at TIME (-o twice)")
	f.BoolVarP(&o.cf.quiet, "quiet", "q", false, "print records and errors only (no retry notices)")
	f.StringVar(&o.timestamp, "timestamp", "", "start at the first record at or after this time (ms, RFC 3339, or -DURATION ago)")
	f.StringVarP(&o.group, "group", "g", "", "consumer group to resume from and commit to")
	f.IntVarP(&o.count, "count", "c", 0, "exit after this many records")
	f.BoolVarP(&o.exitAtEnd, "exit", "e", false, "exit at the end of the log (as it was at the start) even before --count")
	f.BoolVar(&o.follow, "follow", false, "keep waiting for new records until interrupted (the default without -e or -c)")
	f.BoolVar(&o.stream, "stream", false, "while following: receive records over event streams (SSE) instead of long polls")
	f.StringVarP(&o.format, "format", "f", "plain", "output format: plain, json, or a template such as '%k\\t%s\\n'")
	f.BoolVarP(&o.json, "json", "J", false, "kcat's JSON envelope (topic, partition, offset, tstype, ts, broker, headers, key, payload), one per line")
	f.StringVarP(&o.keySep, "key-separator", "K", "", "plain format: print key, SEP, value")
	f.StringVarP(&o.delim, "delimiter", "D", `\n`, "plain format: end each record with this")
	f.BoolVarP(&o.nullStr, "null", "Z", false, "plain format and templates: print a null key or value as NULL")
	f.DurationVar(&o.wait, "wait", tlclient.DefaultWait, "how long one request long-polls at the end of the log (at most 20s)")
	return c
}

// startSpec is a parsed -o.
type startSpec struct {
	kind string // "beginning", "end", "stored", "offset", "relative", "time"
	n    int64  // offset; records before the end; ms
}

// parseStart reads -o: kcat's forms and tierlog's names.
func parseStart(s string) (startSpec, error) {
	switch s {
	case "beginning", "earliest":
		return startSpec{kind: "beginning"}, nil
	case "end", "latest":
		return startSpec{kind: "end"}, nil
	case "stored":
		return startSpec{kind: "stored"}, nil
	}
	if t, ok := strings.CutPrefix(s, "s@"); ok {
		ts, err := parseTimestamp(t)
		if err != nil {
			return startSpec{}, usagef("--offset %q: %v", s, err)
		}
		return startSpec{kind: "time", n: ts}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return startSpec{}, usagef("--offset %q: want beginning, end, stored, an offset N, -N (N before the end) or s@TIME", s)
	}
	if n < 0 || strings.HasPrefix(s, "-") {
		return startSpec{kind: "relative", n: -n}, nil
	}
	return startSpec{kind: "offset", n: n}, nil
}

// printer prints one message in the chosen output format.
type printer struct {
	format string // plain, json, kcat (-J) or template
	tstype string // kcat: the topic's timestamp type, kcat's name
	tmpl   []tmplPart
	topic  string
	sep    string
	delim  string
	null   bool
}

func runConsume(cmd *cobra.Command, o consumeOpts) error {
	fl := cmd.Flags()
	if o.topic == "" {
		return usagef("a topic is required: %s TOPIC, or --topic TOPIC (see '%s --help')", cmd.CommandPath(), cmd.CommandPath())
	}
	if o.json && fl.Changed("format") {
		return usagef("-J and --format %q both say how to print; give one", o.format)
	}
	pr := printer{format: o.format, topic: o.topic, null: o.nullStr}
	switch {
	case o.json:
		pr.format = "kcat"
	case o.format == "plain", o.format == "json":
	case strings.Contains(o.format, "%"):
		t, err := parseTemplate(o.format)
		if err != nil {
			return usagef("--format: %v", err)
		}
		pr.format, pr.tmpl = "template", t
	default:
		return usagef("--format %q: want plain, json or a template with %%-fields such as '%%s\\n'", o.format)
	}
	if fl.Changed("count") && o.count < 1 {
		return usagef("--count %d: want 1 or more", o.count)
	}
	if o.follow && o.exitAtEnd {
		return usagef("--follow and --exit contradict each other; give one")
	}
	if o.stream && (o.exitAtEnd || o.group != "") {
		return usagef("--stream follows the log: not with -e, nor with --group (a stream commits no offsets)")
	}
	if o.wait < 0 || o.wait > 20*time.Second {
		return usagef("--wait %v: want 0 to 20s", o.wait)
	}
	var err error
	if pr.sep, err = unescape(o.keySep); err != nil {
		return usagef("--key-separator: %v", err)
	}
	if pr.delim, err = unescape(o.delim); err != nil {
		return usagef("--delimiter: %v", err)
	}
	// Where a group with nothing committed starts is the client's
	// default (earliest): the CLI and the Go client agree.
	opts := []tlclient.ConsumerOption{tlclient.WithWait(o.wait)}
	onePartition := fl.Changed("partition") && o.partition != -1
	if onePartition {
		if o.partition < 0 {
			return usagef("--partition %d: want 0 or more, or -1 (every partition)", o.partition)
		}
		opts = append(opts, tlclient.WithPartitions(o.partition))
	}
	var (
		start   startSpec
		endTime = int64(-1) // e@T: stop before the first record at or after it
		starts  int
	)
	for _, spec := range o.offsets {
		if t, ok := strings.CutPrefix(spec, "e@"); ok {
			if endTime >= 0 {
				return usagef("--offset %q: e@ given twice", spec)
			}
			if endTime, err = parseTimestamp(t); err != nil {
				return usagef("--offset %q: %v", spec, err)
			}
			continue
		}
		if starts++; starts > 1 {
			return usagef("--offset given twice (%s): one start, and optionally e@TIME", strings.Join(o.offsets, ", "))
		}
		if start, err = parseStart(spec); err != nil {
			return err
		}
	}
	switch start.kind {
	case "end":
		opts = append(opts, tlclient.WithReset(tlclient.ResetLatest))
	case "stored":
		if o.group == "" {
			return usagef("--offset stored needs --group: it is the group's committed offset")
		}
	case "offset":
		// An explicit offset out of range is the user's mistake: say
		// so instead of silently starting elsewhere.
		opts = append(opts, tlclient.WithStartOffset(start.n), tlclient.WithReset(tlclient.ResetNone))
	case "time":
		opts = append(opts, tlclient.WithStartTimestamp(start.n))
	}
	if o.stream && endTime >= 0 {
		return usagef("--stream and e@ together: e@ needs the polling consumer, leave --stream out")
	}
	if fl.Changed("timestamp") {
		if starts > 0 {
			return usagef("--offset and --timestamp both say where to start; give one")
		}
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
	if start.kind == "relative" {
		starts, err := relativeStarts(ctx, cl, o.topic, onePartition, o.partition, start.n)
		if err != nil {
			if isInterrupt(ctx, err) {
				return o.interrupted(ctx, 0)
			}
			return err
		}
		opts = append(opts, tlclient.WithStartOffsets(starts))
	}
	k, err := cl.NewConsumer(ctx, o.topic, opts...)
	if err != nil {
		if isInterrupt(ctx, err) {
			return o.interrupted(ctx, 0)
		}
		return err
	}
	if pr.format == "kcat" {
		t, err := cl.Topic(ctx, o.topic)
		if err != nil {
			k.Close(context.Background())
			if isInterrupt(ctx, err) {
				return o.interrupted(ctx, 0)
			}
			return err
		}
		pr.tstype = kcatTimestampType(t.TimestampType)
	}
	// With --exit, stop at the end of the log as it is now.
	var end map[int]int64
	if o.exitAtEnd {
		end = map[int]int64{}
		for _, p := range k.Partitions() {
			off, err := cl.Offsets(ctx, o.topic, p)
			if err != nil {
				k.Close(context.Background())
				if isInterrupt(ctx, err) {
					return o.interrupted(ctx, 0)
				}
				return err
			}
			end[p] = off.HighWatermark
		}
	}
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 256<<10)
	var printed int
	var runErr error
	if o.stream {
		// The consumer found where each partition starts; streams go on
		// from there.
		starts := k.Positions()
		k.Close(context.Background())
		runErr = streamLoop(ctx, cl, w, o, &pr, starts, &printed)
		if err := w.Flush(); err != nil && runErr == nil {
			runErr = fmt.Errorf("write output: %w", err)
		}
		if runErr != nil && !isInterrupt(ctx, runErr) {
			return runErr
		}
		if runErr != nil {
			return o.interrupted(ctx, printed)
		}
		return nil
	}
	runErr = consumeLoop(ctx, k, w, o, &pr, end, endTime, &printed)
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
	case runErr != nil:
		return o.interrupted(ctx, printed)
	}
	return nil
}

// interrupted is the end of a consume stopped by SIGINT or SIGTERM after
// printing n records: with --count, before the count was reached, a
// failure with the shell's code for the signal (130 or 143), so that a
// script never takes a short read for the N records it asked for; without
// --count (a tail or a read to the end, ended on purpose) success, as
// kcat exits 0.
func (o consumeOpts) interrupted(ctx context.Context, n int) error {
	if o.count == 0 || n >= o.count {
		return nil
	}
	return exitError{fmt.Errorf("interrupted after %d of %s", n, plural(int64(o.count), "record")), signalExitCode(ctx)}
}

// relativeStarts is -o -N: N records before each partition's high
// watermark, or its log start if it holds fewer.
func relativeStarts(ctx context.Context, cl *tlclient.Client, topic string, given bool, p int, n int64) (map[int]int64, error) {
	parts, err := partitionsOf(ctx, cl, topic, given, p)
	if err != nil {
		return nil, err
	}
	starts := map[int]int64{}
	for _, p := range parts {
		off, err := cl.Offsets(ctx, topic, p)
		if err != nil {
			return nil, err
		}
		starts[p] = max(off.HighWatermark-n, off.LogStartOffset)
	}
	return starts, nil
}

// consumeLoop polls and prints until a stop condition, an error, or ctx
// ends (an interrupt: consumeLoop returns ctx's error).
func consumeLoop(ctx context.Context, k *tlclient.Consumer, w *bufio.Writer, o consumeOpts, pr *printer, end map[int]int64, endTime int64, printed *int) error {
	timeDone := map[int]bool{} // partitions that reached e@T
	done := func() bool {
		if o.count > 0 && *printed >= o.count {
			return true
		}
		if endTime >= 0 {
			all := true
			for _, p := range k.Partitions() {
				all = all && timeDone[p]
			}
			if all {
				return true
			}
		}
		if end == nil {
			return false
		}
		for p, hw := range end {
			// A partition the group moved to another member is that one's to finish.
			if pos, ok := k.Position(p); ok && pos < hw && !timeDone[p] {
				return false
			}
		}
		return true
	}
	for !done() {
		max := 0
		if o.count > 0 {
			max = o.count - *printed
		}
		msgs, err := k.PollN(ctx, max)
		if err != nil {
			return err
		}
		n := 0
		for i := range msgs {
			m := &msgs[i]
			if endTime >= 0 && (timeDone[m.Partition] || m.Timestamp >= endTime) {
				timeDone[m.Partition] = true
				continue
			}
			if err := pr.print(w, m); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			n++
		}
		*printed += n
		// Flush each batch: a tail shows records as they come, and a
		// committed offset never covers a record not yet written.
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		// Commit each printed batch at once: what was printed is never
		// delivered again to the group, even after a kill -9 (only the
		// batch being printed when it came).
		if o.group != "" && len(msgs) > 0 {
			if err := k.Commit(ctx); err != nil && !isInterrupt(ctx, err) {
				return fmt.Errorf("commit offsets of group %s: %w", o.group, err)
			}
		}
	}
	return nil
}

// streamLoop follows every partition of starts over a client.Stream and
// prints records as they come, until --count or ctx ends (an interrupt:
// streamLoop returns ctx's error).
func streamLoop(ctx context.Context, cl *tlclient.Client, w *bufio.Writer, o consumeOpts, pr *printer, starts map[int]int64, printed *int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type item struct {
		m   tlclient.Message
		err error
	}
	ch := make(chan item, 256)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before wg.Wait
	for p, off := range starts {
		st, err := cl.Stream(ctx, o.topic, p, off)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer st.Close()
			for {
				m, err := st.Next(ctx)
				select {
				case ch <- item{m, err}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	for o.count == 0 || *printed < o.count {
		var it item
		select {
		case it = <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		if it.err != nil {
			return it.err
		}
		if err := pr.print(w, &it.m); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		*printed++
		if len(ch) == 0 { // nothing more at hand: show what came
			if err := w.Flush(); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
	}
	return nil
}

func (pr *printer) print(w *bufio.Writer, m *tlclient.Message) error {
	switch pr.format {
	case "json":
		type rec struct {
			Topic         string       `json:"topic"`
			Partition     int          `json:"partition"`
			Offset        int64        `json:"offset"`
			Timestamp     int64        `json:"timestamp"`
			Key           *string      `json:"key"`
			KeyEncoding   string       `json:"key_encoding,omitempty"`
			Value         *string      `json:"value"`
			ValueEncoding string       `json:"value_encoding,omitempty"`
			Headers       []jsonHeader `json:"headers,omitempty"`
		}
		r := rec{Topic: pr.topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp}
		r.Key, r.KeyEncoding = textOrBase64(m.Key)
		r.Value, r.ValueEncoding = textOrBase64(m.Value)
		r.Headers = jsonHeaders(m.Headers) // template.go
		return writeJSONLine(w, &r)
	case "kcat":
		return pr.printKcat(w, m)
	case "template":
		return pr.printTemplate(w, m)
	}
	if pr.sep != "" {
		pr.bytes(w, m.Key)
		w.WriteString(pr.sep)
	}
	pr.bytes(w, m.Value)
	_, err := w.WriteString(pr.delim)
	return err
}

// bytes writes b, or NULL for nil with -Z.
func (pr *printer) bytes(w *bufio.Writer, b []byte) {
	if b == nil && pr.null {
		w.WriteString("NULL")
		return
	}
	w.Write(b)
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

// kcatTimestampType is kcat's tstype for a topic's timestamp_type.
func kcatTimestampType(tt string) string {
	switch tt {
	case "create":
		return "create"
	case "append", "":
		return "logappend"
	}
	return "unknown"
}

// printKcat writes m as kcat's -J envelope: the field names and order of
// kcat (topic, partition, offset, tstype, ts, broker, headers, key,
// payload), headers a flat list of names and values. Bytes that are not
// UTF-8 are base64, named so by an *_encoding field, never altered.
func (pr *printer) printKcat(w *bufio.Writer, m *tlclient.Message) error {
	type rec struct {
		Topic           string    `json:"topic"`
		Partition       int       `json:"partition"`
		Offset          int64     `json:"offset"`
		TSType          string    `json:"tstype"`
		TS              int64     `json:"ts"`
		Broker          int       `json:"broker"`
		Headers         []*string `json:"headers,omitempty"`
		HeadersEncoding string    `json:"headers_encoding,omitempty"`
		Key             *string   `json:"key"`
		KeyEncoding     string    `json:"key_encoding,omitempty"`
		Payload         *string   `json:"payload"`
		PayloadEncoding string    `json:"payload_encoding,omitempty"`
	}
	r := rec{Topic: pr.topic, Partition: m.Partition, Offset: m.Offset, TSType: pr.tstype, TS: m.Timestamp, Broker: -1}
	r.Key, r.KeyEncoding = textOrBase64(m.Key)
	r.Payload, r.PayloadEncoding = textOrBase64(m.Value)
	if len(m.Headers) > 0 {
		allText := true
		for _, h := range m.Headers {
			allText = allText && (h.Value == nil || utf8.Valid(h.Value))
		}
		if !allText {
			r.HeadersEncoding = "base64"
		}
		for _, h := range m.Headers {
			name := h.Key
			r.Headers = append(r.Headers, &name)
			switch {
			case h.Value == nil:
				r.Headers = append(r.Headers, nil)
			case allText:
				v := string(h.Value)
				r.Headers = append(r.Headers, &v)
			default:
				v := base64.StdEncoding.EncodeToString(h.Value)
				r.Headers = append(r.Headers, &v)
			}
		}
	}
	return writeJSONLine(w, &r)
}
