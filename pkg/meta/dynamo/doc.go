// Package dynamo is the DynamoDB adapter of meta.Store: what the Lambda
// functions run. It passes the same conformance suite (package
// meta/metatest) as the embedded adapter, against two real wire-protocol
// emulators (minidyn in-process, dynalite as a Node process; see Tests).
//
// # Table
//
// One table, on-demand billing, created by CreateTable:
//
//	partition key  pk  (S)
//	sort key       sk  (S)
//
// No secondary index, no TTL, no streams. Every item type lives in it:
//
//	item       pk                                   sk                       attributes
//	---------  -----------------------------------  -----------------------  ------------------------------
//	topic      "topics"                             "t#<topic>"              name id partitions retention_ms
//	                                                                         retention_bytes segment_bytes
//	                                                                         segment_ms cleanup_policy created_ms
//	partition  "p#<topic>#<topic id>#<partition>"   "state"                  topic topic_id partition
//	                                                                         epoch version deleted owner
//	                                                                         lease_until next_offset last_ts
//	                                                                         active sealed log_start_offset
//	                                                                         cold_end
//	catalog    "s#<topic>#<topic id>#<partition>"   "%020d" of next_offset   the CatalogEntry fields (cold_ms
//	                                                                         absent until MarkSegmentCold)
//	group      "g#<group>#<topic>"                  "%010d" of partition     topic topic_id partition offset
//	                                                                         metadata
//	group state "groups"                            the group name           group version state (the
//	                                                                         meta.GroupState as JSON)
//	token      "tokens"                             the token id             token (the meta.Token as JSON:
//	                                                                         the secret's hash, never the secret)
//
// <partition> is decimal. Each <...> component is escaped ("%" -> "%25",
// "#" -> "%23"), so a key names exactly one tuple whatever the strings hold;
// valid topic names contain neither character and read as themselves.
// Attribute names are the json names of the meta types' fields.
//
// Values: every integer is a DynamoDB number (N) written with strconv, so
// int64, uint64 (epoch) and uint32 (CRCs) round-trip exactly. The nested
// structs are native DynamoDB values, encoded with package attributevalue
// under the json tag names: active is a map (M) of the SegmentInfo fields,
// sealed a list (L) of such maps, oldest first. Absent values are written,
// not removed (minidyn ignores a top-level REMOVE): a released lease is
// owner "" and lease_until 0, a nil Active is NULL, and an empty Sealed is
// NULL too (minidyn returns an empty list as the string ""). Reading
// accepts a missing attribute for any of them as well. Items written before
// commit versions have no version (read as 0), no deleted (false), no
// cold_ms (0) and no topic_id (""). deleted is a BOOL, written only true.
//
// Why this shape: every method is one single-item request on a key it can
// compute, or one Query on one partition key (Topics, Segments,
// GroupOffsets, Groups). Nothing Scans. The catalog's sort key is the zero-padded
// NextOffset, so "entries with NextOffset > from, ascending" is one Query
// with KeyCondition sk > "%020d"(from). Partition items and catalog items
// have distinct partition keys, so a catalog Query never meets the state
// item, and a hot partition's produce traffic (two UpdateItems per request
// on its state item) does not share a key with anything else. All topic
// items share pk "topics": topic reads are rare (the broker caches them)
// and well under one key's ~3,000 reads/s.
//
// # Writes
//
// Single-item conditional writes only, no transactions (dynalite has none,
// minidyn's roll back whole tables, and the write path of docs/design.md
// does not need them):
//
//	CreateTopic      PutItem    IF attribute_not_exists(pk)                 -> ErrTopicExists
//	DeleteTopic      DeleteItem IF attribute_exists(pk) AND id = :id          -> ErrNotFound
//	Acquire          UpdateItem IF (attribute_not_exists(pk) OR attribute_not_exists(owner)
//	                               OR owner = "" OR lease_until <= :now OR owner = :me)
//	                               AND (attribute_not_exists(deleted) OR deleted = false)
//	                                                                         -> ErrLeaseHeld or ErrNotFound
//	                 SET owner, lease_until, key fields, defaults via if_not_exists;
//	                 ADD epoch 1, version 1;
//	                 ReturnValues ALL_OLD: the new item is computed from the old one, and
//	                 TakenOver is "the old item had an owner"
//	Commit           UpdateItem IF attribute_exists(pk) AND epoch = :e AND owner = :o
//	                               AND version = :v (p.Version 0: OR attribute_not_exists(version))
//	                               AND (attribute_not_exists(deleted) OR deleted = false)
//	                 SET next_offset, last_ts, active, sealed, owner, lease_until, version = :v+1
//	                 (owner "" and lease_until 0 on release);
//	                 never log_start_offset or cold_end                     -> ErrFenced
//	FencePartition   UpdateItem, unconditional: SET deleted = true, owner "", lease_until 0,
//	                 key fields, defaults via if_not_exists; ADD epoch 1, version 1
//	AdvanceLogStart  UpdateItem IF attribute_exists(pk) AND
//	AdvanceColdEnd              (attribute_not_exists(f) OR f < :v)  SET f = :v
//	PutSegment       PutItem    IF attribute_not_exists(pk)                 -> compare: nil or ErrConflict
//	MarkSegmentCold  UpdateItem IF attribute_exists(pk) AND (attribute_not_exists(cold_ms)
//	                               OR cold_ms = 0)  SET cold_ms = :ms        -> nil (marked) or ErrNotFound
//	UpdateTopic      PutItem    IF attribute_exists(pk) AND id = :id AND partitions = :old
//	                                                                         -> ErrConflict or ErrNotFound
//	PutGroup         PutItem    IF version = :v (v 0: attribute_not_exists(pk))  -> ErrConflict
//	DeleteGroup      DeleteItem IF version = :v (v 0: attribute_not_exists(pk))  -> ErrConflict
//	DeleteSegment, DeletePartition: unconditional DeleteItem; CommitOffsets: one PutItem per offset;
//	DeleteGroupOffsets: one Query and one DeleteItem per offset.
//
// Commit with p.Owner == "" is ErrFenced without a request. The produce
// path costs exactly two writes: Acquire and Commit, one UpdateItem each.
//
// The commit version makes a Commit apply once: a copy of it that the
// network delivers late, after the holder committed again, names a version
// the item has left (TestDelayedCommitReplayIsRefused). A refused Acquire
// is ErrNotFound when the item is deleted, ErrLeaseHeld otherwise. A
// refused AdvanceX or MarkSegmentCold is success when the item exists (the
// value was not greater; it was marked already) and ErrNotFound when it
// does not. The writes ask for the old item on a failed condition
// (ReturnValuesOnConditionCheckFailure ALL_OLD); when the failure carries
// no item (dynalite ignores the parameter, and a missing item has none) a
// consistent GetItem tells the cases apart, and a race with the item's
// creation re-runs the write. PutSegment resolves its refused put the same
// way. Reads are strongly consistent (ConsistentRead) throughout.
//
// # Errors, retries, timeouts
//
// Errors are translated here, at the boundary: a ConditionalCheckFailed
// becomes the sentinel of the table above; anything else is wrapped with
// the operation's name.
//
// Retries are this package's own loop; the SDK's retryer is switched off
// per call (aws.NopRetryer), so the policy does not depend on how the
// client was built and every HTTP attempt is visible here. The loop
// retries, with exponential backoff and full jitter (base 25 ms, cap 1 s,
// 8 attempts by default; WithRetry):
//
//   - throttling (ProvisionedThroughputExceededException,
//     ThrottlingException, RequestLimitExceeded, ...) and refused
//     connections: the request was not applied;
//   - HTTP 5xx, transport errors and an attempt timeout (WithAttemptTimeout):
//     the request may have been applied. For a write this makes the call
//     "ambiguous": a later ConditionalCheckFailed may be the echo of our
//     own landed attempt, so it is reported as meta.ErrUnavailable, unless
//     the operation can tell by reading (CreateTopic compares the stored
//     topic, PutSegment the entry, Advance* and MarkSegmentCold the value;
//     Commit succeeds when the item is at p.Version+1 with p's epoch, the
//     owner the commit leaves, and exactly p's next_offset, last_ts, active
//     and sealed: only that commit can have written it; Acquire's condition
//     admits its own owner, so a re-run succeeds and reports TakenOver;
//     FencePartition is unconditional). Never ErrFenced after an
//     ambiguous attempt.
//
// Retries exhausted, the call's deadline (the caller's ctx, capped by
// WithCallTimeout, default 5 s) or a cancellation end the call with an error
// wrapping meta.ErrUnavailable: the outcome of a write is unknown. This holds
// for every method, CreateTopic and CommitOffsets included. Error messages
// name the operation and the service's error code and message, an HTTP
// status, a timeout or a transport error, never the SDK's own text, which
// carries the request id (a client may see the message); the SDK error
// stays in the chain for errors.As (awshttp.ResponseError.ServiceRequestID).
//
// Counters (requests by operation, one per HTTP attempt; conditional
// failures; lease conflicts; retries; throttles) are kept in a Counters,
// goroutine-safe, read with Snapshot.
//
// # Tests
//
// go test ./pkg/meta/dynamo runs the conformance suite twice:
//
//   - against minidyn (github.com/truora/minidyn/server), served in-process
//     by httptest on 127.0.0.1;
//   - against dynalite, a Node process. The test finds the repo root (the
//     directory holding go.mod), and if tools/dynalite/node_modules/dynalite/cli.js
//     is missing runs `npm ci --prefix tools/dynalite` (the exact version is
//     pinned in tools/dynalite/package-lock.json); it then starts
//     `node cli.js --host 127.0.0.1 --port <free> --createTableMs 0`, runs the
//     suite and kills the process. node and npm must be on PATH: without them
//     the test fails (it does not skip). To prepare by hand:
//     npm ci --prefix tools/dynalite
//
// Each conformance subtest gets a fresh table with a unique name. The error
// mapping (conditional failure vs throttle vs timeout) is tested against
// canned httptest servers.
//
// # Emulator notes
//
// Found by these tests; TestNumbersRoundTrip and TestConditionCounters
// pin them per emulator.
//
// minidyn v0.8.2 (in-process):
//   - it sends no usable X-Amz-Crc32: the client needs
//     DisableValidateResponseChecksum;
//   - DescribeTable may report no TableStatus, so the TableExists waiter
//     never finishes: CreateTable polls and takes "" as ready. No ListTables;
//   - a top-level REMOVE in an UpdateExpression is silently ignored, and an
//     empty list (L []) reads back as S "": hence SET-only writes and NULL;
//   - UpdateItem evaluates the whole item in float64: every number of an
//     updated item above 2^53 is rounded (PutItem is exact; a catalog entry
//     marked cold has been through UpdateItem). Offsets, sizes, millisecond
//     timestamps and epochs stay far below 2^53, and DynamoDB and dynalite
//     are exact;
//   - it honours ReturnValuesOnConditionCheckFailure;
//   - its table-map operations (CreateTable, DescribeTable) take no lock:
//     do not create tables while other requests run on the same server.
//
// dynalite 4.0.0 (Node, tools/dynalite):
//   - no transactions, no TTL;
//   - it ignores ReturnValuesOnConditionCheckFailure, so a refused
//     Acquire, Advance*, PutSegment or MarkSegmentCold, and a refused
//     Commit after an ambiguous attempt, cost one GetItem more than on
//     DynamoDB;
//   - numbers are exact (big.js), ADD included; empty strings are accepted.
package dynamo
