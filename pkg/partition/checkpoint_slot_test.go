package partition

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
)

// A slot says whether its commit left the lease free: released or parked
// yes, held no; a slot of the older layout (TLC1, no flags) is still read,
// and says nothing of the lease.
func TestCheckpointSlotLease(t *testing.T) {
	act := &meta.SegmentInfo{Base: 0, Epoch: 3, Size: 300, NextOffset: 7, FirstTS: 1, LastTS: 2, CreatedMs: 5}
	for _, c := range []struct {
		name  string
		owner string
		until int64
		want  leaseFree
	}{
		{"released", "", 0, freeYes},
		{"parked", "w1", parkedUntil.UnixMilli(), freeYes},
		{"held", "w1", 1_800_000_010_000, freeNo},
	} {
		p := meta.Partition{Version: 9, NextOffset: 7, Owner: c.owner, LeaseUntil: c.until, Active: act}
		b, ok := encodeCheckpoint(&p)
		if !ok {
			t.Fatalf("%s: not encoded", c.name)
		}
		ver, v, ok := decodeCheckpoint(b)
		if !ok || ver != 9 || v.hw != 7 || len(v.segs) != 1 || v.segs[0] != *act {
			t.Fatalf("%s: decoded %d %+v %v", c.name, ver, v, ok)
		}
		if v.free != c.want {
			t.Errorf("%s: lease free %d, want %d", c.name, v.free, c.want)
		}
	}

	// The older layout: the same without the flags word.
	p := meta.Partition{Version: 4, NextOffset: 7, Active: act}
	b, _ := encodeCheckpoint(&p)
	old := append([]byte(nil), b[:len(b)-4]...)
	copy(old, ckptMagicV1[:])
	binary.LittleEndian.PutUint32(old[4:], uint32(len(old)-12))
	binary.LittleEndian.PutUint32(old[8:], crc32.Checksum(old[12:], castagnoli))
	ver, v, ok := decodeCheckpoint(old)
	if !ok || ver != 4 || v.hw != 7 || v.free != freeUnknown {
		t.Fatalf("TLC1 slot: %d %+v %v, want version 4, hw 7, lease unknown", ver, v, ok)
	}
	// A TLC2 slot cut to the older length is damaged, not an older slot.
	if _, _, ok := decodeCheckpoint(append(append([]byte(nil), b[:4]...), old[4:]...)); ok {
		t.Error("a TLC2 slot without its flags decoded")
	}
}
