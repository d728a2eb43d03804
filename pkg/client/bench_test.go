package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/meta/local"
)

// benchTopics numbers the topics of benchmark runs (-count reruns them).
var benchTopics atomic.Int64

// benchServer is the real server over loopback HTTP, and its broker for
// the direct-call baseline.
func benchServer(b *testing.B) (*httptest.Server, *broker.Broker) {
	root := b.TempDir()
	store, err := local.Open(filepath.Join(root, "meta"))
	if err != nil {
		b.Fatal(err)
	}
	br, err := broker.New(context.Background(), broker.Config{DataDir: filepath.Join(root, "data"), Meta: store})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.New(br))
	b.Cleanup(func() {
		srv.Close()
		br.Close()
		store.Close()
	})
	return srv, br
}

// BenchmarkProduce sends batches of 1000 records to one partition: over
// HTTP in JSON and in binary batches, and straight into the broker (the
// engine baseline, same batch, no HTTP). Bytes are keys and values.
func BenchmarkProduce(b *testing.B) {
	const batch = 1000
	for _, size := range []int{100, 1024} {
		recs := make([]client.Record, batch)
		brecs := make([]broker.ProduceRecord, batch)
		for i := range recs {
			key := fmt.Appendf(nil, "key-%06d", i)
			val := bytes.Repeat([]byte{'a' + byte(i%26)}, size-len(key))
			recs[i] = client.Record{Key: key, Value: val}
			brecs[i] = broker.ProduceRecord{Key: key, Value: val, Partition: -1}
		}
		srv, br := benchServer(b)
		ctx := context.Background()
		for _, f := range formats() {
			b.Run(fmt.Sprintf("record=%d/http-%s", size, f), func(b *testing.B) {
				c, err := client.New(srv.URL, client.WithFormat(f))
				if err != nil {
					b.Fatal(err)
				}
				topic := fmt.Sprintf("p-%d-%s-%d", size, f, benchTopics.Add(1))
				if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: topic}); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(batch * size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.ProduceTo(ctx, topic, 0, recs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
		b.Run(fmt.Sprintf("record=%d/direct", size), func(b *testing.B) {
			topic := fmt.Sprintf("d-%d-%d", size, benchTopics.Add(1))
			if _, err := br.CreateTopic(ctx, broker.TopicSpec{Name: topic}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(batch * size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := br.ProducePartition(ctx, topic, 0, brecs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkFetch reads 1000 records per request over HTTP in each format.
func BenchmarkFetch(b *testing.B) {
	const batch = 1000
	for _, size := range []int{100, 1024} {
		srv, _ := benchServer(b)
		ctx := context.Background()
		setup, err := client.New(srv.URL, client.WithFormat(client.Binary))
		if err != nil {
			b.Fatal(err)
		}
		topic := fmt.Sprintf("f-%d", size)
		if _, err := setup.CreateTopic(ctx, client.TopicSpec{Name: topic}); err != nil {
			b.Fatal(err)
		}
		recs := make([]client.Record, batch)
		for i := range recs {
			key := fmt.Appendf(nil, "key-%06d", i)
			recs[i] = client.Record{Key: key, Value: bytes.Repeat([]byte{'a' + byte(i%26)}, size-len(key))}
		}
		if _, err := setup.ProduceTo(ctx, topic, 0, recs); err != nil {
			b.Fatal(err)
		}
		for _, f := range formats() {
			b.Run(fmt.Sprintf("record=%d/http-%s", size, f), func(b *testing.B) {
				c, _ := client.New(srv.URL, client.WithFormat(f))
				b.SetBytes(int64(batch * size))
				b.ReportAllocs()
				for b.Loop() {
					res, err := c.Fetch(ctx, topic, 0, 0, client.FetchOptions{MaxRecords: batch, MaxBytes: 4 << 20})
					if err != nil || len(res.Messages) != batch {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}
