package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tierlog/tierlog/pkg/segment"
)

// A segment's batch file, <base>-<epoch>.batches beside its .log, records
// the keyed batches committed into that segment: their key, where they
// landed, and a hash of their contents. It is the idempotency window on the
// hot tier (see window.go); the metadata item is too small for it.
//
// It is written like the segment's index files: only by the epoch that
// created the segment (and by later owners after a clean release), appended
// before the fsync that precedes the commit, and trusted only below the
// segment's committed next offset: an entry is valid only if its records lie
// below it. An aborted attempt's entries lie past it; a continuing owner
// truncates them, a taken-over file is sealed and never written again, and
// a reader never advances past an entry it did not accept.
//
// Header, 32 bytes:
//
//	0  magic "TLB1"
//	4  u32 version (1)
//	8  i64 base of the previous segment, -1 if none
//	16 u64 epoch of the previous segment
//	24 u32 reserved (0)
//	28 u32 CRC-32C of bytes 0..27
//
// The previous segment is the one sealed when this one was rolled: the
// window walks back through these links, since the metadata item forgets
// segments once they are in the cold tier. Its entries are valid below
// this segment's base.
//
// Entry:
//
//	0  u32 length of what follows the CRC
//	4  u32 CRC-32C of what follows
//	8  i64 base offset
//	16 u32 record count
//	20 i64 timestamp (ms)
//	28 [16] content hash
//	44 u64 origin (which attempt committed it)
//	52 u16 key length, then the key
const (
	batchesExt       = ".batches"
	batchHeaderSize  = 32
	batchEntryFixed  = 54
	batchFileVersion = 1
	maxBatchKey      = 512
)

var (
	batchMagic = [4]byte{'T', 'L', 'B', '1'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// batchEntry is one committed keyed batch.
type batchEntry struct {
	Base   int64
	Count  int
	TS     int64
	Hash   [16]byte
	Origin uint64
	Key    string
}

func batchesPath(dir string, id segment.ID) string {
	return filepath.Join(dir, id.String()+batchesExt)
}

func encodeBatchHeader(prev *segment.ID) []byte {
	b := make([]byte, batchHeaderSize)
	copy(b, batchMagic[:])
	binary.LittleEndian.PutUint32(b[4:], batchFileVersion)
	pb, pe := int64(-1), uint64(0)
	if prev != nil {
		pb, pe = prev.Base, prev.Epoch
	}
	binary.LittleEndian.PutUint64(b[8:], uint64(pb))
	binary.LittleEndian.PutUint64(b[16:], pe)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

var errBatchHeader = errors.New("partition: bad batch file header")

func decodeBatchHeader(b []byte) (prev *segment.ID, err error) {
	if len(b) < batchHeaderSize || [4]byte(b[:4]) != batchMagic ||
		binary.LittleEndian.Uint32(b[4:]) != batchFileVersion ||
		binary.LittleEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return nil, errBatchHeader
	}
	if pb := int64(binary.LittleEndian.Uint64(b[8:])); pb >= 0 {
		prev = &segment.ID{Base: pb, Epoch: binary.LittleEndian.Uint64(b[16:])}
	}
	return prev, nil
}

func appendBatchEntry(b []byte, e batchEntry) []byte {
	n := batchEntryFixed - 8 + len(e.Key)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Base))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Count))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.TS))
	b = append(b, e.Hash[:]...)
	b = binary.LittleEndian.AppendUint64(b, e.Origin)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Key)))
	b = append(b, e.Key...)
	binary.LittleEndian.PutUint32(b[start:], crc32.Checksum(b[start+4:], castagnoli))
	return b
}

