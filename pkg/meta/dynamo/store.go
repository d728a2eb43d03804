package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Store is meta.Store on one DynamoDB table. Safe for concurrent use: it
// holds no state but its options and atomic counters.
type Store struct {
	client   *dynamodb.Client
	table    *string
	opts     options
	counters *Counters
	closed   atomic.Bool
}

var _ meta.Store = (*Store)(nil)

// New returns a Store on table, which must exist with the key schema of
// CreateTable. The client is the caller's: Close does not close it.
func New(client *dynamodb.Client, table string, opts ...Option) *Store {
	o := applyDefaults(opts)
	return &Store{client: client, table: aws.String(table), opts: o, counters: o.counters}
}

// Counters returns the Store's request counters.
func (s *Store) Counters() *Counters { return s.counters }

// Close marks the Store closed; later calls fail. The client stays open.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// maxResolve bounds the write-read-write loops that resolve a refused
// condition racing another writer (PutSegment, Advance*).
const maxResolve = 8

// --- topics ---

// CreateTopic implements meta.Store.
func (s *Store) CreateTopic(ctx context.Context, t meta.TopicConfig) error {
	item, err := encodeMap(t, pkTopics, skTopic+esc(t.Name))
	if err != nil {
		return err
	}
	res, err := s.putIfAbsent(ctx, item)
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		// Our own earlier attempt may be what is there.
		cur, gerr := s.Topic(ctx, t.Name)
		if gerr == nil && cur == t {
			return nil
		}
	}
	return fmt.Errorf("%w: %q", meta.ErrTopicExists, t.Name)
}

// Topic implements meta.Store.
func (s *Store) Topic(ctx context.Context, name string) (meta.TopicConfig, error) {
	var t meta.TopicConfig
	item, err := s.getItem(ctx, topicKey(name))
	if err != nil {
		return t, err
	}
	if item == nil {
		return t, fmt.Errorf("%w: topic %q", meta.ErrNotFound, name)
	}
	err = decodeMap(item, &t)
	return t, err
}

// Topics implements meta.Store.
func (s *Store) Topics(ctx context.Context) ([]meta.TopicConfig, error) {
	items, err := s.query(ctx, pkTopics, nil, 0)
	if err != nil {
		return nil, err
	}
	out, err := decodeItems[meta.TopicConfig](items)
	if err != nil {
		return nil, err
	}
	// The sort key already orders valid names; escaped ones may not.
	slices.SortFunc(out, func(a, b meta.TopicConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteTopic implements meta.Store.
func (s *Store) DeleteTopic(ctx context.Context, name, id string) error {
	res, err := s.call(ctx, opDeleteItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 s.table,
			Key:                       topicKey(name),
			ConditionExpression:       aws.String("attribute_exists(#pk) AND #id = :id"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#id": "id"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(id)},
		}, o...)
		return err
	})
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		// An earlier attempt may have deleted it. Incarnation id is gone
		// either way unless the item still names it.
		cur, gerr := s.Topic(ctx, name)
		if errors.Is(gerr, meta.ErrNotFound) || (gerr == nil && cur.ID != id) {
			return nil
		}
		return fmt.Errorf("%w: delete topic %q: an earlier attempt may have deleted it", meta.ErrUnavailable, name)
	}
	return fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, name, id)
}

// --- partitions ---

// Partition implements meta.Store.
func (s *Store) Partition(ctx context.Context, k meta.PartitionKey) (meta.Partition, error) {
	item, err := s.getItem(ctx, stateKey(k))
	if err != nil {
		return meta.Partition{}, err
	}
	return decodePartition(k, item)
}

