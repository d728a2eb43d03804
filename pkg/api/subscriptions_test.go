package api_test

import (
	"net/http"
	"testing"
)

type subscriptionAnswer struct {
	Name                  string         `json:"name"`
	Topic                 string         `json:"topic"`
	Target                map[string]any `json:"target"`
	Start                 any            `json:"start"`
	BatchSize             int            `json:"batch_size"`
	BatchWindowMs         int64          `json:"batch_window_ms"`
	MaxBatchBytes         int            `json:"max_batch_bytes"`
	ParallelizationFactor int            `json:"parallelization_factor"`
	MaxRetryAttempts      int            `json:"max_retry_attempts"`
	MaxRecordAgeMs        int64          `json:"max_record_age_ms"`
	BisectBatchOnError    bool           `json:"bisect_batch_on_error"`
	OnFailure             *struct {
		Topic string `json:"topic"`
	} `json:"on_failure"`
	Enabled bool `json:"enabled"`
	Status  *struct {
		State           string `json:"state"`
		Delivered       int64  `json:"delivered"`
		FailedAttempts  int64  `json:"failed_attempts"`
		SentToOnFailure int64  `json:"sent_to_on_failure"`
		Partitions      []struct {
			Partition       int     `json:"partition"`
			CommittedOffset int64   `json:"committed_offset"`
			Lag             int64   `json:"lag"`
			LastError       *string `json:"last_error"`
		} `json:"partitions"`
	} `json:"status"`
}

