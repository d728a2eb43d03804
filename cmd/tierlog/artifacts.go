package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tierlog/tierlog/pkg/index"
	objs3 "github.com/tierlog/tierlog/pkg/objstore/s3"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

// Cold-tier artifacts (pkg/tier): one object per segment holding the log,
// both indexes and a footer. `segments verify` and `segments dump` take
// them as local .seg files (the local backend's cold/ directory), as
// directories holding them, or as s3://bucket/key (read with the AWS SDK's
// usual settings).

// splitArtifacts separates artifact arguments from hot-tier segment paths.
// A directory goes to both lists when it holds .seg files.
func splitArtifacts(args []string) (artifacts, segs []string, err error) {
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "s3://"):
			if _, _, err := parseS3Ref(a); err != nil {
				return nil, nil, err
			}
			artifacts = append(artifacts, a)
		case strings.HasSuffix(a, ".seg"):
			artifacts = append(artifacts, a)
		default:
			fi, err := os.Stat(a)
			if err != nil {
				return nil, nil, err
			}
			if !fi.IsDir() {
				segs = append(segs, a)
				continue
			}
			hasSegs, hasArtifacts := false, false
			err = filepath.WalkDir(a, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.Type().IsRegular() {
					return nil
				}
				if strings.HasSuffix(path, ".seg") {
					artifacts = append(artifacts, path)
					hasArtifacts = true
				} else if _, _, ok := segment.ParseName(d.Name()); ok {
					hasSegs = true
				}
				return nil
			})
			if err != nil {
				return nil, nil, err
			}
			if hasSegs || !hasArtifacts {
				segs = append(segs, a)
			}
		}
	}
	return artifacts, segs, nil
}

// parseS3Ref splits s3://bucket/key; anything else is a usage error.
func parseS3Ref(ref string) (bucket, key string, err error) {
	rest, _ := strings.CutPrefix(ref, "s3://")
	bucket, key, ok := strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return "", "", usagef("%s: want s3://bucket/key of one .seg object (prefixes are not listed)", ref)
	}
	return bucket, key, nil
}

// loadArtifact reads a whole artifact.
func loadArtifact(ctx context.Context, ref string) ([]byte, error) {
	if !strings.HasPrefix(ref, "s3://") {
		return os.ReadFile(ref)
	}
	bucket, key, err := parseS3Ref(ref)
	if err != nil {
		return nil, err
	}
	client, err := objs3.NewClientFromEnv(ctx)
	if err != nil {
		return nil, err
	}
	store, err := objs3.New(client, bucket, "")
	if err != nil {
		return nil, err
	}
	return store.Get(ctx, key, 0, -1)
}

// openArtifact checks an artifact's footer and section CRCs and returns a
// reader over its records.
func openArtifact(obj []byte) (*segment.Reader, tier.Footer, error) {
	size := int64(len(obj))
	if size < tier.FooterSize {
		return nil, tier.Footer{}, fmt.Errorf("%w: %d bytes, shorter than a footer", tier.ErrCorrupt, size)
	}
	f, err := tier.DecodeFooter(obj[size-tier.FooterSize:], size)
	if err != nil {
		return nil, f, err
	}
	log := obj[f.Log.Off : f.Log.Off+f.Log.Len]
	ib := obj[f.Index.Off : f.Index.Off+f.Index.Len]
	tb := obj[f.Time.Off : f.Time.Off+f.Time.Len]
	for _, c := range []struct {
		name string
		b    []byte
		s    tier.Section
	}{{"log", log, f.Log}, {"index", ib, f.Index}, {"time index", tb, f.Time}} {
		if err := tier.CheckSection(c.name, c.b, c.s); err != nil {
			return nil, f, err
		}
	}
	offs, err := index.ParseOffsets(ib)
	if err != nil {
		return nil, f, err
	}
	times, err := index.ParseTimes(tb)
	if err != nil {
		return nil, f, err
	}
	id := segment.ID{Base: f.Base, Epoch: f.Epoch}
	return segment.NewReader(bytes.NewReader(log), id, int64(len(log)), offs, times), f, nil
}

