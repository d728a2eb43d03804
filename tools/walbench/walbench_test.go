// Package walbench compares tierlog's segment append with
// hashicorp/raft-wal's, in the same run, on the same disk: 1 KiB records in
// batches of 100 with an fsync per batch. It is its own module so the
// comparison's dependencies stay out of tierlog's.
//
//	cd tools/walbench && go test -run '^$' -bench . -benchtime 2s -count 3
package walbench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"

	"github.com/tierlog/tierlog/pkg/segment"
)

const (
	recSize = 1024
	batch   = 100
)

func BenchmarkRaftWAL(b *testing.B) {
	w, err := wal.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	val := make([]byte, recSize)
	logs := make([]*raft.Log, batch)
	idx := uint64(1)
	b.SetBytes(recSize * batch)
	for b.Loop() {
		for i := range logs {
			logs[i] = &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: val}
			idx++
		}
		if err := w.StoreLogs(logs); err != nil { // fsyncs
			b.Fatal(err)
		}
	}
}

func BenchmarkTierlogSegment(b *testing.B) {
	dir := b.TempDir()
	val := make([]byte, recSize)
	recs := make([]segment.Record, batch)
	var w *segment.Writer
	next := int64(0)
	roll := func() {
		if w != nil {
			w.Close()
		}
		var err error
		if w, err = segment.Create(dir, segment.ID{Base: next, Epoch: 1}, segment.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	roll()
	defer func() { w.Close() }()
	b.SetBytes(recSize * batch)
	for b.Loop() {
		if w.Size() > 64<<20 {
			roll()
		}
		for i := range recs {
			recs[i] = segment.Record{Offset: next, Timestamp: 1, Value: val}
			next++
		}
		if err := w.Append(recs); err != nil {
			b.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawWriteSync(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, batch*(segment.RecordHeaderSize+recSize))
	var f *os.File
	var pos int64
	n := 0
	roll := func() {
		if f != nil {
			f.Close()
		}
		var err error
		if f, err = os.Create(filepath.Join(dir, fmt.Sprint(n))); err != nil {
			b.Fatal(err)
		}
		n++
		pos = 0
	}
	roll()
	defer func() { f.Close() }()
	b.SetBytes(recSize * batch)
	for b.Loop() {
		if pos > 64<<20 {
			roll()
		}
		if _, err := f.WriteAt(buf, pos); err != nil {
			b.Fatal(err)
		}
		pos += int64(len(buf))
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