// Acquire implements meta.Store: one UpdateItem.
func (s *Store) Acquire(ctx context.Context, k meta.PartitionKey, owner string, now time.Time, ttl time.Duration) (meta.Acquired, error) {
	if owner == "" {
		return meta.Acquired{}, fmt.Errorf("dynamo: acquire %v: empty owner", k)
	}
	until := now.Add(ttl).UnixMilli()
	var out *dynamodb.UpdateItemOutput
	_, err := s.call(ctx, opUpdateItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		var err error
		out, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: s.table,
			Key:       stateKey(k),
			ConditionExpression: aws.String("(attribute_not_exists(#pk) OR attribute_not_exists(#owner)" +
				" OR #owner = :empty OR #lu <= :now OR #owner = :me)" +
				" AND (attribute_not_exists(#del) OR #del = :false)"),
			UpdateExpression: aws.String("SET #owner = :me, #lu = :until, #topic = :topic, #tid = :tid, #part = :part," +
				" #no = if_not_exists(#no, :zero), #lts = if_not_exists(#lts, :neg)," +
				" #lso = if_not_exists(#lso, :zero), #ce = if_not_exists(#ce, :zero)" +
				" ADD #ep :one, #ver :one"),
			ExpressionAttributeNames: map[string]string{
				"#pk": attrPK, "#owner": attrOwner, "#lu": attrLeaseUntil, "#ep": attrEpoch, "#ver": attrVersion,
				"#del": attrDeleted, "#topic": attrTopic, "#tid": attrTopicID, "#part": attrPartition,
				"#no": attrNextOffset, "#lts": attrLastTS, "#lso": attrLogStart, "#ce": attrColdEnd,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now": num(now.UnixMilli()), ":me": str(owner), ":until": num(until),
				":topic": str(k.Topic), ":tid": str(k.TopicID), ":part": num(k.Partition),
				":zero": num(0), ":neg": num(-1), ":one": num(1), ":empty": str(""), ":false": boolean(false),
			},
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, o...)
		return err
	})
	if isCondition(err) {
		// The condition admits our own owner name, so a refusal means
		// another owner's live lease or a fenced item, ambiguous or not.
		// Which one, the item says: returned with the refusal, or read.
		item := conditionItem(err)
		if item == nil {
			var gerr error
			if item, gerr = s.getItem(ctx, stateKey(k)); gerr != nil {
				return meta.Acquired{}, gerr
			}
		}
		cur, derr := decodePartition(k, item)
		if derr == nil && cur.Deleted {
			return meta.Acquired{}, fmt.Errorf("%w: partition %v is deleted", meta.ErrNotFound, k)
		}
		s.counters.leaseConflicts.Add(1)
		if derr == nil && cur.Owner != "" {
			return meta.Acquired{}, fmt.Errorf("%w: %v by %q until %d", meta.ErrLeaseHeld, k, cur.Owner, cur.LeaseUntil)
		}
		return meta.Acquired{}, fmt.Errorf("%w: %v", meta.ErrLeaseHeld, k)
	}
	if err != nil {
		return meta.Acquired{}, err
	}
	old, err := decodePartition(k, out.Attributes)
	if err != nil {
		return meta.Acquired{}, err
	}
	p := old
	p.Epoch = old.Epoch + 1
	p.Version = old.Version + 1
	p.Owner = owner
	p.LeaseUntil = until
	return meta.Acquired{Partition: p, TakenOver: old.Owner != ""}, nil
}

