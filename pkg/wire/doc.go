// Package wire is tierlog's binary batch format: the compact body of a
// produce request, a produce answer and a fetch answer that client and
// server may use instead of JSON (docs/api-binary.md). It is negotiated per
// request with the media type MediaType: a produce body is binary when its
// Content-Type is MediaType; a produce or fetch answer is binary when the
// request's Accept names MediaType. Errors are always JSON.
//
// The package depends on nothing of tierlog's: pkg/api and pkg/client both
// import it, and it is the one place the byte layout lives.
//
// # Layout
//
// All integers are little-endian. Every body starts with the same 16-byte
// header; what follows depends on the kind. Wire constants never change: a
// new layout is a new version (and a new media type).
//
//	header (16 bytes)
//	+--------------+---------+------+----------+---------+----------+
//	|    magic     | version | kind | reserved |  count  |   crc    |
//	|     4 B      |   1 B   | 1 B  |   2 B    |   4 B   |   4 B    |
//	+--------------+---------+------+----------+---------+----------+
//	0  89 54 4c 42 4         5      6          8         12         16
//	   "\x89TLB"     1        1-3     zero       uint32    CRC-32C of bytes 16..end
//
//	kind 1, produce request: count records
//	+-------+-----------+---------+-----------+-----+-------+
//	| flags | partition | key len | value len | key | value |
//	|  1 B  |    4 B    |   4 B   |    4 B    |     |       |
//	+-------+-----------+---------+-----------+-----+-------+
//	0       1           5         9           13
//
//	kind 2, produce answer: count entries, in request order
//	+-------+-----------+----------+-------------+   if flags bit 3:
//	| flags | partition |  offset  |  timestamp  |   +----------+---------+------+---------+
//	|  1 B  |    4 B    |   8 B    |     8 B     |   | code len | msg len | code | message |
//	+-------+-----------+----------+-------------+   |   1 B    |   2 B   |      |         |
//	0       1           5          13            21  +----------+---------+------+---------+
//
//	kind 3, fetch answer: 24 bytes of bounds, then count records
//	+-------------+----------------+------------------+
//	| next offset | high watermark | log start offset |
//	|     8 B     |      8 B       |       8 B        |
//	+-------------+----------------+------------------+
//	+-------+----------+-------------+---------+-----------+-----+-------+
//	| flags |  offset  |  timestamp  | key len | value len | key | value |
//	|  1 B  |   8 B    |     8 B     |   4 B   |    4 B    |     |       |
//	+-------+----------+-------------+---------+-----------+-----+-------+
//	0       1          9             17        21          25
//
// | field      | meaning                                                       |
// |------------|---------------------------------------------------------------|
// | magic      | 0x89 'T' 'L' 'B': the high byte catches a body that was       |
// |            | transcoded as text on the way (API Gateway without binary     |
// |            | media types), as PNG's signature does                         |
// | version    | 1, or 2 (below)                                               |
// | kind       | 1 produce request, 2 produce answer, 3 fetch answer           |
// | reserved   | zero; a decoder refuses anything else                         |
// | count      | records or entries that follow; at most MaxRecords            |
// | crc        | CRC-32C (Castagnoli) of every byte after the header           |
// | flags      | bit 0: key is null (absent), bit 1: value is null (tombstone),|
// |            | bit 2: partition is set (produce request only),               |
// |            | bit 3: the entry failed (produce answer only); other bits 0.  |
// |            | A null key or value has length 0.                             |
// | partition  | uint32 up to 2^31-1; 0 when bit 2 is clear in a request       |
// | key len,   | uint32 each; key len + value len at most MaxRecordBytes       |
// | value len  |                                                               |
// | offset,    | int64; a failed produce entry has -1 in both                  |
// | timestamp  |                                                               |
// | code, msg  | docs/api.md error of a failed produce entry: code 1..255 bytes,|
// |            | message 0..65535 bytes (encoders cut it to MaxMessageBytes)   |
//
// # Version 2
//
// Version 2 (MediaTypeV2, version byte 2) adds record headers and
// producer timestamps; header, kinds and produce answers are version 1's.
// A produce request record and a fetch answer record each gain a 2-byte
// header count after value len (a request record also an 8-byte timestamp
// after partition, valid when flags bit 4 is set, else 0), and their
// headers follow the value:
//
//	kind 1 record: flags 1 | partition 4 | timestamp 8 | key len 4 | value len 4 | header count 2 | key | value | headers
//	kind 3 record: flags 1 | offset 8 | timestamp 8 | key len 4 | value len 4 | header count 2 | key | value | headers
//	header:        flags 1 (bit 1: value null) | key len 2 (1-256, UTF-8) | value len 4 | key | value
//
// At most MaxHeaders headers a record; header keys and values count in
// MaxRecordBytes. A version 1 fetch answer leaves headers out; version 1
// produce requests cannot carry headers or timestamps.
//
// # Limits
//
// Decoders check every count and length against its maximum and against
// the bytes left before they allocate or slice: a count above MaxRecords or
// a record above MaxRecordBytes is ErrTooLarge (HTTP 413); a length beyond
// the end of the body is ErrTruncated; anything else that is not the format
// (magic, version, kind, reserved bits, flags, trailing bytes, checksum) is
// ErrFormat (both HTTP 400). The body size itself (MaxBodyBytes for a
// request) is the transport's to bound. Decoded keys and values alias the
// input; a null key or value decodes as nil, an empty one as a non-nil
// empty slice.
package wire
