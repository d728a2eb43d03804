// Package tier is the cold tier: the segment artifact a sealed hot segment
// becomes in object storage, and the reader that serves fetches from it
// through the sparse index with ranged GETs and a byte-budgeted cache.
//
// # Artifact layout
//
// One object per segment. A reader that knows the object size reads the
// fixed footer at the tail and finds everything else from it (the catalog
// entry repeats the footer, so a warm reader skips even that). Integers are
// little-endian. Wire constants never change.
//
//	+-------------------------------+  0
//	| log section: the .log file,   |  positions in the offset index are
//	| file header and records       |  positions in this section
//	+-------------------------------+  IndexOff
//	| offset index (8-byte entries) |
//	+-------------------------------+  TimeOff = IndexOff + IndexLen
//	| time index (12-byte entries)  |
//	+-------------------------------+  size - FooterSize
//	| footer (128 bytes)            |
//	+-------------------------------+  size
//
//	footer
//	 0  magic "TLSA"        4     72  index off     8
//	 4  version             2     80  index len     8
//	 6  reserved (zero)     2     88  index crc     4
//	 8  base offset         8     92  reserved      4
//	16  next offset         8     96  time off      8
//	24  epoch               8    104  time len      8
//	32  first timestamp     8    112  time crc      4
//	40  last timestamp      8    116  reserved      4
//	48  log off             8    120  reserved      4
//	                             124  footer crc    4  (CRC-32C of bytes 0..123)
//	56  log len             8
//	64  log crc             4
//	68  reserved            4
//
// Section CRCs are CRC-32C. The index and time index are adjacent, so one
// ranged GET reads both.
//
// The log section is the .log file as the hot tier wrote it, in whichever
// format version its file header names (package segment: version 1, or
// version 2 with record headers and, for a create-time topic, timestamps
// that may go back); the artifact format does not change with it. The
// indexes are rebuilt by segment.Summarize: a time index entry holds the
// largest timestamp up to its record. The footer's first timestamp is the
// segment's smallest, its last timestamp the largest (the first and the
// last where timestamps never go back): retention and offset-for-time skip
// a segment whose largest timestamp is older than what they look for.
package tier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
)

// Wire constants: never change.
const (
	FooterSize    = 128
	ArtifactMagic = "TLSA"
	Version       = 1
)

