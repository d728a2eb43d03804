package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Wire constants. Never change them: files written today must read tomorrow.
const (
	// RecordHeaderSize is the fixed size of a record header.
	RecordHeaderSize = 28
	// FileHeaderSize is the size of the header at the start of every .log file.
	FileHeaderSize = 32
	// Version is the .log format version Create writes in the file header.
	// Version 2 added record headers and the create-time flag; version 1
	// files (no headers, append time) are read as they are.
	Version = 2
	// Version1 is the first .log format version: records without headers,
	// timestamps assigned at append.
	Version1 = 1
	// MaxHeaders bounds the headers of one record the format can hold
	// (the API allows far fewer).
	MaxHeaders = 1<<16 - 1
	// MaxHeaderKey bounds a header key the format can hold.
	MaxHeaderKey = 1<<16 - 1
	// MaxBodySize bounds key+value of one record. The API caps a record at
	// 1 MiB; the decoder refuses anything larger than this before allocating.
	MaxBodySize = 8 << 20

	fileMagic = "TLSG"

	keyAbsent  = 1 << 31
	valueNull  = 1 << 30
	hasHeaders = 1 << 29 // version 2: the body starts with a headers block
	keyLenMax  = 1<<29 - 1

	headerNull = ^uint32(0) // a header value length meaning null

	// File header flags (version 2).

	// FlagCreateTime marks a segment of a create-time topic: timestamps
	// are the producers' and may decrease from one record to the next.
	FlagCreateTime = 1 << 0
	knownFlags     = FlagCreateTime
)

var (
	// ErrCorrupt means bytes that should hold a record or header do not: a
	// checksum mismatch, an impossible length or a broken offset sequence.
	ErrCorrupt = errors.New("segment: corrupt")
	// ErrTruncated means the bytes end inside a record: a torn tail.
	ErrTruncated = errors.New("segment: truncated")
	// ErrTooLarge means a record's key and value exceed MaxBodySize.
	ErrTooLarge = errors.New("segment: record too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one log entry. A nil Key means the record has no key; a nil
// Value is a tombstone. Empty non-nil slices are kept as empty. Headers are
// kept in order; nil and empty mean none.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header

	// raw is the encoded headers block (count and headers) of a record a
	// scan decoded without building Headers; nil otherwise. Records handed
	// out (Read, DecodeRecord, DecodeRecords) never carry it.
	raw []byte
}

// Header is one record header, as in Kafka: keys may repeat, a nil Value is
// a null header value (an empty non-nil one is kept as empty).
type Header struct {
	Key   string
	Value []byte
}

// EncodedSize is the number of bytes r takes in a .log file.
func EncodedSize(r *Record) int {
	return RecordHeaderSize + len(r.Key) + len(r.Value) + headersSize(r)
}

// headersSize is the size of r's headers block: zero without headers.
func headersSize(r *Record) int {
	if r.raw != nil {
		return len(r.raw)
	}
	if len(r.Headers) == 0 {
		return 0
	}
	n := 2
	for i := range r.Headers {
		n += 6 + len(r.Headers[i].Key) + len(r.Headers[i].Value)
	}
	return n
}

// AppendRecord appends the encoding of r to dst and returns the extended
// slice. Layout (little-endian, see the package doc):
//
//	| offset 8 | size 4 | crc 4 | timestamp 8 | keyinfo 4 | [headers] | key | value |
//
// A record without headers is encoded as in version 1.
func AppendRecord(dst []byte, r *Record) ([]byte, error) {
	hsize := headersSize(r)
	body := hsize + len(r.Key) + len(r.Value)
	if body > MaxBodySize || len(r.Key) > keyLenMax {
		return dst, fmt.Errorf("%w: %d bytes at offset %d", ErrTooLarge, body, r.Offset)
	}
	keyinfo := uint32(len(r.Key))
	if r.Key == nil {
		keyinfo |= keyAbsent
	}
	if r.Value == nil {
		keyinfo |= valueNull
	}
	if hsize > 0 {
		keyinfo |= hasHeaders
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Offset))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(body))
	dst = binary.LittleEndian.AppendUint32(dst, 0) // crc, filled below
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Timestamp))
	dst = binary.LittleEndian.AppendUint32(dst, keyinfo)
	if hsize > 0 {
		var err error
		if dst, err = appendHeaders(dst, r); err != nil {
			return dst[:start], err
		}
	}
	dst = append(dst, r.Key...)
	dst = append(dst, r.Value...)
	crc := crc32.Checksum(dst[start+16:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start+12:], crc)
	return dst, nil
}