// decodeBatchEntry decodes the entry at the start of b. ok is false when b
// holds no whole, intact entry there (a torn tail, or damage).
func decodeBatchEntry(b []byte) (e batchEntry, size int, ok bool) {
	if len(b) < batchEntryFixed {
		return e, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < batchEntryFixed-8 || n > batchEntryFixed-8+maxBatchKey || 8+n > len(b) {
		return e, 0, false
	}
	body := b[8 : 8+n]
	if binary.LittleEndian.Uint32(b[4:]) != crc32.Checksum(body, castagnoli) {
		return e, 0, false
	}
	e.Base = int64(binary.LittleEndian.Uint64(body))
	e.Count = int(binary.LittleEndian.Uint32(body[8:]))
	e.TS = int64(binary.LittleEndian.Uint64(body[12:]))
	copy(e.Hash[:], body[20:36])
	e.Origin = binary.LittleEndian.Uint64(body[36:])
	kl := int(binary.LittleEndian.Uint16(body[44:]))
	if 46+kl != n {
		return e, 0, false
	}
	e.Key = string(body[46:])
	return e, 8 + n, true
}

// readBatchFile reads a batch file from pos on: the header's link (when pos
// is 0) and the entries whose records lie below limit, stopping at the first
// that does not (or is not intact). end is the position after the last entry
// accepted.
func readBatchFile(fsys segment.FS, path string, pos, limit int64) (prev *segment.ID, ents []batchEntry, end int64, err error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, pos, err
	}
	defer f.Close()
	from := pos
	if from < batchHeaderSize {
		from = 0
	}
	buf, err := readFrom(f, from, 1<<40)
	if err != nil {
		return nil, nil, pos, err
	}
	if len(buf) == 0 {
		if from == 0 {
			return nil, nil, pos, fmt.Errorf("%w: %s is empty", errBatchHeader, filepath.Base(path))
		}
		return nil, nil, pos, nil
	}
	if from == 0 {
		if prev, err = decodeBatchHeader(buf); err != nil {
			return nil, nil, pos, fmt.Errorf("%w: %s", err, filepath.Base(path))
		}
		buf = buf[batchHeaderSize:]
		from = batchHeaderSize
	}
	ents, end = batchEntries(buf, from, limit)
	return prev, ents, end, nil
}

// batchWriter appends entries to the active segment's batch file.
type batchWriter struct {
	f    segment.File
	size int64
}

// createBatchFile creates the batch file of a new segment, durable (file
// and contents; the caller's segment.Create syncs the directory after it).
func createBatchFile(fsys segment.FS, dir string, id segment.ID, prev *segment.ID) (*batchWriter, error) {
	f, err := fsys.OpenFile(batchesPath(dir, id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	h := encodeBatchHeader(prev)
	if _, err := f.WriteAt(h, 0); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return &batchWriter{f: f, size: batchHeaderSize}, nil
}

// openBatchFile continues the batch file of a segment continued after a
// clean release: it keeps the entries below committed and truncates the
// rest (an aborted attempt's). It returns what it read for the window. A
// segment written before batch files existed has none: it gets one without
// a link.
func openBatchFile(fsys segment.FS, dir string, id segment.ID, committed int64) (*batchWriter, *segment.ID, []batchEntry, error) {
	path := batchesPath(dir, id)
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		w, err := createBatchFile(fsys, dir, id, nil)
		return w, nil, nil, err
	}
	if err != nil {
		return nil, nil, nil, err
	}
	buf, err := readFrom(f, 0, 1<<40)
	if err == nil && len(buf) == 0 {
		err = fmt.Errorf("%w: %s is empty", errBatchHeader, filepath.Base(path))
	}
	var prev *segment.ID
	if err == nil {
		prev, err = decodeBatchHeader(buf)
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	ents, end := batchEntries(buf[batchHeaderSize:], batchHeaderSize, committed)
	if end < int64(len(buf)) {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, nil, nil, err
		}
	}
	return &batchWriter{f: f, size: end}, prev, ents, nil
}

// batchEntries decodes the entries at the start of buf (which starts at
// file position from) whose records lie below limit, stopping at the first
// that does not or is not intact; end is the position after the last.
func batchEntries(buf []byte, from, limit int64) (ents []batchEntry, end int64) {
	end = from
	for len(buf) > 0 {
		e, n, ok := decodeBatchEntry(buf)
		if !ok || e.Base+int64(e.Count) > limit {
			break
		}
		ents = append(ents, e)
		buf = buf[n:]
		end += int64(n)
	}
	return ents, end
}

// write appends b at the end; the caller syncs.
func (w *batchWriter) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(b, w.size); err != nil {
		return err
	}
	w.size += int64(len(b))
	return nil
}

func (w *batchWriter) close() {
	if w != nil && w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// ParseBatchFileName reports the segment a batch file belongs to, if name
// is one: <segment>.batches.
func ParseBatchFileName(name string) (segment.ID, bool) {
	base, ok := strings.CutSuffix(name, batchesExt)
	if !ok {
		return segment.ID{}, false
	}
	id, kind, ok := segment.ParseName(base + string(segment.KindLog))
	return id, ok && kind == segment.KindLog
}
