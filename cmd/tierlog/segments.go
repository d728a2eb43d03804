package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/pkg/index"
	"github.com/tierlog/tierlog/pkg/segment"
)

func newSegmentsCmd() *cobra.Command {
	return groupCmd("segments", "Dump and verify segment files and cold-tier artifacts",
		`Read segments directly, without a server. In the hot tier a segment is a .log
file of records and the sparse .index and .timeindex beside it, named by base
offset and writer epoch (see the package doc of pkg/segment). In the cold tier
it is one artifact (.seg) holding all three and a checksummed footer (see
pkg/tier). Each PATH is a segment file, an artifact, a directory searched
recursively (for example the topics/ or cold/ directory of 'tierlog serve
--data-dir'), or s3://bucket/key (read with the AWS SDK's usual settings:
AWS_ENDPOINT_URL, AWS_REGION, credentials).`,
		newSegmentsDumpCmd(), newSegmentsVerifyCmd())
}

// segRef is one segment found on disk, and which of its files the user
// named explicitly (dump prints an index only when asked for it).
type segRef struct {
	dir   string
	id    segment.ID
	named segment.Kind // the kind given as a PATH; "" when found in a directory
}

func (s *segRef) path(k segment.Kind) string { return s.id.Path(s.dir, k) }

// findSegments resolves PATH arguments to segments, sorted by directory
// and base offset. A file that is not named like a segment file is an
// error.
func findSegments(paths []string) ([]*segRef, error) {
	type key struct {
		dir string
		id  segment.ID
	}
	found := map[key]*segRef{}
	var order []key
	add := func(path string, explicit bool) error {
		id, kind, ok := segment.ParseName(filepath.Base(path))
		if !ok {
			if explicit {
				return fmt.Errorf("%s: not a segment file (want <20-digit base offset>-<16-hex-digit epoch>.log, .index or .timeindex)", path)
			}
			return nil
		}
		k := key{filepath.Dir(path), id}
		ref, ok := found[k]
		if !ok {
			ref = &segRef{dir: k.dir, id: id}
			found[k] = ref
			order = append(order, k)
		}
		if explicit && (ref.named == "" || kind == segment.KindLog) {
			ref.named = kind
		}
		return nil
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(p, true); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				return add(path, false)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(order, func(a, b key) int {
		if a.dir != b.dir {
			if a.dir < b.dir {
				return -1
			}
			return 1
		}
		if a.id.Base != b.id.Base {
			return int(min(max(a.id.Base-b.id.Base, -1), 1))
		}
		return int(min(max(int64(a.id.Epoch)-int64(b.id.Epoch), -1), 1))
	})
	out := make([]*segRef, len(order))
	for i, k := range order {
		out[i] = found[k]
	}
	return out, nil
}

func newSegmentsVerifyCmd() *cobra.Command {
	var strict bool
	c := &cobra.Command{
		Use:   "verify PATH...",
		Short: "Check every record's CRC, dense offsets and index consistency",
		Long: `Verify segments: the .log file header (magic, version, CRC, and the base offset
and epoch its name claims), every record's CRC-32C, offsets dense from the base
offset, timestamps that never go back, and that every .index and .timeindex
entry points at the record it names with that record's timestamp.

Prints one line per segment on stdout. Exits 1 if any segment is corrupt, with
the reason on stderr. A torn tail (a record cut off at the end of the .log, as
a crash mid-write leaves it, truncated by the server on recovery) and index
entries past the end of the log are warnings, failures with --strict.`,
		Example: `  tierlog segments verify ./.tierlog/topics
  tierlog segments verify 00000000000000000000-0000000000000001.log`,
		Args: checkArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			artifacts, paths, err := splitArtifacts(args)
			if err != nil {
				return err
			}
			var segs []*segRef
			if len(paths) > 0 {
				if segs, err = findSegments(paths); err != nil {
					return err
				}
			}
			if len(segs)+len(artifacts) == 0 {
				return fmt.Errorf("no segment files under %v", args)
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			bad := verifyArtifacts(cmd.Context(), artifacts, out, errw)
			for _, s := range segs {
				res := verifySegment(s)
				for _, w := range res.warnings {
					fmt.Fprintf(errw, "tierlog: warning: %s: %s\n", s.path(segment.KindLog), w)
				}
				for _, p := range res.problems {
					fmt.Fprintf(errw, "tierlog: corrupt: %s: %s\n", s.path(segment.KindLog), p)
				}
				status := "ok"
				if len(res.problems) > 0 || (strict && len(res.warnings) > 0) {
					status = "FAILED"
					bad++
				}
				span := "no records"
				if res.next > s.id.Base {
					span = fmt.Sprintf("offsets %d..%d (%s)", s.id.Base, res.next-1, plural(res.next-s.id.Base, "record"))
				}
				fmt.Fprintf(out, "%-6s %s  %s, %d bytes\n", status, s.path(segment.KindLog), span, res.size)
			}
			if bad > 0 {
				return fmt.Errorf("%d of %d segments failed verification", bad, len(segs)+len(artifacts))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&strict, "strict", false, "treat torn tails and stale index entries as failures")
	return c
}

type verifyResult struct {
	next     int64 // offset after the last valid record
	size     int64
	problems []string // corruption: exit 1
	warnings []string // crash leftovers the server repairs on recovery
}

func verifySegment(s *segRef) verifyResult {
	res := verifyResult{next: s.id.Base}
	logPath := s.path(segment.KindLog)
	f, err := os.Open(logPath)
	if err != nil {
		res.problems = append(res.problems, err.Error())
		return res
	}
	defer closeQuietly(f)
	fi, err := f.Stat()
	if err != nil {
		res.problems = append(res.problems, err.Error())
		return res
	}
	res.size = fi.Size()
	hdr, err := segment.ReadFileHeader(f)
	switch {
	case errors.Is(err, segment.ErrTruncated):
		res.warnings = append(res.warnings, fmt.Sprintf("file header is torn (%d bytes): a segment created just before a crash", fi.Size()))
		return res
	case err != nil:
		res.problems = append(res.problems, fmt.Sprintf("file header: %v", err))
		return res
	case hdr.BaseOffset != s.id.Base || hdr.Epoch != s.id.Epoch:
		res.problems = append(res.problems, fmt.Sprintf("file header says base offset %d epoch %d, the name says %d and %d", hdr.BaseOffset, hdr.Epoch, s.id.Base, s.id.Epoch))
		return res
	}
	r := segment.NewReader(f, s.id, fi.Size(), nil, nil)
	next, _, err := r.Verify()
	res.next = next
	switch {
	case err == nil:
	case errors.Is(err, segment.ErrCorrupt):
		res.problems = append(res.problems, fmt.Sprintf("after %s: %v", plural(next-s.id.Base, "good record"), err))
	case errors.Is(err, segment.ErrTruncated):
		res.warnings = append(res.warnings, fmt.Sprintf("torn tail after %s: %v", plural(next-s.id.Base, "good record"), err))
	default:
		res.problems = append(res.problems, err.Error())
	}
	verifyIndexes(s, f, fi.Size(), &res)
	return res
}

// verifyIndexes checks that index entries point at the records they name.
// Indexes are hints (reads fall back to a scan), so entries past the end of
// the log or a torn last entry are warnings; an entry inside the log that
// names the wrong record, or entries out of order, are corruption.
func verifyIndexes(s *segRef, log io.ReaderAt, size int64, res *verifyResult) {
	offB, err1 := os.ReadFile(s.path(segment.KindIndex))
	timeB, err2 := os.ReadFile(s.path(segment.KindTimeIndex))
	for _, e := range []error{err1, err2} {
		if e != nil {
			res.warnings = append(res.warnings, fmt.Sprintf("index file: %v (reads scan instead)", e))
		}
	}
	offs, err := index.ParseOffsets(offB)
	indexErr(res, ".index", err)
	times, err := index.ParseTimes(timeB)
	indexErr(res, ".timeindex", err)
	if err1 == nil && err2 == nil && len(offs) != len(times) {
		res.warnings = append(res.warnings, fmt.Sprintf(".index has %d entries, .timeindex %d (the writer adds them in pairs; a crash between the writes)", len(offs), len(times)))
	}
	// A time entry holds the largest timestamp up to its record: the
	// record's own unless the segment is a create-time one.
	createTime := true
	if h, err := segment.ReadFileHeader(log); err == nil {
		createTime = h.CreateTime()
	}
	var hb [segment.RecordHeaderSize]byte
	for i, e := range offs {
		at := fmt.Sprintf(".index entry %d (offset %d at position %d)", i, s.id.Base+int64(e.Rel), e.Pos)
		if int64(e.Pos)+segment.RecordHeaderSize > size {
			res.warnings = append(res.warnings, at+": past the end of the log")
			continue
		}
		if _, err := log.ReadAt(hb[:], int64(e.Pos)); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s: read: %v", at, err))
			continue
		}
		h, err := segment.DecodeRecordHeader(hb[:])
		if err != nil || h.Offset != s.id.Base+int64(e.Rel) || e.Pos < segment.FileHeaderSize {
			got := "no record header"
			if err == nil {
				got = fmt.Sprintf("the record of offset %d", h.Offset)
			}
			res.problems = append(res.problems, fmt.Sprintf("%s: points at %s", at, got))
			continue
		}
		if i < len(times) {
			te := times[i]
			if te.Rel != e.Rel || te.Timestamp < h.Timestamp || !createTime && te.Timestamp != h.Timestamp {
				res.problems = append(res.problems, fmt.Sprintf(".timeindex entry %d says the records up to offset %d have timestamps up to %d; the record (.index entry %d) is offset %d with timestamp %d",
					i, s.id.Base+int64(te.Rel), te.Timestamp, i, h.Offset, h.Timestamp))
			}
		}
	}
}

func indexErr(res *verifyResult, name string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, index.ErrTruncated):
		res.warnings = append(res.warnings, fmt.Sprintf("%s: %v (a torn last entry)", name, err))
	default:
		res.problems = append(res.problems, fmt.Sprintf("%s: %v", name, err))
	}
}

