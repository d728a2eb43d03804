package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// The write buffer (docs/internals.md "Many writers: the write buffer"): a
// writer that finds the lease held stages its batch as a file in the
// partition's wbuf directory, and the lease holder appends the staged
// batches it finds with its own, under one fsync and one commit.
//
// A staged file is written whole, fsynced and closed before its writer
// waits, so a leader that opens it after (close-to-open) reads all of it; a
// leader that finds it torn or unreadable skips it. Only a commit decides
// whether a staged batch was appended: the commit's batch-file entry names
// its key, and every leader checks the window before taking a staged batch,
// so a batch is never taken twice, whoever read it before (a leader paused
// after reading it is a zombie: its commit is fenced). The waiter learns its
// offsets from that entry, never from the file's fate: NFS may show a
// removed file for a while, or hide a new one (stale listings and cached
// negative lookups), so the directory is only ever a hint.
//
// Name: <created ms, 16 hex>-<origin, 16 hex>.stg, so a listing sorts by age.
// Contents:
//
//	0  magic "TLS1" or "TLS2"
//	4  u32 length of what follows the CRC
//	8  u32 CRC-32C of what follows
//	12 i64 created (ms)
//	20 i64 expected offset, -1 for none
//	28 [16] content hash
//	44 u64 origin
//	52 u16 key length, key
//	   u32 record count, then per record:
//	   i32 key length (-1: no key), key, i32 value length (-1: tombstone), value
//	   and in "TLS2" only:
//	   i64 producer timestamp (-1: none), u16 header count, per header:
//	   u16 key length, key, i32 value length (-1: null), value
//
// A batch whose records carry no headers and no timestamps is staged as
// "TLS1", which every version reads; "TLS2" is refused (as torn) by code
// older than it, whose waiter then answers unavailable: a retry is safe.
const (
	stageDir   = "wbuf"
	stageExt   = ".stg"
	stageFixed = 58
)

// StageDir is the write buffer's directory, in a partition's directory.
const StageDir = stageDir

var (
	stageMagic   = [4]byte{'T', 'L', 'S', '1'}
	stageMagicV2 = [4]byte{'T', 'L', 'S', '2'}
)

// staged is one staged batch.
type staged struct {
	name     string
	created  int64
	expected int64
	hash     [16]byte
	origin   uint64
	key      string
	recs     []Record
	size     int // bytes it adds to a segment
}

func stageName(created int64, origin uint64) string {
	return fmt.Sprintf("%016x-%016x%s", uint64(created), origin, stageExt)
}

// parseStageName returns the creation time a staged file's name carries.
func parseStageName(name string) (created int64, ok bool) {
	base, found := strings.CutSuffix(name, stageExt)
	if !found || len(base) != 33 || base[16] != '-' {
		return 0, false
	}
	c, err := strconv.ParseUint(base[:16], 16, 64)
	if err != nil {
		return 0, false
	}
	if _, err := strconv.ParseUint(base[17:], 16, 64); err != nil {
		return 0, false
	}
	return int64(c), true
}

func encodeStaged(s *staged) []byte {
	v2 := false
	n := stageFixed - 12 + len(s.key)
	for _, r := range s.recs {
		n += 8 + len(r.Key) + len(r.Value)
		if r.HasTimestamp || len(r.Headers) > 0 {
			v2 = true
		}
	}
	magic := stageMagic
	if v2 {
		magic = stageMagicV2
		for _, r := range s.recs {
			n += 10
			for _, h := range r.Headers {
				n += 6 + len(h.Key) + len(h.Value)
			}
		}
	}
	b := make([]byte, 0, 12+n)
	b = append(b, magic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.created))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.expected))
	b = append(b, s.hash[:]...)
	b = binary.LittleEndian.AppendUint64(b, s.origin)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s.key)))
	b = append(b, s.key...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.recs)))
	for _, r := range s.recs {
		b = appendBytes(b, r.Key)
		b = appendBytes(b, r.Value)
		if !v2 {
			continue
		}
		ts := int64(-1)
		if r.HasTimestamp {
			ts = r.Timestamp
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(ts))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(r.Headers)))
		for _, h := range r.Headers {
			b = binary.LittleEndian.AppendUint16(b, uint16(len(h.Key)))
			b = append(b, h.Key...)
			b = appendBytes(b, h.Value)
		}
	}
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
	return b
}

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.LittleEndian.AppendUint32(b, ^uint32(0))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

var errStaged = errors.New("partition: staged batch torn or damaged")

