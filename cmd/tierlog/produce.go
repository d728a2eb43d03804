package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

// progressThreshold is the input size above which produce shows a progress
// bar (when stderr is a terminal).
const progressThreshold = 8 << 20

type produceOpts struct {
	cf           clientFlags
	topic        string
	partition    int
	keySep       string
	delim        string
	nullEmpty    bool
	batchRecords int
	batchBytes   int
	linger       time.Duration
	noProgress   bool
	key          string   // --idempotency-key
	expected     int64    // --expected-offset
	headers      []string // --header key=value, repeatable
	timestamp    string   // --timestamp: ms since the epoch or RFC 3339
	lines        bool     // -l: split FILE arguments at the delimiter too
	recordKey    string   // -k: the key of every record
	quiet        bool     // -q: no summary line, no progress bar
	tee          bool     // -T: echo each record sent to stdout
}

func newProduceCmd() *cobra.Command {
	var o produceOpts
	c := &cobra.Command{
		Use:   "produce --topic T [--partition P] [--key-separator SEP] [-l] [FILE...]",
		Short: "Produce records: one per line of stdin, one per FILE",
		Long: `Produce one record per line of stdin (no FILE, or FILE -), and, as kcat, one
record per FILE, the whole file (at most 1 MiB, the record limit): a binary
file is sent as it is. With -l (kcat's), each FILE is split into lines too.
The newline ends a record and is not part of it; every other byte is kept as
is (a carriage return before the newline included), and an empty line is an
empty record. A last line without a newline is a record too. Lines longer
than 1 MiB stop the command.

With --key-separator (-K), each line is split at the first SEP into key and
value; a line without SEP has no key. With --delimiter (-D) records end at
DELIM instead of a newline (a multi-line record: -D '\n--\n'). With -Z an
empty value is null: an empty line is a tombstone, and with -K "key SEP" is
the key's tombstone. SEP and DELIM may use the escapes \t \n \r \0 \\.

Records go to --partition, or else (or with -p -1, kcat's "any partition")
are routed like the server does: by the key's hash, round-robin without a
key. -k KEY gives every record the key KEY. They are sent in batches per
partition, in order, retrying while the server answers 503 or the connection
is lost. Every batch carries its own Idempotency-Key, which its retries
reuse, so a retry after an unknown outcome does not store it twice. The
command exits 0 when every record was stored, 1 otherwise.

With --idempotency-key or --expected-offset the whole input is one request
(at most 10,000 records and 5 MiB): --idempotency-key K sends it with key K,
so running the same command again stores nothing twice and prints the first
run's offsets ("replayed"); --expected-offset N (with --partition) appends
only if the partition's high watermark is N, else fails with the current high
watermark and stores nothing. Then each record's partition and offset are
printed to stdout, one record a line, tab-separated.

--header (-H) key=value adds a header to every record (repeatable, in order;
keys may repeat; "key" without "=" is a header with a null value).
--timestamp T gives every record the event time T, milliseconds since the
epoch or an RFC 3339 time (2026-12-02T03:55:00Z): the topic must have been
created with --timestamp-type create, an append-time topic refuses it.

-T echoes each record to stdout as it is sent (kcat's tee); -q prints nothing
but errors (no summary line, no progress bar).`,
		Example: `  tierlog produce --topic orders --partition 0 -l orders.txt    # one record per line
  tierlog produce -b 127.0.0.1:8080 -t images -k cat.png cat.png  # the whole file, one record
  printf 'k1\thello\nk2\tworld\n' | tierlog produce --topic orders --key-separator '\t'
  printf 'k1\t\n' | tierlog produce -t orders -K '\t' -Z     # a tombstone for k1
  printf 'a|b|c' | tierlog produce -t orders -D '|'
  tierlog produce -t orders -p 0 --expected-offset 42 --idempotency-key batch-7 batch.txt
  echo '{"id":7}' | tierlog produce -t events -H trace-id=abc -H source=cli --timestamp 1764500000000`,
		Args: checkArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProduce(cmd, o, args)
		},
	}
	addClientFlags(c, &o.cf, retried|records)
	f := c.Flags()
	f.StringVarP(&o.topic, "topic", "t", "", "topic to produce to (required)")
	f.IntVarP(&o.partition, "partition", "p", 0, "send every record to this partition (default, or -1: by key hash, else round-robin)")
	f.StringVarP(&o.keySep, "key-separator", "K", "", "split each line into key and value at the first SEP")
	f.StringVarP(&o.delim, "delimiter", "D", `\n`, "records end at this instead of a newline")
	f.BoolVarP(&o.nullEmpty, "null-empty", "Z", false, "send an empty value as null (an empty line is a tombstone)")
	f.IntVar(&o.batchRecords, "batch-records", tlclient.DefaultBatchRecords, "send a partition's batch once it has this many records (1 to 10000)")
	f.IntVar(&o.batchBytes, "batch-bytes", tlclient.DefaultBatchBytes, "send a partition's batch once its keys and values reach this many bytes")
	f.DurationVar(&o.linger, "linger", tlclient.DefaultLinger, "send a partition's batch at the latest this long after its first record")
	f.BoolVar(&o.noProgress, "no-progress", false, "never show a progress bar (shown on large inputs when stderr is a terminal)")
	f.StringVar(&o.key, "idempotency-key", "", "send the whole input as one request with this Idempotency-Key (1 to 255 printable ASCII characters)")
	f.Int64Var(&o.expected, "expected-offset", 0, "send the whole input as one request, appended only if the partition's high watermark is N (needs --partition)")
	f.StringArrayVarP(&o.headers, "header", "H", nil, "add the header key=value to every record (repeatable; \"key\" alone: a null value)")
	f.StringVar(&o.timestamp, "timestamp", "", "event time of every record: ms since the epoch, RFC 3339, or -DURATION ago (create-time topics only)")
	f.BoolVarP(&o.lines, "lines", "l", false, "split each FILE into records at the delimiter, as stdin (default: one record per FILE)")
	f.StringVarP(&o.recordKey, "key", "k", "", "the key of every record")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing but errors")
	f.BoolVarP(&o.tee, "tee", "T", false, "echo each record sent to stdout, as kcat -T")
	return c
}

