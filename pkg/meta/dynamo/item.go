package dynamo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tierlog/tierlog/pkg/meta"
)

// Key and attribute names. They are stored in tables: never change them.
const (
	attrPK = "pk"
	attrSK = "sk"

	pkTopics    = "topics"
	skTopic     = "t#"
	pkPartition = "p#"
	skState     = "state"
	pkCatalog   = "s#"
	pkGroup     = "g#"
	pkGroups    = "groups" // group state items; sk is the escaped group name

	attrTopic      = "topic"
	attrTopicID    = "topic_id"
	attrPartition  = "partition"
	attrEpoch      = "epoch"
	attrVersion    = "version" // commit version; absent on items written before it: 0
	attrDeleted    = "deleted" // BOOL true once FencePartition ran; absent otherwise
	attrOwner      = "owner"
	attrLeaseUntil = "lease_until"
	attrNextOffset = "next_offset"
	attrLastTS     = "last_ts"
	attrActive     = "active"
	attrSealed     = "sealed"
	attrLogStart   = "log_start_offset"
	attrColdEnd    = "cold_end"
	attrColdMs     = "cold_ms" // catalog entry; absent until MarkSegmentCold
	attrGroup      = "group"   // group state item: the name
	attrState      = "state"   // group state item: the GroupState as JSON, Version left out
)

// esc makes s safe as one "#"-separated key component.
var esc = strings.NewReplacer("%", "%25", "#", "%23").Replace

func partKey(k meta.PartitionKey) string {
	return pkPartition + esc(k.Topic) + "#" + esc(k.TopicID) + "#" + strconv.Itoa(k.Partition)
}

func catalogPK(k meta.PartitionKey) string {
	return pkCatalog + esc(k.Topic) + "#" + esc(k.TopicID) + "#" + strconv.Itoa(k.Partition)
}

func groupPK(group, topic string) string {
	return pkGroup + esc(group) + "#" + esc(topic)
}

// pad20 is the catalog sort key: 20 digits hold every non-negative int64,
// so the string order is the numeric order.
func pad20(v int64) string { return fmt.Sprintf("%020d", v) }

// pad10 is the group sort key: 10 digits hold every non-negative int32.
func pad10(v int) string { return fmt.Sprintf("%010d", v) }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

func topicKey(name string) map[string]types.AttributeValue {
	return key(pkTopics, skTopic+esc(name))
}

func stateKey(k meta.PartitionKey) map[string]types.AttributeValue {
	return key(partKey(k), skState)
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func boolean(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

func num[T int | int64 | uint64 | uint32](v T) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(v)}
}

// json tags name the attributes, as in meta's types.
func marshalOpts(o *attributevalue.EncoderOptions)   { o.TagKey = "json" }
func unmarshalOpts(o *attributevalue.DecoderOptions) { o.TagKey = "json" }

// encodeMap encodes a meta struct as top-level attributes plus the key.
func encodeMap(v any, pk, sk string) (map[string]types.AttributeValue, error) {
	m, err := attributevalue.MarshalMapWithOptions(v, marshalOpts)
	if err != nil {
		return nil, fmt.Errorf("dynamo: encode %T: %w", v, err)
	}
	m[attrPK], m[attrSK] = str(pk), str(sk)
	return m, nil
}

func decodeMap(m map[string]types.AttributeValue, out any) error {
	if err := attributevalue.UnmarshalMapWithOptions(m, out, unmarshalOpts); err != nil {
		return fmt.Errorf("dynamo: decode %T: %w", out, err)
	}
	return nil
}

func encodeValue(v any) (types.AttributeValue, error) {
	av, err := attributevalue.MarshalWithOptions(v, marshalOpts)
	if err != nil {
		return nil, fmt.Errorf("dynamo: encode %T: %w", v, err)
	}
	return av, nil
}

// zeroPartition is the state of a partition nobody has written yet.
func zeroPartition(k meta.PartitionKey) meta.Partition {
	return meta.Partition{Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition, LastTS: -1}
}

// decodePartition reads a partition item; an empty map is the zero state.
// The key fields come from k, not the item, so a caller always gets back
// the key it asked for.
func decodePartition(k meta.PartitionKey, m map[string]types.AttributeValue) (meta.Partition, error) {
	p := zeroPartition(k)
	if len(m) == 0 {
		return p, nil
	}
	var err error
	getU := func(name string, dst *uint64) {
		if av, ok := m[name]; ok && err == nil {
			*dst, err = parseUint(name, av)
		}
	}
	getI := func(name string, dst *int64) {
		if av, ok := m[name]; ok && err == nil {
			*dst, err = parseInt(name, av)
		}
	}
	getU(attrEpoch, &p.Epoch)
	getU(attrVersion, &p.Version)
	getI(attrLeaseUntil, &p.LeaseUntil)
	getI(attrNextOffset, &p.NextOffset)
	getI(attrLastTS, &p.LastTS)
	getI(attrLogStart, &p.LogStartOffset)
	getI(attrColdEnd, &p.ColdEnd)
	if err != nil {
		return p, err
	}
	if av, ok := m[attrOwner]; ok {
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return p, fmt.Errorf("dynamo: decode partition: %s is %T, want S", attrOwner, av)
		}
		p.Owner = s.Value
	}
	if av, ok := m[attrDeleted]; ok && !isNull(av) {
		b, ok := av.(*types.AttributeValueMemberBOOL)
		if !ok {
			return p, fmt.Errorf("dynamo: decode partition: %s is %T, want BOOL", attrDeleted, av)
		}
		p.Deleted = b.Value
	}
	if av, ok := m[attrActive]; ok && !isNull(av) {
		var a meta.SegmentInfo
		if err := attributevalue.UnmarshalWithOptions(av, &a, unmarshalOpts); err != nil {
			return p, fmt.Errorf("dynamo: decode partition active: %w", err)
		}
		p.Active = &a
	}
	if av, ok := m[attrSealed]; ok && !isNull(av) {
		if err := attributevalue.UnmarshalWithOptions(av, &p.Sealed, unmarshalOpts); err != nil {
			return p, fmt.Errorf("dynamo: decode partition sealed: %w", err)
		}
	}
	return p, nil
}

func isNull(av types.AttributeValue) bool {
	_, null := av.(*types.AttributeValueMemberNULL)
	return null
}

func numString(name string, av types.AttributeValue) (string, error) {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return "", fmt.Errorf("dynamo: decode: %s is %T, want N", name, av)
	}
	return n.Value, nil
}

func parseInt(name string, av types.AttributeValue) (int64, error) {
	s, err := numString(name, av)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamo: decode %s: %w", name, err)
	}
	return v, nil
}

func parseUint(name string, av types.AttributeValue) (uint64, error) {
	s, err := numString(name, av)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamo: decode %s: %w", name, err)
	}
	return v, nil
}
