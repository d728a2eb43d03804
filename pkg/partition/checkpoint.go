package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/segment"
)

// The committed checkpoint: after each commit the writer copies the
// committed state into a small file beside the segments, so that readers
// (fetches, long-polls) learn of commits from the hot tier instead of
// reading the partition item: on DynamoDB every waiting consumer would
// otherwise cost a consistent read per poll.
//
// The file, "checkpoint", has ckptSlots slots of ckptSlotSize bytes; the
// state committed with item version v goes to slot v mod ckptSlots, and a
// reader takes the intact slot with the highest version. So a torn write
// spoils one slot only. A writer reads every slot before it writes its own
// and leaves the file alone if any holds its version or a newer one, or if
// its commit is more than ckptLate old: a writer late with its checkpoint
// (others committed since) does not overwrite a newer slot unless it is
// paused between that look and its write while enough commits to wrap
// around the slots apply. A file is no lock, so that case is not ruled out,
// and readers never rely on the checkpoint being the newest state:
//
//   - a slot is written only after its commit applied, so the state in it
//     is committed (I3): a reader never sees an uncommitted offset;
//   - a read at an offset above the checkpoint's high watermark reads the
//     item before it answers out of range, and one at the checkpoint's
//     high watermark reads it at most once per ckptVerify per Log, so a
//     checkpoint that lags (a writer crashed between its commit and its
//     checkpoint, a failed write, a late write) costs a reader at the end
//     of the log at most ckptVerify of staleness, and never a wrong answer;
//   - a Log never answers a view with a lower high watermark, log start or
//     cold end than one it published before.
//
// Log start and cold end are the compactor's: a writer copies them from its
// acquire, so a checkpoint slot takes the highest of its own, the other
// slots' and the Log's last published view, and they never go back.
//
// Slot:
//
//	0  magic "TLC2" ("TLC1": the same without the flags, still read)
//	4  u32 length of what follows the CRC
//	8  u32 CRC-32C of what follows
//	12 u64 version
//	20 i64 next offset, i64 log start, i64 cold end, u32 segment count,
//	   then per segment: i64 base, u64 epoch, i64 size, i64 next offset,
//	   i64 first ts, i64 last ts, i64 created ms;
//	   then u32 flags: 1, the commit left the lease free (released or
//	   parked: waiting writers may acquire it without reading the item)
const (
	ckptName     = "checkpoint"
	ckptSlots    = 8
	ckptSlotSize = 4096
	ckptFixed    = 12 + 8 + 8*3 + 4
	ckptSegSize  = 56
	// ckptVerify is how often a reader at the end of the log reads the
	// partition item as well (CheckpointStaleness).
	ckptVerify = CheckpointStaleness
	// ckptFresh is how long a Log reuses the checkpoint it read last.
	ckptFresh = 5 * time.Millisecond
	// ckptLate is how long after its commit a writer still writes its
	// checkpoint: a later one may be far behind others' (a paused or
	// frozen process), and readers verify against the item as often.
	ckptLate = ckptVerify
)

// CheckpointStaleness bounds how long a reader at the end of the log (a
// fetch or long-poll at the high watermark it was told) answers from a
// checkpoint that lags the item: a Log reads the item at least this often
// while it has such readers.
const CheckpointStaleness = time.Second

// A slot starts with ckptMagic; one starting with ckptMagicV1 (written by
// an older version) is the same without the trailing flags.
var (
	ckptMagic   = [4]byte{'T', 'L', 'C', '2'}
	ckptMagicV1 = [4]byte{'T', 'L', 'C', '1'}
)

// ckptFree is the flag of a slot whose commit left the lease free:
// released, or parked (any writer may acquire it).
const ckptFree = 1

func encodeCheckpoint(p *meta.Partition) ([]byte, bool) {
	segs := append(append([]meta.SegmentInfo(nil), p.Sealed...), activeOf(p)...)
	n := ckptFixed + len(segs)*ckptSegSize + 4
	if n > ckptSlotSize {
		return nil, false
	}
	b := make([]byte, 0, n)
	b = append(b, ckptMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(n-12))
	b = append(b, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, p.Version)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.NextOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.LogStartOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.ColdEnd))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(segs)))
	for _, s := range segs {
		for _, v := range []uint64{uint64(s.Base), s.Epoch, uint64(s.Size), uint64(s.NextOffset), uint64(s.FirstTS), uint64(s.LastTS), uint64(s.CreatedMs)} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	var flags uint32
	if p.Owner == "" || p.LeaseUntil == parkedUntil.UnixMilli() {
		flags |= ckptFree
	}
	b = binary.LittleEndian.AppendUint32(b, flags)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
	return b, true
}

