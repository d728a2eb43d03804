package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"unicode/utf8"
)

// MediaType is the Content-Type of a binary produce body and the Accept
// value that asks for binary answers. Never change it: it names version 1.
const MediaType = "application/vnd.tierlog.batch.v1"

// MediaTypeV2 names version 2 of the layout: records with headers and,
// in produce requests, producer timestamps.
const MediaTypeV2 = "application/vnd.tierlog.batch.v2"

// MediaTypeOf is the media type of a layout version (1 or 2).
func MediaTypeOf(version int) string {
	if version == Version2 {
		return MediaTypeV2
	}
	return MediaType
}

// VersionOf is the layout version a media type names: 1, 2, or 0 for
// neither.
func VersionOf(mediaType string) int {
	switch mediaType {
	case MediaType:
		return Version
	case MediaTypeV2:
		return Version2
	}
	return 0
}

// Wire constants. Never change them: bodies written today must read
// tomorrow.
const (
	// HeaderSize is the size of the header every body starts with.
	HeaderSize = 16
	// Version is layout version 1, which this package writes by default.
	Version = 1
	// Version2 is layout version 2: version 1 with a timestamp in each
	// produce request record, and headers after each record's key and
	// value in requests and fetch answers. The package reads both.
	Version2 = 2

	magic = "\x89TLB"

	produceRecordHeaderSize = 13 // flags, partition, key len, value len
	produceResultSize       = 21 // flags, partition, offset, timestamp
	produceErrorHeaderSize  = 3  // code len, message len
	fetchBoundsSize         = 24 // next offset, high watermark, log start
	fetchRecordHeaderSize   = 25 // flags, offset, timestamp, key len, value len

	produceRecordHeaderSizeV2 = 23 // flags, partition, timestamp, key len, value len, header count
	fetchRecordHeaderSizeV2   = 27 // flags, offset, timestamp, key len, value len, header count
	headerHeaderSize          = 7  // flags, key len, value len

	flagKeyNull      = 1 << 0
	flagValueNull    = 1 << 1
	flagPartitionSet = 1 << 2
	flagFailed       = 1 << 3
	flagTimestampSet = 1 << 4 // version 2 produce requests

	// A header's flags: bit 1 as a record's, the value is null.
	flagHeaderValueNull = flagValueNull
)

// Limits: the same as the JSON API's (docs/api.md), so a batch that fits one
// format fits the other.
const (
	// MaxRecords bounds the records of one body (docs/api.md: 10,000).
	MaxRecords = 10000
	// MaxRecordBytes bounds key plus value of one record (docs/api.md: 1 MiB).
	MaxRecordBytes = 1 << 20
	// MaxBodyBytes bounds a request body (docs/api.md: 5 MiB). Decoders leave
	// it to the transport; encoders of requests refuse to pass it.
	MaxBodyBytes = 5 << 20
	// MaxMessageBytes is where encoders cut the message of a failed
	// produce entry (on a UTF-8 boundary).
	MaxMessageBytes = 1024
	// MaxHeaders bounds the headers of one record (docs/api.md: 64).
	MaxHeaders = 64
	// MaxHeaderKeyBytes bounds a header key (docs/api.md: 1 to 256 bytes of
	// UTF-8).
	MaxHeaderKeyBytes = 256
)

// Kind says which body follows the header.
type Kind uint8

