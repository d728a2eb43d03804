// Package segment stores the bytes of one partition segment: a .log file of
// records, and the sparse .index and .timeindex files beside it (package
// index encodes those). It knows nothing of leases, topics or tiers: callers
// hand it a directory, a base offset, an epoch and, on reopen, the committed
// length they trust.
//
// # Files
//
// A segment is named by its base offset and the epoch of the writer that
// created it (docs/design.md "Invariants", I5: fence by name):
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
//	+--------+---------+---------+----------+-------------+----------+----------+
//	| magic  | version |  flags  | reserved | base offset |  epoch   | hdr crc  |
//	|  4 B   |   2 B   |   2 B   |   4 B    |     8 B     |   8 B    |   4 B    |
//	+--------+---------+---------+----------+-------------+----------+----------+
//	  "TLSG"    1 or 2                zero       int64        uint64    CRC-32C of bytes 0..27
//	0        4         6         8          12            20         28
//
// | version | records                                                     |
// |---------|-------------------------------------------------------------|
// | 1       | no headers; append time. Bytes 6..11 are reserved, zero.    |
// | 2       | may carry headers; flags bit 0 (FlagCreateTime) marks a      |
// |         | create-time topic's segment, whose timestamps may decrease. |
// |         | Other flag bits are zero; a file with one set is refused.   |
//
// Create writes version 2. Version 1 files (written before headers) are
// read, verified, summarized and recovered as they are, and never
// continued: Open answers ErrOldVersion and the caller seals the segment
// and rolls, so after an upgrade each partition's old active segment is
// sealed once and every record written since is in a version 2 file. (A
// version 1 file could not take a record with headers, and continuing it
// would make a file's version say nothing about its records.)
//
//	record (28-byte header + body)
//	+----------+--------+--------+-------------+-----------+-----------+-----+-------+
//	|  offset  |  size  |  crc   |  timestamp  |  keyinfo  | [headers] | key | value |
//	|   8 B    |  4 B   |  4 B   |     8 B     |    4 B    |           |     |       |
//	+----------+--------+--------+-------------+-----------+-----------+-----+-------+
//	0          8        12       16            24          28
//
// | field     | meaning                                                        |
// |-----------|----------------------------------------------------------------|
// | offset    | absolute offset of the record, dense within the partition      |
// | size      | body length: headers block + key + value; at most MaxBodySize  |
// | crc       | CRC-32C (Castagnoli) of bytes 16..end: timestamp, keyinfo,     |
// |           | headers, key, value                                            |
// | timestamp | milliseconds since the Unix epoch: assigned at append, or on a |
// |           | create-time topic the producer's                               |
// | keyinfo   | bits 0-28 key length; bit 29 set: a headers block starts the   |
// |           | body (version 2 only); bit 30 set: value is null (tombstone);  |
// |           | bit 31 set: key is absent. Absent and null imply zero lengths. |
//
//	headers block (version 2, keyinfo bit 29 set)
//	+---------+------------------------------------------------------------+
//	|  count  | count times: | key len 2 B | value len 4 B | key | value |  |
//	|  2 B    |                                                            |
//	+---------+------------------------------------------------------------+
//
// count is at least 1 (a record without headers has no block and bit 29
// clear); header keys are bytes (the API allows 1 to 256 bytes of UTF-8);
// a value length of 0xFFFFFFFF is a null value, distinct from an empty one.
// Keys may repeat; order is kept. The value length of the record is what
// the size leaves after the block and the key. A record without headers is
// encoded exactly as in version 1, byte for byte: headers cost nothing
// where there are none.
//
// The CRC does not cover offset and size: a flipped size makes the CRC run
// over the wrong bytes and fail; a flipped offset breaks density, which every
// scan checks (each record's offset is the previous one plus one). The CRC
// covers the headers block, and a block that does not parse exactly (a
// count of zero, a header running past the record, a null value with bytes
// after the key) is damage like a failed CRC.
//
// # Timestamps and the time index
//
// On an append-time segment timestamps never decrease (docs/design.md
// "Invariants", I6) and every check says so: Append refuses one that goes
// back, and Verify, Summarize and Recover count one as damage. On a
// create-time segment (FlagCreateTime) they may go back and none of these
// checks applies. Either way a time index entry holds the largest timestamp
// of the records up to and including its record (as Kafka's), so entries
// never decrease and every record up to the last entry older than T is
// older than T: the search for the first record at or after T starts there.
// State.LastTS, Summary.LastTS and the catalog's LastTS are the largest
// timestamp of a segment (what retention and offset-for-time skip by),
// Summary.FirstTS the smallest; on an append-time segment they are the last
// and the first.
//
// # Durability
//
// Create writes the .log header and fsyncs the .log and the directory
// before it returns, so a commit may name a new segment at once and a
// segment a commit names always has a durable header (a roll costs these two
// fsyncs). Writer.Append writes a whole batch with one positioned write
// (pwrite, never O_APPEND, which is not atomic across NFS clients) and
// Writer.Sync fsyncs the .log file. The index files are written with the
// same positioned writes but are hints: they are fsynced only when a segment
// is sealed, entries that point at or past the committed length are
// ignored, and a short index is completed by scanning the log. So a batch
// costs one write and one fsync.
//
// # Recovery
//
// Recover checks the file header (magic, version, CRC, base offset and
// epoch) and the records from the last usable index entry up to the
// committed length the caller hands in (what a crash could have touched),
// completes the indexes, and truncates the three files to it: bytes past it
// belong to an aborted attempt. When the committed bytes are not whole it
// changes nothing and fails, and the caller seals the segment at its
// committed length and writes on in a new one (docs/design.md "Segment: `.log`
// (`pkg/segment`)"):
//
//   - a file shorter than the committed length (a lost writeback, an fsync
//     that lied) is ErrTruncated, not ErrCorrupt, with a *DamageError
//     naming the first offset not wholly in the file;
//   - damaged bytes below the committed length (a record that fails its
//     CRC, a broken offset sequence, a record running past the committed
//     length) and a damaged or foreign file header are ErrCorrupt, with a
//     *DamageError for damaged records.
//
// Older committed bytes are checked by every read (CRC per record) and in
// full by Reader.Verify and by Summarize, which the compactor runs before a
// segment is tiered. With an unknown committed length (-1) Recover keeps the
// longest valid prefix and truncates the torn tail. A closed segment is
// never written again.
//
// # Damage
//
// Disks and EFS can hand back damaged bytes. A record that fails a check is
// never served, and damage never makes intact records unreadable. A Reader
// knows the committed length (its limit), and every record says how long it
// is, so reading goes around damage:
//
//   - Read from before the damage returns the good records up to it and a
//     nil error, like a short read.
//   - Read from the first damaged offset, or from any offset before the
//     next good record, returns a *DamageError: First is the first damaged
//     offset, Pos the byte where the damage starts, Next the first offset
//     readable again (-1 if none is, below the limit), and Err wraps
//     ErrCorrupt or ErrTruncated, so errors.Is still works. A file shorter
//     than the limit is damage at its end: First is the first offset not
//     wholly there, Next is -1, Err wraps ErrTruncated. A record running
//     past the limit with good records after it is ErrCorrupt (a damaged
//     size); with none after it, ErrTruncated (a torn tail or a limit
//     inside a record: the bytes cannot tell).
//   - Read from Next on returns the records there.
//
// Resync: finding Next. The CRC does not cover a record's offset and size,
// so a record boundary is trusted only when it is checked. The first index
// entry past the damage whose record decodes, passes its CRC and carries
// the entry's offset is a checked boundary. Between the damage and that
// boundary (or the limit, when no entry helps) the reader tries every byte
// position for a record whose offset is above First and no higher than the
// records that fit in between allow, that passes its CRC, and after which
// the records are dense up to the checked boundary (arriving with its
// offset) or to the limit (or to the end of a file shorter than the limit).
// The first such position gives Next; failing that, the checked boundary
// does. The chain rule keeps records hidden inside a value (a producer may
// send bytes that encode records) from passing for the real ones: such a
// chain breaks where it meets real data. The price is that records between
// two damaged stretches with no checked boundary between them count as
// damaged; with the default index interval that is a few KiB. The search
// allocates nothing per position, steps over the records of a chain it has
// already followed to damage, and beyond one pass over the bytes between
// the damage and the boundary reads at most 8 times as many again, plus
// 2 MiB, for its checks before it gives up (only bytes crafted to look like
// records get near that).
//
// OffsetForTime goes around damage too, and is never wrong. On an
// append-time segment timestamps never decrease, so a damaged record's
// timestamp lies between those of the good records around it. If the
// first good record after the damage is older than the wanted timestamp,
// so were the damaged ones and the search goes on; otherwise a damaged
// record may be the answer, and OffsetForTime returns the *DamageError (the
// answer lies in [First, Next]) rather than an offset that may be wrong. On
// a create-time segment, or one whose header is damaged (its kind is then
// unknown), a damaged record's timestamp could be anything: damage met
// before an answer is found is returned as the *DamageError. An answer
// found before any damage is right on both kinds.
//
// Reader.Verify and Summarize fail on any damage below the limit, and
// Recover on any it checks (from the last index entry on), with the
// *DamageError detail.
//
// The file header. Every Reader checks it on first use (one 32-byte read),
// Verify, Summarize and Recover check it too: magic, version, CRC, base
// offset and epoch against the segment's name. A header whose bytes are
// damaged (its CRC fails) in front of intact records does not stop reads:
// records verify themselves by CRC and density from the base offset the
// name gives. Verify, Summarize and Recover fail on it (ErrCorrupt), so the
// compactor quarantines the segment instead of tiering it and a writer seals
// and rolls instead of continuing it. A header that is intact but names
// another base offset or epoch, or an unknown version, is not this
// segment's file: reads refuse it as well (ErrCorrupt), since its records
// could be another writer's.
//
// # Concurrency
//
// A Writer is not safe for concurrent use: one goroutine appends. Readers open
// the files themselves, read only below a committed length they were given,
// and are safe to use from many goroutines alongside a Writer.
package segment