func activeOf(p *meta.Partition) []meta.SegmentInfo {
	if p.Active == nil {
		return nil
	}
	return []meta.SegmentInfo{*p.Active}
}

// decodeCheckpoint decodes one slot; ok is false for an empty, torn or
// damaged one.
func decodeCheckpoint(b []byte) (version uint64, v *view, ok bool) {
	if len(b) < ckptFixed || [4]byte(b[:4]) != ckptMagic && [4]byte(b[:4]) != ckptMagicV1 {
		return 0, nil, false
	}
	v2 := [4]byte(b[:4]) == ckptMagic
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if 12+n > len(b) || n < ckptFixed-12 || binary.LittleEndian.Uint32(b[8:]) != crc32.Checksum(b[12:12+n], castagnoli) {
		return 0, nil, false
	}
	b = b[:12+n]
	version = binary.LittleEndian.Uint64(b[12:])
	v = &view{
		hw:       int64(binary.LittleEndian.Uint64(b[20:])),
		logStart: int64(binary.LittleEndian.Uint64(b[28:])),
		coldEnd:  int64(binary.LittleEndian.Uint64(b[36:])),
		version:  version,
	}
	count := int(binary.LittleEndian.Uint32(b[44:]))
	p := b[ckptFixed:]
	if v2 {
		if len(p) != count*ckptSegSize+4 {
			return 0, nil, false
		}
		v.free = freeNo
		if binary.LittleEndian.Uint32(p[len(p)-4:])&ckptFree != 0 {
			v.free = freeYes
		}
		p = p[:len(p)-4]
	}
	if len(p) != count*ckptSegSize {
		return 0, nil, false
	}
	for i := 0; i < count; i++ {
		u := func(j int) uint64 { return binary.LittleEndian.Uint64(p[i*ckptSegSize+8*j:]) }
		v.segs = append(v.segs, meta.SegmentInfo{Base: int64(u(0)), Epoch: u(1), Size: int64(u(2)), NextOffset: int64(u(3)),
			FirstTS: int64(u(4)), LastTS: int64(u(5)), CreatedMs: int64(u(6))})
	}
	return version, v, true
}