// The kinds of body. Never change them.
const (
	KindProduceRequest Kind = 1
	KindProduceAnswer  Kind = 2
	KindFetchAnswer    Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindProduceRequest:
		return "produce request"
	case KindProduceAnswer:
		return "produce answer"
	case KindFetchAnswer:
		return "fetch answer"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Errors of the decoders (and ErrTooLarge of the encoders). Each is wrapped
// with what and where; match with errors.Is.
var (
	// ErrFormat means the bytes are not a body of this format: bad magic,
	// version, kind, reserved bits or flags, bytes after the last record,
	// or a checksum mismatch.
	ErrFormat = errors.New("wire: malformed batch")
	// ErrTruncated means a length or count points past the end of the
	// body: the body was cut, or a length lies.
	ErrTruncated = errors.New("wire: truncated batch")
	// ErrTooLarge means a count or a record is over its limit.
	ErrTooLarge = errors.New("wire: batch too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one record of a produce request. A nil Key means no key, a nil
// Value is a tombstone; empty non-nil slices stay empty. Partition is the
// record's partition, or -1 to let the server choose.
//
// Headers and a timestamp (HasTimestamp: Timestamp, ms since the epoch,
// >= 0, is the producer's) need version 2.
type Record struct {
	Key          []byte
	Value        []byte
	Partition    int32
	Headers      []Header
	Timestamp    int64
	HasTimestamp bool
}

// Header is a record header: Key 1 to MaxHeaderKeyBytes of UTF-8, Value
// nil for a null value (an empty one stays empty). Key and value count
// in the record's MaxRecordBytes.
type Header struct {
	Key   string
	Value []byte
}

// Result is one entry of a produce answer. A failed entry has a non-empty
// ErrCode (an docs/api.md error code) and ErrMessage, and Offset and Timestamp
// -1.
type Result struct {
	Partition  int32
	Offset     int64
	Timestamp  int64
	ErrCode    string
	ErrMessage string
}

// Failed reports whether the entry carries an error instead of an offset.
func (r *Result) Failed() bool { return r.ErrCode != "" }

// FetchedRecord is one record of a fetch answer. Nil Key: no key; nil
// Value: tombstone.
// Headers travel in version 2 only: a version 1 answer leaves them out,
// as Kafka leaves headers out for consumers of its older formats.
type FetchedRecord struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Bounds are the partition bounds a fetch answer carries before its
// records (docs/api.md: next_offset, high_watermark, log_start_offset).
type Bounds struct {
	NextOffset     int64
	HighWatermark  int64
	LogStartOffset int64
}

// appendHeader appends a header with count and a zero CRC; finish fills the
// CRC in.
//
//	| magic 4 | version 1 | kind 1 | reserved 2 | count 4 | crc 4 |
func appendHeader(dst []byte, v byte, k Kind, count int) []byte {
	dst = append(dst, magic...)
	dst = append(dst, v, byte(k), 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(count))
	return binary.LittleEndian.AppendUint32(dst, 0)
}

// finish writes the CRC-32C of the body after the header starting at start.
func finish(b []byte, start int) []byte {
	crc := crc32.Checksum(b[start+HeaderSize:], castagnoli)
	binary.LittleEndian.PutUint32(b[start+12:], crc)
	return b
}

func nullFlags(key, value []byte) byte {
	var f byte
	if key == nil {
		f |= flagKeyNull
	}
	if value == nil {
		f |= flagValueNull
	}
	return f
}

func checkRecordSize(i int, key, value []byte, hs []Header) error {
	n := len(key) + len(value)
	for j := range hs {
		n += len(hs[j].Key) + len(hs[j].Value)
	}
	if n > MaxRecordBytes {
		return fmt.Errorf("%w: record %d has %d bytes of key, value and headers, at most %d", ErrTooLarge, i, n, MaxRecordBytes)
	}
	return nil
}

// checkVersion refuses a version this package does not write.
func checkVersion(v int) error {
	if v != Version && v != Version2 {
		return fmt.Errorf("%w: version %d (want %d or %d)", ErrFormat, v, Version, Version2)
	}
	return nil
}

// checkHeaders refuses headers version 2 cannot carry.
func checkHeaders(i int, hs []Header) error {
	if len(hs) > MaxHeaders {
		return fmt.Errorf("%w: record %d has %d headers, at most %d", ErrFormat, i, len(hs), MaxHeaders)
	}
	for j := range hs {
		if k := hs[j].Key; len(k) == 0 || len(k) > MaxHeaderKeyBytes || !utf8.ValidString(k) {
			return fmt.Errorf("%w: record %d header %d: key of %d bytes, want 1 to %d bytes of UTF-8", ErrFormat, i, j, len(k), MaxHeaderKeyBytes)
		}
	}
	return nil
}

// appendHeaders appends the headers block of version 2:
//
//	n x ( flags 1 | key len 2 | value len 4 | key | value )
func appendHeaders(b []byte, hs []Header) []byte {
	for _, h := range hs {
		var f byte
		if h.Value == nil {
			f = flagHeaderValueNull
		}
		b = append(b, f)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h.Key)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Value)))
		b = append(b, h.Key...)
		b = append(b, h.Value...)
	}
	return b
}