// appendHeaders appends r's headers block:
//
//	| count 2 | per header: key len 2 | value len 4 | key | value |
//
// A value length of 0xFFFFFFFF is a null value.
func appendHeaders(dst []byte, r *Record) ([]byte, error) {
	if r.raw != nil {
		return append(dst, r.raw...), nil
	}
	if len(r.Headers) > MaxHeaders {
		return dst, fmt.Errorf("%w: %d headers at offset %d, at most %d", ErrTooLarge, len(r.Headers), r.Offset, MaxHeaders)
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		if len(h.Key) > MaxHeaderKey {
			return dst, fmt.Errorf("%w: header key of %d bytes at offset %d, at most %d", ErrTooLarge, len(h.Key), r.Offset, MaxHeaderKey)
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(h.Key)))
		vl := uint32(len(h.Value))
		if h.Value == nil {
			vl = headerNull
		}
		dst = binary.LittleEndian.AppendUint32(dst, vl)
		dst = append(dst, h.Key...)
		dst = append(dst, h.Value...)
	}
	return dst, nil
}

// headersBlockLen checks the headers block at the start of b (the body of
// a record, after its fixed header) and returns its length and header
// count. It allocates nothing.
func headersBlockLen(b []byte) (n, count int, err error) {
	if len(b) < 2 {
		return 0, 0, fmt.Errorf("%w: headers block cut short at its count", ErrCorrupt)
	}
	count = int(binary.LittleEndian.Uint16(b))
	if count == 0 {
		return 0, 0, fmt.Errorf("%w: headers flag with no headers", ErrCorrupt)
	}
	n = 2
	for i := 0; i < count; i++ {
		if len(b)-n < 6 {
			return 0, 0, fmt.Errorf("%w: header %d cut short", ErrCorrupt, i)
		}
		kl := int(binary.LittleEndian.Uint16(b[n:]))
		vl := binary.LittleEndian.Uint32(b[n+2:])
		n += 6
		if vl == headerNull {
			vl = 0
		}
		if int64(kl)+int64(vl) > int64(len(b)-n) {
			return 0, 0, fmt.Errorf("%w: header %d runs past its record", ErrCorrupt, i)
		}
		n += kl + int(vl)
	}
	return n, count, nil
}

// parseHeaders builds the headers of block b (checked by headersBlockLen).
// Keys are copied into strings; values alias b unless slab is set, in
// which case they are copied into it.
func parseHeaders(b []byte, count int, slab *[]byte) []Header {
	out := make([]Header, count)
	n := 2
	for i := range out {
		kl := int(binary.LittleEndian.Uint16(b[n:]))
		vl := binary.LittleEndian.Uint32(b[n+2:])
		n += 6
		out[i].Key = string(b[n : n+kl])
		n += kl
		if vl == headerNull {
			continue
		}
		v := b[n : n+int(vl) : n+int(vl)]
		n += int(vl)
		if slab != nil {
			s := *slab
			s = append(s, v...)
			v = s[len(s)-len(v) : len(s) : len(s)]
			*slab = s
		}
		out[i].Value = v
	}
	return out
}

// RecordHeader is the decoded fixed part of a record.
type RecordHeader struct {
	Offset    int64
	Size      uint32 // body length
	CRC       uint32
	Timestamp int64
	KeyInfo   uint32
}