// Commit implements meta.Store: one UpdateItem.
func (s *Store) Commit(ctx context.Context, p meta.Partition, release bool, now time.Time, ttl time.Duration) error {
	k := meta.PartitionKey{Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition}
	if p.Owner == "" {
		return fmt.Errorf("%w: %v: commit with no owner", meta.ErrFenced, k)
	}
	names := map[string]string{
		"#pk": attrPK, "#ep": attrEpoch, "#owner": attrOwner, "#ver": attrVersion, "#del": attrDeleted,
		"#no": attrNextOffset, "#lts": attrLastTS, "#lu": attrLeaseUntil,
	}
	values := map[string]types.AttributeValue{
		":ep": num(p.Epoch), ":owner": str(p.Owner), ":ver": num(p.Version), ":next": num(p.Version + 1),
		":no": num(p.NextOffset), ":lts": num(p.LastTS), ":false": boolean(false),
	}
	// An item written before versions has none: it is version 0.
	version := "#ver = :ver"
	if p.Version == 0 {
		version = "(attribute_not_exists(#ver) OR #ver = :ver)"
	}
	cond := "attribute_exists(#pk) AND #ep = :ep AND #owner = :owner AND " + version +
		" AND (attribute_not_exists(#del) OR #del = :false)"
	// Everything is SET, nothing REMOVEd: minidyn v0.8.2 ignores a
	// top-level REMOVE. A released lease is owner "" and lease_until 0; a
	// nil Active and an empty Sealed are NULL (minidyn returns an empty
	// list as the string "").
	null := &types.AttributeValueMemberNULL{Value: true}
	active, sealed := types.AttributeValue(null), types.AttributeValue(null)
	var err error
	if p.Active != nil {
		if active, err = encodeValue(*p.Active); err != nil {
			return err
		}
	}
	if len(p.Sealed) > 0 {
		if sealed, err = encodeValue(p.Sealed); err != nil {
			return err
		}
	}
	names["#act"], values[":act"] = attrActive, active
	names["#sealed"], values[":sealed"] = attrSealed, sealed
	if release {
		values[":newowner"], values[":lu"] = str(""), num(0)
	} else {
		values[":newowner"], values[":lu"] = str(p.Owner), num(now.Add(ttl).UnixMilli())
	}
	update := "SET #no = :no, #lts = :lts, #act = :act, #sealed = :sealed, #owner = :newowner, #lu = :lu, #ver = :next"
	res, err := s.call(ctx, opUpdateItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           s.table,
			Key:                                 stateKey(k),
			ConditionExpression:                 aws.String(cond),
			UpdateExpression:                    aws.String(update),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, o...)
		return err
	})
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		// An earlier attempt may have landed: then the item is at version
		// p.Version+1 with exactly what this commit writes. Anything else
		// is unknown, not refused: the earlier attempt may have landed and
		// been overwritten since.
		item := conditionItem(err)
		if item == nil {
			var gerr error
			if item, gerr = s.getItem(ctx, stateKey(k)); gerr != nil {
				return fmt.Errorf("%w: commit %v version %d: condition failed after an attempt of unknown outcome, and reading the item failed: %w",
					meta.ErrUnavailable, k, p.Version, gerr)
			}
		}
		if cur, derr := decodePartition(k, item); derr == nil && len(item) > 0 && landed(cur, p, release) {
			return nil
		}
		return fmt.Errorf("%w: commit %v epoch %d version %d: condition failed after an attempt of unknown outcome", meta.ErrUnavailable, k, p.Epoch, p.Version)
	}
	s.counters.leaseConflicts.Add(1)
	if item := conditionItem(err); item != nil {
		if cur, derr := decodePartition(k, item); derr == nil {
			return fmt.Errorf("%w: %v epoch %d owner %q version %d, item has epoch %d owner %q version %d deleted %v",
				meta.ErrFenced, k, p.Epoch, p.Owner, p.Version, cur.Epoch, cur.Owner, cur.Version, cur.Deleted)
		}
	}
	return fmt.Errorf("%w: %v epoch %d owner %q version %d", meta.ErrFenced, k, p.Epoch, p.Owner, p.Version)
}

// landed reports whether cur is the item Commit(p, release) leaves: the
// next version, the same lease, exactly p's committed state. Only that
// commit can have written it: every other writer of the item moves the
// epoch (Acquire, FencePartition) or needs another version.
func landed(cur, p meta.Partition, release bool) bool {
	owner := p.Owner
	if release {
		owner = ""
	}
	sameActive := (cur.Active == nil) == (p.Active == nil) && (cur.Active == nil || *cur.Active == *p.Active)
	return !cur.Deleted && cur.Version == p.Version+1 && cur.Epoch == p.Epoch && cur.Owner == owner &&
		cur.NextOffset == p.NextOffset && cur.LastTS == p.LastTS && sameActive && slices.Equal(cur.Sealed, p.Sealed)
}