var (
	// ErrCorrupt means an artifact's footer or a section fails its checks.
	ErrCorrupt = errors.New("tier: corrupt artifact")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Section locates one part of an artifact.
type Section struct {
	Off, Len int64
	CRC      uint32
}

// Footer is the decoded artifact footer.
type Footer struct {
	Base, NextOffset int64
	Epoch            uint64
	FirstTS, LastTS  int64
	Log, Index, Time Section
}

// Build verifies the sealed segment log (the whole .log file bytes up to its
// committed length), rebuilds its indexes and returns the artifact bytes and
// footer.
func Build(log []byte, id segment.ID, interval int) ([]byte, Footer, error) {
	sum, err := segment.Summarize(bytesReaderAt(log), id, int64(len(log)), interval)
	if err != nil {
		return nil, Footer{}, err
	}
	f := Footer{
		Base: id.Base, NextOffset: sum.NextOffset, Epoch: id.Epoch,
		FirstTS: sum.FirstTS, LastTS: sum.LastTS,
		Log:   Section{Off: 0, Len: int64(len(log)), CRC: crc32.Checksum(log, castagnoli)},
		Index: Section{Off: int64(len(log)), Len: int64(len(sum.Offsets)), CRC: crc32.Checksum(sum.Offsets, castagnoli)},
	}
	f.Time = Section{Off: f.Index.Off + f.Index.Len, Len: int64(len(sum.Times)), CRC: crc32.Checksum(sum.Times, castagnoli)}
	obj := make([]byte, 0, len(log)+len(sum.Offsets)+len(sum.Times)+FooterSize)
	obj = append(obj, log...)
	obj = append(obj, sum.Offsets...)
	obj = append(obj, sum.Times...)
	obj = AppendFooter(obj, f)
	return obj, f, nil
}

// AppendFooter appends the 128-byte encoding of f.
func AppendFooter(dst []byte, f Footer) []byte {
	start := len(dst)
	le := binary.LittleEndian
	dst = append(dst, ArtifactMagic...)
	dst = le.AppendUint16(dst, Version)
	dst = le.AppendUint16(dst, 0)
	dst = le.AppendUint64(dst, uint64(f.Base))
	dst = le.AppendUint64(dst, uint64(f.NextOffset))
	dst = le.AppendUint64(dst, f.Epoch)
	dst = le.AppendUint64(dst, uint64(f.FirstTS))
	dst = le.AppendUint64(dst, uint64(f.LastTS))
	for _, s := range []Section{f.Log, f.Index, f.Time} {
		dst = le.AppendUint64(dst, uint64(s.Off))
		dst = le.AppendUint64(dst, uint64(s.Len))
		dst = le.AppendUint32(dst, s.CRC)
		dst = le.AppendUint32(dst, 0)
	}
	dst = le.AppendUint32(dst, 0) // reserved: pads to 124
	return le.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// DecodeFooter decodes and checks a footer against the object size.
func DecodeFooter(b []byte, size int64) (Footer, error) {
	if len(b) != FooterSize {
		return Footer{}, fmt.Errorf("%w: footer is %d bytes, want %d", ErrCorrupt, len(b), FooterSize)
	}
	le := binary.LittleEndian
	if string(b[:4]) != ArtifactMagic {
		return Footer{}, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	}
	if crc := crc32.Checksum(b[:124], castagnoli); crc != le.Uint32(b[124:]) {
		return Footer{}, fmt.Errorf("%w: footer crc %08x, want %08x", ErrCorrupt, crc, le.Uint32(b[124:]))
	}
	if v := le.Uint16(b[4:]); v != Version {
		return Footer{}, fmt.Errorf("%w: version %d", ErrCorrupt, v)
	}
	f := Footer{
		Base:       int64(le.Uint64(b[8:])),
		NextOffset: int64(le.Uint64(b[16:])),
		Epoch:      le.Uint64(b[24:]),
		FirstTS:    int64(le.Uint64(b[32:])),
		LastTS:     int64(le.Uint64(b[40:])),
	}
	for i, s := range []*Section{&f.Log, &f.Index, &f.Time} {
		o := 48 + 24*i
		*s = Section{Off: int64(le.Uint64(b[o:])), Len: int64(le.Uint64(b[o+8:])), CRC: le.Uint32(b[o+16:])}
	}
	body := size - FooterSize
	ok := f.Log.Off == 0 && f.Log.Len >= segment.FileHeaderSize &&
		f.Index.Off == f.Log.Len && f.Index.Len >= 0 && f.Index.Len%8 == 0 &&
		f.Time.Off == f.Index.Off+f.Index.Len && f.Time.Len >= 0 && f.Time.Len%12 == 0 &&
		f.Time.Off+f.Time.Len == body && f.NextOffset >= f.Base
	if !ok {
		return Footer{}, fmt.Errorf("%w: sections %+v %+v %+v do not tile an object of %d bytes", ErrCorrupt, f.Log, f.Index, f.Time, size)
	}
	return f, nil
}

// ReadFooter reads and checks the footer of an artifact through r.
func ReadFooter(r io.ReaderAt, size int64) (Footer, error) {
	if size < FooterSize {
		return Footer{}, fmt.Errorf("%w: object of %d bytes has no footer", ErrCorrupt, size)
	}
	b := make([]byte, FooterSize)
	if _, err := r.ReadAt(b, size-FooterSize); err != nil {
		return Footer{}, fmt.Errorf("tier: read footer: %w", err)
	}
	return DecodeFooter(b, size)
}

// CheckSection verifies b against s's CRC.
func CheckSection(name string, b []byte, s Section) error {
	if int64(len(b)) != s.Len {
		return fmt.Errorf("%w: %s section is %d bytes, want %d", ErrCorrupt, name, len(b), s.Len)
	}
	if crc := crc32.Checksum(b, castagnoli); crc != s.CRC {
		return fmt.Errorf("%w: %s section crc %08x, want %08x", ErrCorrupt, name, crc, s.CRC)
	}
	return nil
}

// Entry is the catalog entry for an artifact stored under key.
func (f Footer) Entry(key string, size, createdMs int64) meta.CatalogEntry {
	return meta.CatalogEntry{
		Base: f.Base, NextOffset: f.NextOffset, Epoch: f.Epoch, Key: key, Size: size,
		FirstTS: f.FirstTS, LastTS: f.LastTS,
		LogOff: f.Log.Off, LogLen: f.Log.Len, LogCRC: f.Log.CRC,
		IndexOff: f.Index.Off, IndexLen: f.Index.Len, IndexCRC: f.Index.CRC,
		TimeOff: f.Time.Off, TimeLen: f.Time.Len, TimeCRC: f.Time.CRC,
		CreatedMs: createdMs,
	}
}

// FooterOf is the footer a catalog entry repeats.
func FooterOf(e meta.CatalogEntry) Footer {
	return Footer{
		Base: e.Base, NextOffset: e.NextOffset, Epoch: e.Epoch, FirstTS: e.FirstTS, LastTS: e.LastTS,
		Log:   Section{Off: e.LogOff, Len: e.LogLen, CRC: e.LogCRC},
		Index: Section{Off: e.IndexOff, Len: e.IndexLen, CRC: e.IndexCRC},
		Time:  Section{Off: e.TimeOff, Len: e.TimeLen, CRC: e.TimeCRC},
	}
}

// ObjectKey names a segment's artifact: a short hash of the partition
// spreads partitions over S3 prefixes, and zero-padded base offsets make a
// partition's listing come back in offset order.
//
//	<hash4>/<topic>~<topic id>/<partition>/<base %020d>-<epoch %016x>.seg
//
// (<topic>~<topic id> is meta.IncarnationName: a long topic name is cut.)
func ObjectKey(k meta.PartitionKey, id segment.ID) string {
	return fmt.Sprintf("%s%020d-%016x.seg", PartitionPrefix(k), id.Base, id.Epoch)
}

// PartitionPrefix is the key prefix of every artifact of partition k.
func PartitionPrefix(k meta.PartitionKey) string {
	dir := fmt.Sprintf("%s/%d/", meta.IncarnationName(k.Topic, k.TopicID), k.Partition)
	h := fnv.New32a()
	h.Write([]byte(dir))
	return fmt.Sprintf("%04x/%s", h.Sum32()&0xffff, dir)
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