// Len is the total encoded length of the record the header starts.
func (h RecordHeader) Len() int { return RecordHeaderSize + int(h.Size) }

// DecodeRecordHeader decodes the 28-byte header at the start of b and checks
// its lengths for consistency. It does not check the CRC.
func DecodeRecordHeader(b []byte) (RecordHeader, error) {
	if len(b) < RecordHeaderSize {
		return RecordHeader{}, fmt.Errorf("%w: %d header bytes of %d", ErrTruncated, len(b), RecordHeaderSize)
	}
	h := readRecordHeader(b)
	keyLen := h.KeyInfo & keyLenMax
	switch headerFlaw(h) {
	case flawSize:
		return h, fmt.Errorf("%w: body size %d over %d", ErrCorrupt, h.Size, MaxBodySize)
	case flawKeyLen:
		return h, fmt.Errorf("%w: key length %d over body size %d", ErrCorrupt, keyLen, h.Size)
	case flawAbsentKey:
		return h, fmt.Errorf("%w: absent key with length %d", ErrCorrupt, keyLen)
	case flawNullValue:
		return h, fmt.Errorf("%w: null value with %d value bytes", ErrCorrupt, h.Size-keyLen)
	case flawHeaders:
		return h, fmt.Errorf("%w: headers flag with %d body bytes for a key of %d", ErrCorrupt, h.Size, keyLen)
	case flawOffset:
		return h, fmt.Errorf("%w: negative offset %d", ErrCorrupt, h.Offset)
	}
	return h, nil
}

// readRecordHeader decodes the fields of the header at the start of b, which
// holds at least RecordHeaderSize bytes, without checking them.
func readRecordHeader(b []byte) RecordHeader {
	return RecordHeader{
		Offset:    int64(binary.LittleEndian.Uint64(b[0:])),
		Size:      binary.LittleEndian.Uint32(b[8:]),
		CRC:       binary.LittleEndian.Uint32(b[12:]),
		Timestamp: int64(binary.LittleEndian.Uint64(b[16:])),
		KeyInfo:   binary.LittleEndian.Uint32(b[24:]),
	}
}

// What can be wrong with a record header on its own.
const (
	flawNone = iota
	flawSize
	flawKeyLen
	flawAbsentKey
	flawNullValue
	flawOffset
	flawHeaders
)

// headerFlaw checks a header's lengths and flags for consistency without
// formatting an error, so the resync search can try every byte position
// without allocating.
func headerFlaw(h RecordHeader) int {
	keyLen := h.KeyInfo & keyLenMax
	switch {
	case h.Size > MaxBodySize:
		return flawSize
	case keyLen > h.Size:
		return flawKeyLen
	case h.KeyInfo&keyAbsent != 0 && keyLen != 0:
		return flawAbsentKey
	case h.KeyInfo&hasHeaders != 0 && keyLen+2+6 > h.Size:
		// A headers block holds a count and at least one header.
		return flawHeaders
	case h.KeyInfo&valueNull != 0 && h.KeyInfo&hasHeaders == 0 && keyLen != h.Size:
		return flawNullValue
	case h.Offset < 0:
		return flawOffset
	}
	return flawNone
}

// crcOK reports whether the record whose header h starts b, which holds the
// whole record, passes its CRC.
func crcOK(b []byte, h RecordHeader) bool {
	return crc32.Checksum(b[16:h.Len()], castagnoli) == h.CRC
}

// DecodeRecord decodes the record at the start of b. Key, Value and header
// values alias b. It returns the record, its encoded length, and
// ErrTruncated if b ends inside the record or ErrCorrupt if the record is
// damaged.
func DecodeRecord(b []byte) (Record, int, error) {
	r, n, err := decodeRecord(b)
	if err != nil || r.raw == nil {
		return r, n, err
	}
	_, count, _ := headersBlockLen(r.raw)
	r.Headers = parseHeaders(r.raw, count, nil)
	r.raw = nil
	return r, n, nil
}

