package local

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Wire constants. Never change them: files written today must read tomorrow.
const (
	// FileHeaderSize is the size of the header at the start of a journal
	// and of a snapshot.
	FileHeaderSize = 20
	// FrameHeaderSize is the size of a frame's length and crc.
	FrameHeaderSize = 8
	// Version is the format version written in the file header.
	Version = 1
	// MaxEntrySize bounds one frame's payload. The decoder refuses a larger
	// length before allocating; its top byte is therefore always zero.
	MaxEntrySize = 1<<24 - 1

	journalMagic  = "TLMJ"
	snapshotMagic = "TLMS"

	// sectorSize is the granularity at which a torn write can leave zeros
	// (etcd's minSectorSize).
	sectorSize = 512

	opPutTopic   = "put_topic"
	opDelTopic   = "del_topic"
	opPutPart    = "put_part"
	opDelPart    = "del_part"
	opPutOffsets = "put_offsets"
	opPutSeg     = "put_seg"
	opPutGroup   = "put_group"
	opDelGroup   = "del_group"
	opDelOffsets = "del_offsets"
	opDelSeg     = "del_seg"
	opPutSub     = "put_sub" // subscriptions.go
	opDelSub     = "del_sub"
	opPutDlv     = "put_dlv"
	opDelDlv     = "del_dlv"
	opBatch      = "batch" // mutations committed together (group commit)
	opEnd        = "end"
	opClosed     = "closed" // the close record's only frame (CLOSED)
)