func newSegmentsDumpCmd() *cobra.Command {
	var (
		format string
		b64    bool
	)
	c := &cobra.Command{
		Use:   "dump PATH...",
		Short: "Print the records of segment files (or the entries of an index file)",
		Long: `Print every record of each segment: offset, timestamp, key and value. In the
plain format a key or value is printed as a quoted string when it is valid
UTF-8, else as base64: (or always as base64 with --base64); null is an absent
key or a tombstone. A .index or .timeindex PATH prints that index's entries.

Exits 1 at the first corrupt record, after printing the records before it.`,
		Example: `  tierlog segments dump ./.tierlog/topics/orders~*/0
  tierlog segments dump --format json 00000000000000000000-0000000000000001.log`,
		Args: checkArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			artifacts, paths, err := splitArtifacts(args)
			if err != nil {
				return err
			}
			var segs []*segRef
			if len(paths) > 0 {
				if segs, err = findSegments(paths); err != nil {
					return err
				}
			}
			if len(segs)+len(artifacts) == 0 {
				return fmt.Errorf("no segment files under %v", args)
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			if err := dumpArtifacts(cmd.Context(), artifacts, w, format, b64); err != nil {
				w.Flush()
				return err
			}
			for _, s := range segs {
				var err error
				switch s.named {
				case segment.KindIndex, segment.KindTimeIndex:
					err = dumpIndex(w, s, format)
				default:
					err = dumpLog(w, s, format, b64, cmd.ErrOrStderr())
				}
				if err != nil {
					w.Flush()
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	c.Flags().BoolVar(&b64, "base64", false, "print every key and value as base64")
	return c
}

func dumpLog(w *bufio.Writer, s *segRef, format string, b64 bool, errw io.Writer) error {
	path := s.path(segment.KindLog)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer closeQuietly(f)
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr, err := segment.ReadFileHeader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if format == "plain" {
		fmt.Fprintf(w, "# %s: base offset %d, epoch %d, %d bytes\n", path, hdr.BaseOffset, hdr.Epoch, fi.Size())
	}
	// The index files let each chunk start near its first record; a bad
	// index costs a scan, never a wrong record.
	r, rc, err := segment.OpenReader(s.dir, s.id, fi.Size(), nil)
	if err != nil {
		return err
	}
	defer closeQuietly(rc)
	for next := s.id.Base; ; {
		recs, err := r.Read(next, 10000, 8<<20)
		for i := range recs {
			if err := dumpRecord(w, path, &recs[i], format, b64); err != nil {
				return err
			}
		}
		if len(recs) > 0 {
			next = recs[len(recs)-1].Offset + 1
		}
		switch {
		case errors.Is(err, segment.ErrTruncated):
			w.Flush()
			fmt.Fprintf(errw, "tierlog: warning: %s: torn tail: %v\n", path, err)
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		case len(recs) == 0:
			return nil
		}
	}
}

func dumpRecord(w io.Writer, path string, r *segment.Record, format string, b64 bool) error {
	if format == "json" {
		type header struct {
			Key           string  `json:"key"`
			Value         *string `json:"value"`
			ValueEncoding string  `json:"value_encoding,omitempty"`
		}
		type rec struct {
			Segment       string   `json:"segment"`
			Offset        int64    `json:"offset"`
			Timestamp     int64    `json:"timestamp"`
			Key           *string  `json:"key"`
			KeyEncoding   string   `json:"key_encoding,omitempty"`
			Value         *string  `json:"value"`
			ValueEncoding string   `json:"value_encoding,omitempty"`
			Headers       []header `json:"headers,omitempty"`
		}
		out := rec{Segment: path, Offset: r.Offset, Timestamp: r.Timestamp}
		enc := textOrBase64
		if b64 {
			enc = forceBase64
		}
		out.Key, out.KeyEncoding = enc(r.Key)
		out.Value, out.ValueEncoding = enc(r.Value)
		for _, h := range r.Headers {
			hv := header{Key: h.Key}
			hv.Value, hv.ValueEncoding = enc(h.Value)
			out.Headers = append(out.Headers, hv)
		}
		return writeJSONLine(w, &out)
	}
	ts := time.UnixMilli(r.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z")
	line := fmt.Sprintf("offset=%d timestamp=%d (%s) key=%s value=%s", r.Offset, r.Timestamp, ts, plainBytes(r.Key, b64), plainBytes(r.Value, b64))
	if len(r.Headers) > 0 {
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = strconv.Quote(h.Key) + ":" + plainBytes(h.Value, b64)
		}
		line += " headers=[" + strings.Join(hs, " ") + "]"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

func forceBase64(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// plainBytes renders a key or value on one line: null, a quoted string,
// or base64:....
func plainBytes(b []byte, b64 bool) string {
	switch {
	case b == nil:
		return "null"
	case !b64 && utf8.Valid(b):
		return strconv.Quote(string(b))
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b)
}

func dumpIndex(w *bufio.Writer, s *segRef, format string) error {
	path := s.path(s.named)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if format == "plain" {
		fmt.Fprintf(w, "# %s: base offset %d\n", path, s.id.Base)
	}
	var perr error
	if s.named == segment.KindIndex {
		var offs index.Offsets
		offs, perr = index.ParseOffsets(b)
		for _, e := range offs {
			if format == "json" {
				if err := writeJSONLine(w, struct {
					Offset   int64  `json:"offset"`
					Position uint32 `json:"position"`
				}{s.id.Base + int64(e.Rel), e.Pos}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(w, "offset=%d position=%d\n", s.id.Base+int64(e.Rel), e.Pos)
		}
	} else {
		var times index.Times
		times, perr = index.ParseTimes(b)
		for _, e := range times {
			if format == "json" {
				if err := writeJSONLine(w, struct {
					Timestamp int64 `json:"timestamp"`
					Offset    int64 `json:"offset"`
				}{e.Timestamp, s.id.Base + int64(e.Rel)}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(w, "timestamp=%d offset=%d\n", e.Timestamp, s.id.Base+int64(e.Rel))
		}
	}
	if perr != nil {
		return fmt.Errorf("%s: %w", path, perr)
	}
	return nil
}