func checkCount(n int) error {
	if n > MaxRecords {
		return fmt.Errorf("%w: %d records, at most %d", ErrTooLarge, n, MaxRecords)
	}
	if n < 0 {
		return fmt.Errorf("%w: negative count %d", ErrFormat, n)
	}
	return nil
}

// AppendProduceRequest appends a version 1 produce request of n records
// to dst; rec returns record i. It refuses more than MaxRecords records, a
// record over MaxRecordBytes, a partition below -1, and a body over
// MaxBodyBytes (ErrTooLarge), and headers or a timestamp, which need
// version 2 (ErrFormat), leaving dst as it was.
//
//	header | n x ( flags 1 | partition 4 | key len 4 | value len 4 | key | value )
func AppendProduceRequest(dst []byte, n int, rec func(i int) Record) ([]byte, error) {
	return AppendProduceRequestV(dst, Version, n, rec)
}

// AppendProduceRequestV is AppendProduceRequest in layout version v; in
// version 2 records may carry headers and a timestamp:
//
//	header | n x ( flags 1 | partition 4 | timestamp 8 | key len 4 | value len 4 | header count 2 |
//	               key | value | header count x ( flags 1 | key len 2 | value len 4 | key | value ) )
func AppendProduceRequestV(dst []byte, v, n int, rec func(i int) Record) ([]byte, error) {
	if err := checkVersion(v); err != nil {
		return dst, err
	}
	if err := checkCount(n); err != nil {
		return dst, err
	}
	start := len(dst)
	b := appendHeader(dst, byte(v), KindProduceRequest, n)
	for i := range n {
		r := rec(i)
		if err := checkRecordSize(i, r.Key, r.Value, r.Headers); err != nil {
			return dst[:start], err
		}
		f := nullFlags(r.Key, r.Value)
		var part uint32
		switch {
		case r.Partition >= 0:
			f |= flagPartitionSet
			part = uint32(r.Partition)
		case r.Partition != -1:
			return dst[:start], fmt.Errorf("%w: record %d: partition %d (want -1 or a partition)", ErrFormat, i, r.Partition)
		}
		if v == Version && (len(r.Headers) > 0 || r.HasTimestamp) {
			return dst[:start], fmt.Errorf("%w: record %d has headers or a timestamp: they need version %d", ErrFormat, i, Version2)
		}
		if err := checkHeaders(i, r.Headers); err != nil {
			return dst[:start], err
		}
		var ts int64
		if r.HasTimestamp {
			if r.Timestamp < 0 {
				return dst[:start], fmt.Errorf("%w: record %d: timestamp %d (want 0 or more)", ErrFormat, i, r.Timestamp)
			}
			f |= flagTimestampSet
			ts = r.Timestamp
		}
		b = append(b, f)
		b = binary.LittleEndian.AppendUint32(b, part)
		if v == Version2 {
			b = binary.LittleEndian.AppendUint64(b, uint64(ts))
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Key)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Value)))
		if v == Version2 {
			b = binary.LittleEndian.AppendUint16(b, uint16(len(r.Headers)))
		}
		b = append(b, r.Key...)
		b = append(b, r.Value...)
		b = appendHeaders(b, r.Headers)
		if len(b)-start > MaxBodyBytes {
			return dst[:start], fmt.Errorf("%w: body over %d bytes at record %d", ErrTooLarge, MaxBodyBytes, i)
		}
	}
	return finish(b, start), nil
}

// ProduceRequestSize is the encoded size of a produce request holding
// records whose keys and values total payload bytes: what a batcher adds up
// to stay under MaxBodyBytes.
func ProduceRequestSize(records, payload int) int {
	return HeaderSize + records*produceRecordHeaderSize + payload
}

// ProduceRequestSizeV2 is ProduceRequestSize for version 2, whose records
// hold headers in all (payload counts their keys and values).
func ProduceRequestSizeV2(records, headers, payload int) int {
	return HeaderSize + records*produceRecordHeaderSizeV2 + headers*headerHeaderSize + payload
}

// AppendProduceAnswer appends a produce answer of n entries to dst; res
// returns entry i. A failed entry's message is cut to MaxMessageBytes and
// its code must be 1 to 255 bytes.
//
//	header | n x ( flags 1 | partition 4 | offset 8 | timestamp 8 [| code len 1 | msg len 2 | code | msg] )
func AppendProduceAnswer(dst []byte, n int, res func(i int) Result) ([]byte, error) {
	return AppendProduceAnswerV(dst, Version, n, res)
}

