package client

import (
	"context"
	"encoding/json"
	"net/url"
)

// Subscription is a subscription as the server stores it
// (docs/subscriptions.md): a target fed a topic's records in batches.
type Subscription struct {
	Name                  string              `json:"name"`
	Topic                 string              `json:"topic"`
	Target                SubscriptionTarget  `json:"target"`
	Start                 json.RawMessage     `json:"start,omitempty"` // "latest", "earliest", {"timestamp":ms} or {"offset":n}
	BatchSize             int                 `json:"batch_size,omitempty"`
	BatchWindowMs         int64               `json:"batch_window_ms,omitempty"`
	MaxBatchBytes         int                 `json:"max_batch_bytes,omitempty"`
	ParallelizationFactor int                 `json:"parallelization_factor,omitempty"`
	MaxRetryAttempts      *int                `json:"max_retry_attempts,omitempty"`
	MaxRecordAgeMs        *int64              `json:"max_record_age_ms,omitempty"`
	BisectBatchOnError    bool                `json:"bisect_batch_on_error,omitempty"`
	OnFailure             *SubscriptionTopic  `json:"on_failure,omitempty"`
	Enabled               *bool               `json:"enabled,omitempty"`
	ID                    string              `json:"id,omitempty"`
	CreatedMs             int64               `json:"created_ms,omitempty"`
	Status                *SubscriptionStatus `json:"status,omitempty"` // Subscription only
}

// SubscriptionTarget is {"type":"lambda","function":...} or
// {"type":"http","url":...}.
type SubscriptionTarget struct {
	Type     string `json:"type"`
	Function string `json:"function,omitempty"`
	URL      string `json:"url,omitempty"`
}

// SubscriptionTopic names the on_failure topic.
type SubscriptionTopic struct {
	Topic string `json:"topic"`
}

// SubscriptionStatus is what GET /v1/subscriptions/{name} adds.
type SubscriptionStatus struct {
	State           string                        `json:"state"`
	Delivered       int64                         `json:"delivered"`
	FailedAttempts  int64                         `json:"failed_attempts"`
	SentToOnFailure int64                         `json:"sent_to_on_failure"`
	Dropped         int64                         `json:"dropped"`
	Partitions      []SubscriptionPartitionStatus `json:"partitions"`
}

// SubscriptionPartitionStatus is one partition's delivery state.
type SubscriptionPartitionStatus struct {
	Partition       int     `json:"partition"`
	CommittedOffset int64   `json:"committed_offset"`
	Lag             int64   `json:"lag"`
	LastError       *string `json:"last_error"`
}

// SubscriptionPatch is an update: nil fields stay. OnFailure with an empty
// topic removes the destination.
type SubscriptionPatch struct {
	Enabled            *bool              `json:"enabled,omitempty"`
	BatchSize          *int               `json:"batch_size,omitempty"`
	BatchWindowMs      *int64             `json:"batch_window_ms,omitempty"`
	MaxBatchBytes      *int               `json:"max_batch_bytes,omitempty"`
	MaxRetryAttempts   *int               `json:"max_retry_attempts,omitempty"`
	MaxRecordAgeMs     *int64             `json:"max_record_age_ms,omitempty"`
	BisectBatchOnError *bool              `json:"bisect_batch_on_error,omitempty"`
	OnFailure          *SubscriptionTopic `json:"on_failure,omitempty"`
}

func subscriptionPath(name string) string { return "/v1/subscriptions/" + url.PathEscape(name) }

// CreateSubscription creates s (zero and nil fields take the server's
// defaults) and returns it as stored. A taken name is an *Error with code
// subscription_exists. Sent once.
func (c *Client) CreateSubscription(ctx context.Context, s Subscription) (Subscription, error) {
	s.Status, s.ID, s.CreatedMs = nil, "", 0
	res, err := c.sendJSON(ctx, "POST", "/v1/subscriptions", s, false)
	if err != nil {
		return Subscription{}, err
	}
	var out Subscription
	return out, decodeJSON(res.body, &out, "POST /v1/subscriptions")
}

// Subscriptions lists every subscription, sorted by name.
func (c *Client) Subscriptions(ctx context.Context) ([]Subscription, error) {
	var out struct {
		Subscriptions []Subscription `json:"subscriptions"`
	}
	return out.Subscriptions, c.getJSON(ctx, "/v1/subscriptions", nil, &out)
}

// Subscription describes one subscription, with its Status.
func (c *Client) Subscription(ctx context.Context, name string) (Subscription, error) {
	var out Subscription
	return out, c.getJSON(ctx, subscriptionPath(name), nil, &out)
}

// UpdateSubscription applies patch and returns the subscription as stored.
func (c *Client) UpdateSubscription(ctx context.Context, name string, patch SubscriptionPatch) (Subscription, error) {
	res, err := c.sendJSON(ctx, "PATCH", subscriptionPath(name), patch, true)
	if err != nil {
		return Subscription{}, err
	}
	var out Subscription
	return out, decodeJSON(res.body, &out, "PATCH "+subscriptionPath(name))
}

// DeleteSubscription deletes a subscription and its group. Sent once: a
// retry after an unknown outcome could answer subscription_not_found.
func (c *Client) DeleteSubscription(ctx context.Context, name string) error {
	_, err := c.do(ctx, &request{method: "DELETE", path: subscriptionPath(name), accept: "application/json"}, false)
	return err
}

// Error codes of the subscription routes (docs/api.md "Subscriptions").
const (
	CodeSubscriptionNotFound = "subscription_not_found"
	CodeSubscriptionExists   = "subscription_exists"
)
