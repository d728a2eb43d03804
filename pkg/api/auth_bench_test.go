package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/server"
)

// BenchmarkTokenVerification: the same cheap request (a partition's
// offsets) without auth, with a token the verifier has cached, and with
// every request reading the token from the store (the local journal's
// memory; on AWS a DynamoDB GetItem is added to it), in one run. The
// metrics are each variant's ns per request and the ratios to no auth.
func BenchmarkTokenVerification(b *testing.B) {
	open := func(mode string, opts ...auth.Option) (http.Handler, string) {
		s, err := server.Open(context.Background(), server.Config{DataDir: b.TempDir(), CompactInterval: -1,
			Auth: mode, AuthOptions: opts})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if _, err := s.Broker.CreateTopic(context.Background(), broker.TopicSpec{Name: "orders"}); err != nil {
			b.Fatal(err)
		}
		var secret string
		if mode == server.AuthTokens {
			all := ""
			if _, secret, err = s.Tokens.Create(context.Background(), "bench", 0, meta.TokenScope{
				Topics: &meta.NameSet{Prefix: &all}, Operations: []string{"consume"}}); err != nil {
				b.Fatal(err)
			}
		}
		return s.Handler(), secret
	}
	variants := []struct {
		name   string
		h      http.Handler
		secret string
		total  time.Duration
	}{{name: "none"}, {name: "cached"}, {name: "uncached"}}
	variants[0].h, _ = open(server.AuthNone)
	variants[1].h, variants[1].secret = open(server.AuthTokens)
	variants[2].h, variants[2].secret = open(server.AuthTokens, auth.WithCacheTTL(-1))
	for i := range variants {
		v := &variants[i]
		req := httptest.NewRequest("GET", "/v1/topics/orders/partitions/0/offsets", nil)
		if v.secret != "" {
			req.Header.Set("Authorization", "Bearer "+v.secret)
		}
		rec := httptest.NewRecorder()
		v.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", v.name, rec.Code, rec.Body)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range variants {
			v := &variants[i]
			req := httptest.NewRequest("GET", "/v1/topics/orders/partitions/0/offsets", nil)
			if v.secret != "" {
				req.Header.Set("Authorization", "Bearer "+v.secret)
			}
			rec := httptest.NewRecorder()
			start := time.Now()
			v.h.ServeHTTP(rec, req)
			v.total += time.Since(start)
		}
	}
	none := float64(variants[0].total.Nanoseconds())
	for _, v := range variants {
		b.ReportMetric(float64(v.total.Nanoseconds())/float64(b.N), v.name+"-ns/req")
	}
	b.ReportMetric(float64(variants[1].total.Nanoseconds())/none, "cached/none")
	b.ReportMetric(float64(variants[2].total.Nanoseconds())/none, "uncached/none")
}