// AppendProduceAnswerV is AppendProduceAnswer in layout version v: the
// entries are the same in both.
func AppendProduceAnswerV(dst []byte, v, n int, res func(i int) Result) ([]byte, error) {
	if err := checkVersion(v); err != nil {
		return dst, err
	}
	if err := checkCount(n); err != nil {
		return dst, err
	}
	start := len(dst)
	b := appendHeader(dst, byte(v), KindProduceAnswer, n)
	for i := range n {
		r := res(i)
		if r.Partition < 0 {
			return dst[:start], fmt.Errorf("%w: entry %d: partition %d", ErrFormat, i, r.Partition)
		}
		var f byte
		off, ts := r.Offset, r.Timestamp
		if r.Failed() {
			if len(r.ErrCode) > math.MaxUint8 {
				return dst[:start], fmt.Errorf("%w: entry %d: error code of %d bytes", ErrFormat, i, len(r.ErrCode))
			}
			f, off, ts = flagFailed, -1, -1
		} else if off < 0 {
			return dst[:start], fmt.Errorf("%w: entry %d: offset %d", ErrFormat, i, off)
		}
		b = append(b, f)
		b = binary.LittleEndian.AppendUint32(b, uint32(r.Partition))
		b = binary.LittleEndian.AppendUint64(b, uint64(off))
		b = binary.LittleEndian.AppendUint64(b, uint64(ts))
		if f&flagFailed != 0 {
			msg := cut(r.ErrMessage, MaxMessageBytes)
			b = append(b, byte(len(r.ErrCode)))
			b = binary.LittleEndian.AppendUint16(b, uint16(len(msg)))
			b = append(b, r.ErrCode...)
			b = append(b, msg...)
		}
	}
	return finish(b, start), nil
}

// cut shortens s to at most n bytes without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AppendFetchAnswer appends a version 1 fetch answer with bounds and n
// records to dst; rec returns record i. Version 1 has no headers: they are
// left out.
//
//	header | next offset 8 | high watermark 8 | log start 8 |
//	n x ( flags 1 | offset 8 | timestamp 8 | key len 4 | value len 4 | key | value )
func AppendFetchAnswer(dst []byte, bounds Bounds, n int, rec func(i int) FetchedRecord) ([]byte, error) {
	return AppendFetchAnswerV(dst, Version, bounds, n, rec)
}

// AppendFetchAnswerV is AppendFetchAnswer in layout version v; version 2
// carries headers:
//
//	header | next offset 8 | high watermark 8 | log start 8 |
//	n x ( flags 1 | offset 8 | timestamp 8 | key len 4 | value len 4 | header count 2 |
//	      key | value | header count x ( flags 1 | key len 2 | value len 4 | key | value ) )
func AppendFetchAnswerV(dst []byte, v int, bounds Bounds, n int, rec func(i int) FetchedRecord) ([]byte, error) {
	if err := checkVersion(v); err != nil {
		return dst, err
	}
	if err := checkCount(n); err != nil {
		return dst, err
	}
	start := len(dst)
	b := appendHeader(dst, byte(v), KindFetchAnswer, n)
	b = binary.LittleEndian.AppendUint64(b, uint64(bounds.NextOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(bounds.HighWatermark))
	b = binary.LittleEndian.AppendUint64(b, uint64(bounds.LogStartOffset))
	for i := range n {
		r := rec(i)
		if v == Version {
			r.Headers = nil
		}
		if err := checkRecordSize(i, r.Key, r.Value, r.Headers); err != nil {
			return dst[:start], err
		}
		if err := checkHeaders(i, r.Headers); err != nil {
			return dst[:start], err
		}
		b = append(b, nullFlags(r.Key, r.Value))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Offset))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.Timestamp))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Key)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Value)))
		if v == Version2 {
			b = binary.LittleEndian.AppendUint16(b, uint16(len(r.Headers)))
		}
		b = append(b, r.Key...)
		b = append(b, r.Value...)
		b = appendHeaders(b, r.Headers)
	}
	return finish(b, start), nil
}

// decoder walks a body, checking every length against what is left.
type decoder struct {
	b   []byte
	pos int
	v   int // the body's layout version, once header has read it
}