// FencePartition implements meta.Store: one unconditional UpdateItem, so a
// retry after an attempt of unknown outcome is harmless (it bumps the epoch
// and version once more).
func (s *Store) FencePartition(ctx context.Context, k meta.PartitionKey) error {
	_, err := s.call(ctx, opUpdateItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: s.table,
			Key:       stateKey(k),
			UpdateExpression: aws.String("SET #del = :true, #owner = :empty, #lu = :zero," +
				" #topic = :topic, #tid = :tid, #part = :part," +
				" #no = if_not_exists(#no, :zero), #lts = if_not_exists(#lts, :neg)," +
				" #lso = if_not_exists(#lso, :zero), #ce = if_not_exists(#ce, :zero)" +
				" ADD #ep :one, #ver :one"),
			ExpressionAttributeNames: map[string]string{
				"#del": attrDeleted, "#owner": attrOwner, "#lu": attrLeaseUntil, "#ep": attrEpoch, "#ver": attrVersion,
				"#topic": attrTopic, "#tid": attrTopicID, "#part": attrPartition,
				"#no": attrNextOffset, "#lts": attrLastTS, "#lso": attrLogStart, "#ce": attrColdEnd,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":true": boolean(true), ":empty": str(""), ":zero": num(0), ":neg": num(-1), ":one": num(1),
				":topic": str(k.Topic), ":tid": str(k.TopicID), ":part": num(k.Partition),
			},
		}, o...)
		return err
	})
	return err
}

// DeletePartition implements meta.Store.
func (s *Store) DeletePartition(ctx context.Context, k meta.PartitionKey) error {
	return s.deleteItem(ctx, stateKey(k))
}

// AdvanceLogStart implements meta.Store.
func (s *Store) AdvanceLogStart(ctx context.Context, k meta.PartitionKey, v int64) error {
	return s.advance(ctx, k, attrLogStart, v)
}

// AdvanceColdEnd implements meta.Store.
func (s *Store) AdvanceColdEnd(ctx context.Context, k meta.PartitionKey, v int64) error {
	return s.advance(ctx, k, attrColdEnd, v)
}

// advance sets attribute field to v if v is greater: one UpdateItem, plus a
// GetItem when a refusal does not say whether the item exists.
func (s *Store) advance(ctx context.Context, k meta.PartitionKey, field string, v int64) error {
	for range maxResolve {
		_, err := s.call(ctx, opUpdateItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
			_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                           s.table,
				Key:                                 stateKey(k),
				ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#f) OR #f < :v)"),
				UpdateExpression:                    aws.String("SET #f = :v"),
				ExpressionAttributeNames:            map[string]string{"#pk": attrPK, "#f": field},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":v": num(v)},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}, o...)
			return err
		})
		if !isCondition(err) {
			return err // nil: advanced
		}
		// Refused: either the item is missing or the value is not greater.
		// The write is idempotent, so an ambiguous attempt changes nothing
		// here.
		item := conditionItem(err)
		if item == nil {
			if item, err = s.getItem(ctx, stateKey(k)); err != nil {
				return err
			}
			if item == nil {
				return fmt.Errorf("%w: partition %v", meta.ErrNotFound, k)
			}
		}
		cur, err := decodePartition(k, item)
		if err != nil {
			return err
		}
		have := cur.LogStartOffset
		if field == attrColdEnd {
			have = cur.ColdEnd
		}
		if have >= v {
			return nil
		}
		// Created (or lowered by a delete and re-create) since the write:
		// run it again.
	}
	return fmt.Errorf("%w: advance %s of %v: lost %d races", meta.ErrUnavailable, field, k, maxResolve)
}

