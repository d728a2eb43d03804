package sim

import (
	"errors"
	"fmt"

	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
)

// damage is bit rot at the NFS server: in a committed segment file not yet
// tiered, of a random partition, a byte of a committed record flips, or the
// file loses its tail. The model marks the records whose bytes were
// damaged (from the bytes before the damage): they may be refused, but
// never served as good, and every other record stays readable (I2).
func (w *World) damage() string {
	if len(w.parts) == 0 {
		return ""
	}
	pm := w.parts[w.s.rng.IntN(len(w.parts))]
	p := w.committed(pm)
	segs := append([]segSeg(nil), toSegs(p.Sealed)...)
	if p.Active != nil {
		segs = append(segs, segSeg{p.Active.Base, p.Active.Epoch, p.Active.Size, p.Active.NextOffset})
	}
	var cand []segSeg
	for _, s := range segs {
		if s.next > s.base && s.next > p.ColdEnd && s.next > p.LogStartOffset && s.size > segment.FileHeaderSize {
			cand = append(cand, s)
		}
	}
	if len(cand) == 0 {
		return ""
	}
	s := cand[w.s.rng.IntN(len(cand))]
	id := segment.ID{Base: s.base, Epoch: s.epoch}
	ino := w.srv.names[id.Path(pm.dir, segment.KindLog)]
	if ino == nil || int64(len(ino.data)) < s.size {
		return ""
	}
	old := ino.data
	pos := segment.FileHeaderSize + w.s.rng.Int64N(s.size-segment.FileHeaderSize)
	b := append([]byte(nil), old...)
	what := ""
	if w.s.rng.IntN(3) == 0 {
		b = b[:pos]
		what = fmt.Sprintf("truncated to %d (committed %d)", pos, s.size)
	} else {
		b[pos] ^= byte(1 + w.s.rng.IntN(255))
		what = fmt.Sprintf("byte %d flipped (committed %d)", pos, s.size)
	}
	ino.data = b
	// The records whose bytes changed.
	var hit []int64
	at := int64(segment.FileHeaderSize)
	nextOff := s.base
	// Decode the whole file, past the committed length too: a writer may
	// have synced records it has not committed yet.
	for at < int64(len(old)) {
		r, n, err := segment.DecodeRecord(old[at:])
		if err == nil && at >= s.size && r.Offset != nextOff {
			break // not this segment's records (bytes past the end)
		}
		if err != nil || r.Offset != nextOff {
			// Damaged before: the records from here on are not known
			// one by one; count them all as damaged if this damage may
			// reach them.
			if pos >= at || len(b) < len(old) {
				for off := nextOff; off < s.next+64; off++ {
					pm.damaged[off] = true
					hit = append(hit, off)
				}
			}
			break
		}
		nextOff = r.Offset + 1
		end := at + int64(n)
		if (len(b) < int(end)) || pos < end && pos >= at {
			pm.damaged[r.Offset] = true
			hit = append(hit, r.Offset)
		}
		at = end
	}
	// Records between two damaged stretches of one file with no checked
	// boundary between them count as damaged (pkg/segment doc.go, Resync):
	// the model takes the whole span between them.
	for _, off := range hit {
		sp, ok := pm.dmgSpan[id.String()]
		if !ok {
			sp = [2]int64{off, off}
		}
		sp[0], sp[1] = min(sp[0], off), max(sp[1], off)
		pm.dmgSpan[id.String()] = sp
	}
	if sp, ok := pm.dmgSpan[id.String()]; ok {
		for off := sp[0]; off <= sp[1]; off++ {
			pm.damaged[off] = true
		}
	}
	pm.dmgFiles[id.String()] = true
	return fmt.Sprintf("DAMAGE %d %s: %s; records %v", pm.p, short(id.Path(pm.dir, segment.KindLog)), what, hit)
}

type segSeg struct {
	base  int64
	epoch uint64
	size  int64
	next  int64
}

func toSegs(ss []metaSeg) []segSeg {
	out := make([]segSeg, 0, len(ss))
	for _, s := range ss {
		out = append(out, segSeg{s.Base, s.Epoch, s.Size, s.NextOffset})
	}
	return out
}

// isDamage: err reports damaged or missing committed bytes.
func isDamage(err error) bool {
	_, dmg := damagedNext(err)
	return dmg || errors.Is(err, partition.ErrCorrupt) || errors.Is(err, segment.ErrCorrupt) || errors.Is(err, segment.ErrTruncated)
}

// damageExplains: the error is one damage in pm's files may cause.
func (w *World) damageExplains(pm *part, err error) bool {
	return len(pm.dmgFiles) > 0 && isDamage(err)
}