// input is one source of records.
type input struct {
	name  string
	r     io.Reader
	size  int64 // -1 if unknown
	c     io.Closer
	whole bool // the whole input is one record (a FILE argument without -l)
}

func runProduce(cmd *cobra.Command, o produceOpts, args []string) error {
	o.cf.quiet = o.quiet
	if err := requireFlag(cmd, "topic", o.topic); err != nil {
		return err
	}
	pinned := cmd.Flags().Changed("partition") && o.partition != -1
	if pinned && o.partition < 0 {
		return usagef("--partition %d: want 0 or more, or -1 (any partition)", o.partition)
	}
	hasKey := cmd.Flags().Changed("key")
	if hasKey && cmd.Flags().Changed("key-separator") {
		return usagef("-k (one key for every record) and -K (a key per line) both give keys; give one")
	}
	sep, err := unescape(o.keySep)
	if err != nil {
		return usagef("--key-separator: %v", err)
	}
	if cmd.Flags().Changed("key-separator") && sep == "" {
		return usagef("--key-separator is empty")
	}
	delim, err := unescape(o.delim)
	if err != nil {
		return usagef("--delimiter: %v", err)
	}
	if delim == "" {
		return usagef("--delimiter is empty")
	}
	switch {
	case o.batchRecords < 1 || o.batchRecords > tlclient.MaxRecords:
		return usagef("--batch-records %d: want 1 to %d", o.batchRecords, tlclient.MaxRecords)
	case o.batchBytes < 1 || o.batchBytes > tlclient.MaxBatchBytes:
		return usagef("--batch-bytes %d: want 1 to %d", o.batchBytes, tlclient.MaxBatchBytes)
	case o.linger < 0:
		return usagef("--linger %v: want 0 or more", o.linger)
	}
	single := cmd.Flags().Changed("idempotency-key") || cmd.Flags().Changed("expected-offset")
	if cmd.Flags().Changed("idempotency-key") {
		if err := tlclient.ValidIdempotencyKey(o.key); err != nil {
			return usagef("--idempotency-key: %v", err)
		}
	}
	var expected *int64
	if cmd.Flags().Changed("expected-offset") {
		if !pinned {
			return usagef("--expected-offset needs --partition: the condition is on one partition's high watermark")
		}
		if o.expected < 0 {
			return usagef("--expected-offset %d: want 0 or more", o.expected)
		}
		expected = &o.expected
	}
	headers, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	var ts time.Time
	if cmd.Flags().Changed("timestamp") {
		ms, err := parseTimestamp(o.timestamp) // clientflags.go
		if err != nil {
			return usagef("--timestamp: %v", err)
		}
		ts = time.UnixMilli(ms)
	}
	// Open every input before producing anything: a missing file stops
	// the command with nothing sent.
	inputs, err := openInputs(args, cmd.InOrStdin(), o.lines)
	if err != nil {
		return err
	}
	defer func() {
		for _, in := range inputs {
			if in.c != nil {
				closeQuietly(in.c)
			}
		}
	}()
	cl, err := o.cf.newClient()
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	split := func(line []byte) tlclient.Record {
		rec := tlclient.Record{Value: line}
		if sep != "" {
			if k, v, ok := bytes.Cut(line, []byte(sep)); ok {
				rec.Key, rec.Value = k, v
			}
		}
		if hasKey {
			rec.Key = []byte(o.recordKey)
		}
		if o.nullEmpty && len(rec.Value) == 0 {
			rec.Value = nil
		}
		rec.Headers, rec.Timestamp = headers, ts
		return rec
	}
	if o.tee {
		out := bufio.NewWriter(cmd.OutOrStdout())
		defer out.Flush()
		inner := split
		split = func(line []byte) tlclient.Record {
			out.Write(line)
			out.WriteString(delim)
			return inner(line)
		}
	}
	if single {
		return produceOnce(ctx, cmd, cl, o, inputs, []byte(delim), split, pinned, expected)
	}

	var (
		failed   atomic.Int64
		firstMu  sync.Mutex
		firstErr error
	)
	// The bar follows acknowledged input bytes, not bytes read: reading
	// runs ahead of delivery by up to the producer's buffer.
	bar := newProgress(inputs, o.noProgress || o.quiet, cmd.ErrOrStderr())
	p, err := cl.NewProducer(ctx, o.topic,
		tlclient.WithBatchRecords(o.batchRecords), tlclient.WithBatchBytes(o.batchBytes), tlclient.WithLinger(o.linger),
		tlclient.WithDeliveryTimeout(max(o.cf.retryTimeout, 0)),
		tlclient.WithResultCallback(func(rec tlclient.Record, r tlclient.Result) {
			n := len(rec.Key) + len(rec.Value) + len(delim)
			if rec.Key != nil {
				n += len(sep)
			}
			bar.add(n)
			if r.Err != nil {
				failed.Add(1)
				firstMu.Lock()
				if firstErr == nil {
					firstErr = r.Err
				}
				firstMu.Unlock()
			}
		}))
	if err != nil {
		return err
	}
	var sent int64
	readErr := func() error {
		for _, in := range inputs {
			err := readRecords(in, []byte(delim), func(line []byte) error {
				rec := split(line)
				if pinned {
					rec.Partition = tlclient.Partition(o.partition)
				}
				if _, err := p.Send(ctx, rec); err != nil {
					return err
				}
				sent++
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}()
	// Deliver what was sent: up to the retries' limit normally, briefly
	// after an interrupt.
	closeCtx, cancel := context.WithTimeout(context.Background(), max(o.cf.retryTimeout, 0)+time.Minute)
	if ctx.Err() != nil {
		closeCtx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	}
	defer cancel()
	closeErr := p.Close(closeCtx)
	bar.finish()
	n := failed.Load()
	switch {
	case readErr != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted after sending %s (%d failed)", plural(sent, "record"), n)
	case readErr != nil:
		return fmt.Errorf("%w (%s sent before, %d of them failed)", readErr, plural(sent, "record"), n)
	case n > 0:
		return fmt.Errorf("%s of %d not stored; first error: %w", plural(n, "record"), sent, firstErr)
	case closeErr != nil:
		return closeErr
	}
	if !o.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "tierlog: produced %s to topic %s\n", plural(sent, "record"), o.topic)
	}
	return nil
}

// produceOnce sends every record of the inputs as one request: with
// --idempotency-key and/or --expected-offset. It prints the offsets
// stored (partition and offset per record) to stdout, and says on stderr when the server
// replayed an earlier request with the same key.
func produceOnce(ctx context.Context, cmd *cobra.Command, cl *tlclient.Client, o produceOpts, inputs []input,
	delim []byte, split func([]byte) tlclient.Record, pinned bool, expected *int64) error {
	var recs []tlclient.Record
	for _, in := range inputs {
		err := readRecords(in, delim, func(line []byte) error {
			if len(recs) == tlclient.MaxRecords {
				return fmt.Errorf("more than %d records: --idempotency-key and --expected-offset send the input as one request, at most %d records",
					tlclient.MaxRecords, tlclient.MaxRecords)
			}
			recs = append(recs, split(line)) // readRecords' lines may be kept
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(recs) == 0 {
		return errors.New("no records in the input: nothing sent")
	}
	opt := tlclient.ProduceOptions{IdempotencyKey: o.key, ExpectedOffset: expected}
	var (
		rep *tlclient.ProduceReply
		err error
	)
	if pinned {
		rep, err = cl.ProduceToWith(ctx, o.topic, o.partition, recs, opt)
	} else {
		rep, err = cl.ProduceWith(ctx, o.topic, recs, opt)
	}
	if om := (*tlclient.OffsetMismatchError)(nil); errors.As(err, &om) {
		return fmt.Errorf("not stored: --expected-offset %d, but partition %d's high watermark is %d", om.Expected, o.partition, om.HighWatermark)
	}
	if errors.Is(err, tlclient.ErrIdempotencyKeyReused) {
		return fmt.Errorf("not stored: --idempotency-key %q was used before for other records: %w", o.key, err)
	}
	if err != nil {
		return err
	}
	var failed int64
	var firstErr error
	for _, r := range rep.Results {
		if r.Err != nil {
			failed++
			if firstErr == nil {
				firstErr = r.Err
			}
			continue
		}
		if !o.tee {
			fmt.Fprintf(cmd.OutOrStdout(), "%d\t%d\n", r.Partition, r.Offset)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%s of %d not stored; first error: %w", plural(failed, "record"), len(recs), firstErr)
	}
	what := "produced"
	if rep.Replayed {
		what = "replayed (already stored by an earlier request with this key; nothing appended)"
	}
	if !o.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "tierlog: %s %s to topic %s in one request\n", what, plural(int64(len(recs)), "record"), o.topic)
	}
	return nil
}

func openInputs(args []string, stdin io.Reader, lines bool) ([]input, error) {
	if len(args) == 0 {
		args = []string{"-"}
	}
	var ins []input
	for _, a := range args {
		if a == "-" {
			size := int64(-1)
			if f, ok := stdin.(*os.File); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
			}
			ins = append(ins, input{name: "stdin", r: stdin, size: size})
			continue
		}
		f, err := os.Open(a)
		if err != nil {
			for _, in := range ins {
				if in.c != nil {
					closeQuietly(in.c)
				}
			}
			return nil, err
		}
		size := int64(-1)
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		ins = append(ins, input{name: a, r: f, size: size, c: f, whole: !lines})
	}
	return ins, nil
}

// readRecords calls fn with each record of in: the bytes up to each
// delim, without it. A newline (or any one-byte delimiter) takes the
// reader's fast path; a longer delimiter is found across reads.
func readRecords(in input, delim []byte, fn func([]byte) error) error {
	if in.whole {
		data, err := io.ReadAll(io.LimitReader(in.r, tlclient.MaxRecordBytes+1))
		if err != nil {
			return fmt.Errorf("%s: read: %w", in.name, err)
		}
		if len(data) > tlclient.MaxRecordBytes {
			return fmt.Errorf("%s: the file is larger than %d bytes, the record limit (-l splits it into lines)", in.name, tlclient.MaxRecordBytes)
		}
		return fn(data)
	}
	if len(delim) == 1 {
		return readLines(in, delim[0], fn)
	}
	sc := bufio.NewScanner(in.r)
	const maxLine = tlclient.MaxRecordBytes + 64
	sc.Buffer(make([]byte, 0, 256<<10), maxLine+len(delim))
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.Index(data, delim); i >= 0 {
			return i + len(delim), data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) > maxLine {
			return fmt.Errorf("%s: record %d is longer than %d bytes, the record limit", in.name, n, tlclient.MaxRecordBytes)
		}
		if err := fn(bytes.Clone(sc.Bytes())); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s: record %d is longer than %d bytes, the record limit", in.name, n+1, tlclient.MaxRecordBytes)
		}
		return fmt.Errorf("%s: read: %w", in.name, err)
	}
	return nil
}

