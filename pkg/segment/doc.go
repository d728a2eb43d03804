// Package segment stores the bytes of one partition segment: a .log file of
// records, and the sparse .index and .timeindex files beside it (package
// index encodes those). It knows nothing of leases, topics or tiers: callers
// hand it a directory, a base offset, an epoch and, on reopen, the committed
// length they trust.
//
// # Files
//
// A segment is named by its base offset and the epoch of the writer that
// created it (DESIGN.md section 4: fence by name):
//
//	00000000000000000000-0000000000000001.log        records
//	00000000000000000000-0000000000000001.index      offset    -> byte position
//	00000000000000000000-0000000000000001.timeindex  timestamp -> offset
//
// # Log file layout
//
// All integers are little-endian. A .log file starts with a 32-byte file
// header, followed by records back to back. Wire constants never change.
//
//	file header (32 bytes)
//	+--------+---------+----------+-------------+----------+----------+
//	| magic  | version | reserved | base offset |  epoch   | hdr crc  |
//	|  4 B   |   2 B   |   6 B    |     8 B     |   8 B    |   4 B    |
//	+--------+---------+----------+-------------+----------+----------+
//	  "TLSG"     1        zero        int64        uint64    CRC-32C of bytes 0..27
//
//	record (28-byte header + body)
//	+----------+--------+--------+-------------+-----------+-----+-------+
//	|  offset  |  size  |  crc   |  timestamp  |  keyinfo  | key | value |
//	|   8 B    |  4 B   |  4 B   |     8 B     |    4 B    |     |       |
//	+----------+--------+--------+-------------+-----------+-----+-------+
//	0          8        12       16            24          28
//
// | field     | meaning                                                        |
// |-----------|----------------------------------------------------------------|
// | offset    | absolute offset of the record, dense within the partition      |
// | size      | body length: len(key) + len(value); at most MaxBodySize        |
// | crc       | CRC-32C (Castagnoli) of bytes 16..end: timestamp, keyinfo, key,|
// |           | value                                                          |
// | timestamp | milliseconds since the Unix epoch, assigned at append          |
// | keyinfo   | bits 0-29 key length; bit 30 set: value is null (tombstone);   |
// |           | bit 31 set: key is absent. Both flags imply a zero length.     |
//
// The CRC does not cover offset and size: a flipped size makes the CRC run
// over the wrong bytes and fail; a flipped offset breaks density, which every
// scan checks (each record's offset is the previous one plus one).
//
// # Durability
//
// Writer.Append writes a whole batch with one positioned write (pwrite, never
// O_APPEND, which is not atomic across NFS clients) and Writer.Sync fsyncs the
// .log file. The index files are written with the same positioned writes but
// are hints: they are fsynced only when a segment is sealed, entries that point
// at or past the committed length are ignored, and a short index is completed
// by scanning the log. So a batch costs one write and one fsync.
//
// # Recovery
//
// Recover checks the records from the last usable index entry up to the
// committed length the caller hands in (what a crash could have touched),
// completes the indexes, and truncates the three files to it: bytes past it
// belong to an aborted attempt. A record there that fails its CRC is
// corruption (ErrCorrupt), not a torn tail, and nothing is truncated. Older
// committed bytes are checked by every read (CRC per record) and in full by
// Reader.Verify and the compactor before a segment is tiered. With an unknown committed length
// (-1) Recover keeps the longest valid prefix and truncates the torn tail.
// A closed segment is never written again.
//
// # Concurrency
//
// A Writer is not safe for concurrent use: one goroutine appends. Readers open
// the files themselves, read only below a committed length they were given,
// and are safe to use from many goroutines alongside a Writer.
package segment