// writeCheckpoint copies p, the state just committed (at committedAt),
// into its slot; best effort (readers fall back to the item).
func (l *Log) writeCheckpoint(p *meta.Partition, committedAt time.Time, alone, keep bool) {
	if alone && l.ckptF != nil {
		// A parked or warm round's commit applied, so nobody committed
		// between this Log's last commit and this one: no slot is newer
		// than the one it writes, unless another writer committed since
		// and wrote first (its slot is another one, unless the versions
		// went round the slots meanwhile: see above), and the file it
		// kept open is the one to write (park.go).
		l.putCheckpoint(l.ckptF, p, nil, committedAt, keep)
		if !keep {
			l.ckptF.Close()
			l.ckptF = nil
		}
		return
	}
	if l.ckptF != nil {
		l.ckptF.Close()
		l.ckptF = nil
	}
	// Never created here: a topic delete removes the file after fencing
	// the items, and a writer whose commit applied before the fence must
	// not bring it back (ensureCheckpoint creates it, after an acquire).
	f, err := l.cfg.FS.OpenFile(filepath.Join(l.cfg.Dir, ckptName), os.O_RDWR, 0)
	if err != nil {
		l.ckptMissing = true
		if !errors.Is(err, fs.ErrNotExist) {
			l.cfg.Logger.Warn("checkpoint", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
		}
		return
	}
	buf := make([]byte, ckptSlots*ckptSlotSize)
	n, _ := f.ReadAt(buf, 0)
	newest, cur := newestSlot(buf[:n])
	if cur != nil && newest >= p.Version {
		f.Close()
		return // this commit's checkpoint, or a newer commit's: leave them
	}
	l.putCheckpoint(f, p, cur, committedAt, keep)
	if keep {
		l.ckptF = f // parked or warm: the next such rounds write it without a look
		return
	}
	f.Close()
}

// putCheckpoint writes p's slot to f, unless its commit is more than
// ckptLate old; with keep (a parked writer), f stays open and is synced,
// which makes the slot visible to other clients as a close would.
func (l *Log) putCheckpoint(f segment.File, p *meta.Partition, cur *view, committedAt time.Time, keep bool) {
	if l.cfg.Now().Sub(committedAt) > ckptLate {
		return // too late: others may have committed and written since
	}
	q := *p
	for _, v := range []*view{cur, l.committed.Load()} {
		if v != nil {
			q.LogStartOffset, q.ColdEnd = max(q.LogStartOffset, v.logStart), max(q.ColdEnd, v.coldEnd)
		}
	}
	b, ok := encodeCheckpoint(&q)
	if !ok {
		return // too many segments for a slot: readers read the item
	}
	if _, err := f.WriteAt(b, int64(p.Version%ckptSlots)*ckptSlotSize); err != nil {
		l.cfg.Logger.Warn("checkpoint", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
		return
	}
	if keep {
		if err := f.Sync(); err != nil {
			l.cfg.Logger.Warn("checkpoint", "topic", l.cfg.Key.Topic, "partition", l.cfg.Key.Partition, "err", err)
		}
	}
}

// newestSlot returns the intact slot of buf (the file's first bytes) with
// the highest version, or nil.
func newestSlot(buf []byte) (uint64, *view) {
	var best *view
	var bestVersion uint64
	for i := 0; i < ckptSlots && i*ckptSlotSize < len(buf); i++ {
		end := min((i+1)*ckptSlotSize, len(buf))
		if ver, v, ok := decodeCheckpoint(buf[i*ckptSlotSize : end]); ok && (best == nil || ver > bestVersion) {
			best, bestVersion = v, ver
		}
	}
	return bestVersion, best
}

// ensureCheckpoint creates the checkpoint file if this Log has not seen it,
// right after an acquire: a file created here after a topic delete removed
// it (an acquire that applied before the fence, a process slow since) stays
// empty, since this epoch's commits all fail.
func (l *Log) ensureCheckpoint() {
	if !l.cfg.Checkpoint || !l.ckptMissing {
		return
	}
	f, err := l.cfg.FS.OpenFile(filepath.Join(l.cfg.Dir, ckptName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	f.Close()
	l.ckptMissing = false
}

// RemoveCheckpoint removes the checkpoint of the partition in dir (topic
// delete): readers then read the item, which says the partition is deleted.
func RemoveCheckpoint(fsys segment.FS, dir string) error {
	err := fsys.Remove(filepath.Join(dir, ckptName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// readCheckpoint returns the newest intact checkpoint; with reuse, the one
// read in the last ckptFresh if any (the Log's long-polls share their
// looks; a fetch reads the file itself, so that one that starts after a
// topic delete removed the checkpoint never serves the old incarnation).
func (l *Log) readCheckpoint(reuse bool) (*view, bool) {
	now := l.cfg.Now()
	l.ckpt.Lock()
	defer l.ckpt.Unlock()
	if reuse && l.ckpt.v != nil && now.Sub(l.ckpt.at) < ckptFresh {
		return l.ckpt.v, true
	}
	f, err := l.cfg.FS.OpenFile(filepath.Join(l.cfg.Dir, ckptName), os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	best := readSlots(f)
	if best == nil {
		return nil, false
	}
	l.ckpt.v, l.ckpt.at = best, now
	return best, true
}

// checkpointIfChanged is a waiter's look at the checkpoint: one open, which
// revalidates its attributes (one round trip on NFS, no data), and, when
// they differ from *last, a read of it through the same file (*last takes
// them). ok is false when the file cannot be opened or read whole.
func (l *Log) checkpointIfChanged(last *ckptStamp) (v *view, changed, ok bool) {
	f, err := l.cfg.FS.OpenFile(filepath.Join(l.cfg.Dir, ckptName), os.O_RDONLY, 0)
	if err != nil {
		return nil, false, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, false
	}
	st := ckptStamp{fi.ModTime().UnixNano(), fi.Size()}
	if st == *last {
		return nil, false, true
	}
	*last = st
	best := readSlots(f)
	if best == nil {
		return nil, false, false
	}
	l.ckpt.Lock()
	l.ckpt.v, l.ckpt.at = best, l.cfg.Now()
	l.ckpt.Unlock()
	return best, true, true
}

// readSlots reads the checkpoint's slots from f and returns the newest
// intact one, or nil.
func readSlots(f segment.File) *view {
	buf := make([]byte, ckptSlots*ckptSlotSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n == 0 {
		return nil
	}
	_, best := newestSlot(buf[:n])
	return best
}

// ckptStamp is what the checkpoint's attributes say of its contents.
type ckptStamp struct {
	mtime int64 // unix nanoseconds
	size  int64
}
