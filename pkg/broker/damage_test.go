package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/partition"
	"github.com/tierlog/tierlog/pkg/segment"
)

// Damage on disk (docs/design.md "Reads"): a byte flipped in a sealed
// segment, in the active segment, or in a record's size field. Whatever the
// damage, a fetch before it returns the good records up to it, a fetch at
// it answers a DamagedError naming the offsets (never the bytes), a fetch
// after it returns the records there, and produce keeps working.
func TestDamagedRecordsAroundTheDamage(t *testing.T) {
	const (
		perSeg = 20 // records per segment
		vlen   = 200
		recLen = segment.RecordHeaderSize + vlen
	)
	// Offsets 0..59 in three segments of 20: [0,20) and [20,40) sealed,
	// [40,60) active. pos is a record's byte position in its segment.
	pos := func(off int) int64 { return segment.FileHeaderSize + int64(off%perSeg)*recLen }
	flipAt := func(at int64) func(*testing.T, string, int64) {
		return func(t *testing.T, path string, rec int64) { flip(t, path, rec+at) }
	}
	cutAt := func(at int64) func(*testing.T, string, int64) {
		return func(t *testing.T, path string, rec int64) {
			if err := os.Truncate(path, rec+at); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(t *testing.T, path string, _ int64) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		off    int // the (first) damaged record
		damage func(t *testing.T, path string, recPos int64)
		active bool
		toEnd  bool // nothing of the segment is readable after the damage
	}{
		{"sealed value byte", 5, flipAt(segment.RecordHeaderSize + 7), false, false},
		{"sealed size field", 5, flipAt(9), false, false},
		{"sealed offset field", 5, flipAt(2), false, false},
		{"sealed cut mid-record", 25, cutAt(40), false, true},
		{"sealed file deleted", 20, remove, false, true},
		{"active value byte", 45, flipAt(segment.RecordHeaderSize + 7), true, false},
		{"active size field", 45, flipAt(9), true, false},
		{"active cut mid-record", 58, cutAt(40), true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store, dir := mem.New(), t.TempDir()
			b := newBroker(t, store, dir)
			tp, err := b.CreateTopic(ctx, TopicSpec{Name: "d", SegmentBytes: ptr(int64(segment.FileHeaderSize + perSeg*recLen))})
			if err != nil {
				t.Fatal(err)
			}
			val := func(i int) []byte { return []byte(fmt.Sprintf("%-*d", vlen, i)) }
			for i := range 60 {
				if _, err := b.ProducePartition(ctx, "d", 0, []ProduceRecord{{Value: val(i)}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			k := meta.PartitionKey{Topic: "d", TopicID: tp.ID, Partition: 0}
			p, _ := store.Partition(ctx, k)
			if len(p.Sealed) != 2 || p.Active == nil || p.Active.Base != 40 {
				t.Fatalf("layout: sealed %+v active %+v", p.Sealed, p.Active)
			}
			seg := p.Sealed[c.off/perSeg%2]
			if c.active {
				seg = *p.Active
			}
			c.damage(t, segment.ID{Base: seg.Base, Epoch: seg.Epoch}.Path(partition.Dir(dir, k), segment.KindLog), pos(c.off))

			ms := metrics.New()
			b, err = New(ctx, Config{DataDir: dir, Meta: store, IndexIntervalBytes: 128, Metrics: ms})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			// Before: the good records up to the damage (from the start of
			// the segment, or of the segment before when it is all damaged).
			from := seg.Base
			if int64(c.off) == seg.Base {
				from = seg.Base - perSeg
			}
			f, err := b.Fetch(ctx, FetchRequest{Topic: "d", Offset: from, MaxRecords: 100, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatalf("fetch before the damage: %v", err)
			}
			if n := int64(len(f.Records)); n != int64(c.off)-from || f.NextOffset != int64(c.off) {
				t.Errorf("fetch before: %d records, next %d; want %d records up to %d", n, f.NextOffset, int64(c.off)-from, c.off)
			}
			checkValues(t, f.Records, val)
			// At: a DamagedError naming the offset, no record served.
			_, err = b.Fetch(ctx, FetchRequest{Topic: "d", Offset: int64(c.off)})
			var de *partition.DamagedError
			if !errors.As(err, &de) || de.First != int64(c.off) || de.Next <= de.First || de.Next > seg.NextOffset {
				t.Fatalf("fetch at the damage: %v, want a DamagedError from %d", err, c.off)
			}
			if ms.DamagedReads.Load() == 0 {
				t.Error("a damaged read was not counted (the alarm's metric)")
			}
			if !strings.Contains(err.Error(), fmt.Sprint(c.off)) {
				t.Errorf("damage error should name the offset: %v", err)
			}
			if c.toEnd && de.Next != seg.NextOffset {
				t.Errorf("damage to the end of the segment resumes at %d, want %d", de.Next, seg.NextOffset)
			}
			// After: the records past the damage.
			f, err = b.Fetch(ctx, FetchRequest{Topic: "d", Offset: de.Next, MaxRecords: 100, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatalf("fetch after the damage (%d): %v", de.Next, err)
			}
			if de.Next < f.HighWatermark && (len(f.Records) == 0 || f.Records[0].Offset != de.Next) {
				t.Errorf("fetch after: %d records from %d", len(f.Records), de.Next)
			}
			checkValues(t, f.Records, val)
			if de.Next != int64(c.off)+1 {
				t.Logf("damage at %d resumes at %d", c.off, de.Next)
			}
			// Produce still works, and lands after everything committed.
			res, err := b.ProducePartition(ctx, "d", 0, []ProduceRecord{{Value: val(60)}})
			if err != nil || res[0].Offset != 60 {
				t.Fatalf("produce after the damage: %+v %v", res, err)
			}
			f, err = b.Fetch(ctx, FetchRequest{Topic: "d", Offset: 60})
			if err != nil || len(f.Records) != 1 {
				t.Fatalf("fetch the new record: %+v %v", f, err)
			}
			checkValues(t, f.Records, val)
		})
	}
}

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped byte %d of %s", at, filepath.Base(path))
}

func checkValues(t *testing.T, recs []Record, val func(int) []byte) {
	t.Helper()
	for _, r := range recs {
		if string(r.Value) != string(val(int(r.Offset))) {
			t.Errorf("offset %d holds %q", r.Offset, r.Value)
		}
	}
}