// --- catalog ---

// PutSegment implements meta.Store.
func (s *Store) PutSegment(ctx context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	pk, sk := catalogPK(k), pad20(e.NextOffset)
	item, err := encodeMap(e, pk, sk)
	if err != nil {
		return err
	}
	for range maxResolve {
		_, err := s.putIfAbsent(ctx, item)
		if !isCondition(err) {
			return err
		}
		// An entry exists (perhaps our own earlier attempt): compare.
		existing := conditionItem(err)
		if existing == nil {
			if existing, err = s.getItem(ctx, key(pk, sk)); err != nil {
				return err
			}
			if existing == nil {
				continue // deleted since: put again
			}
		}
		var cur meta.CatalogEntry
		if err := decodeMap(existing, &cur); err != nil {
			return err
		}
		if cur.Base == e.Base && cur.NextOffset == e.NextOffset && cur.Key == e.Key {
			return nil
		}
		return fmt.Errorf("%w: segment ending at %d is %s, not %s", meta.ErrConflict, e.NextOffset, cur.Key, e.Key)
	}
	return fmt.Errorf("%w: put segment %v %d: lost %d races", meta.ErrUnavailable, k, e.NextOffset, maxResolve)
}

// Segments implements meta.Store: one Query (more only if a page ends
// early at DynamoDB's 1 MB limit, or for limit <= 0).
func (s *Store) Segments(ctx context.Context, k meta.PartitionKey, from int64, limit int) ([]meta.CatalogEntry, error) {
	var after *string
	if from >= 0 {
		after = aws.String(pad20(from))
	}
	items, err := s.query(ctx, catalogPK(k), after, limit)
	if err != nil {
		return nil, err
	}
	out, err := decodeItems[meta.CatalogEntry](items)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarkSegmentCold implements meta.Store: one UpdateItem, plus a GetItem
// when a refusal does not say whether the entry exists.
func (s *Store) MarkSegmentCold(ctx context.Context, k meta.PartitionKey, nextOffset, ms int64) error {
	pk, sk := catalogPK(k), pad20(nextOffset)
	for range maxResolve {
		_, err := s.call(ctx, opUpdateItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
			_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                           s.table,
				Key:                                 key(pk, sk),
				ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#cold) OR #cold = :zero)"),
				UpdateExpression:                    aws.String("SET #cold = :ms"),
				ExpressionAttributeNames:            map[string]string{"#pk": attrPK, "#cold": attrColdMs},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":ms": num(ms), ":zero": num(0)},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}, o...)
			return err
		})
		if !isCondition(err) {
			return err // nil: marked
		}
		// Refused: the entry is missing or already marked (perhaps by our
		// own earlier attempt: the first mark wins either way).
		item := conditionItem(err)
		if item == nil {
			if item, err = s.getItem(ctx, key(pk, sk)); err != nil {
				return err
			}
			if item == nil {
				return fmt.Errorf("%w: segment ending at %d of %v", meta.ErrNotFound, nextOffset, k)
			}
		}
		var cur meta.CatalogEntry
		if err := decodeMap(item, &cur); err != nil {
			return err
		}
		if cur.ColdMs != 0 {
			return nil
		}
		// Put since the write: mark it again.
	}
	return fmt.Errorf("%w: mark segment %v %d cold: lost %d races", meta.ErrUnavailable, k, nextOffset, maxResolve)
}

// DeleteSegment implements meta.Store.
func (s *Store) DeleteSegment(ctx context.Context, k meta.PartitionKey, e meta.CatalogEntry) error {
	return s.deleteItem(ctx, key(catalogPK(k), pad20(e.NextOffset)))
}

// --- groups ---

