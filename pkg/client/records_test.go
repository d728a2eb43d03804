package client_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/server"
)

// headerRecords are records with headers (null, empty, repeated keys,
// bytes that are not UTF-8) and producer timestamps, some without.
func headerRecords() []client.Record {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	return []client.Record{
		{Key: []byte("k0"), Value: []byte("v0"), Timestamp: at(1000), Headers: []client.Header{
			{Key: "trace-id", Value: []byte("abc")}, {Key: "trace-id", Value: nil}, {Key: "empty", Value: []byte{}}}},
		{Value: []byte("v1"), Timestamp: at(500)},
		{Key: []byte{0xff}, Value: nil, Headers: []client.Header{{Key: "bin", Value: []byte{0xff, 0}}}},
		{Value: []byte("v3"), Timestamp: at(0), Headers: []client.Header{{Key: "é", Value: []byte("ü")}}},
	}
}

// checkMessages compares fetched messages with the records produced:
// key, value, headers, and the producer's timestamp where it gave one.
func checkMessages(t *testing.T, how string, got []client.Message, want []client.Record, from int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", how, len(got), len(want))
	}
	for i, m := range got {
		w := want[i]
		if m.Offset != from+int64(i) || !reflect.DeepEqual(m.Key, w.Key) || !reflect.DeepEqual(m.Value, w.Value) {
			t.Errorf("%s: message %d: offset %d key %q value %q, want %q %q", how, i, m.Offset, m.Key, m.Value, w.Key, w.Value)
		}
		if !reflect.DeepEqual(m.Headers, w.Headers) {
			t.Errorf("%s: message %d headers %#v, want %#v", how, i, m.Headers, w.Headers)
		}
		if !w.Timestamp.IsZero() && m.Timestamp != w.Timestamp.UnixMilli() {
			t.Errorf("%s: message %d timestamp %d, want %d", how, i, m.Timestamp, w.Timestamp.UnixMilli())
		}
	}
}

// TestHeadersAndTimestampsRoundTrip produces records with headers and
// timestamps to a create-time topic through every client path (Produce,
// ProduceTo, the Producer, in JSON and binary) and reads them back by
// Fetch in both formats and by Stream.
func TestHeadersAndTimestampsRoundTrip(t *testing.T) {
	ss := newStreamServer(t, server.Config{})
	for _, f := range []client.Format{client.JSON, client.Binary} {
		c, err := client.New(ss.URL, client.WithFormat(f))
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		topic := "ev-" + f.String()
		if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: topic, Partitions: 1, TimestampType: "create"}); err != nil {
			t.Fatal(err)
		}
		recs := headerRecords()
		res, err := c.ProduceTo(ctx, topic, 0, recs)
		if err != nil {
			t.Fatalf("%s ProduceTo: %v", f, err)
		}
		if res[0].Timestamp != 1000 || res[1].Timestamp != 500 || res[3].Timestamp != 0 {
			t.Errorf("%s: produce answered timestamps %d %d %d, want the producer's", f, res[0].Timestamp, res[1].Timestamp, res[3].Timestamp)
		}
		if _, err := c.Produce(ctx, topic, recs); err != nil {
			t.Fatalf("%s Produce: %v", f, err)
		}
		p, err := c.NewProducer(ctx, topic, client.WithLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if _, err := p.Send(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		all := append(append(append([]client.Record(nil), recs...), recs...), recs...)
		for _, rf := range []client.Format{client.JSON, client.Binary} {
			rc, err := client.New(ss.URL, client.WithFormat(rf))
			if err != nil {
				t.Fatal(err)
			}
			fr, err := rc.Fetch(ctx, topic, 0, 0, client.FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkMessages(t, f.String()+" produce, "+rf.String()+" fetch", fr.Messages, all, 0)
		}
		st, err := c.Stream(ctx, topic, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []client.Message
		for range all {
			m, err := st.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		st.Close()
		checkMessages(t, f.String()+" produce, stream", got, all, 0)
	}
}

// TestRecordChecks: what the server would refuse is refused before
// sending.
func TestRecordChecks(t *testing.T) {
	s := newServer(t, nil)
	c := s.client()
	createTopic(t, c, "chk", 1)
	many := make([]client.Header, client.MaxHeaders+1)
	for i := range many {
		many[i].Key = "h"
	}
	for _, tc := range []struct {
		rec  client.Record
		want string
	}{
		{client.Record{Value: []byte("v"), Headers: many}, "65 headers"},
		{client.Record{Value: []byte("v"), Headers: []client.Header{{Key: ""}}}, "header 0: key of 0 bytes"},
		{client.Record{Value: []byte("v"), Headers: []client.Header{{Key: strings.Repeat("k", 257)}}}, "key of 257 bytes"},
		{client.Record{Value: []byte("v"), Timestamp: time.UnixMilli(-1)}, "before 1970"},
		{client.Record{Value: make([]byte, client.MaxRecordBytes-1), Headers: []client.Header{{Key: "ab"}}}, "too large"},
	} {
		if _, err := c.ProduceTo(ctxT(t), "chk", 0, []client.Record{tc.rec}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
	// An append-time topic refuses a producer timestamp (400).
	_, err := c.ProduceTo(ctxT(t), "chk", 0, []client.Record{{Value: []byte("v"), Timestamp: time.UnixMilli(5)}})
	if !client.IsCode(err, client.CodeInvalidRequest) {
		t.Errorf("timestamp on an append-time topic: %v, want invalid_request", err)
	}
}
