package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
	"github.com/tierlog/tierlog/pkg/subscribe"
)

// benchServer is the local server running subscriptions, with a topic.
func benchServer(b *testing.B, partitions int) *server.Server {
	b.Helper()
	s, err := server.Open(context.Background(), server.Config{DataDir: b.TempDir(), CompactInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RunSubscriptions: true})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	b.Cleanup(func() { s.Close() })
	if _, err := s.Broker.CreateTopic(context.Background(), broker.TopicSpec{Name: "orders", Partitions: ptr(partitions)}); err != nil {
		b.Fatal(err)
	}
	return s
}

// countingHook answers at once and reports each event's record count
// (counted, not decoded: the first event is decoded whole, as a check).
func countingHook(b *testing.B) (*httptest.Server, <-chan int) {
	ch := make(chan int, 1024)
	var once sync.Once
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		once.Do(func() {
			var ev events.KafkaEvent
			if err := json.Unmarshal(body, &ev); err != nil || len(ev.Records) != 1 {
				b.Errorf("event: %v", err)
			}
		})
		ch <- bytes.Count(body, []byte(`"offset":`))
	}))
	b.Cleanup(web.Close)
	return web, ch
}

func subscribeHook(b *testing.B, s *server.Server, url string, batch int, start string) {
	b.Helper()
	if _, err := s.Subscriptions.Create(context.Background(), subscribe.Spec{Name: "bench", Topic: "orders",
		Target: &subscribe.Target{Type: subscribe.TargetHTTP, URL: url}, Start: &subscribe.Start{Position: start},
		BatchSize: &batch, BatchWindowMs: ptr(int64(0))}); err != nil {
		b.Fatal(err)
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSubscriptionLatency: one record produced at a time; the time
// from the produce call to the webhook receiving it (push), and, as the
// same-run baseline, to a long-polling fetch returning it (pull).
func BenchmarkSubscriptionLatency(b *testing.B) {
	value := bytes.Repeat([]byte{'x'}, 1024)
	b.Run("push", func(b *testing.B) {
		s := benchServer(b, 1)
		web, got := countingHook(b)
		subscribeHook(b, s, web.URL, 100, subscribe.StartLatest)
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if _, err := s.Broker.Produce(ctx, "orders", []broker.ProduceRecord{{Value: value, Partition: 0}}); err != nil {
				b.Fatal(err)
			}
			for n := 0; n < 1; n += <-got {
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("pull-baseline", func(b *testing.B) {
		s := benchServer(b, 1)
		ctx := context.Background()
		got := make(chan time.Time, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for off := int64(0); off < int64(b.N); {
				res, err := s.Broker.Fetch(ctx, broker.FetchRequest{Topic: "orders", Offset: off, Wait: broker.MaxWait})
				if err != nil {
					b.Error(err)
					return
				}
				for range res.Records {
					got <- time.Now()
				}
				off = res.NextOffset
			}
		}()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if _, err := s.Broker.Produce(ctx, "orders", []broker.ProduceRecord{{Value: value, Partition: 0}}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, (<-got).Sub(start))
		}
		<-done
		reportPercentiles(b, lat)
	})
}

// BenchmarkSubscriptionThroughput: b.N batches of 1,000 records of 1 KiB
// are in the topic; a subscription (batch size 1,000) delivers them to a
// webhook answering at once. The same-run baseline reads them with
// fetches of 1,000 records.
func BenchmarkSubscriptionThroughput(b *testing.B) {
	const batch = 1000
	value := bytes.Repeat([]byte{'x'}, 1024)
	fill := func(s *server.Server, n int) {
		recs := make([]broker.ProduceRecord, batch)
		for i := range recs {
			recs[i] = broker.ProduceRecord{Value: value, Partition: 0}
		}
		for range n {
			if _, err := s.Broker.Produce(context.Background(), "orders", recs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("push", func(b *testing.B) {
		s := benchServer(b, 1)
		web, got := countingHook(b)
		fill(s, b.N)
		b.SetBytes(batch * 1024)
		b.ResetTimer()
		start := time.Now()
		subscribeHook(b, s, web.URL, batch, subscribe.StartEarliest)
		for n := 0; n < b.N*batch; n += <-got {
		}
		b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "records/s")
	})
	b.Run("pull-baseline", func(b *testing.B) {
		s := benchServer(b, 1)
		fill(s, b.N)
		b.SetBytes(batch * 1024)
		b.ResetTimer()
		start := time.Now()
		for off := int64(0); off < int64(b.N*batch); {
			res, err := s.Broker.Fetch(context.Background(), broker.FetchRequest{Topic: "orders", Offset: off, MaxRecords: batch, MaxBytes: broker.MaxFetchBytes})
			if err != nil {
				b.Fatal(err)
			}
			off = res.NextOffset
		}
		b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "records/s")
	})
}
