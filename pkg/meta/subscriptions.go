package meta

import (
	"context"
	"encoding/json"
)

// SubscriptionStore keeps subscriptions (push delivery, package subscribe)
// and the state of their deliverers. It stands beside Store: an adapter
// implements both, and only the wiring that runs subscriptions asks for
// it. Implementations are safe for concurrent use.
//
// Both kinds of item are versioned documents whose contents this package
// does not interpret (package subscribe owns their JSON). Every write is one
// conditional write on the item's version, as PutGroup is: Version 0 means
// "must not exist", and a successful write stores Version+1. Items:
//
//	subscription  key "u#<name>"                       SubscriptionItem
//	delivery      key "d#<subscription>#<partition>"   DeliveryItem (lease, counters)
type SubscriptionStore interface {
	// Subscription returns the named item, or the zero item (Version 0,
	// Name filled in) when there is none.
	Subscription(ctx context.Context, name string) (SubscriptionItem, error)
	// Subscriptions returns every subscription item, sorted by name.
	Subscriptions(ctx context.Context) ([]SubscriptionItem, error)
	// PutSubscription writes s if the stored item is at s.Version (0: it
	// must not exist) and sets the stored Version to s.Version+1; else
	// ErrConflict and nothing is written.
	PutSubscription(ctx context.Context, s SubscriptionItem) error
	// DeleteSubscription removes the item if it is at version, else
	// ErrConflict (a missing item at version 0 is success). Delivery items
	// are the caller's to delete.
	DeleteSubscription(ctx context.Context, name string, version uint64) error

	// Delivery returns the delivery item of a subscription's partition, or
	// the zero item (Version 0, key filled in) when there is none.
	Delivery(ctx context.Context, subscription string, partition int) (DeliveryItem, error)
	// Deliveries returns every delivery item of a subscription, sorted by
	// partition.
	Deliveries(ctx context.Context, subscription string) ([]DeliveryItem, error)
	// PutDelivery writes d under the same version condition as
	// PutSubscription.
	PutDelivery(ctx context.Context, d DeliveryItem) error
	// DeleteDelivery removes the item if it is at version, else
	// ErrConflict (a missing item at version 0 is success).
	DeleteDelivery(ctx context.Context, subscription string, partition int, version uint64) error
}

// SubscriptionItem is a subscription as stored: its definition as JSON,
// under a write version.
type SubscriptionItem struct {
	Name    string          `json:"name"`
	Version uint64          `json:"version"`
	Spec    json.RawMessage `json:"spec,omitempty"`
}

// DeliveryItem is the state of the deliverer of one partition of a
// subscription (its lease and counters) as JSON, under a write version.
// The version is the lease's fence: a deliverer whose write finds another
// version has lost the partition.
type DeliveryItem struct {
	Subscription string          `json:"subscription"`
	Partition    int             `json:"partition"`
	Version      uint64          `json:"version"`
	State        json.RawMessage `json:"state,omitempty"`
}