// CommitOffsets implements meta.Store: one PutItem per offset.
func (s *Store) CommitOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error {
	for _, off := range offsets {
		item, err := encodeMap(off, groupPK(group, off.Topic), pad10(off.Partition))
		if err != nil {
			return err
		}
		// GroupOffset.Replaces, as a condition: absent, the same
		// incarnation, or one created no later.
		_, err = s.call(ctx, opPutItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
			_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: item,
				ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #tid = :tid OR attribute_not_exists(#tc) OR #tc <= :tc"),
				ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#tid": "topic_id", "#tc": "topic_created_ms"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":tid": str(off.TopicID), ":tc": num(off.TopicCreatedMs)},
			}, o...)
			return err
		})
		if isCondition(err) {
			continue // a newer incarnation's offset: this one is dropped
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// GroupOffsets implements meta.Store.
func (s *Store) GroupOffsets(ctx context.Context, group, topic string) ([]meta.GroupOffset, error) {
	items, err := s.query(ctx, groupPK(group, topic), nil, 0)
	if err != nil {
		return nil, err
	}
	out, err := decodeItems[meta.GroupOffset](items)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b meta.GroupOffset) int { return cmp.Compare(a.Partition, b.Partition) })
	return out, nil
}

// putIfAbsent puts item unless one with its key exists. A refusal carries
// the existing item when the endpoint returns it (see conditionItem).
func (s *Store) putIfAbsent(ctx context.Context, item map[string]types.AttributeValue) (result, error) {
	return s.call(ctx, opPutItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           s.table,
			Item:                                item,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames:            map[string]string{"#pk": attrPK},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, o...)
		return err
	})
}

// decodeItems decodes each item of a query into a T.
func decodeItems[T any](items []map[string]types.AttributeValue) ([]T, error) {
	return decodeEach(items, func(item map[string]types.AttributeValue) (T, error) {
		var v T
		err := decodeMap(item, &v)
		return v, err
	})
}

// decodeEach decodes every item with decode, in order; the first error
// ends it.
func decodeEach[T any](items []map[string]types.AttributeValue, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	out := make([]T, 0, len(items))
	for _, item := range items {
		v, err := decode(item)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// --- request helpers ---

// getItem reads one item with a consistent read; nil when missing.
func (s *Store) getItem(ctx context.Context, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	var out *dynamodb.GetItemOutput
	_, err := s.call(ctx, opGetItem, false, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		var err error
		out, err = s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: s.table, Key: k, ConsistentRead: aws.Bool(true),
		}, o...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

func (s *Store) deleteItem(ctx context.Context, k map[string]types.AttributeValue) error {
	_, err := s.call(ctx, opDeleteItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: k}, o...)
		return err
	})
	return err
}

// query returns the items under partition key pk in ascending sort key
// order, all of them (limit <= 0) or up to limit, with sk > *after when
// after is not nil. It sends one Query per page; with a limit, one page
// holds the whole answer unless DynamoDB's 1 MB page limit cuts it.
func (s *Store) query(ctx context.Context, pk string, after *string, limit int) ([]map[string]types.AttributeValue, error) {
	cond := "#pk = :pk"
	names := map[string]string{"#pk": attrPK}
	values := map[string]types.AttributeValue{":pk": str(pk)}
	if after != nil {
		cond += " AND #sk > :after"
		names["#sk"] = attrSK
		values[":after"] = str(*after)
	}
	var items []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		in := &dynamodb.QueryInput{
			TableName:                 s.table,
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ConsistentRead:            aws.Bool(true),
			ScanIndexForward:          aws.Bool(true),
			ExclusiveStartKey:         start,
		}
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(items), 1<<30)))
		}
		var out *dynamodb.QueryOutput
		_, err := s.call(ctx, opQuery, false, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
			var err error
			out, err = s.client.Query(ctx, in, o...)
			return err
		})
		if err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 || (limit > 0 && len(items) >= limit) {
			break
		}
		start = maps.Clone(out.LastEvaluatedKey)
	}
	if limit > 0 && len(items) > limit {
		items = items[:limit]
	}
	return items, nil
}
