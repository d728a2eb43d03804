// Package meta is the metadata port: topics, partition state with its offset
// lease, and consumer-group offsets. It is the only mutable metadata tierlog
// has. Two adapters implement Store: package meta/local (an embedded journal
// under the data dir) and package meta/dynamo (DynamoDB); package meta/mem is
// the in-memory reference the conformance suite (meta/metatest) checks both
// against.
//
// Every mutation is a single-item conditional write, so each adapter can be
// built on DynamoDB's UpdateItem/PutItem with a ConditionExpression and
// nothing more: no transactions, no multi-item atomicity. Items:
//
//	topic      key "t#<topic>"                           TopicConfig
//	partition  key "p#<topic>#<topic id>#<partition>"    Partition (lease + committed state)
//	group      key "g#<group>#<topic>#<partition>"       GroupOffset
//	group state key "G#<group>"                          GroupState (membership, registry)
//	segment    key "s#<topic>#<topic id>#<partition>",
//	           sorted by next offset                      CatalogEntry (cold tier)
//	token      key "tokens", sorted by token id           Token (access tokens; TokenStore)
//
// Who writes what: the partition's lease holder writes the lease and the
// committed write state (Commit); the compactor, holding no lease, moves the
// cold-tier boundary and the log start forward (AdvanceColdEnd,
// AdvanceLogStart: monotonic conditional writes) and owns the catalog. Commit
// never touches the compactor's fields, so neither overwrites the other.
//
// The lease protocol (docs/design.md "The write path") lives in package
// partition; this package only guarantees the conditions: Acquire succeeds
// only on a free or expired lease and bumps the epoch; Commit succeeds only
// while the caller's epoch, owner and commit version are still the item's.
//
// # Commit versions
//
// A partition item carries a commit Version, bumped by every Acquire and
// every Commit (never by the compactor's writes). A Commit applies only if
// the item's Version is still the one the caller read (p.Version) and then
// sets it to p.Version+1. So a copy of an earlier commit that the network
// delivers late, after the holder committed again, can never apply: it
// names a version the item has left. Epoch and owner alone do not give
// this: a holder keeping its lease commits many times under one epoch.
// A retried Commit whose first attempt did apply finds Version+1 and the
// same committed state; an adapter that cannot tell whether its attempt
// applied may recognise that case as success and must otherwise answer
// ErrUnavailable, never ErrFenced.
package meta

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrNotFound means the topic (or other item) does not exist.
	ErrNotFound = errors.New("meta: not found")
	// ErrTopicExists means CreateTopic found the name taken.
	ErrTopicExists = errors.New("meta: topic exists")
	// ErrLeaseHeld means another owner holds an unexpired lease.
	ErrLeaseHeld = errors.New("meta: lease held")
	// ErrFenced means the caller's epoch or ownership is no longer current:
	// its commit did not happen.
	ErrFenced = errors.New("meta: fenced")
	// ErrConflict means a catalog entry exists with different contents,
	// or a group state item is no longer at the version the caller read.
	ErrConflict = errors.New("meta: conflict")
	// ErrUnavailable means the store could not say whether a write happened
	// (a timeout, throttling after retries). The caller must treat the
	// outcome as unknown.
	ErrUnavailable = errors.New("meta: unavailable")
)

