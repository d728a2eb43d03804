package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// flakyStore is a metadata store that can go down: while down, every call
// the API's requests reach fails with meta.ErrUnavailable, wrapped the way
// adapters do (with a path and SDK-ish text the client must not see).
type flakyStore struct {
	meta.Store
	down atomic.Bool
}

const flakyCause = "write /var/lib/tierlog/meta/journal-000001.log: no space left on device"

func (f *flakyStore) fail(op string) error {
	if f.down.Load() {
		return fmt.Errorf("meta/test: %s: %w: %s", op, meta.ErrUnavailable, flakyCause)
	}
	return nil
}

func (f *flakyStore) CreateTopic(ctx context.Context, t meta.TopicConfig) error {
	if err := f.fail("create topic"); err != nil {
		return err
	}
	return f.Store.CreateTopic(ctx, t)
}

func (f *flakyStore) Topic(ctx context.Context, name string) (meta.TopicConfig, error) {
	if err := f.fail("topic"); err != nil {
		return meta.TopicConfig{}, err
	}
	return f.Store.Topic(ctx, name)
}

func (f *flakyStore) Topics(ctx context.Context) ([]meta.TopicConfig, error) {
	if err := f.fail("topics"); err != nil {
		return nil, err
	}
	return f.Store.Topics(ctx)
}

func (f *flakyStore) DeleteTopic(ctx context.Context, name, id string) error {
	if err := f.fail("delete topic"); err != nil {
		return err
	}
	return f.Store.DeleteTopic(ctx, name, id)
}

func (f *flakyStore) CommitOffsets(ctx context.Context, group string, offsets []meta.GroupOffset) error {
	if err := f.fail("commit offsets"); err != nil {
		return err
	}
	return f.Store.CommitOffsets(ctx, group, offsets)
}

func (f *flakyStore) GroupOffsets(ctx context.Context, group, topic string) ([]meta.GroupOffset, error) {
	if err := f.fail("group offsets"); err != nil {
		return nil, err
	}
	return f.Store.GroupOffsets(ctx, group, topic)
}

// TestMetadataUnavailableIs503 is robustness.md 3.6: a metadata store
// that cannot answer (a full disk, DynamoDB throttling) is 503 with
// Retry-After on every route, topic create and group commits included,
// with a fixed message that names neither the store's files nor its SDK.
func TestMetadataUnavailableIs503(t *testing.T) {
	t.Parallel()
	store := &flakyStore{Store: mem.New()}
	b, err := broker.New(context.Background(), broker.Config{DataDir: t.TempDir(), Meta: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(b))
	t.Cleanup(func() {
		srv.Close()
		if err := b.Close(); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
	})
	s := &testServer{Server: srv, t: t}
	s.createTopic("up", 1)
	s.ok("POST", "/v1/topics/up/partitions/0/records", `{"records":[{"value":"x"}]}`, 200, nil)

	store.down.Store(true)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/topics", `{"name":"created-while-down"}`},
		{"PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"up","partition":0,"offset":1}]}`},
		{"GET", "/v1/topics", ""},
		{"GET", "/v1/groups/g1/offsets?topic=up", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := s.do(c.method, c.path, body)
		msg := checkError(t, c.method+" "+c.path, r, http.StatusServiceUnavailable, "unavailable")
		if msg != "metadata store unavailable: retry" || strings.Contains(string(r.body), "/var/lib") {
			t.Errorf("%s %s: message %q, body %s", c.method, c.path, msg, r.body)
		}
	}
	store.down.Store(false)
	// Nothing was half-done: the topic is created now, the commit lands.
	s.createTopic("created-while-down", 1)
	s.ok("PUT", "/v1/groups/g1/offsets", `{"offsets":[{"topic":"up","partition":0,"offset":1}]}`, 204, nil)
}