// plural is "1 record", "2 records".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// readLines calls fn with each line of in, without its newline. Lines are
// copied into slabs, so fn may keep them. A line whose bytes pass the
// record limit (plus a separator's worth) is an error naming the line.
func readLines(in input, delim byte, fn func([]byte) error) error {
	br := bufio.NewReaderSize(in.r, 256<<10)
	const maxLine = tlclient.MaxRecordBytes + 64
	var (
		slab []byte
		long []byte
		n    int
	)
	for {
		chunk, err := br.ReadSlice(delim)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > maxLine {
				return fmt.Errorf("%s: line %d is longer than %d bytes, the record limit", in.name, n+1, tlclient.MaxRecordBytes)
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: read: %w", in.name, err)
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		atEOF := err != nil
		if len(line) == 0 && atEOF {
			return nil
		}
		n++
		if line[len(line)-1] == delim {
			line = line[:len(line)-1]
		}
		if len(line) > maxLine {
			return fmt.Errorf("%s: line %d is longer than %d bytes, the record limit", in.name, n, tlclient.MaxRecordBytes)
		}
		// Copy out of the reader's buffer into a slab (one allocation per
		// 1 MiB of small lines); a non-nil empty line stays an empty value.
		if slab == nil || cap(slab)-len(slab) < len(line) {
			slab = make([]byte, 0, max(len(line), 1<<20))
		}
		start := len(slab)
		slab = append(slab, line...)
		if err := fn(slab[start:len(slab):len(slab)]); err != nil {
			return err
		}
		long = long[:0]
		if atEOF {
			return nil
		}
	}
}

// progress is the optional progress bar over the input bytes. add is
// called from the producer's sender goroutines.
type progress struct {
	w       io.Writer
	enabled bool
	total   int64

	mu   sync.Mutex
	bar  *progressbar.ProgressBar
	done int64
}

// newProgress shows a bar when stderr is a terminal and the input is
// larger than progressThreshold (or, of unknown size, once that much was
// read).
func newProgress(ins []input, off bool, w io.Writer) *progress {
	p := &progress{w: w}
	f, ok := w.(*os.File)
	if off || !ok || !term.IsTerminal(int(f.Fd())) {
		return p
	}
	p.enabled = true
	for _, in := range ins {
		if in.size < 0 {
			p.total = -1
			break
		}
		p.total += in.size
	}
	if p.total > progressThreshold {
		p.start(p.total)
	}
	return p
}

func (p *progress) start(total int64) {
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("producing"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *progress) add(n int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	if p.bar == nil && p.total < 0 && p.done > progressThreshold {
		p.start(-1)
	}
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// parseHeaders reads --header values: key=value (the first "=" splits),
// or key alone for a null value. Keys are 1 to 256 bytes.
func parseHeaders(hs []string) ([]tlclient.Header, error) {
	if len(hs) > tlclient.MaxHeaders {
		return nil, usagef("--header given %d times: a record has at most %d headers", len(hs), tlclient.MaxHeaders)
	}
	var out []tlclient.Header
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if k == "" || len(k) > tlclient.MaxHeaderKeyBytes {
			return nil, usagef("--header %q: want key=value with a key of 1 to %d bytes", h, tlclient.MaxHeaderKeyBytes)
		}
		hd := tlclient.Header{Key: k}
		if ok {
			hd.Value = []byte(v)
		}
		out = append(out, hd)
	}
	return out, nil
}