// TopicConfig is a topic as stored. ID distinguishes incarnations of one
// name: a topic deleted and created again gets a new ID, and partition items
// and files are keyed by it, so nothing of the old one leaks into the new.
type TopicConfig struct {
	Name           string `json:"name"`
	ID             string `json:"id"`
	Partitions     int    `json:"partitions"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionBytes int64  `json:"retention_bytes"`
	SegmentBytes   int64  `json:"segment_bytes"`
	SegmentMs      int64  `json:"segment_ms"`
	CleanupPolicy  string `json:"cleanup_policy"`
	// Cold-tier reads: cache indexes and artifacts, and read this many
	// segments ahead of a sequential consumer.
	CacheEnabled      bool  `json:"cache_enabled"`
	ReadAheadSegments int   `json:"read_ahead_segments"`
	CreatedMs         int64 `json:"created_ms"`
	// TimestampType is "append" or "create" (broker.TimestampAppend,
	// TimestampCreate); "" in items written before it existed means append.
	TimestampType string `json:"timestamp_type,omitempty"`
	// Growth holds the topic's last partition growths, newest first: the
	// count before each and when it was stored. A zero entry is none (and
	// items written before it existed have none). The broker routes by
	// it (broker: routing after a growth).
	Growth [2]Growth `json:"growth,omitzero"`
}

// Growth is one partition growth of a topic: the count before it, and when
// it was stored (unix ms).
type Growth struct {
	From int   `json:"from"`
	AtMs int64 `json:"at_ms"`
}

// SegmentInfo describes one hot segment as committed. Size is the committed
// length of its .log file (file header included); NextOffset is the offset
// after its last committed record (Base when empty).
type SegmentInfo struct {
	Base       int64  `json:"base"`
	Epoch      uint64 `json:"epoch"`
	Size       int64  `json:"size"`
	NextOffset int64  `json:"next_offset"`
	FirstTS    int64  `json:"first_ts"` // -1 when empty
	LastTS     int64  `json:"last_ts"`  // -1 when empty
	CreatedMs  int64  `json:"created_ms"`
}

// Partition is one partition's item: the lease and the committed state.
// The zero Partition (Epoch 0, no Active segment) is a partition nobody has
// written yet.
type Partition struct {
	Topic     string `json:"topic"`
	TopicID   string `json:"topic_id"`
	Partition int    `json:"partition"`

	// Lease.
	Epoch uint64 `json:"epoch"` // bumped by every Acquire
	// Version is the commit version: bumped by every Acquire and Commit,
	// compared by Commit (see the package doc). 0 on an item never written.
	Version uint64 `json:"version"`
	// Deleted marks a partition whose topic is being deleted
	// (FencePartition): Acquire refuses it and no Commit matches it.
	Deleted    bool   `json:"deleted,omitempty"`
	Owner      string `json:"owner"`       // "" when released
	LeaseUntil int64  `json:"lease_until"` // unix ms; meaningful when Owner != ""

	// Committed state, written by the lease holder.
	NextOffset int64         `json:"next_offset"`
	LastTS     int64         `json:"last_ts"` // -1 before the first record
	Active     *SegmentInfo  `json:"active,omitempty"`
	Sealed     []SegmentInfo `json:"sealed,omitempty"` // oldest first

	// Tiering state, written by the compactor. LogStartOffset is the first
	// offset still retained. ColdEnd is the offset below which every
	// segment is in the cold tier catalog: a sealed hot segment whose
	// NextOffset <= ColdEnd may have lost its files, and readers take it
	// from the catalog. The lease holder drops such segments from Sealed.
	LogStartOffset int64 `json:"log_start_offset"`
	ColdEnd        int64 `json:"cold_end"`
}

// CatalogEntry describes one finalized segment in the cold tier: one
// object holding the log bytes, the offset index and the time index, with a
// footer. The entry repeats the footer's fields so a reader can range-read
// the index without reading the footer first.
type CatalogEntry struct {
	Base       int64  `json:"base"`        // first offset
	NextOffset int64  `json:"next_offset"` // offset after the last record
	Epoch      uint64 `json:"epoch"`       // of the hot segment it was made from
	Key        string `json:"key"`         // object key
	Size       int64  `json:"size"`        // object size
	FirstTS    int64  `json:"first_ts"`
	LastTS     int64  `json:"last_ts"`

	// Sections of the object: byte offset, length and CRC-32C of each.
	LogOff    int64  `json:"log_off"`
	LogLen    int64  `json:"log_len"`
	LogCRC    uint32 `json:"log_crc"`
	IndexOff  int64  `json:"index_off"`
	IndexLen  int64  `json:"index_len"`
	IndexCRC  uint32 `json:"index_crc"`
	TimeOff   int64  `json:"time_off"`
	TimeLen   int64  `json:"time_len"`
	TimeCRC   uint32 `json:"time_crc"`
	CreatedMs int64  `json:"created_ms"`
	// ColdMs is when readers were switched to this entry: set by
	// MarkSegmentCold once the partition's ColdEnd has passed NextOffset
	// (0 until then). Hot files of the segment are kept for a grace
	// period counted from it.
	ColdMs int64 `json:"cold_ms,omitempty"`
}

// PartitionKey names a partition item.
type PartitionKey struct {
	Topic     string
	TopicID   string
	Partition int
}

// Acquired is what Acquire returns: the item after the lease was taken, and
// how the previous owner left.
type Acquired struct {
	Partition
	// TakenOver is true when the lease was taken from an owner whose lease
	// had expired without a release: that owner may still be alive (a
	// zombie) and writing, so the new owner must not reuse its files. It
	// is true whenever the previous lease was not released (Owner was not
	// ""), including an owner re-taking its own live lease; false when the
	// previous owner released or there was none.
	TakenOver bool
}

// GroupOffset is a committed consumer-group position: the next offset to
// consume (Kafka's convention).
type GroupOffset struct {
	Topic string `json:"topic"`
	// TopicID is the incarnation of the topic the offset was committed
	// for: an offset whose TopicID is not the topic's current one belongs
	// to a deleted topic and does not apply ("" from stores written before
	// ids were recorded: it applies to any incarnation).
	TopicID string `json:"topic_id,omitempty"`
	// TopicCreatedMs is when that incarnation was created: an offset of an
	// older incarnation never replaces one of a newer (Replaces). 0: not
	// recorded (stores written before it).
	TopicCreatedMs int64  `json:"topic_created_ms,omitempty"`
	Partition      int    `json:"partition"`
	Offset         int64  `json:"offset"`
	Metadata       string `json:"metadata"`
}

// Replaces reports whether offset o may replace cur, the one stored for
// its group, topic and partition: not when cur belongs to a newer
// incarnation of the topic. A commit admitted for an incarnation that was
// deleted and created again while the commit was in flight (a request the
// network or a retry delivers late) is dropped instead of wiping the new
// incarnation's offset, as it would have been deleted with its topic had
// it landed in time.
func (o GroupOffset) Replaces(cur GroupOffset) bool {
	return o.TopicID == cur.TopicID || cur.TopicCreatedMs <= o.TopicCreatedMs
}

// Store is the metadata port. Implementations are safe for concurrent use.
// Every method is a single-item read or a single-item conditional write.
type Store interface {
	// CreateTopic stores t if no topic has its name, else ErrTopicExists.
	CreateTopic(ctx context.Context, t TopicConfig) error
	// Topic returns the named topic or ErrNotFound.
	Topic(ctx context.Context, name string) (TopicConfig, error)
	// Topics returns every topic, sorted by name.
	Topics(ctx context.Context) ([]TopicConfig, error)
	// DeleteTopic removes the topic item if it is incarnation id, else
	// ErrNotFound (no topic of that name, or another incarnation). The id
	// makes the delete safe against its own late copies: a request applied
	// after the topic was deleted and created again must not delete the new
	// one. Partition and group items are left for the caller.
	DeleteTopic(ctx context.Context, name, id string) error

	// UpdateTopic replaces the topic item with t if the stored one is
	// incarnation t.ID with old.Partitions partitions, else ErrConflict
	// (ErrNotFound when no topic has the name or it is another
	// incarnation). The partition count in the condition makes growth
	// safe against a concurrent update (a count never shrinks); the other
	// fields are last writer wins.
	UpdateTopic(ctx context.Context, old, t TopicConfig) error

	// Partition returns the partition item, or the zero state (Epoch 0,
	// LastTS -1) with the key filled in if none exists yet.
	Partition(ctx context.Context, k PartitionKey) (Partition, error)
	// Acquire takes the lease for owner until now+ttl if it is free or
	// expired, bumping the epoch and the version, and returns the item. A
	// Deleted item is ErrNotFound. It returns
	// ErrLeaseHeld if another owner's lease is live. An owner may take its
	// own live lease again: it says it lost its in-memory state (a process
	// restarted under a stable owner name); that counts as a takeover, since
	// the earlier holder did not release. A lease is live while Owner != ""
	// and now < LeaseUntil (unix ms): at exactly now+ttl it has expired. An
	// item that does not exist yet starts from the zero state, so the first
	// Acquire returns Epoch 1. owner must not be "".
	Acquire(ctx context.Context, k PartitionKey, owner string, now time.Time, ttl time.Duration) (Acquired, error)
	// Commit writes p's committed state if p.Epoch, p.Owner and p.Version
	// are still the item's, else ErrFenced, and sets the item's Version to
	// p.Version+1. With release it frees the lease (Owner
	// becomes ""); otherwise it extends it to now+ttl. ErrUnavailable means
	// the outcome is unknown. p's key fields name the item; a missing item
	// is ErrFenced, and so is p.Owner == "" (a released item never
	// matches). The lease need not be live: an expired lease nobody has
	// re-acquired still commits, since every Acquire bumps the epoch first.
	// Commit sets NextOffset, LastTS, Active and Sealed from p, keeps
	// Epoch, and ignores p.LeaseUntil, p.LogStartOffset and p.ColdEnd (the
	// compactor's). An empty Sealed may read back as nil.
	Commit(ctx context.Context, p Partition, release bool, now time.Time, ttl time.Duration) error
	// FencePartition marks partition k Deleted for a topic delete: it bumps
	// the epoch and the version and clears the owner, so no holder's Commit
	// matches again, and Acquire answers ErrNotFound from then on. A missing
	// item is created Deleted (a writer that has the topic cached must not
	// create it afresh). Repeating it is harmless (each call bumps again).
	// The compactor's advances still apply to a Deleted item.
	FencePartition(ctx context.Context, k PartitionKey) error
	// DeletePartition removes a partition item. It is unconditional, and
	// deleting a missing item is not an error. (Topic deletion keeps the
	// fenced items as tombstones instead: see broker.DeleteTopic.)
	DeletePartition(ctx context.Context, k PartitionKey) error

	// AdvanceLogStart sets LogStartOffset to v if v is greater, and leaves
	// it otherwise (monotonic; no lease needed). It fails with ErrNotFound
	// if the item does not exist.
	AdvanceLogStart(ctx context.Context, k PartitionKey, v int64) error
	// AdvanceColdEnd sets ColdEnd to v if v is greater, like AdvanceLogStart.
	AdvanceColdEnd(ctx context.Context, k PartitionKey, v int64) error

	// PutSegment adds a catalog entry if the partition has none with the
	// same NextOffset. An existing entry with the same Base, NextOffset and
	// Key is success (two compactors racing make one entry); any other
	// existing entry for that NextOffset is ErrConflict.
	PutSegment(ctx context.Context, k PartitionKey, e CatalogEntry) error
	// Segments returns up to limit catalog entries (limit <= 0: all) whose
	// NextOffset is greater than from, by ascending offset: the first one
	// holds offset from if any does.
	Segments(ctx context.Context, k PartitionKey, from int64, limit int) ([]CatalogEntry, error)
	// MarkSegmentCold sets ColdMs of the catalog entry for nextOffset to
	// ms unless it is already set (the first mark wins). A missing entry is
	// ErrNotFound.
	MarkSegmentCold(ctx context.Context, k PartitionKey, nextOffset, ms int64) error
	// DeleteSegment removes the catalog entry for e.NextOffset. A missing
	// entry is not an error.
	DeleteSegment(ctx context.Context, k PartitionKey, e CatalogEntry) error

	// CommitOffsets stores group offsets, one item each (last write wins;
	// an offset may move backwards), but an offset of an older topic
	// incarnation never replaces a newer one's (GroupOffset.Replaces): it is
	// dropped, without an error. An empty list is a no-op. It is not
	// atomic across items.
	CommitOffsets(ctx context.Context, group string, offsets []GroupOffset) error
	// GroupOffsets returns the group's offsets for topic, sorted by
	// partition, whatever their TopicID (the caller filters). An unknown
	// group or topic gives an empty list, not an error.
	GroupOffsets(ctx context.Context, group, topic string) ([]GroupOffset, error)

	// Group returns the group's state item, or the zero state (Version 0,
	// Group filled in) if there is none.
	Group(ctx context.Context, group string) (GroupState, error)
	// PutGroup writes g if the item is still at g.Version (0: it must not
	// exist), and sets the stored Version to g.Version+1; else
	// ErrConflict and nothing is written. ErrUnavailable means the outcome
	// is unknown (an adapter that finds the item at g.Version+1 with g's
	// contents after an attempt of unknown outcome may answer success).
	PutGroup(ctx context.Context, g GroupState) error
	// DeleteGroup removes the group state item if it is at version, else
	// ErrConflict (a missing item at version 0 is success). Offsets are
	// the caller's to delete (DeleteGroupOffsets).
	DeleteGroup(ctx context.Context, group string, version uint64) error
	// Groups returns every group state item, sorted by group name.
	Groups(ctx context.Context) ([]GroupState, error)
	// DeleteGroupOffsets removes every offset of group for topic, one
	// item at a time (not atomic); none is not an error.
	DeleteGroupOffsets(ctx context.Context, group, topic string) error

	// Close releases resources. The Store is unusable afterwards.
	Close() error
}

// GroupState is a consumer group's one membership item: its members with
// their session deadlines and assignments, the generation, and the topics
// the group has committed offsets for (the registry a topic delete
// consults to remove them). Every change is a read and one conditional
// write of the whole item (PutGroup, on Version): no two writers both
// succeed from one read.
type GroupState struct {
	Group string `json:"group"`
	// Version is the item's write version: 0 for no item, bumped by each
	// PutGroup.
	Version uint64 `json:"version"`
	// Generation is bumped whenever the members or the assignment change.
	Generation int64 `json:"generation"`
	// Members sorted by ID.
	Members []GroupMember `json:"members,omitempty"`
	// Sizes are the partition counts of the members' topics the current
	// assignment was computed for: a topic that grew makes a rebalance.
	Sizes []TopicSize `json:"sizes,omitempty"`
	// OffsetTopics are the topics the group has (or had) committed offsets
	// for, sorted: registered before the first commit for a topic.
	OffsetTopics []string `json:"offset_topics,omitempty"`
}

// GroupMember is one member of a group.
type GroupMember struct {
	ID     string   `json:"id"`
	Topics []string `json:"topics"` // subscribed, sorted
	// SessionTimeoutMs is the member's session timeout; ExpiresMs the unix
	// ms at which it is removed unless a heartbeat extends it.
	SessionTimeoutMs int64 `json:"session_timeout_ms"`
	ExpiresMs        int64 `json:"expires_ms"`
	JoinedMs         int64 `json:"joined_ms"`
	// Assignments, by topic (sorted), each with sorted partitions.
	Assignments []TopicPartitions `json:"assignments,omitempty"`
}

// TopicPartitions is a set of partitions of one topic.
type TopicPartitions struct {
	Topic      string `json:"topic"`
	Partitions []int  `json:"partitions"`
}

// TopicSize is a topic's partition count.
type TopicSize struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
}

// maxIncarnationName bounds IncarnationName: a file name is at most 255 bytes
// (NAME_MAX), and the name is used as one directory (hot tier, local object
// store) with room to spare for suffixes.
const maxIncarnationName = 240

// IncarnationName is the one path element that names a topic incarnation on
// disk and in object keys: "<topic>~<topic id>". Topic names may be up to 249
// characters, so a long name is cut to keep the element within NAME_MAX; the
// id, random per incarnation, keeps cut names apart.
func IncarnationName(topic, topicID string) string {
	if n := maxIncarnationName - len(topicID) - 1; len(topic) > n {
		topic = topic[:n]
	}
	return topic + "~" + topicID
}

// Clone returns a deep copy of g.
func (g GroupState) Clone() GroupState {
	out := g
	out.Members = nil
	for _, m := range g.Members {
		c := m
		c.Topics = append([]string(nil), m.Topics...)
		c.Assignments = nil
		for _, a := range m.Assignments {
			c.Assignments = append(c.Assignments, TopicPartitions{Topic: a.Topic, Partitions: append([]int{}, a.Partitions...)})
		}
		out.Members = append(out.Members, c)
	}
	out.Sizes = append([]TopicSize(nil), g.Sizes...)
	out.OffsetTopics = append([]string(nil), g.OffsetTopics...)
	return out
}