// decodeRecord is DecodeRecord leaving the headers block, checked, in
// r.raw: a scan checks records without building their headers.
func decodeRecord(b []byte) (Record, int, error) {
	h, err := DecodeRecordHeader(b)
	if err != nil {
		return Record{}, 0, err
	}
	var r Record
	n, err := decodeBody(b, h, &r)
	if err != nil {
		return Record{}, 0, err
	}
	return r, n, nil
}

// decodeBody is decodeRecord of b, which starts with the header h that
// DecodeRecordHeader took from it without error, into *r (every field of
// which it sets): a scan decodes each record into the same Record rather
// than copying one out.
func decodeBody(b []byte, h RecordHeader, r *Record) (int, error) {
	n := h.Len()
	if len(b) < n {
		return 0, fmt.Errorf("%w: record at offset %d needs %d bytes, have %d", ErrTruncated, h.Offset, n, len(b))
	}
	if crc := crc32.Checksum(b[16:n], castagnoli); crc != h.CRC {
		return 0, fmt.Errorf("%w: crc %08x want %08x at offset %d", ErrCorrupt, crc, h.CRC, h.Offset)
	}
	keyLen := int(h.KeyInfo & keyLenMax)
	p := RecordHeaderSize
	var raw []byte
	if h.KeyInfo&hasHeaders != 0 {
		hn, _, err := headersBlockLen(b[p:n])
		if err != nil {
			return 0, fmt.Errorf("%w at offset %d", err, h.Offset)
		}
		if hn+keyLen > n-p || (h.KeyInfo&valueNull != 0 && hn+keyLen != n-p) {
			return 0, fmt.Errorf("%w: headers block of %d bytes and key of %d do not fit a body of %d at offset %d", ErrCorrupt, hn, keyLen, h.Size, h.Offset)
		}
		raw = b[p : p+hn : p+hn]
		p += hn
	}
	r.Offset, r.Timestamp, r.Headers, r.raw = h.Offset, h.Timestamp, nil, raw
	r.Key = nil
	if h.KeyInfo&keyAbsent == 0 {
		r.Key = b[p : p+keyLen : p+keyLen]
	}
	p += keyLen
	r.Value = nil
	if h.KeyInfo&valueNull == 0 {
		r.Value = b[p:n:n]
	}
	return n, nil
}

// FileHeader is the decoded header at the start of a .log file.
type FileHeader struct {
	Version    uint16
	Flags      uint16 // version 2: FlagCreateTime; zero in version 1
	BaseOffset int64
	Epoch      uint64
}

// CreateTime reports whether the segment's timestamps are the producers'
// (and may decrease).
func (h FileHeader) CreateTime() bool { return h.Flags&FlagCreateTime != 0 }

// AppendFileHeader appends the 32-byte .log file header to dst. A zero
// Version is Version.
//
//	| magic 4 | version 2 | flags 2 | reserved 4 | base offset 8 | epoch 8 | crc 4 |
//
// (In version 1 the flags are part of six reserved zero bytes.)
func AppendFileHeader(dst []byte, h FileHeader) []byte {
	if h.Version == 0 {
		h.Version = Version
	}
	start := len(dst)
	dst = append(dst, fileMagic...)
	dst = binary.LittleEndian.AppendUint16(dst, h.Version)
	dst = binary.LittleEndian.AppendUint16(dst, h.Flags)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.LittleEndian.AppendUint64(dst, h.Epoch)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// DecodeFileHeader decodes and checks a .log file header: version 1 or 2,
// and in version 2 no flag this code does not know.
func DecodeFileHeader(b []byte) (FileHeader, error) {
	if len(b) < FileHeaderSize {
		return FileHeader{}, fmt.Errorf("%w: file header is %d bytes of %d", ErrTruncated, len(b), FileHeaderSize)
	}
	b = b[:FileHeaderSize]
	if string(b[:4]) != fileMagic {
		return FileHeader{}, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	}
	if crc := crc32.Checksum(b[:28], castagnoli); crc != binary.LittleEndian.Uint32(b[28:]) {
		return FileHeader{}, fmt.Errorf("%w: file header crc %08x want %08x", ErrCorrupt, crc, binary.LittleEndian.Uint32(b[28:]))
	}
	h := FileHeader{
		Version:    binary.LittleEndian.Uint16(b[4:]),
		Flags:      binary.LittleEndian.Uint16(b[6:]),
		BaseOffset: int64(binary.LittleEndian.Uint64(b[12:])),
		Epoch:      binary.LittleEndian.Uint64(b[20:]),
	}
	switch {
	case h.Version != Version1 && h.Version != Version:
		return h, fmt.Errorf("%w: unknown version %d", ErrCorrupt, h.Version)
	case h.Version == Version1 && h.Flags != 0:
		return h, fmt.Errorf("%w: version 1 header with flags %#x", ErrCorrupt, h.Flags)
	case h.Flags&^knownFlags != 0:
		return h, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, h.Flags&^knownFlags)
	}
	return h, nil
}

