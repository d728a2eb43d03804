package dynamo

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tierlog/tierlog/pkg/meta"
)

var _ meta.SubscriptionStore = (*Store)(nil)

// A subscription item is pk "subscriptions", sk the escaped name; a
// delivery item is pk "d#<escaped subscription>", sk the partition padded
// to 10 digits. Both carry version (N) and body (S): the item's JSON as
// package subscribe wrote it. Names are stored in tables: never change them.
const (
	pkSubscriptions = "subscriptions"
	pkDelivery      = "d#"
	attrBody        = "body"
)

func subKey(name string) map[string]types.AttributeValue { return key(pkSubscriptions, esc(name)) }

func deliveryKey(sub string, partition int) map[string]types.AttributeValue {
	return key(pkDelivery+esc(sub), pad10(partition))
}

// versioned reads the version and body of a versioned document item.
func versioned(item map[string]types.AttributeValue) (uint64, []byte, error) {
	v, err := parseUint(attrVersion, item[attrVersion])
	if err != nil {
		return 0, nil, err
	}
	body, ok := item[attrBody].(*types.AttributeValueMemberS)
	if !ok {
		return 0, nil, fmt.Errorf("dynamo: decode document: %s is %T, want S", attrBody, item[attrBody])
	}
	return v, []byte(body.Value), nil
}

// putVersioned writes body at k if the item is at version (0: absent),
// storing version+1. On a refused condition after an attempt of unknown
// outcome, an item found at version+1 with body is our own write.
func (s *Store) putVersioned(ctx context.Context, k map[string]types.AttributeValue, version uint64, body []byte, what string) error {
	item := make(map[string]types.AttributeValue, 4)
	for n, v := range k {
		item[n] = v
	}
	item[attrVersion] = num(version + 1)
	item[attrBody] = str(string(body))
	res, err := s.putAtVersion(ctx, item, version)
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		if cur, gerr := s.getItem(ctx, k); gerr == nil && cur != nil {
			if v, b, derr := versioned(cur); derr == nil && v == version+1 && bytes.Equal(b, body) {
				return nil
			}
		}
		return fmt.Errorf("%w: put %s version %d: condition failed after an attempt of unknown outcome", meta.ErrUnavailable, what, version)
	}
	return fmt.Errorf("%w: %s is not at version %d", meta.ErrConflict, what, version)
}

// deleteVersioned removes the item at k if it is at version (0: absent).
func (s *Store) deleteVersioned(ctx context.Context, k map[string]types.AttributeValue, version uint64, what string) error {
	res, err := s.deleteAtVersion(ctx, k, version)
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		if cur, gerr := s.getItem(ctx, k); gerr == nil && cur == nil {
			return nil // gone: our earlier attempt, or someone's
		}
		return fmt.Errorf("%w: delete %s: condition failed after an attempt of unknown outcome", meta.ErrUnavailable, what)
	}
	return fmt.Errorf("%w: %s is not at version %d", meta.ErrConflict, what, version)
}

func decodeSub(item map[string]types.AttributeValue) (meta.SubscriptionItem, error) {
	v, body, err := versioned(item)
	if err != nil {
		return meta.SubscriptionItem{}, err
	}
	sk, _ := item[attrSK].(*types.AttributeValueMemberS)
	if sk == nil {
		return meta.SubscriptionItem{}, fmt.Errorf("dynamo: decode subscription: no %s", attrSK)
	}
	return meta.SubscriptionItem{Name: unesc(sk.Value), Version: v, Spec: body}, nil
}

var unesc = strings.NewReplacer("%23", "#", "%25", "%").Replace

// Subscription implements meta.SubscriptionStore: one consistent GetItem.
func (s *Store) Subscription(ctx context.Context, name string) (meta.SubscriptionItem, error) {
	item, err := s.getItem(ctx, subKey(name))
	if err != nil || item == nil {
		return meta.SubscriptionItem{Name: name}, err
	}
	it, err := decodeSub(item)
	it.Name = name
	return it, err
}

// Subscriptions implements meta.SubscriptionStore: one Query (paged).
func (s *Store) Subscriptions(ctx context.Context) ([]meta.SubscriptionItem, error) {
	items, err := s.query(ctx, pkSubscriptions, nil, 0)
	if err != nil {
		return nil, err
	}
	out, err := decodeEach(items, decodeSub)
	if err != nil {
		return nil, err
	}
	// The sort key orders valid names; escaped ones may not.
	slices.SortFunc(out, func(a, b meta.SubscriptionItem) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutSubscription implements meta.SubscriptionStore: one conditional PutItem.
func (s *Store) PutSubscription(ctx context.Context, it meta.SubscriptionItem) error {
	return s.putVersioned(ctx, subKey(it.Name), it.Version, it.Spec, fmt.Sprintf("subscription %q", it.Name))
}

// DeleteSubscription implements meta.SubscriptionStore: one conditional DeleteItem.
func (s *Store) DeleteSubscription(ctx context.Context, name string, version uint64) error {
	return s.deleteVersioned(ctx, subKey(name), version, fmt.Sprintf("subscription %q", name))
}

// Delivery implements meta.SubscriptionStore: one consistent GetItem.
func (s *Store) Delivery(ctx context.Context, sub string, partition int) (meta.DeliveryItem, error) {
	d := meta.DeliveryItem{Subscription: sub, Partition: partition}
	item, err := s.getItem(ctx, deliveryKey(sub, partition))
	if err != nil || item == nil {
		return d, err
	}
	d.Version, d.State, err = versioned(item)
	return d, err
}

// Deliveries implements meta.SubscriptionStore: one Query (paged), in
// partition order (the padded sort key).
func (s *Store) Deliveries(ctx context.Context, sub string) ([]meta.DeliveryItem, error) {
	items, err := s.query(ctx, pkDelivery+esc(sub), nil, 0)
	if err != nil {
		return nil, err
	}
	var out []meta.DeliveryItem
	for _, item := range items {
		sk, _ := item[attrSK].(*types.AttributeValueMemberS)
		if sk == nil {
			return nil, fmt.Errorf("dynamo: decode delivery: no %s", attrSK)
		}
		p, err := strconv.Atoi(sk.Value)
		if err != nil {
			return nil, fmt.Errorf("dynamo: decode delivery partition: %w", err)
		}
		d := meta.DeliveryItem{Subscription: sub, Partition: p}
		if d.Version, d.State, err = versioned(item); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// PutDelivery implements meta.SubscriptionStore: one conditional PutItem.
func (s *Store) PutDelivery(ctx context.Context, d meta.DeliveryItem) error {
	return s.putVersioned(ctx, deliveryKey(d.Subscription, d.Partition), d.Version, d.State,
		fmt.Sprintf("delivery %q/%d", d.Subscription, d.Partition))
}

// DeleteDelivery implements meta.SubscriptionStore: one conditional DeleteItem.
func (s *Store) DeleteDelivery(ctx context.Context, sub string, partition int, version uint64) error {
	return s.deleteVersioned(ctx, deliveryKey(sub, partition), version, fmt.Sprintf("delivery %q/%d", sub, partition))
}