var (
	// ErrCorrupt means a journal or snapshot holds bytes that are not a torn
	// tail and do not decode: a checksum mismatch with data after it, an
	// impossible length, a bad header, a missing journal. Open fails with it
	// rather than drop acknowledged mutations.
	ErrCorrupt = errors.New("meta/local: corrupt")
	// ErrLocked means another Store (in this process or another) has the
	// directory open.
	ErrLocked = errors.New("meta/local: store in use")
	// ErrClosed means the Store was closed.
	ErrClosed = errors.New("meta/local: store closed")
	// ErrTooLarge means one mutation's entry would exceed MaxEntrySize. It
	// was not written.
	ErrTooLarge = errors.New("meta/local: entry too large")

	// errTorn marks bytes that end inside a frame: a torn tail. Open
	// truncates them in the last journal and reports ErrCorrupt elsewhere.
	errTorn = errors.New("meta/local: torn tail")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFileHeader appends a 20-byte file header to dst.
//
//	| magic 4 | version 2 | reserved 2 | seq 8 | crc 4 |
func appendFileHeader(dst []byte, magic string, seq uint64) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint16(dst, Version)
	dst = append(dst, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// decodeFileHeader checks the file header at the start of b and returns its
// seq. It returns errTorn if b is shorter than a header or the header is all
// zeros (created, never made durable), else ErrCorrupt for any flaw.
func decodeFileHeader(b []byte, magic string) (uint64, error) {
	if len(b) < FileHeaderSize {
		return 0, fmt.Errorf("%w: file header is %d bytes of %d", errTorn, len(b), FileHeaderSize)
	}
	h := b[:FileHeaderSize]
	if allZero(h) {
		return 0, fmt.Errorf("%w: zero file header", errTorn)
	}
	if string(h[:4]) != magic {
		return 0, fmt.Errorf("%w: bad magic %q, want %q", ErrCorrupt, h[:4], magic)
	}
	if crc, want := crc32.Checksum(h[:16], castagnoli), binary.LittleEndian.Uint32(h[16:]); crc != want {
		return 0, fmt.Errorf("%w: file header crc %08x want %08x", ErrCorrupt, crc, want)
	}
	if v := binary.LittleEndian.Uint16(h[4:]); v != Version {
		return 0, fmt.Errorf("%w: unknown version %d", ErrCorrupt, v)
	}
	if h[6] != 0 || h[7] != 0 {
		return 0, fmt.Errorf("%w: reserved header bytes %x", ErrCorrupt, h[6:8])
	}
	return binary.LittleEndian.Uint64(h[8:]), nil
}

// appendFrame appends one frame holding payload to dst.
//
//	| length 4 | crc 4 | payload |
//
// crc is CRC-32C of the length bytes followed by the payload.
func appendFrame(dst, payload []byte) ([]byte, error) {
	if len(payload) == 0 || len(payload) > MaxEntrySize {
		return dst, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(payload), MaxEntrySize)
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(dst[start:], castagnoli), castagnoli, payload)
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return append(dst, payload...), nil
}

// readFrame decodes the frame at pos in b, which holds a whole file (so
// pos is a file offset). It returns the payload (aliasing b) and the offset
// of the next frame. At the clean end of b it returns io.EOF. If the bytes
// from pos to the end are a torn write it returns errTorn; anything else
// that does not decode is ErrCorrupt. See the package doc for the rules.
func readFrame(b []byte, pos int) ([]byte, int, error) {
	rem := len(b) - pos
	if rem == 0 {
		return nil, pos, io.EOF
	}
	if rem < FrameHeaderSize {
		return nil, pos, fmt.Errorf("%w: %d frame header bytes at %d", errTorn, rem, pos)
	}
	n := int(binary.LittleEndian.Uint32(b[pos:]))
	want := binary.LittleEndian.Uint32(b[pos+4:])
	if n == 0 {
		if allZero(b[pos:]) {
			return nil, pos, fmt.Errorf("%w: %d zero bytes at %d", errTorn, rem, pos)
		}
		return nil, pos, fmt.Errorf("%w: zero-length frame at %d followed by data", ErrCorrupt, pos)
	}
	if n > MaxEntrySize {
		return nil, pos, fmt.Errorf("%w: frame length %d at %d over %d", ErrCorrupt, n, pos, MaxEntrySize)
	}
	end := pos + FrameHeaderSize + n
	if end > len(b) {
		return nil, pos, fmt.Errorf("%w: frame at %d needs %d bytes, %d left", errTorn, pos, FrameHeaderSize+n, rem)
	}
	crc := crc32.Update(crc32.Checksum(b[pos:pos+4], castagnoli), castagnoli, b[pos+FrameHeaderSize:end])
	if crc != want {
		if allZero(b[end:]) && hasZeroSector(b, pos+FrameHeaderSize, end) {
			return nil, pos, fmt.Errorf("%w: zero-filled frame at %d", errTorn, pos)
		}
		return nil, pos, fmt.Errorf("%w: frame crc %08x want %08x at %d", ErrCorrupt, crc, want, pos)
	}
	return b[pos+FrameHeaderSize : end], end, nil
}

// hasZeroSector reports whether any sector-aligned piece of b[from:to] is
// all zeros, as etcd's isTornEntry: a torn write leaves whole sectors
// unwritten. Callers pass a payload, not the frame header, whose high
// length bytes are legitimately zero.
func hasZeroSector(b []byte, from, to int) bool {
	for off := from; off < to; {
		next := min((off/sectorSize+1)*sectorSize, to)
		if allZero(b[off:next]) {
			return true
		}
		off = next
	}
	return false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// entry is one frame's payload: a mutation with the full new item value.
type entry struct {
	Op      string             `json:"op"`
	Topic   *meta.TopicConfig  `json:"topic,omitempty"`
	Name    string             `json:"name,omitempty"`
	Part    *meta.Partition    `json:"part,omitempty"`
	Key     *partKey           `json:"key,omitempty"`
	Group   string             `json:"group,omitempty"`
	Offsets []meta.GroupOffset `json:"offsets,omitempty"`
	Count   int64              `json:"count,omitempty"`
	Seg     *meta.CatalogEntry `json:"seg,omitempty"`
	Size    int64              `json:"size,omitempty"` // closed: the journal's length
	GState  *meta.GroupState   `json:"gstate,omitempty"`
	Batch   []*entry           `json:"batch,omitempty"` // batch: its mutations, in order

	// Subscription and delivery items (subscriptions.go).
	Sub *meta.SubscriptionItem `json:"sub,omitempty"`
	Dlv *meta.DeliveryItem     `json:"dlv,omitempty"`
}

// partKey is meta.PartitionKey as written in an entry.
type partKey struct {
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int    `json:"partition"`
}

func decodeEntry(payload []byte, pos int) (*entry, error) {
	var e entry
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, fmt.Errorf("%w: entry at %d: %v", ErrCorrupt, pos, err)
	}
	ok := validEntry(&e)
	if e.Op == opBatch {
		ok = len(e.Batch) > 0
		for _, m := range e.Batch {
			ok = ok && m != nil && m.Op != opEnd && m.Op != opClosed && validEntry(m)
		}
	}
	if !ok {
		return nil, fmt.Errorf("%w: entry at %d: bad op %q", ErrCorrupt, pos, e.Op)
	}
	return &e, nil
}

// validEntry reports whether e is a known op other than batch with the
// fields it needs.
func validEntry(e *entry) bool {
	switch e.Op {
	case opPutTopic:
		return e.Topic != nil
	case opPutPart:
		return e.Part != nil
	case opDelPart:
		return e.Key != nil
	case opPutSeg, opDelSeg:
		return e.Key != nil && e.Seg != nil
	case opPutGroup:
		return e.GState != nil
	case opDelGroup, opDelOffsets:
		return e.Group != ""
	case opDelTopic, opPutOffsets, opEnd, opClosed:
		return true
	case opPutSub, opDelSub:
		return e.Sub != nil
	case opPutDlv, opDelDlv:
		return e.Dlv != nil
	}
	return false
}

// batchHead and batchTail wrap the payloads of a group commit's entries,
// joined by commas, into one batch payload.
const (
	batchHead = `{"op":"` + opBatch + `","batch":[`
	batchTail = `]}`
)