// ReadFileHeader reads and checks the file header through r.
func ReadFileHeader(r io.ReaderAt) (FileHeader, error) {
	var b [FileHeaderSize]byte
	n, err := r.ReadAt(b[:], 0)
	if n < FileHeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			return FileHeader{}, fmt.Errorf("%w: file header is %d bytes of %d", ErrTruncated, n, FileHeaderSize)
		}
		return FileHeader{}, fmt.Errorf("segment: read file header: %w", err)
	}
	return DecodeFileHeader(b[:])
}

// checkFileHeader checks the .log file header at the start of b against id.
// It returns the header and nil if the header is intact and names segment
// id. Otherwise foreign tells the two kinds of failure apart: a header whose
// CRC holds but that names another segment, another magic, an unknown
// version or flag is foreign (the file is not this segment, or not in a
// format this code reads); a header whose CRC fails, or that is cut short,
// is damaged.
func checkFileHeader(b []byte, id ID) (h FileHeader, foreign bool, err error) {
	if len(b) < FileHeaderSize {
		return h, false, fmt.Errorf("%w: file header is %d bytes of %d", ErrTruncated, len(b), FileHeaderSize)
	}
	b = b[:FileHeaderSize]
	if crc, want := crc32.Checksum(b[:28], castagnoli), binary.LittleEndian.Uint32(b[28:]); crc != want {
		if string(b[:4]) != fileMagic {
			return h, false, fmt.Errorf("%w: damaged file header: bad magic %q, crc %08x want %08x", ErrCorrupt, b[:4], crc, want)
		}
		return h, false, fmt.Errorf("%w: damaged file header: crc %08x want %08x", ErrCorrupt, crc, want)
	}
	h, err = DecodeFileHeader(b)
	if err != nil {
		return h, true, fmt.Errorf("%w: not a segment file of this format: %w", ErrCorrupt, err)
	}
	if h.BaseOffset != id.Base || h.Epoch != id.Epoch {
		return h, true, fmt.Errorf("%w: file header names base offset %d epoch %d, not %s", ErrCorrupt, h.BaseOffset, h.Epoch, id)
	}
	return h, false, nil
}

// readHeaderBytes reads the first FileHeaderSize bytes of ra, fewer if the
// file is shorter. A short read that made progress is continued; a read
// error that makes none is returned.
func readHeaderBytes(ra io.ReaderAt) ([]byte, error) {
	var b [FileHeaderSize]byte
	n := 0
	for n < FileHeaderSize {
		m, err := ra.ReadAt(b[n:], int64(n))
		n += m
		switch {
		case n == FileHeaderSize:
		case err != nil && !errors.Is(err, io.EOF) && m == 0:
			return nil, fmt.Errorf("segment: read file header: %w", err)
		case err != nil && !errors.Is(err, io.EOF):
			continue // a short read with an error: try for the rest
		default:
			return b[:n], nil // the file ends
		}
	}
	return b[:], nil
}
