package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// sameHeaders compares headers, null values told from empty ones; nil and
// empty lists are the same (no headers).
func sameHeaders(a, b []Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || (a[i].Value == nil) != (b[i].Value == nil) || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// TestHeadersAndTimestampsHotRoundTrip produces records with headers (and,
// on a create-time topic, timestamps that go back) and fetches them back
// from the hot tier, also after the broker restarts and continues the
// segment.
func TestHeadersAndTimestampsHotRoundTrip(t *testing.T) {
	ctx := context.Background()
	store, dir := mem.New(), t.TempDir()
	b := newBroker(t, store, dir)
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "events", TimestampType: ptr(TimestampCreate)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "logs"}); err != nil {
		t.Fatal(err)
	}
	const t0 = 1700000000000
	recs := []ProduceRecord{
		{Key: []byte("k"), Value: []byte("v0"), Partition: 0, Headers: []Header{{Key: "trace-id", Value: []byte("abc")}}, Timestamp: t0, HasTimestamp: true},
		{Value: []byte("v1"), Partition: 0, Headers: []Header{{Key: "k", Value: nil}, {Key: "k", Value: []byte{}}, {Key: "bin", Value: []byte{0, 0xff}}}, Timestamp: t0 - 5000, HasTimestamp: true},
		{Value: []byte("v2"), Partition: 0}, // no headers, no timestamp: the server's clock
		{Value: nil, Partition: 0, Headers: []Header{{Key: "h", Value: []byte("tombstone with a header")}}, Timestamp: 0, HasTimestamp: true},
	}
	res, err := b.Produce(ctx, "events", recs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Offset != int64(i) {
			t.Fatalf("result %d: %+v", i, r)
		}
		if recs[i].HasTimestamp && r.Timestamp != recs[i].Timestamp {
			t.Fatalf("result %d: timestamp %d, want the producer's %d", i, r.Timestamp, recs[i].Timestamp)
		}
	}
	if res[2].Timestamp < t0 {
		t.Fatalf("a record without a timestamp got %d, not the server's clock", res[2].Timestamp)
	}
	check := func(b *Broker, what string, want []ProduceRecord, wantTS []int64) {
		t.Helper()
		f, err := b.Fetch(ctx, FetchRequest{Topic: "events", Partition: 0, Offset: 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Records) != len(want) {
			t.Fatalf("%s: %d records, want %d", what, len(f.Records), len(want))
		}
		for i, r := range f.Records {
			w := want[i]
			if !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
				t.Fatalf("%s: record %d key/value %q/%q, want %q/%q", what, i, r.Key, r.Value, w.Key, w.Value)
			}
			if !sameHeaders(r.Headers, w.Headers) {
				t.Fatalf("%s: record %d headers %+v, want %+v", what, i, r.Headers, w.Headers)
			}
			if r.Timestamp != wantTS[i] {
				t.Fatalf("%s: record %d timestamp %d, want %d", what, i, r.Timestamp, wantTS[i])
			}
		}
	}
	ts := make([]int64, len(res))
	for i, r := range res {
		ts[i] = r.Timestamp
	}
	check(b, "hot fetch", recs, ts)

	// Single-partition route; then a restart continues the active segment.
	more := []ProduceRecord{{Value: []byte("v4"), Headers: []Header{{Key: "after", Value: []byte("restart")}}, Timestamp: t0 + 1, HasTimestamp: true}}
	r2, err := b.ProducePartition(ctx, "events", 0, more)
	if err != nil || r2[0].Offset != 4 || r2[0].Timestamp != t0+1 {
		t.Fatalf("produce partition: %+v, %v", r2, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = newBroker(t, store, dir)
	defer b.Close()
	recs = append(recs, more...)
	ts = append(ts, t0+1)
	more2 := []ProduceRecord{{Value: []byte("v5"), Headers: []Header{{Key: "x", Value: []byte("y")}}, Timestamp: 7, HasTimestamp: true}}
	if r3, err := b.ProducePartition(ctx, "events", 0, more2); err != nil || r3[0].Offset != 5 || r3[0].Timestamp != 7 {
		t.Fatalf("produce after restart: %+v, %v", r3, err)
	}
	check(b, "after restart", append(recs, more2...), append(ts, 7))

	// Headers on an append-time topic; a timestamp there is refused.
	lr, err := b.ProducePartition(ctx, "logs", 0, []ProduceRecord{{Value: []byte("x"), Headers: []Header{{Key: "a", Value: []byte("b")}}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Fetch(ctx, FetchRequest{Topic: "logs", Partition: 0, Offset: 0})
	if err != nil || len(f.Records) != 1 || !sameHeaders(f.Records[0].Headers, []Header{{Key: "a", Value: []byte("b")}}) || f.Records[0].Timestamp != lr[0].Timestamp {
		t.Fatalf("append-time fetch: %+v, %v", f, err)
	}
	_, err = b.ProducePartition(ctx, "logs", 0, []ProduceRecord{{Value: []byte("x"), Timestamp: 5, HasTimestamp: true}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "timestamp_type") {
		t.Fatalf("timestamp on an append-time topic: %v, want ErrInvalid naming timestamp_type", err)
	}
	if _, err := b.Produce(ctx, "logs", []ProduceRecord{{Value: []byte("x"), Partition: -1, Timestamp: 5, HasTimestamp: true}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("timestamp on an append-time topic, multi-partition route: %v", err)
	}
}

func TestRecordLimits(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "events", TimestampType: ptr(TimestampCreate)}); err != nil {
		t.Fatal(err)
	}
	hs := func(n int) []Header {
		out := make([]Header, n)
		for i := range out {
			out[i] = Header{Key: fmt.Sprintf("h%d", i), Value: []byte("v")}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		rec  ProduceRecord
		want error // nil: accepted
	}{
		{"64 headers", ProduceRecord{Headers: hs(64)}, nil},
		{"65 headers", ProduceRecord{Headers: hs(65)}, ErrInvalid},
		{"empty header key", ProduceRecord{Headers: []Header{{Key: ""}}}, ErrInvalid},
		{"256-byte header key", ProduceRecord{Headers: []Header{{Key: strings.Repeat("k", 256)}}}, nil},
		{"257-byte header key", ProduceRecord{Headers: []Header{{Key: strings.Repeat("k", 257)}}}, ErrInvalid},
		{"header key not UTF-8", ProduceRecord{Headers: []Header{{Key: "\xff\xfe"}}}, ErrInvalid},
		{"negative timestamp", ProduceRecord{Timestamp: -1, HasTimestamp: true}, ErrInvalid},
		{"headers fill the record limit", ProduceRecord{Value: make([]byte, MaxRecordBytes-2), Headers: []Header{{Key: "k", Value: []byte("v")}}}, nil},
		{"headers push past the record limit", ProduceRecord{Value: make([]byte, MaxRecordBytes-1), Headers: []Header{{Key: "k", Value: []byte("v")}}}, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.ProducePartition(ctx, "events", 0, []ProduceRecord{tc.rec})
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			tc.rec.Partition = 0
			_, err = b.Produce(ctx, "events", []ProduceRecord{tc.rec})
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("multi-partition route: err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestIdempotencyCoversHeadersAndTimestamps: a retry with the same key is
// answered with the first attempt's offsets and timestamps; other headers
// or another timestamp under the same key are another request.
func TestIdempotencyCoversHeadersAndTimestamps(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "events", TimestampType: ptr(TimestampCreate)}); err != nil {
		t.Fatal(err)
	}
	recs := []ProduceRecord{
		{Value: []byte("a"), Headers: []Header{{Key: "h", Value: []byte("1")}}, Timestamp: 100, HasTimestamp: true},
		{Value: []byte("b")},
	}
	o := ProduceOptions{IdempotencyKey: "req-1"}
	first, err := b.ProducePartitionWith(ctx, "events", 0, recs, o)
	if err != nil || first.Replayed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := b.ProducePartitionWith(ctx, "events", 0, recs, o)
	if err != nil || !again.Replayed {
		t.Fatalf("retry: %+v, %v", again, err)
	}
	for i := range first.Results {
		if again.Results[i] != first.Results[i] {
			t.Fatalf("retry result %d = %+v, first %+v", i, again.Results[i], first.Results[i])
		}
	}
	variants := map[string]func([]ProduceRecord){
		"header value":  func(r []ProduceRecord) { r[0].Headers = []Header{{Key: "h", Value: []byte("2")}} },
		"header null":   func(r []ProduceRecord) { r[0].Headers = []Header{{Key: "h", Value: nil}} },
		"header key":    func(r []ProduceRecord) { r[0].Headers = []Header{{Key: "g", Value: []byte("1")}} },
		"no headers":    func(r []ProduceRecord) { r[0].Headers = nil },
		"timestamp":     func(r []ProduceRecord) { r[0].Timestamp = 101 },
		"no timestamp":  func(r []ProduceRecord) { r[0].HasTimestamp, r[0].Timestamp = false, 0 },
		"one more head": func(r []ProduceRecord) { r[1].Headers = []Header{{Key: "x"}} },
	}
	for name, change := range variants {
		v := append([]ProduceRecord(nil), recs...)
		change(v)
		if _, err := b.ProducePartitionWith(ctx, "events", 0, v, o); !errors.Is(err, ErrIdempotencyKeyReused) {
			t.Errorf("%s changed under the same key: %v, want ErrIdempotencyKeyReused", name, err)
		}
	}
	// A request without headers or timestamps hashes as it did before
	// records had them (the value the earlier code computes), so a retry
	// across an upgrade is still recognised; an empty header list is none.
	for _, plain := range [][]ProduceRecord{{{Key: []byte("k"), Value: []byte("v")}}, {{Key: []byte("k"), Value: []byte("v"), Headers: []Header{}}}} {
		if got := fmt.Sprintf("%x", requestHash(routePartition, 0, plain)); got != "9e2542dcde6d2b4692974811e9ee3e1b" {
			t.Fatalf("hash of a plain request %s, want the earlier code's", got)
		}
	}
}
