package segment

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// rollBytes is where the append benchmarks start a new file, so files do not
// grow without bound. Rolls happen with the timer stopped, in both the
// segment and the raw benchmark.
const rollBytes = 64 << 20

type appendCase struct {
	value, batch int
}

func (c appendCase) name() string {
	return fmt.Sprintf("rec=%s/batch=%d", sizeName(c.value), c.batch)
}

func sizeName(n int) string {
	if n > 0 && n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

var appendCases = []appendCase{{100, 100}, {100, 1000}, {1024, 100}, {1024, 1000}}

// benchBatch is one batch of the case: 16-byte keys and fixed-size values.
func benchBatch(c appendCase) []Record {
	recs := make([]Record, c.batch)
	val := bytes.Repeat([]byte("v"), c.value)
	for i := range recs {
		recs[i] = Record{Timestamp: 1700000000000, Key: fmt.Appendf(nil, "key-%012d", i), Value: val}
	}
	return recs
}

func batchBytes(recs []Record) int64 { return encodedLen(recs) }

// BenchmarkAppend measures one Append of a batch plus the Sync (fsync) that
// makes it durable, per iteration, on the real disk.
func BenchmarkAppend(b *testing.B) {
	for _, c := range appendCases {
		b.Run(c.name(), func(b *testing.B) {
			dir := b.TempDir()
			recs := benchBatch(c)
			size := batchBytes(recs)
			b.SetBytes(size)
			id := ID{Base: 0, Epoch: 1}
			w, err := Create(dir, id, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if w.Size()+size > rollBytes {
					b.StopTimer()
					w = rollSegment(b, dir, w)
					b.StartTimer()
				}
				next := w.NextOffset()
				for i := range recs {
					recs[i].Offset = next + int64(i)
				}
				if err := w.Append(recs); err != nil {
					b.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// rollSegment closes w, removes its files and starts the next segment.
func rollSegment(b *testing.B, dir string, w *Writer) *Writer {
	id, next := w.ID(), w.NextOffset()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	for _, k := range []Kind{KindLog, KindIndex, KindTimeIndex} {
		if err := os.Remove(id.Path(dir, k)); err != nil {
			b.Fatal(err)
		}
	}
	nw, err := Create(dir, ID{Base: next, Epoch: id.Epoch}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return nw
}

// BenchmarkRawWriteSync is the floor BenchmarkAppend is measured against:
// the same bytes per iteration written with one os.File.WriteAt at
// increasing positions and an fsync. Sub-benchmark names match
// BenchmarkAppend's, so benchstat can line them up.
func BenchmarkRawWriteSync(b *testing.B) {
	for _, c := range appendCases {
		b.Run(c.name(), func(b *testing.B) {
			dir := b.TempDir()
			buf := encodeAll(b, benchBatch(c))
			size := int64(len(buf))
			b.SetBytes(size)
			n := 0
			open := func() *os.File {
				n++
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("raw-%d", n)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				return f
			}
			f := open()
			pos := int64(FileHeaderSize)
			b.ResetTimer()
			for b.Loop() {
				if pos+size > rollBytes {
					b.StopTimer()
					f.Close()
					os.Remove(f.Name())
					f, pos = open(), FileHeaderSize
					b.StartTimer()
				}
				if _, err := f.WriteAt(buf, pos); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				pos += size
			}
			b.StopTimer()
			f.Close()
		})
	}
}

// BenchmarkRead reads a whole ~64 MiB segment from the page cache through
// Reader.Read, 1 MiB at a time, CRCs checked; "scratch" reads through
// ReadWith into memory reused from read to read, as the fetch route does.
func BenchmarkRead(b *testing.B) {
	for _, value := range []int{100, 1024} {
		for _, scratch := range []bool{false, true} {
			name := "rec=" + sizeName(value)
			if scratch {
				name += "/scratch"
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				id := ID{Base: 0, Epoch: 1}
				w, err := Create(dir, id, Options{})
				if err != nil {
					b.Fatal(err)
				}
				recs := benchBatch(appendCase{value: value, batch: 1000})
				size := batchBytes(recs)
				for w.Size()+size <= rollBytes {
					next := w.NextOffset()
					for i := range recs {
						recs[i].Offset = next + int64(i)
					}
					if err := w.Append(recs); err != nil {
						b.Fatal(err)
					}
				}
				st := w.State()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				r, c, err := OpenReader(dir, id, st.Size, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				// scratch: memory reused from read to read, as a server
				// that encodes each answer and drops it reads.
				// A read's records may alias every buffer it was handed,
				// so each read gets distinct ones.
				var bufs [][]byte
				used := 0
				var recBuf []Record
				sc := &Scratch{
					Bytes: func(n int) []byte {
						if used == len(bufs) {
							bufs = append(bufs, nil)
						}
						if cap(bufs[used]) < n {
							bufs[used] = make([]byte, n)
						}
						used++
						return bufs[used-1][:n]
					},
					Records: func(n int) []Record {
						if cap(recBuf) < n {
							recBuf = make([]Record, 0, n)
						}
						return recBuf
					},
				}
				if !scratch {
					sc = nil
				}
				b.SetBytes(st.Size - FileHeaderSize)
				b.ResetTimer()
				for b.Loop() {
					from, n := id.Base, 0
					for from < st.NextOffset {
						used = 0
						got, err := r.ReadWith(from, 1<<30, 1<<20, sc)
						if err != nil {
							b.Fatal(err)
						}
						n += len(got)
						from = got[len(got)-1].Offset + 1
					}
					if int64(n) != st.NextOffset-id.Base {
						b.Fatalf("read %d records, want %d", n, st.NextOffset-id.Base)
					}
				}
			})
		}
	}
}

func BenchmarkDecodeRecord(b *testing.B) {
	for _, value := range []int{0, 100, 1024, 64 << 10} {
		b.Run("value="+sizeName(value), func(b *testing.B) {
			benchDecode(b, Record{Offset: 1, Timestamp: 1, Key: []byte("key-000000000001"), Value: bytes.Repeat([]byte("v"), value)})
		})
	}
}

// benchDecode decodes the encoding of rec, headers included.
func benchDecode(b *testing.B, rec Record) {
	enc, err := AppendRecord(nil, &rec)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	var sink int
	for b.Loop() {
		r, n, err := DecodeRecord(enc)
		if err != nil {
			b.Fatal(err)
		}
		sink += n + len(r.Value) + len(r.Headers)
	}
	fmt.Fprint(io.Discard, sink)
}

func BenchmarkAppendRecord(b *testing.B) {
	for _, value := range []int{0, 100, 1024, 64 << 10} {
		b.Run("value="+sizeName(value), func(b *testing.B) {
			rec := Record{Offset: 1, Timestamp: 1, Key: []byte("key-000000000001"), Value: bytes.Repeat([]byte("v"), value)}
			buf := make([]byte, 0, EncodedSize(&rec))
			b.SetBytes(int64(EncodedSize(&rec)))
			for b.Loop() {
				var err error
				if buf, err = AppendRecord(buf[:0], &rec); err != nil {
					b.Fatal(err)
				}
			}
			io.Discard.Write(buf)
		})
	}
}

// headerCases are the headers per record BenchmarkAppendHeaders runs.
var headerCases = []int{0, 1, 8}

// headerBatch is benchBatch(c) with h headers on every record: 8-byte keys
// ("header-0"...) and 16-byte values.
func headerBatch(c appendCase, h int) []Record {
	recs := benchBatch(c)
	if h == 0 {
		return recs
	}
	hs := make([]Header, h)
	for i := range hs {
		hs[i] = Header{Key: fmt.Sprintf("header-%d", i), Value: bytes.Repeat([]byte{'a' + byte(i)}, 16)}
	}
	for i := range recs {
		recs[i].Headers = hs
	}
	return recs
}

// BenchmarkAppendHeaders measures Append+Sync of batches whose records carry
// 0, 1 or 8 headers against its baseline, raw write+fsync of the same
// bytes (one WriteAt at increasing positions of a plain file), interleaved:
// each iteration does one of each, timed apart, so both see the same disk
// (on a shared machine its latency swings between seconds), in alternating
// order. It reports append-MB/s and raw-MB/s of the median op of each and
// their ratio (append/raw: the goal is at least 0.9 for records without
// headers, which are encoded as in version 1).
func BenchmarkAppendHeaders(b *testing.B) {
	for _, c := range []appendCase{{100, 1000}, {1024, 1000}} {
		for _, h := range headerCases {
			b.Run(fmt.Sprintf("headers=%d/%s", h, c.name()), func(b *testing.B) {
				benchAppendVsRaw(b, headerBatch(c, h))
			})
		}
	}
}

func benchAppendVsRaw(b *testing.B, recs []Record) {
	dir := b.TempDir()
	size := batchBytes(recs)
	buf := encodeAll(b, recs)
	b.SetBytes(2 * size)
	w, err := Create(dir, ID{Base: 0, Epoch: 1}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	open := func() *os.File {
		n++
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("raw-%d", n)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	f := open()
	pos := int64(FileHeaderSize)
	var appendNs, rawNs []time.Duration
	doAppend := func() {
		t0 := time.Now()
		next := w.NextOffset()
		for i := range recs {
			recs[i].Offset = next + int64(i)
		}
		if err := w.Append(recs); err != nil {
			b.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
		appendNs = append(appendNs, time.Since(t0))
	}
	doRaw := func() {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, pos); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		pos += size
		rawNs = append(rawNs, time.Since(t0))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if w.Size()+size > rollBytes {
			b.StopTimer()
			w = rollSegment(b, dir, w)
			f.Close()
			os.Remove(f.Name())
			f, pos = open(), FileHeaderSize
			b.StartTimer()
		}
		// Alternate which goes first: a write may pay for the writeback
		// the one before it started.
		if i%2 == 0 {
			doAppend()
			doRaw()
		} else {
			doRaw()
			doAppend()
		}
	}
	b.StopTimer()
	// Medians: fsync latency comes in bursts that a mean would let decide.
	ma, mr := median(appendNs), median(rawNs)
	b.ReportMetric(float64(size)/ma.Seconds()/1e6, "append-MB/s")
	b.ReportMetric(float64(size)/mr.Seconds()/1e6, "raw-MB/s")
	b.ReportMetric(mr.Seconds()/ma.Seconds(), "append/raw")
	f.Close()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkDecodeHeaders decodes a record with 0, 1 or 8 headers.
func BenchmarkDecodeHeaders(b *testing.B) {
	for _, h := range headerCases {
		b.Run(fmt.Sprintf("headers=%d", h), func(b *testing.B) {
			benchDecode(b, headerBatch(appendCase{value: 100, batch: 1}, h)[0])
		})
	}
}