// VersionOfBody is the layout version of body b (its fifth byte), or 0
// when b is too short to say.
func VersionOfBody(b []byte) int {
	if len(b) < HeaderSize {
		return 0
	}
	return int(b[4])
}

func (d *decoder) left() int { return len(d.b) - d.pos }

// need checks that n more bytes are there. what names them for the error,
// with %d standing for i: formatted only on failure, never per record.
func (d *decoder) need(n int, what string, i int) error {
	if n > d.left() {
		if strings.Contains(what, "%d") {
			what = fmt.Sprintf(what, i)
		}
		return fmt.Errorf("%w: %s needs %d bytes at byte %d, %d left", ErrTruncated, what, n, d.pos, d.left())
	}
	return nil
}

// truncated is need's error for header j of record i.
func (d *decoder) truncated(n, i, j int, what string) error {
	return fmt.Errorf("%w: record %d header %d%s needs %d bytes at byte %d, %d left", ErrTruncated, i, j, what, n, d.pos, d.left())
}

func (d *decoder) u8() byte {
	v := d.b[d.pos]
	d.pos++
	return v
}

func (d *decoder) u16() uint16 {
	v := binary.LittleEndian.Uint16(d.b[d.pos:])
	d.pos += 2
	return v
}

func (d *decoder) u32() uint32 {
	v := binary.LittleEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *decoder) i64() int64 {
	v := int64(binary.LittleEndian.Uint64(d.b[d.pos:]))
	d.pos += 8
	return v
}

