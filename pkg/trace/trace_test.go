package trace

import (
	"context"
	"errors"
	"testing"
)

type recorder struct{ names []string }

func (r *recorder) Capture(ctx context.Context, name string, fn func(context.Context) error) error {
	r.names = append(r.names, name)
	return fn(context.WithValue(ctx, r, name))
}

func TestCapture(t *testing.T) {
	boom := errors.New("boom")
	ctx := context.Background()
	if FromContext(ctx) != nil {
		t.Fatal("tracer in an empty context")
	}
	called := false
	if err := Capture(ctx, SpanCommit, func(context.Context) error { called = true; return boom }); err != boom || !called {
		t.Fatalf("without a tracer: called %v, err %v", called, err)
	}
	r := &recorder{}
	ctx = WithTracer(ctx, r)
	err := Capture(ctx, SpanAppendFsync, func(ctx context.Context) error {
		if ctx.Value(r) != SpanAppendFsync {
			t.Error("fn did not get the span's context")
		}
		return Capture(ctx, SpanCommit, func(context.Context) error { return boom })
	})
	if err != boom || len(r.names) != 2 || r.names[0] != SpanAppendFsync || r.names[1] != SpanCommit {
		t.Fatalf("with a tracer: %v %v", err, r.names)
	}
	if FromContext(WithTracer(ctx, nil)) != nil {
		t.Fatal("WithTracer(nil) kept a tracer")
	}
}