func decodeStaged(b []byte) (*staged, error) {
	if len(b) < stageFixed {
		return nil, errStaged
	}
	v2 := [4]byte(b[:4]) == stageMagicV2
	if !v2 && [4]byte(b[:4]) != stageMagic {
		return nil, errStaged
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if 12+n != len(b) || binary.LittleEndian.Uint32(b[8:]) != crc32.Checksum(b[12:], castagnoli) {
		return nil, errStaged
	}
	s := &staged{
		created:  int64(binary.LittleEndian.Uint64(b[12:])),
		expected: int64(binary.LittleEndian.Uint64(b[20:])),
		origin:   binary.LittleEndian.Uint64(b[44:]),
	}
	copy(s.hash[:], b[28:44])
	kl := int(binary.LittleEndian.Uint16(b[52:]))
	p := b[54:]
	if kl > len(p) {
		return nil, errStaged
	}
	s.key, p = string(p[:kl]), p[kl:]
	if len(p) < 4 {
		return nil, errStaged
	}
	nrec := int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if nrec == 0 || nrec > len(p)/8 {
		return nil, errStaged
	}
	s.recs = make([]Record, nrec)
	for i := range s.recs {
		r := &s.recs[i]
		var ok bool
		if r.Key, p, ok = cutBytes(p); !ok {
			return nil, errStaged
		}
		if r.Value, p, ok = cutBytes(p); !ok {
			return nil, errStaged
		}
		if v2 {
			if p, ok = cutRecordV2(p, r); !ok {
				return nil, errStaged
			}
		}
		s.size += recordSize(*r)
	}
	if len(p) != 0 {
		return nil, errStaged
	}
	return s, nil
}

// cutRecordV2 decodes the "TLS2" part of a staged record into r.
func cutRecordV2(p []byte, r *Record) ([]byte, bool) {
	if len(p) < 10 {
		return nil, false
	}
	ts := int64(binary.LittleEndian.Uint64(p))
	if ts < -1 {
		return nil, false
	}
	r.Timestamp, r.HasTimestamp = max(ts, 0), ts >= 0
	nh := int(binary.LittleEndian.Uint16(p[8:]))
	p = p[10:]
	if nh > len(p)/6 {
		return nil, false
	}
	if nh > 0 {
		r.Headers = make([]segment.Header, nh)
	}
	for j := range r.Headers {
		if len(p) < 2 {
			return nil, false
		}
		kl := int(binary.LittleEndian.Uint16(p))
		p = p[2:]
		if kl > len(p) {
			return nil, false
		}
		r.Headers[j].Key, p = string(p[:kl]), p[kl:]
		var ok bool
		if r.Headers[j].Value, p, ok = cutBytes(p); !ok {
			return nil, false
		}
	}
	return p, true
}

func cutBytes(p []byte) (v, rest []byte, ok bool) {
	if len(p) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(p)
	p = p[4:]
	if n == ^uint32(0) {
		return nil, p, true
	}
	if int64(n) > int64(len(p)) {
		return nil, nil, false
	}
	return p[:n:n], p[n:], true
}

// writeStaged stages s in dir's write buffer: written, fsynced, closed.
func (l *Log) writeStaged(s *staged) error {
	d := filepath.Join(l.cfg.Dir, stageDir)
	s.name = stageName(s.created, s.origin)
	// The directory is made once per Log, and again if it is gone.
	mkdir := func() error {
		l.stageMade = true
		return l.cfg.FS.MkdirAll(d, 0o755)
	}
	if !l.stageMade {
		if err := mkdir(); err != nil {
			return err
		}
	}
	create := func() (segment.File, error) {
		return l.cfg.FS.OpenFile(filepath.Join(d, s.name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	}
	f, err := create()
	if errors.Is(err, fs.ErrNotExist) {
		if err := mkdir(); err != nil {
			return err
		}
		f, err = create()
	}
	if err != nil {
		return err
	}
	_, err = f.WriteAt(encodeStaged(s), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		l.cfg.FS.Remove(filepath.Join(d, s.name))
	}
	return err
}

// listStaged lists the write buffer, oldest first. A missing directory is
// an empty buffer.
func (l *Log) listStaged() ([]string, error) {
	ents, err := l.cfg.FS.ReadDir(filepath.Join(l.cfg.Dir, stageDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if _, ok := parseStageName(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// StagedExpiry is how old (by the time in its name) a staged file must be
// before RemoveExpiredStaged removes it: no waiter waits that long (a
// request's deadline ends its wait, and a Lambda invocation lasts at most
// 15 minutes), and a leader takes none older than twice its busy wait.
const StagedExpiry = 15*time.Minute + time.Minute

// RemoveExpiredStaged removes the staged files in the write buffer of the
// partition in dir whose waiters are certainly gone (StagedExpiry): a waiter
// that crashed leaves its file, and on a partition nobody writes again no
// leader would remove it. It returns how many it removed.
func RemoveExpiredStaged(fsys segment.FS, dir string, now time.Time) (int, error) {
	ents, err := fsys.ReadDir(filepath.Join(dir, stageDir))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range ents {
		created, ok := parseStageName(e.Name())
		if !ok || now.Sub(time.UnixMilli(created)) < StagedExpiry {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, stageDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

// readStaged reads one staged file.
func (l *Log) readStaged(name string) (*staged, error) {
	f, err := l.cfg.FS.OpenFile(filepath.Join(l.cfg.Dir, stageDir, name), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readFrom(f, 0, int64(l.cfg.MaxFlushBytes)+(64<<10))
	if err != nil {
		return nil, err
	}
	s, err := decodeStaged(b)
	if err != nil {
		return nil, err
	}
	s.name = name
	return s, nil
}

// removeStaged removes staged files (best effort: a file left behind is
// skipped by the next leader, whose window has its key, and removed then
// or once it is too old).
func (l *Log) removeStaged(names []string) {
	for _, n := range names {
		l.cfg.FS.Remove(filepath.Join(l.cfg.Dir, stageDir, n))
	}
}

// readFrom reads f from off to its end, in as few reads as it can (no
// stat: a read that comes back short is the end), failing past limit bytes.
func readFrom(f segment.File, off, limit int64) ([]byte, error) {
	buf := make([]byte, 4<<10)
	n := 0
	for {
		m, err := f.ReadAt(buf[n:], off+int64(n))
		n += m
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if n < len(buf) {
			return buf[:n], nil
		}
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("%w: over %d bytes", errStaged, limit)
		}
		buf = append(buf, make([]byte, len(buf))...)
	}
}

// recordSize is the bytes r takes in a segment.
func recordSize(r Record) int {
	n := segment.RecordHeaderSize + len(r.Key) + len(r.Value)
	if len(r.Headers) > 0 {
		n += 2
		for _, h := range r.Headers {
			n += 6 + len(h.Key) + len(h.Value)
		}
	}
	return n
}
