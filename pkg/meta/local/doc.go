// Package local is the embedded meta.Store: the whole metadata set lives in
// memory and every mutation is appended to a journal file and fsynced before
// the method returns. It is what the zero-setup local server and library
// users run; Lambda runs the DynamoDB adapter instead. Both pass the same
// conformance suite, package meta/metatest.
//
// # Files
//
// One store owns one directory:
//
//	LOCK                          flock(LOCK_EX) held while the store is open
//	SNAPSHOT                      every item as of the start of journal <seq> (optional)
//	SNAPSHOT.tmp                  a snapshot being written; removed at Open
//	journal-0000000000000007.log  mutations since SNAPSHOT, oldest first
//	CLOSED                        the journal's seq and length at the last clean Close (optional)
//	CLOSED.tmp                    a close record being written; removed at Open
//	journal-….log.dropped-at-<n>  bytes WithTruncateDamaged cut off at offset n; kept for the operator
//
// Open loads SNAPSHOT (if any), replays journal files with seq at or above
// the snapshot's seq in order, and appends to the last one. Journal seqs are
// contiguous; journals below the snapshot's seq are leftovers of an
// interrupted rotation and are deleted.
//
// # File layout
//
// All integers are little-endian. Wire constants never change. A journal and
// a snapshot share one layout: a 20-byte file header, then frames back to
// back.
//
//	file header (20 bytes)
//	+--------+---------+----------+----------+----------+
//	| magic  | version | reserved |   seq    | hdr crc  |
//	|  4 B   |   2 B   |   2 B    |   8 B    |   4 B    |
//	+--------+---------+----------+----------+----------+
//	0        4         6          8          16         20
//	  "TLMJ" journal      zero       uint64    CRC-32C of bytes 0..15
//	  "TLMS" snapshot
//
//	frame (8-byte header + payload)
//	+----------+----------+---------------------------+
//	|  length  |   crc    |          payload          |
//	|   4 B    |   4 B    |        length bytes       |
//	+----------+----------+---------------------------+
//	0          4          8                           8+length
//
// | field   | meaning                                                         |
// |---------|-----------------------------------------------------------------|
// | seq     | journal: its own sequence number, equal to the one in its name; |
// |         | snapshot: the first journal to replay on top of it              |
// | length  | payload bytes, 1..MaxEntrySize (so the top byte is always zero) |
// | crc     | CRC-32C (Castagnoli) of the 4 length bytes followed by the      |
// |         | payload: a flipped length on a whole frame fails the CRC        |
// | payload | one JSON entry, below                                           |
//
// A payload is one mutation carrying the full new value of the item it
// touches, so replay is "set" or "delete", never "modify":
//
//	{"op":"put_topic","topic":{...meta.TopicConfig}}
//	{"op":"del_topic","name":"orders"}
//	{"op":"put_part","part":{...meta.Partition}}
//	{"op":"del_part","key":{"topic":"orders","topic_id":"...","partition":3}}
//	{"op":"put_offsets","group":"g1","offsets":[{...meta.GroupOffset},...]}
//	{"op":"del_offsets","group":"g1","name":"orders"}   every offset of g1 for topic orders
//	{"op":"put_group","gstate":{...meta.GroupState}}  the whole item, Version already bumped
//	{"op":"del_group","group":"g1"}
//	{"op":"put_token","token":{...meta.Token}}  an access token: its secret's hash, never the secret
//	{"op":"del_token","name":"4f1c2a9be0d37a51"}  a revocation
//	{"op":"batch","batch":[{...entry},...]}  journal only: mutations committed together, in order
//	{"op":"end","count":42}     snapshot only: the last frame, count of frames before it
//	{"op":"closed","size":9000} CLOSED only: its one frame, the journal's length
//
// A partition's "version" and "deleted" fields, a catalog entry's "cold_ms"
// and a group offset's "topic_id" are absent in files written before they
// existed and read as 0, false, 0 and "".
//
// # Durability and recovery
//
// A mutation checks its condition against the in-memory state and stages
// its entry; the entries staged while a commit is in flight are written
// together as the next frame (group commit: one entry as itself, several
// as one batch entry, applied all or none), with one positioned write and
// one fdatasync, and only then applied to the state readers see and
// answered. A crash can therefore tear at most the last frame of the last
// journal, and only one nobody was told about.
// Open tells a torn tail from corruption the way etcd's WAL decoder does:
//
//   - the last journal ends inside a frame header, or inside a frame whose
//     length runs past the end of the file: torn, truncated away;
//   - a zero length with nothing but zero bytes after it: a zero-filled
//     tail (the size reached the disk, the data did not): torn, truncated;
//   - a whole frame failing its CRC with only zero bytes after it and a
//     zero-filled 512-byte sector in its payload: torn, truncated;
//   - anything else that does not decode (a CRC failure with data after it,
//     a length over MaxEntrySize, a zero length followed by data, bad JSON
//     under a good CRC): damage, ErrCorrupt, and Open fails. So does any flaw
//     in the snapshot or in a journal that is not the last one, which were
//     fully fsynced before anything newer was written.
//
// A bit flip in the low bytes of a length field that makes a frame in the
// middle claim to run past the end of the file looks like a torn tail (the
// CRC covering the length catches every other flip of it). Open tells them
// apart by looking for a whole frame after it: JSON holds no 0x00 byte and
// every payload starts with {"op":, so no frame can start inside another's
// payload, and a frame is appended only after the one before it was
// fsynced. A whole frame after the suspect one proves the suspect was
// committed: damage, not a torn tail.
//
// # Damage
//
// What Open does, and reports (Store.Recovery, and one ERROR record through
// WithLogger naming the file, the offset, the bytes dropped and the cause):
//
//   - a torn tail, at most the one frame an interrupted append can leave
//     (the length in its header when that reached the disk): truncated,
//     logged as "journal torn tail dropped". A crash mid-append is normal;
//     the dropped mutation was never acknowledged. It is still logged at
//     ERROR because a file truncated at a frame's middle looks the same.
//   - evidence that committed frames are gone: a torn-looking tail longer
//     than one such frame (zeros past the end its own header names, a
//     journal zeroed from its header on), or a journal whose whole frames
//     end before the length CLOSED records (truncated or emptied while the
//     store was closed, or a torn-looking last frame that was committed;
//     CLOSED is a lower bound on that journal's length until a rotation
//     replaces it, and says nothing after a crash). Open truncates what
//     does not decode and opens, logging "journal lost committed data" with
//     the counts (Recovery.LostCommitted, DroppedBytes, MissingBytes): the
//     frames are not on disk any more, so refusing to start would save
//     nothing, and the caller decides what to do about it (the server
//     surfaces it).
//   - damage (a flipped byte mid-journal, robustness F6): Open refuses,
//     ErrCorrupt, and leaves the files untouched. The frames after the
//     damage are still on disk and were committed; truncating them would
//     roll committed metadata back silently, and the segment files they
//     describe would then be overwritten by the next producer. The explicit
//     recovery option WithTruncateDamaged opens such a store: it copies the
//     bytes from the damage to the end of the file into
//     journal-….log.dropped-at-<offset> (fsynced), truncates the last
//     journal there, and reports "journal lost committed data" with the
//     number of intact frames it dropped. It covers frames of the last
//     journal only: a damaged file header, snapshot or older journal still
//     fails Open.
//
// A failed write or fsync (a full disk, an I/O error) leaves the journal's
// state unknown (after a failed fsync Linux may already have dropped the
// dirty pages), so the mutation returns meta.ErrUnavailable and the store
// refuses further mutations with it; reads keep serving the last durable
// state. Reopening recovers. A context that ends before a method runs is
// meta.ErrUnavailable too. These errors keep their cause for errors.Is
// (syscall.ENOSPC, context.DeadlineExceeded), but their messages name no
// path under the store's directory: a client may see them.
//
// # Snapshots
//
// When the journal passes the snapshot threshold (4 MiB by default,
// WithSnapshotBytes) the next mutation rotates it, still under the writer
// lock: create journal seq+1 with its header (fsync file and directory),
// switch writes to it, write SNAPSHOT.tmp with every item and seq+1, fsync
// it, rename it over SNAPSHOT, fsync the directory, delete older journals.
// A crash at any step leaves a state Open replays to the same items. A
// failed rotation does not fail the mutation that triggered it (that one is
// already durable); it is retried after another threshold of journal.
//
// # Concurrency
//
// Store is safe for concurrent use. Decisions are serialized by a staging
// lock, never held across a disk write: a mutation's condition is checked
// against the durable state plus every entry staged before it, so
// mutations are linearized in staging order. Commits are serialized by a
// commit lock held across the write and the fdatasync: a mutation that
// finds a commit in flight waits for it to release the lock, then returns
// if that commit covered it, or else commits everything staged by then in
// one frame (BenchmarkCommitConcurrent: 4 writers take 0.4 syncs a
// commit, 16 writers 0.12). Every answer, a refusal or a no-op included, waits until
// everything staged before its decision is durable, so no answer depends
// on a mutation a crash could undo; a failed write or sync fails every
// mutation waiting on it. Reads take a read lock on the durable state,
// which is only ever changed after the change is durable, so readers never
// wait for a disk and never see a mutation that a crash could undo. Lock
// order: commit lock, staging lock, state lock. Every value returned is a
// copy.
//
// Two processes (or two Opens in one process) cannot share a directory: Open
// takes flock(LOCK_EX|LOCK_NB) on LOCK and returns ErrLocked if it is held.
// The lock is released by Close or by the process dying.
package local
