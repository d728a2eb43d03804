package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestCLISubscriptions: `tierlog subscriptions` against `tierlog serve`,
// which delivers to a webhook in-process: create, list, describe, pause,
// resume, delete; the group shows the progress.
func TestCLISubscriptions(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	got := make(chan []string, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev events.KafkaEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("event: %v", err)
		}
		var vals []string
		for _, recs := range ev.Records {
			for _, rec := range recs {
				vals = append(vals, rec.Value)
			}
		}
		got <- vals
	}))
	defer hook.Close()
	s := startServer(t, t.TempDir())
	mustCLI(t, nil, "topics", "create", "orders", "--url", s.url)
	mustCLI(t, nil, "topics", "create", "dlq", "--url", s.url)
	out := mustCLI(t, nil, "subscriptions", "create", "billing", "--url", s.url, "--topic", "orders", "--webhook", hook.URL,
		"--start", "beginning", "--batch-size", "10", "--max-retry-attempts", "2", "--on-failure", "dlq", "--format", "json")
	var sub struct {
		Name             string `json:"name"`
		BatchSize        int    `json:"batch_size"`
		MaxRetryAttempts int    `json:"max_retry_attempts"`
		Start            string `json:"start"`
	}
	if err := json.Unmarshal([]byte(out), &sub); err != nil || sub.BatchSize != 10 || sub.MaxRetryAttempts != 2 || sub.Start != "earliest" {
		t.Fatalf("create: %s %v", out, err)
	}
	if r := cli(t, nil, "subscriptions", "create", "x", "--url", s.url, "--topic", "orders"); r.code != 2 || !strings.Contains(r.stderr, "--lambda FUNCTION or --webhook URL") {
		t.Fatalf("create without a target: %+v", r)
	}
	if r := cli(t, nil, "subscriptions", "create", "billing", "--url", s.url, "--topic", "orders", "--webhook", hook.URL); r.code != 1 || !strings.Contains(r.stderr, "subscription_exists") {
		t.Fatalf("create twice: %+v", r)
	}
	mustCLI(t, []byte("a\nb\nc\n"), "produce", "--url", s.url, "--topic", "orders")
	var vals []string
	for len(vals) < 3 {
		select {
		case v := <-got:
			vals = append(vals, v...)
		case <-time.After(30 * time.Second):
			t.Fatalf("webhook got %v in 30s", vals)
		}
	}
	if strings.Join(vals, ",") != "YQ==,Yg==,Yw==" { // base64 of a, b, c
		t.Fatalf("webhook got %v", vals)
	}
	// The commit follows the webhook's answer: wait for it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		out = mustCLI(t, nil, "subscriptions", "describe", "billing", "--url", s.url)
		if strings.Contains(out, "delivered 3") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe after delivery:\n%s", out)
		}
	}
	out = mustCLI(t, nil, "subscriptions", "list", "--url", s.url)
	if rows := strings.Split(strings.TrimSpace(out), "\n"); len(rows) != 2 || strings.Fields(rows[1])[0] != "billing" {
		t.Fatalf("list:\n%s", out)
	}
	mustCLI(t, nil, "subscriptions", "pause", "billing", "--url", s.url)
	if out = mustCLI(t, nil, "subscriptions", "describe", "billing", "--url", s.url); !strings.Contains(out, "state paused") {
		t.Fatalf("describe paused:\n%s", out)
	}
	mustCLI(t, nil, "subscriptions", "resume", "billing", "--url", s.url)
	out = mustCLI(t, nil, "subscriptions", "describe", "billing", "--url", s.url)
	if !strings.Contains(out, "state active") || !strings.Contains(out, "delivered 3") {
		t.Fatalf("describe:\n%s", out)
	}
	if out = mustCLI(t, nil, "groups", "show", "--url", s.url, "--group", "billing", "--topic", "orders", "--format", "json"); !strings.Contains(out, `"offset":3`) {
		t.Fatalf("the subscription's group: %s", out)
	}
	mustCLI(t, nil, "subscriptions", "delete", "billing", "--url", s.url)
	if r := cli(t, nil, "subscriptions", "describe", "billing", "--url", s.url); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("describe deleted: %+v", r)
	}
}