// bytes returns the next n bytes (n already checked), capped so that an
// append never writes into the body.
func (d *decoder) bytes(n int) []byte {
	v := d.b[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return v
}

// header checks the header and returns the count, refusing a count above
// MaxRecords or one that the bytes left cannot hold at minSize each.
func (d *decoder) header(want Kind, minSize, fixed int) (int, error) {
	if len(d.b) > 4 && d.b[4] == Version2 {
		d.v = Version2
		switch want {
		case KindProduceRequest:
			minSize = produceRecordHeaderSizeV2
		case KindFetchAnswer:
			minSize = fetchRecordHeaderSizeV2
		}
	} else {
		d.v = Version
	}
	if err := d.need(HeaderSize, "header", 0); err != nil {
		return 0, err
	}
	h := d.b[:HeaderSize]
	switch {
	case string(h[:4]) != magic:
		return 0, fmt.Errorf("%w: bad magic % x, want % x (a body re-encoded as text on the way?)", ErrFormat, h[:4], magic)
	case h[4] != Version && h[4] != Version2:
		return 0, fmt.Errorf("%w: version %d, this reader knows %d and %d", ErrFormat, h[4], Version, Version2)
	case Kind(h[5]) != want:
		return 0, fmt.Errorf("%w: body is a %v, want a %v", ErrFormat, Kind(h[5]), want)
	case h[6] != 0 || h[7] != 0:
		return 0, fmt.Errorf("%w: reserved header bytes are %02x %02x, want zero", ErrFormat, h[6], h[7])
	}
	count := binary.LittleEndian.Uint32(h[8:])
	if count > MaxRecords {
		return 0, fmt.Errorf("%w: %d records, at most %d", ErrTooLarge, count, MaxRecords)
	}
	d.pos = HeaderSize
	if need := uint64(fixed) + uint64(count)*uint64(minSize); need > uint64(d.left()) {
		return 0, fmt.Errorf("%w: %d records need at least %d bytes after the header, %d left", ErrTruncated, count, need, d.left())
	}
	return int(count), nil
}

// checksum compares the header's CRC with the body's.
func (d *decoder) checksum() error {
	want := binary.LittleEndian.Uint32(d.b[12:])
	if got := crc32.Checksum(d.b[HeaderSize:], castagnoli); got != want {
		return fmt.Errorf("%w: checksum %08x, header says %08x (body altered in transit?)", ErrFormat, got, want)
	}
	return nil
}

// end refuses bytes after the last record, then checks the checksum.
func (d *decoder) end() error {
	if d.left() != 0 {
		return fmt.Errorf("%w: %d bytes after the last record at byte %d", ErrFormat, d.left(), d.pos)
	}
	return d.checksum()
}

// keyValue reads the two lengths (and in version 2 the header count) and
// the key, value (and headers) a record header announced, applying the
// null flags.
func (d *decoder) keyValue(i int, flags byte) (key, value []byte, hs []Header, err error) {
	kl, vl := d.u32(), d.u32()
	var nh int
	if d.v == Version2 {
		nh = int(d.u16())
	}
	if flags&flagKeyNull != 0 && kl != 0 {
		return nil, nil, nil, fmt.Errorf("%w: record %d: null key with length %d", ErrFormat, i, kl)
	}
	if flags&flagValueNull != 0 && vl != 0 {
		return nil, nil, nil, fmt.Errorf("%w: record %d: null value with length %d", ErrFormat, i, vl)
	}
	if n := uint64(kl) + uint64(vl); n > MaxRecordBytes {
		return nil, nil, nil, fmt.Errorf("%w: record %d has %d bytes of key and value, at most %d", ErrTooLarge, i, n, MaxRecordBytes)
	}
	if nh > MaxHeaders {
		return nil, nil, nil, fmt.Errorf("%w: record %d has %d headers, at most %d", ErrFormat, i, nh, MaxHeaders)
	}
	if err := d.need(int(kl)+int(vl), "record %d key and value", i); err != nil {
		return nil, nil, nil, err
	}
	key, value = d.bytes(int(kl)), d.bytes(int(vl))
	if flags&flagKeyNull != 0 {
		key = nil
	}
	if flags&flagValueNull != 0 {
		value = nil
	}
	if nh == 0 {
		return key, value, nil, nil
	}
	size := int(kl) + int(vl)
	hs = make([]Header, nh)
	for j := range hs {
		if headerHeaderSize > d.left() {
			return nil, nil, nil, d.truncated(headerHeaderSize, i, j, "")
		}
		f := d.u8()
		hkl, hvl := int(d.u16()), d.u32()
		switch {
		case f&^flagHeaderValueNull != 0:
			return nil, nil, nil, fmt.Errorf("%w: record %d header %d: unknown flags %08b", ErrFormat, i, j, f)
		case f&flagHeaderValueNull != 0 && hvl != 0:
			return nil, nil, nil, fmt.Errorf("%w: record %d header %d: null value with length %d", ErrFormat, i, j, hvl)
		case hkl == 0 || hkl > MaxHeaderKeyBytes:
			return nil, nil, nil, fmt.Errorf("%w: record %d header %d: key of %d bytes, want 1 to %d", ErrFormat, i, j, hkl, MaxHeaderKeyBytes)
		case uint64(size)+uint64(hkl)+uint64(hvl) > MaxRecordBytes:
			return nil, nil, nil, fmt.Errorf("%w: record %d has more than %d bytes of key, value and headers", ErrTooLarge, i, MaxRecordBytes)
		}
		size += hkl + int(hvl)
		if hkl+int(hvl) > d.left() {
			return nil, nil, nil, d.truncated(hkl+int(hvl), i, j, " key and value")
		}
		k := d.bytes(hkl)
		if !utf8.Valid(k) {
			return nil, nil, nil, fmt.Errorf("%w: record %d header %d: key is not UTF-8", ErrFormat, i, j)
		}
		hs[j].Key = string(k)
		hs[j].Value = d.bytes(int(hvl))
		if f&flagHeaderValueNull != 0 {
			hs[j].Value = nil
		}
	}
	return key, value, hs, nil
}

// DecodeProduceRequest decodes a produce request. Keys and values alias b.
func DecodeProduceRequest(b []byte) ([]Record, error) {
	d := decoder{b: b}
	n, err := d.header(KindProduceRequest, produceRecordHeaderSize, 0)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, n)
	size, known := produceRecordHeaderSize, byte(flagKeyNull|flagValueNull|flagPartitionSet)
	if d.v == Version2 {
		size, known = produceRecordHeaderSizeV2, known|flagTimestampSet
	}
	for i := range recs {
		if err := d.need(size, "record %d header", i); err != nil {
			return nil, err
		}
		f := d.u8()
		if f&^known != 0 {
			return nil, fmt.Errorf("%w: record %d: unknown flags %08b", ErrFormat, i, f)
		}
		p := d.u32()
		switch {
		case f&flagPartitionSet == 0 && p != 0:
			return nil, fmt.Errorf("%w: record %d: partition %d without the partition flag", ErrFormat, i, p)
		case p > math.MaxInt32:
			return nil, fmt.Errorf("%w: record %d: partition %d over %d", ErrFormat, i, p, math.MaxInt32)
		}
		r := &recs[i]
		r.Partition = -1
		if f&flagPartitionSet != 0 {
			r.Partition = int32(p)
		}
		if d.v == Version2 {
			ts := d.i64()
			switch {
			case f&flagTimestampSet == 0 && ts != 0:
				return nil, fmt.Errorf("%w: record %d: timestamp %d without the timestamp flag", ErrFormat, i, ts)
			case ts < 0:
				return nil, fmt.Errorf("%w: record %d: timestamp %d (want 0 or more)", ErrFormat, i, ts)
			}
			r.Timestamp, r.HasTimestamp = ts, f&flagTimestampSet != 0
		}
		if r.Key, r.Value, r.Headers, err = d.keyValue(i, f); err != nil {
			return nil, err
		}
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return recs, nil
}

// DecodeProduceAnswer decodes a produce answer.
func DecodeProduceAnswer(b []byte) ([]Result, error) {
	d := decoder{b: b}
	n, err := d.header(KindProduceAnswer, produceResultSize, 0)
	if err != nil {
		return nil, err
	}
	res := make([]Result, n)
	for i := range res {
		if err := d.need(produceResultSize, "entry %d", i); err != nil {
			return nil, err
		}
		f := d.u8()
		if f&^flagFailed != 0 {
			return nil, fmt.Errorf("%w: entry %d: unknown flags %08b", ErrFormat, i, f)
		}
		p := d.u32()
		if p > math.MaxInt32 {
			return nil, fmt.Errorf("%w: entry %d: partition %d over %d", ErrFormat, i, p, math.MaxInt32)
		}
		r := &res[i]
		r.Partition, r.Offset, r.Timestamp = int32(p), d.i64(), d.i64()
		if f&flagFailed == 0 {
			if r.Offset < 0 {
				return nil, fmt.Errorf("%w: entry %d: offset %d", ErrFormat, i, r.Offset)
			}
			continue
		}
		if r.Offset != -1 || r.Timestamp != -1 {
			return nil, fmt.Errorf("%w: entry %d: failed with offset %d timestamp %d, want -1 -1", ErrFormat, i, r.Offset, r.Timestamp)
		}
		if err := d.need(produceErrorHeaderSize, "entry %d error", i); err != nil {
			return nil, err
		}
		cl, ml := int(d.u8()), int(d.u16())
		if cl == 0 {
			return nil, fmt.Errorf("%w: entry %d: failed without an error code", ErrFormat, i)
		}
		if err := d.need(cl+ml, "entry %d error code and message", i); err != nil {
			return nil, err
		}
		r.ErrCode, r.ErrMessage = string(d.bytes(cl)), string(d.bytes(ml))
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return res, nil
}

// DecodeFetchAnswer decodes a fetch answer. Keys and values alias b.
func DecodeFetchAnswer(b []byte) (Bounds, []FetchedRecord, error) {
	d := decoder{b: b}
	n, err := d.header(KindFetchAnswer, fetchRecordHeaderSize, fetchBoundsSize)
	if err != nil {
		return Bounds{}, nil, err
	}
	bounds := Bounds{NextOffset: d.i64(), HighWatermark: d.i64(), LogStartOffset: d.i64()}
	recs := make([]FetchedRecord, n)
	size := fetchRecordHeaderSize
	if d.v == Version2 {
		size = fetchRecordHeaderSizeV2
	}
	for i := range recs {
		if err := d.need(size, "record %d header", i); err != nil {
			return Bounds{}, nil, err
		}
		f := d.u8()
		if f&^(flagKeyNull|flagValueNull) != 0 {
			return Bounds{}, nil, fmt.Errorf("%w: record %d: unknown flags %08b", ErrFormat, i, f)
		}
		r := &recs[i]
		r.Offset, r.Timestamp = d.i64(), d.i64()
		if r.Key, r.Value, r.Headers, err = d.keyValue(i, f); err != nil {
			return Bounds{}, nil, err
		}
	}
	if err := d.end(); err != nil {
		return Bounds{}, nil, err
	}
	return bounds, recs, nil
}
