package dynamo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tierlog/tierlog/pkg/meta"
)

// A group state item is pk "groups", sk the escaped group name, with the
// attributes group (S), version (N) and state (S): the GroupState as JSON
// with its Version zeroed. One string rather than nested maps keeps the
// item small (a member's assignment is a few bytes per partition) and
// avoids the emulators' empty-list quirks; the 400 KB item limit bounds a
// group (broker.MaxGroupStateBytes keeps well under it).

func groupStateKey(group string) map[string]types.AttributeValue {
	return key(pkGroups, esc(group))
}

func encodeGroupState(g meta.GroupState) (string, error) {
	g.Version = 0
	b, err := json.Marshal(g)
	if err != nil {
		return "", fmt.Errorf("dynamo: encode group %q: %w", g.Group, err)
	}
	return string(b), nil
}

func decodeGroupState(item map[string]types.AttributeValue) (meta.GroupState, error) {
	var g meta.GroupState
	av, ok := item[attrState].(*types.AttributeValueMemberS)
	if !ok {
		return g, fmt.Errorf("dynamo: decode group: %s is %T, want S", attrState, item[attrState])
	}
	if err := json.Unmarshal([]byte(av.Value), &g); err != nil {
		return g, fmt.Errorf("dynamo: decode group: %w", err)
	}
	if v, ok := item[attrVersion]; ok {
		var err error
		if g.Version, err = parseUint(attrVersion, v); err != nil {
			return g, err
		}
	}
	return g, nil
}

// Group implements meta.Store: one consistent GetItem.
func (s *Store) Group(ctx context.Context, group string) (meta.GroupState, error) {
	item, err := s.getItem(ctx, groupStateKey(group))
	if err != nil || item == nil {
		return meta.GroupState{Group: group}, err
	}
	return decodeGroupState(item)
}

// PutGroup implements meta.Store: one PutItem conditioned on the version
// (attribute_not_exists(pk) for version 0).
func (s *Store) PutGroup(ctx context.Context, g meta.GroupState) error {
	body, err := encodeGroupState(g)
	if err != nil {
		return err
	}
	item := groupStateKey(g.Group)
	item[attrGroup] = str(g.Group)
	item[attrVersion] = num(g.Version + 1)
	item[attrState] = str(body)
	res, err := s.putAtVersion(ctx, item, g.Version)
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		// Our own earlier attempt may be what is there now.
		cur, gerr := s.Group(ctx, g.Group)
		if gerr == nil && cur.Version == g.Version+1 {
			if b, eerr := encodeGroupState(cur); eerr == nil && bytes.Equal([]byte(b), []byte(body)) {
				return nil
			}
		}
		return fmt.Errorf("%w: put group %q version %d: condition failed after an attempt of unknown outcome", meta.ErrUnavailable, g.Group, g.Version)
	}
	return fmt.Errorf("%w: group %q is not at version %d", meta.ErrConflict, g.Group, g.Version)
}

// DeleteGroup implements meta.Store: one DeleteItem conditioned on the
// version.
func (s *Store) DeleteGroup(ctx context.Context, group string, version uint64) error {
	res, err := s.deleteAtVersion(ctx, groupStateKey(group), version)
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		if cur, gerr := s.Group(ctx, group); gerr == nil && cur.Version == 0 {
			return nil // gone: our earlier attempt, or someone's
		}
		return fmt.Errorf("%w: delete group %q: condition failed after an attempt of unknown outcome", meta.ErrUnavailable, group)
	}
	return fmt.Errorf("%w: group %q is not at version %d", meta.ErrConflict, group, version)
}

// Groups implements meta.Store: one Query on pk "groups" (paged).
func (s *Store) Groups(ctx context.Context) ([]meta.GroupState, error) {
	items, err := s.query(ctx, pkGroups, nil, 0)
	if err != nil {
		return nil, err
	}
	out, err := decodeEach(items, decodeGroupState)
	if err != nil {
		return nil, err
	}
	// The sort key orders valid names; escaped ones may not.
	sortGroups(out)
	return out, nil
}

func sortGroups(gs []meta.GroupState) {
	slices.SortFunc(gs, func(a, b meta.GroupState) int { return strings.Compare(a.Group, b.Group) })
}

// DeleteGroupOffsets implements meta.Store: one Query, then one DeleteItem
// per offset item.
func (s *Store) DeleteGroupOffsets(ctx context.Context, group, topic string) error {
	pk := groupPK(group, topic)
	items, err := s.query(ctx, pk, nil, 0)
	if err != nil {
		return err
	}
	var errs []error
	for _, item := range items {
		sk, ok := item[attrSK].(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		if err := s.deleteItem(ctx, key(pk, sk.Value)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// UpdateTopic implements meta.Store: one PutItem IF id = :id AND
// partitions = :old.
func (s *Store) UpdateTopic(ctx context.Context, old, t meta.TopicConfig) error {
	if old.ID != t.ID {
		return fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, t.Name, t.ID)
	}
	item, err := encodeMap(t, pkTopics, skTopic+esc(t.Name))
	if err != nil {
		return err
	}
	res, err := s.call(ctx, opPutItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 s.table,
			Item:                      item,
			ConditionExpression:       aws.String("attribute_exists(#pk) AND #id = :id AND #parts = :parts"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#id": "id", "#parts": "partitions"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(t.ID), ":parts": num(old.Partitions)},
		}, o...)
		return err
	})
	if !isCondition(err) {
		return err
	}
	cur, gerr := s.Topic(ctx, t.Name)
	switch {
	case res.ambiguous && gerr == nil && cur == t:
		return nil // our own earlier attempt
	case errors.Is(gerr, meta.ErrNotFound) || (gerr == nil && cur.ID != t.ID):
		return fmt.Errorf("%w: topic %q id %s", meta.ErrNotFound, t.Name, t.ID)
	case gerr != nil:
		return gerr
	case res.ambiguous:
		return fmt.Errorf("%w: update topic %q: condition failed after an attempt of unknown outcome", meta.ErrUnavailable, t.Name)
	}
	return fmt.Errorf("%w: topic %q has %d partitions, not %d", meta.ErrConflict, t.Name, cur.Partitions, old.Partitions)
}
