package auth

import (
	"context"
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

// BenchmarkAuthenticate is the verifier alone: parse, cache or store
// lookup, SHA-256 and the constant-time comparison, expiry.
func BenchmarkAuthenticate(b *testing.B) {
	for _, c := range []struct {
		name string
		ttl  int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(c.name, func(b *testing.B) {
			var opts []Option
			if c.ttl < 0 {
				opts = append(opts, WithCacheTTL(-1))
			}
			v := New(mem.New(), opts...)
			_, secret, err := v.Create(context.Background(), "", 0, meta.TokenScope{Operations: []string{"consume"}})
			if err != nil {
				b.Fatal(err)
			}
			h := "Bearer " + secret
			ctx := context.Background()
			for b.Loop() {
				if _, err := v.Authenticate(ctx, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
