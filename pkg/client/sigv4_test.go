package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tierlog/tierlog/pkg/client"
)

// sigv4Gate plays API Gateway's IAM authorizer: it recomputes each
// request's signature with the signer itself, from the headers the request
// says it signed, and answers 403 the way API Gateway does unless the
// Authorization header matches.
type sigv4Gate struct {
	next     http.Handler
	creds    aws.Credentials
	region   string
	verified atomic.Int64
	refused  atomic.Int64
}

func (g *sigv4Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := g.verify(r); err != nil {
		g.refused.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"message":%q}`, err.Error())
		return
	}
	g.verified.Add(1)
	g.next.ServeHTTP(w, r)
}

func (g *sigv4Gate) verify(r *http.Request) error {
	auth, date := r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || date == "" {
		return errors.New("Missing Authentication Token")
	}
	signedAt, err := time.Parse("20060102T150405Z", date)
	if err != nil {
		return fmt.Errorf("bad X-Amz-Date %q", date)
	}
	if d := time.Since(signedAt); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("Signature expired")
	}
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return errors.New("no SignedHeaders")
	}
	signed, _, _ = strings.Cut(signed, ",")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	re, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "content-length" {
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(r.Context(), g.creds, re, hex.EncodeToString(sum[:]), "execute-api", g.region, signedAt); err != nil {
		return err
	}
	if re.Header.Get("Authorization") != auth {
		return errors.New("The request signature we calculated does not match the signature you provided.")
	}
	if r.Header.Get("X-Amz-Security-Token") != g.creds.SessionToken {
		return errors.New("The security token included in the request is invalid.")
	}
	return nil
}

func staticCreds(c aws.Credentials) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return c, nil })
}

// TestSigV4 runs topics, a producer and a consumer through a gate that
// checks every signature; a client with the wrong secret is refused with
// API Gateway's 403, which is not retried.
func TestSigV4(t *testing.T) {
	t.Parallel()
	good := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token"}
	gate := &sigv4Gate{creds: good, region: "eu-west-1"}
	s := newServer(t, func(h http.Handler) http.Handler { gate.next = h; return gate })
	ctx := ctxT(t)
	for _, f := range formats() {
		c := s.client(client.WithSigV4(staticCreds(good), "eu-west-1"), client.WithFormat(f))
		topic := "signed-" + f.String()
		createTopic(t, c, topic, 2)
		p, err := c.NewProducer(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if _, err := p.Send(ctx, client.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("signed value ✓")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		k, err := c.NewConsumer(ctx, topic, client.WithGroup("g"), client.WithReset(client.ResetEarliest), client.WithWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if msgs := pollUntil(t, k, 1); string(msgs[0].Value) != "signed value ✓" {
			t.Fatalf("read %q", msgs[0].Value)
		}
		if err := k.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		k.Close(ctx)
	}
	if gate.refused.Load() != 0 || gate.verified.Load() < 10 {
		t.Fatalf("gate verified %d and refused %d requests", gate.verified.Load(), gate.refused.Load())
	}

	bad := good
	bad.SecretAccessKey = "wrong"
	c := s.client(client.WithSigV4(staticCreds(bad), "eu-west-1"))
	before := gate.refused.Load()
	_, err := c.Topics(ctx)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 403 || !strings.Contains(e.Message, "signature") || client.IsRetriable(err) {
		t.Fatalf("wrong secret: %v", err)
	}
	if n := gate.refused.Load() - before; n != 1 {
		t.Fatalf("a 403 was sent %d times", n)
	}
	unsigned := s.client()
	if _, err := unsigned.Topics(ctx); !errors.As(err, &e) || e.Status != 403 || e.Message != "Missing Authentication Token" {
		t.Fatalf("unsigned: %v", err)
	}
}
