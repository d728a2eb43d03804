package client_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/client"
)

func TestNewValidatesURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "http://h/?q=1", "://bad", "127.0.0.1:99999", "h:port"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080", "https://id.execute-api.eu-west-1.amazonaws.com/prod/"} {
		if _, err := client.New(u); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
	// kcat's -b form: host:port, no scheme (http; https for AWS hosts).
	for raw, want := range map[string]string{
		"127.0.0.1:8080":    "http://127.0.0.1:8080",
		"localhost:8080":    "http://localhost:8080",
		"[::1]:8080/prefix": "http://[::1]:8080/prefix",
		" localhost ":       "http://localhost",
		"id.execute-api.eu-west-1.amazonaws.com/prod": "https://id.execute-api.eu-west-1.amazonaws.com/prod",
	} {
		u, err := client.ParseURL(raw)
		if err != nil || u.String() != want {
			t.Errorf("ParseURL(%q) = %v, %v; want %s", raw, u, err, want)
		}
	}
	if _, err := client.New("http://x", client.WithSigV4(nil, "")); err != nil {
		t.Errorf("nil credentials are no signing: %v", err)
	}
}

// TestRoutes calls every route through the client, in both formats,
// against the real server.
func TestRoutes(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f client.Format) {
		s := newServer(t, nil)
		c := s.client(client.WithFormat(f))
		ctx := ctxT(t)
		if err := c.Health(ctx); err != nil {
			t.Fatalf("health: %v", err)
		}
		top, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Partitions: 3, RetentionMs: client.Int64(1000), CleanupPolicy: "delete"})
		if err != nil || top.Partitions != 3 || top.RetentionMs != 1000 || top.SegmentBytes != broker.DefaultSegmentBytes {
			t.Fatalf("create: %+v %v", top, err)
		}
		if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders"}); !client.IsCode(err, client.CodeTopicExists) {
			t.Fatalf("create twice: %v", err)
		}
		createTopic(t, c, "aaa", 1)
		ts, err := c.Topics(ctx)
		if err != nil || len(ts) != 2 || ts[0].Name != "aaa" || ts[1].Name != "orders" {
			t.Fatalf("list: %+v %v", ts, err)
		}
		if got, err := c.Topic(ctx, "orders"); err != nil || got != top {
			t.Fatalf("describe: %+v %v", got, err)
		}

		// Every kind of key and value, through per-record partitions.
		recs := []client.Record{
			{Key: []byte("k1"), Value: []byte("hello"), Partition: client.Partition(0)},
			{Key: nil, Value: []byte("tab\tand \"quotes\" and \\ and \x01 and ünï ✓"), Partition: client.Partition(0)},
			{Key: []byte{}, Value: []byte{}, Partition: client.Partition(0)},
			{Key: []byte("tomb"), Value: nil, Partition: client.Partition(0)},
			{Key: []byte{0xff, 0x00}, Value: []byte{0x80, 0xfe}, Partition: client.Partition(0)},
		}
		res, err := c.Produce(ctx, "orders", recs)
		if err != nil || len(res) != len(recs) {
			t.Fatalf("produce: %+v %v", res, err)
		}
		for i := range 5 {
			if res[i].Partition != 0 || res[i].Offset != int64(i) || res[i].Err != nil || res[i].Timestamp <= 0 {
				t.Errorf("result %d: %+v", i, res[i])
			}
		}
		got := readAll(t, c, "orders", 0)
		if len(got) != 5 {
			t.Fatalf("partition 0 has %d records", len(got))
		}
		for i := range 5 {
			if !sameBytes(got[i].Key, recs[i].Key) || !sameBytes(got[i].Value, recs[i].Value) || got[i].Partition != 0 {
				t.Errorf("record %d: key %q value %q, want %q %q", i, got[i].Key, got[i].Value, recs[i].Key, recs[i].Value)
			}
		}

		// Produce to one partition; a record naming a partition is refused
		// before sending.
		if _, err := c.ProduceTo(ctx, "orders", 1, []client.Record{{Value: []byte("x"), Partition: client.Partition(1)}}); err == nil {
			t.Error("ProduceTo with a record partition accepted")
		}
		res, err = c.ProduceTo(ctx, "orders", 2, []client.Record{{Value: []byte("a")}, {Value: []byte("b")}})
		if err != nil || len(res) != 2 || res[1].Offset != res[0].Offset+1 || res[0].Partition != 2 {
			t.Fatalf("produce to: %+v %v", res, err)
		}

		// Fetch bounds and options.
		fr, err := c.Fetch(ctx, "orders", 0, 1, client.FetchOptions{MaxRecords: 2})
		if err != nil || len(fr.Messages) != 2 || fr.Messages[0].Offset != 1 || fr.NextOffset != 3 || fr.HighWatermark != 5 || fr.LogStartOffset != 0 {
			t.Fatalf("fetch: %+v %v", fr, err)
		}
		_, err = c.Fetch(ctx, "orders", 0, 99, client.FetchOptions{})
		var e *client.Error
		if !errors.As(err, &e) || e.Status != 416 || e.Code != client.CodeOffsetOutOfRange || e.HighWatermark != 5 || e.LogStartOffset != 0 || e.RequestID == "" {
			t.Fatalf("fetch out of range: %#v", err)
		}
		if _, err := c.Fetch(ctx, "nope", 0, 0, client.FetchOptions{}); !client.IsCode(err, client.CodeTopicNotFound) || client.IsRetriable(err) {
			t.Fatalf("fetch unknown topic: %v", err)
		}
		if _, err := c.Fetch(ctx, "orders", 7, 0, client.FetchOptions{}); !client.IsCode(err, client.CodePartitionNotFound) {
			t.Fatalf("fetch unknown partition: %v", err)
		}

		// Offsets and offset for timestamp.
		o, err := c.Offsets(ctx, "orders", 0)
		if err != nil || o.HighWatermark != 5 || o.LogStartOffset != 0 {
			t.Fatalf("offsets: %+v %v", o, err)
		}
		to, err := c.OffsetForTimestamp(ctx, "orders", 0, 0)
		if err != nil || !to.Found || to.Offset != 0 || to.Timestamp != got[0].Timestamp {
			t.Fatalf("offset for ts 0: %+v %v", to, err)
		}
		to, err = c.OffsetForTimestamp(ctx, "orders", 0, time.Now().Add(time.Hour).UnixMilli())
		if err != nil || to.Found || to.Offset != 5 {
			t.Fatalf("offset for a future ts: %+v %v", to, err)
		}

		// Groups with lag.
		if err := c.CommitGroupOffsets(ctx, "g", []client.GroupOffset{{Topic: "orders", Partition: 0, Offset: 2, Metadata: "m"}}); err != nil {
			t.Fatalf("commit: %v", err)
		}
		if err := c.CommitGroupOffsets(ctx, "g", []client.GroupOffset{{Topic: "orders", Partition: 0, Offset: 6}}); !client.IsCode(err, client.CodeOffsetOutOfRange) {
			t.Fatalf("commit past hw: %v", err)
		}
		gos, err := c.GroupOffsets(ctx, "g", "orders")
		if err != nil || len(gos) != 1 || gos[0] != (client.GroupOffset{Topic: "orders", Partition: 0, Offset: 2, Metadata: "m", Lag: 3}) {
			t.Fatalf("group offsets: %+v %v", gos, err)
		}
		if gos, err := c.GroupOffsets(ctx, "unknown", "orders"); err != nil || len(gos) != 0 {
			t.Fatalf("unknown group: %+v %v", gos, err)
		}

		// Routing by key and round-robin, server side.
		res, err = c.Produce(ctx, "orders", []client.Record{{Key: []byte("hashed"), Value: []byte("by key")}, {Value: []byte("rr")}, {Value: []byte("rr")}})
		if err != nil {
			t.Fatalf("produce routed: %v", err)
		}
		if want := client.KeyPartition([]byte("hashed"), 3); res[0].Partition != want {
			t.Errorf("keyed record went to %d, KeyPartition says %d", res[0].Partition, want)
		}
		if res[1].Partition == res[2].Partition {
			t.Errorf("round-robin put both keyless records on partition %d", res[1].Partition)
		}

		if err := c.DeleteTopic(ctx, "aaa"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := c.Topic(ctx, "aaa"); !client.IsCode(err, client.CodeTopicNotFound) {
			t.Fatalf("describe deleted: %v", err)
		}
		// Limits are checked before sending.
		if _, err := c.ProduceTo(ctx, "orders", 0, []client.Record{{Value: make([]byte, client.MaxRecordBytes+1)}}); !errors.Is(err, client.ErrTooLarge) {
			t.Fatalf("oversize record: %v", err)
		}
	})
}

