package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
)

// TestWithToken: against a server with token auth on, a client without a
// token gets unauthorized, one WithToken is served (streams included), and
// it makes, lists and revokes tokens.
func TestWithToken(t *testing.T) {
	root := t.TempDir()
	store, err := local.Open(filepath.Join(root, "meta"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(context.Background(), broker.Config{DataDir: filepath.Join(root, "data"), Meta: store})
	if err != nil {
		t.Fatal(err)
	}
	v := auth.New(store)
	srv := httptest.NewServer(api.New(b, api.WithAuth(v), api.WithStreaming(api.StreamConfig{})))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = b.Close()
		_ = store.Close()
	})
	all := ""
	_, admin, err := v.Create(context.Background(), "admin", 0, meta.TokenScope{Topics: &meta.NameSet{Prefix: &all},
		Groups: &meta.NameSet{Prefix: &all}, Operations: []string{"produce", "consume", "groups", "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ts := &testServer{Server: srv, t: t}

	_, err = ts.client().Topics(ctx)
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeUnauthorized || e.Status != 401 {
		t.Fatalf("no token: %v, want 401 unauthorized", err)
	}
	c := ts.client(client.WithToken(admin))
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ProduceTo(ctx, "orders", 0, []client.Record{{Value: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	prefix := "orders"
	tok, err := c.CreateToken(ctx, client.TokenSpec{Description: "reader",
		Scope: client.TokenScope{Topics: &client.NameSet{Prefix: &prefix}, Operations: []string{"consume"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Secret, "tl_"+tok.ID+"_") || tok.ExpiresAt != nil {
		t.Fatalf("CreateToken: %+v", tok)
	}
	reader := ts.client(client.WithToken(tok.Secret))
	st, err := reader.Stream(ctx, "orders", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Next(ctx)
	st.Close()
	if err != nil || string(rec.Value) != "a" {
		t.Fatalf("stream with a token: %v %v", rec, err)
	}
	if _, err := reader.ProduceTo(ctx, "orders", 0, []client.Record{{Value: []byte("b")}}); !errors.As(err, &e) || e.Code != client.CodeForbidden {
		t.Fatalf("produce with a consume token: %v, want 403 forbidden", err)
	}
	list, err := c.Tokens(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("Tokens: %v %v", list, err)
	}
	for _, l := range list {
		if l.Secret != "" {
			t.Fatalf("Tokens shows a secret: %+v", l)
		}
	}
	if err := c.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeToken(ctx, tok.ID); !errors.As(err, &e) || e.Code != client.CodeTokenNotFound {
		t.Fatalf("revoke again: %v, want token_not_found", err)
	}
	if _, err := reader.Offsets(ctx, "orders", 0); !errors.As(err, &e) || e.Code != client.CodeUnauthorized {
		t.Fatalf("revoked: %v, want unauthorized", err)
	}
	if _, err := client.New(srv.URL, client.WithToken("a b")); err == nil {
		t.Fatal("a token with a space was accepted")
	}
}