func TestSubscriptionRoutes(t *testing.T) {
	s := newServer(t)
	s.ok("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 2}, http.StatusCreated, nil)
	s.ok("POST", "/v1/topics", map[string]any{"name": "orders-dlq"}, http.StatusCreated, nil)
	s.ok("POST", "/v1/topics/orders/records", map[string]any{"records": []any{
		map[string]any{"value": "a", "partition": 0}, map[string]any{"value": "b", "partition": 0}, map[string]any{"value": "c", "partition": 1}}}, http.StatusOK, nil)
	target := map[string]any{"type": "http", "url": "http://127.0.0.1:9/hook"}

	var created subscriptionAnswer
	s.ok("POST", "/v1/subscriptions", map[string]any{"name": "billing-fn", "topic": "orders", "target": target,
		"on_failure": map[string]any{"topic": "orders-dlq"}}, http.StatusCreated, &created)
	if created.BatchSize != 100 || created.MaxBatchBytes != 5242880 || created.ParallelizationFactor != 1 || created.MaxRetryAttempts != -1 ||
		created.MaxRecordAgeMs != -1 || !created.Enabled || created.Start != "latest" || created.OnFailure == nil || created.Target["url"] != "http://127.0.0.1:9/hook" {
		t.Fatalf("created = %+v", created)
	}
	checkError(t, "exists", s.do("POST", "/v1/subscriptions", map[string]any{"name": "billing-fn", "topic": "orders", "target": target}), http.StatusConflict, "subscription_exists")
	checkError(t, "no topic", s.do("POST", "/v1/subscriptions", map[string]any{"name": "x", "topic": "nope", "target": target}), http.StatusNotFound, "topic_not_found")
	checkError(t, "no dlq", s.do("POST", "/v1/subscriptions", map[string]any{"name": "x", "topic": "orders", "target": target, "on_failure": map[string]any{"topic": "nope"}}), http.StatusNotFound, "topic_not_found")
	for _, bad := range []map[string]any{
		{"name": "x", "topic": "orders", "target": target, "batch_size": 0},
		{"name": "x", "topic": "orders", "target": target, "max_record_age_ms": 1000},
		{"name": "x", "topic": "orders", "target": target, "parallelization_factor": 11},
		{"name": "x", "topic": "orders", "target": map[string]any{"type": "ftp"}},
		{"name": "x", "topic": "orders", "target": target, "start": "middle"},
		{"name": "x", "topic": "orders", "target": target, "unknown": 1},
		{"name": "x/y", "topic": "orders", "target": target},
	} {
		checkError(t, "bad create", s.do("POST", "/v1/subscriptions", bad), http.StatusBadRequest, "invalid_request")
	}
	s.ok("POST", "/v1/subscriptions", map[string]any{"name": "audit", "topic": "orders", "target": target, "start": "earliest"}, http.StatusCreated, nil)

	var list struct {
		Subscriptions []subscriptionAnswer `json:"subscriptions"`
	}
	s.ok("GET", "/v1/subscriptions", nil, http.StatusOK, &list)
	if len(list.Subscriptions) != 2 || list.Subscriptions[0].Name != "audit" || list.Subscriptions[1].Name != "billing-fn" {
		t.Fatalf("list = %+v", list)
	}

	var got subscriptionAnswer
	s.ok("GET", "/v1/subscriptions/audit", nil, http.StatusOK, &got)
	if got.Status == nil || got.Status.State != "active" || len(got.Status.Partitions) != 2 ||
		got.Status.Partitions[0].CommittedOffset != 0 || got.Status.Partitions[0].Lag != 2 || got.Status.Partitions[1].Lag != 1 {
		t.Fatalf("describe audit = %+v", got.Status)
	}
	s.ok("GET", "/v1/subscriptions/billing-fn", nil, http.StatusOK, &got)
	if got.Status.Partitions[0].CommittedOffset != 2 || got.Status.Partitions[0].Lag != 0 {
		t.Fatalf("latest start: %+v", got.Status)
	}
	// Its progress is the consumer group named after it.
	var offs struct {
		Offsets []struct {
			Partition int   `json:"partition"`
			Offset    int64 `json:"offset"`
		} `json:"offsets"`
	}
	s.ok("GET", "/v1/groups/audit/offsets?topic=orders", nil, http.StatusOK, &offs)
	if len(offs.Offsets) != 2 {
		t.Fatalf("group offsets = %+v", offs)
	}
	checkError(t, "missing", s.do("GET", "/v1/subscriptions/nope", nil), http.StatusNotFound, "subscription_not_found")

	s.ok("PATCH", "/v1/subscriptions/audit", map[string]any{"enabled": false, "batch_size": 500, "on_failure": map[string]any{"topic": "orders-dlq"}}, http.StatusOK, &got)
	if got.Enabled || got.BatchSize != 500 || got.OnFailure == nil || got.OnFailure.Topic != "orders-dlq" {
		t.Fatalf("patched = %+v", got)
	}
	s.ok("GET", "/v1/subscriptions/audit", nil, http.StatusOK, &got)
	if got.Status.State != "paused" {
		t.Fatalf("paused state = %q", got.Status.State)
	}
	checkError(t, "patch topic", s.do("PATCH", "/v1/subscriptions/audit", map[string]any{"topic": "orders-dlq"}), http.StatusBadRequest, "invalid_request")
	checkError(t, "patch range", s.do("PATCH", "/v1/subscriptions/audit", map[string]any{"batch_size": 10001}), http.StatusBadRequest, "invalid_request")
	checkError(t, "patch dlq", s.do("PATCH", "/v1/subscriptions/audit", map[string]any{"on_failure": map[string]any{"topic": "nope"}}), http.StatusNotFound, "topic_not_found")
	checkError(t, "patch missing", s.do("PATCH", "/v1/subscriptions/nope", map[string]any{"enabled": true}), http.StatusNotFound, "subscription_not_found")

	if r := s.do("DELETE", "/v1/subscriptions/audit", nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	checkError(t, "deleted", s.do("GET", "/v1/subscriptions/audit", nil), http.StatusNotFound, "subscription_not_found")
	checkError(t, "group gone", s.do("GET", "/v1/groups/audit", nil), http.StatusNotFound, "group_not_found")
	checkError(t, "delete again", s.do("DELETE", "/v1/subscriptions/audit", nil), http.StatusNotFound, "subscription_not_found")
}