// TestKeyPartitionMatchesBroker pins the client's router to the server's:
// the producer keeps one queue per partition only if it routes as the
// server would.
func TestKeyPartitionMatchesBroker(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		key := make([]byte, rng.IntN(40))
		for j := range key {
			key[j] = byte(rng.IntN(256))
		}
		n := 1 + i%64
		if got, want := client.KeyPartition(key, n), broker.KeyPartition(key, n); got != want {
			t.Fatalf("key %x over %d partitions: client %d, broker %d", key, n, got, want)
		}
	}
}

// TestErrorShapes checks answers that are not docs/api.md's: API Gateway's own
// {"message":...}, plain text, and Retry-After as a date.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/topics/gw":
			w.WriteHeader(403)
			fmt.Fprint(w, `{"message":"Missing Authentication Token"}`)
		case "/v1/topics/text":
			w.WriteHeader(502)
			fmt.Fprint(w, "bad gateway\n")
		case "/v1/topics/date":
			w.Header().Set("Retry-After", time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(429)
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithBackoff(client.Backoff{MaxElapsed: 0}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var e *client.Error
	_, err = c.Topic(ctx, "gw")
	if !errors.As(err, &e) || e.Status != 403 || e.Code != "" || e.Message != "Missing Authentication Token" || e.IsRetriable() {
		t.Errorf("gateway 403: %#v", err)
	}
	_, err = c.Topic(ctx, "text")
	if !errors.As(err, &e) || e.Status != 502 || e.Message != "bad gateway" || !client.IsRetriable(err) {
		t.Errorf("text 502: %#v", err)
	}
	_, err = c.Topic(ctx, "date")
	if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter < time.Second || e.RetryAfter > 3*time.Second || !e.IsRetriable() {
		t.Errorf("429 with a date: %#v", err)
	}
	if client.IsRetriable(nil) || client.IsRetriable(errors.New("x")) {
		t.Error("plain errors are not retriable")
	}
}