// verifyArtifact checks everything an artifact claims: footer, section
// CRCs, every record (CRC, dense offsets from the base, timestamps), the
// footer's offsets and timestamps, and that every index entry names the
// record at its position.
func verifyArtifact(obj []byte) (tier.Footer, error) {
	r, f, err := openArtifact(obj)
	if err != nil {
		return f, err
	}
	next, lastTS, err := r.Verify()
	if err != nil {
		return f, err
	}
	if next != f.NextOffset || (next > f.Base && lastTS != f.LastTS) {
		return f, fmt.Errorf("%w: records end at offset %d (last timestamp %d), footer says %d (%d)",
			tier.ErrCorrupt, next, lastTS, f.NextOffset, f.LastTS)
	}
	log := obj[f.Log.Off : f.Log.Off+f.Log.Len]
	offs, _ := index.ParseOffsets(obj[f.Index.Off : f.Index.Off+f.Index.Len])
	times, _ := index.ParseTimes(obj[f.Time.Off : f.Time.Off+f.Time.Len])
	if len(offs) != len(times) {
		return f, fmt.Errorf("%w: %d offset entries, %d time entries", tier.ErrCorrupt, len(offs), len(times))
	}
	// A time entry holds the largest timestamp up to its record: the
	// record's own unless the segment is a create-time one.
	createTime := true
	if h, err := segment.ReadFileHeader(bytes.NewReader(log)); err == nil {
		createTime = h.CreateTime()
	}
	for i, e := range offs {
		if int64(e.Pos)+segment.RecordHeaderSize > int64(len(log)) {
			return f, fmt.Errorf("%w: index entry %d points past the log", tier.ErrCorrupt, i)
		}
		h, err := segment.DecodeRecordHeader(log[e.Pos:])
		if err != nil || h.Offset != f.Base+int64(e.Rel) || times[i].Rel != e.Rel || times[i].Timestamp < h.Timestamp ||
			!createTime && times[i].Timestamp != h.Timestamp {
			return f, fmt.Errorf("%w: index entry %d (offset %d at %d) does not name its record", tier.ErrCorrupt, i, f.Base+int64(e.Rel), e.Pos)
		}
	}
	return f, nil
}

// verifyArtifacts verifies each artifact and reports like verify does for
// hot segments. It returns how many failed.
func verifyArtifacts(ctx context.Context, refs []string, out, errw io.Writer) int {
	bad := 0
	for _, ref := range refs {
		obj, err := loadArtifact(ctx, ref)
		status, span := "ok", ""
		if err == nil {
			var f tier.Footer
			f, err = verifyArtifact(obj)
			span = fmt.Sprintf("offsets %d..%d (%s), %d bytes", f.Base, f.NextOffset-1, plural(f.NextOffset-f.Base, "record"), len(obj))
		}
		if err != nil {
			fmt.Fprintf(errw, "tierlog: corrupt: %s: %s\n", ref, cliMessage(err))
			status, span = "FAILED", "unreadable or corrupt"
			bad++
		}
		fmt.Fprintf(out, "%-6s %s  %s\n", status, ref, span)
	}
	return bad
}

// dumpArtifacts prints every record of each artifact.
func dumpArtifacts(ctx context.Context, refs []string, w *bufio.Writer, format string, b64 bool) error {
	for _, ref := range refs {
		obj, err := loadArtifact(ctx, ref)
		if err != nil {
			return err
		}
		r, f, err := openArtifact(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		for off := f.Base; off < f.NextOffset; {
			recs, err := r.Read(off, 1000, 1<<20)
			if err != nil {
				return fmt.Errorf("%s: %w", ref, err)
			}
			if len(recs) == 0 {
				break
			}
			for i := range recs {
				if err := dumpRecord(w, ref, &recs[i], format, b64); err != nil {
					return err
				}
			}
			off = recs[len(recs)-1].Offset + 1
		}
	}
	return nil
}
