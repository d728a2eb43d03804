package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta/local"
)

// discardWriter is a ResponseWriter that throws the body away, so the
// benchmark measures the handler, not a recorder's buffer.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(b []byte) (int, error) { return io.Discard.Write(b) }

// benchBroker is a broker on the embedded store in a temporary directory,
// closed when b ends.
func benchBroker(b testing.TB) *broker.Broker {
	br, _ := benchBrokers(b)
	return br
}

// benchBrokers returns benchBroker's broker and a second one over the
// same data and store that reads only and keeps no answers: what a fetch
// costs when no reader asked for the same before.
func benchBrokers(b testing.TB) (br, uncached *broker.Broker) {
	b.Helper()
	root := b.TempDir()
	store, err := local.Open(filepath.Join(root, "meta"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	cfg := broker.Config{DataDir: filepath.Join(root, "data"), Meta: store}
	if br, err = broker.New(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	cfg.ReadOnly, cfg.AnswerCacheBytes = true, -1
	if uncached, err = broker.New(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { uncached.Close() })
	return br, uncached
}

// BenchmarkFetch measures a 500-record fetch, one b.Run per value size and
// encoding; bytes are the records' values.
func BenchmarkFetch(b *testing.B) {
	ctx := context.Background()
	br := benchBroker(b)
	h := api.New(br)
	const n = 500
	for _, size := range []int{16, 256, 2048} {
		topic := fmt.Sprint("bench-", size)
		if _, err := br.CreateTopic(ctx, broker.TopicSpec{Name: topic}); err != nil {
			b.Fatal(err)
		}
		recs := make([]broker.ProduceRecord, n)
		for i := range recs {
			recs[i] = broker.ProduceRecord{Key: []byte(fmt.Sprint("key-", i)), Value: []byte(strings.Repeat("v", size)), Partition: 0}
		}
		if _, err := br.ProducePartition(ctx, topic, 0, recs); err != nil {
			b.Fatal(err)
		}
		for _, enc := range []string{"utf8", "base64"} {
			b.Run(fmt.Sprintf("value=%d/%s", size, enc), func(b *testing.B) {
				req := httptest.NewRequest("GET", fmt.Sprintf("/v1/topics/%s/partitions/0/records?offset=0&max_records=%d&encoding=%s", topic, n, enc), nil)
				b.SetBytes(int64(n * size))
				b.ReportAllocs()
				for b.Loop() {
					h.ServeHTTP(&discardWriter{h: http.Header{}}, req)
				}
			})
		}
	}
}
