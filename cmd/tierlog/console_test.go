package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	tlserver "github.com/tierlog/tierlog/pkg/server"
)

// TestConsoleProxy: `tierlog console` serves the pages and forwards /v1/
// to a deployed API behind API Gateway's IAM authorizer (played by
// sigv4Gate), each request signed with the proxy's credentials whatever
// the browser sent; unsigned, the gate refuses.
func TestConsoleProxy(t *testing.T) {
	srv, err := tlserver.Open(context.Background(), tlserver.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	creds := sigv4Creds{id: "AKIDTIERLOGTEST", secret: "c2VjcmV0IHRlc3Qga2V5IGZvciB0aWVybG9n", token: "session-token-42"}
	gate := &sigv4Gate{next: srv.Handler(), creds: creds, region: "eu-west-1"}
	api := httptest.NewServer(gate)
	t.Cleanup(api.Close)
	target, err := url.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	signed := &sigv4Transport{next: http.DefaultTransport, signer: v4.NewSigner(),
		creds: credentials.NewStaticCredentialsProvider(creds.id, creds.secret, creds.token), region: "eu-west-1"}
	proxy := httptest.NewServer(newConsoleProxy(target, signed, log))
	t.Cleanup(proxy.Close)

	send := func(base, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer from-the-page")
		req.Header.Set("Cookie", "session=1")
		req.Header.Set("Origin", base)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, c := range []struct {
		method, path, body string
		want               int
		contains           string
	}{
		{"POST", "/v1/topics", `{"name":"orders","partitions":2}`, 201, `"name":"orders"`},
		{"GET", "/v1/topics", "", 200, `"orders"`},
		{"POST", "/v1/topics/orders/partitions/1/records", `{"records":[{"value":"hi"}]}`, 200, `"offset":0`},
		{"GET", "/v1/topics/orders/partitions/1/records?offset=0", "", 200, `"value":"hi"`},
		{"GET", "/ui/", "", 200, "<title>tierlog console</title>"},
		{"GET", "/ui/api/server", "", 404, "no console history"},
		{"GET", "/metrics", "", 404, "not_found"},
	} {
		code, body := send(proxy.URL, c.method, c.path, c.body)
		if code != c.want || !strings.Contains(body, c.contains) {
			t.Errorf("%s %s through the proxy: %d %.200s, want %d with %s", c.method, c.path, code, body, c.want, c.contains)
		}
	}
	if verified, refused := gate.counts(); verified != 4 || len(refused) != 0 {
		t.Errorf("the gate verified %d requests and refused %v, want 4 and none", verified, refused)
	}

	unsigned := httptest.NewServer(newConsoleProxy(target, http.DefaultTransport, log))
	t.Cleanup(unsigned.Close)
	if code, body := send(unsigned.URL, "GET", "/v1/topics", ""); code != http.StatusForbidden {
		t.Errorf("unsigned through the proxy: %d %s, want the gate's 403", code, body)
	}
}
