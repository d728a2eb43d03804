package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tlserver "github.com/tierlog/tierlog/pkg/server"
)

// An independent SigV4 check (AWS's "Signature Version 4 signing process",
// written from the specification with crypto/hmac, not the SDK's signer):
// it recomputes the signature of a request as received and compares it
// with the one in its Authorization header. TestSigV4VerifierVectors pins
// it to AWS's published test suite, so a verifier that agreed with a wrong
// signer would fail there.

type sigv4Creds struct{ id, secret, token string }

// sigv4Verify checks r (its body already read into body) against creds for
// region and service, and returns the credential scope it was signed for.
func sigv4Verify(r *http.Request, body []byte, creds sigv4Creds, region, service string) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return errors.New("not signed (no AWS4-HMAC-SHA256 Authorization)")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if len(amzDate) != 16 {
		return fmt.Errorf("X-Amz-Date %q", amzDate)
	}
	scope := strings.Join([]string{amzDate[:8], region, service, "aws4_request"}, "/")
	if want := creds.id + "/" + scope; fields["Credential"] != want {
		return fmt.Errorf("credential %q, want %q", fields["Credential"], want)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !sort.StringsAreSorted(signed) {
		return fmt.Errorf("signed headers %v not sorted", signed)
	}
	for _, must := range []string{"host", "x-amz-date"} {
		if !contains(signed, must) {
			return fmt.Errorf("%s is not signed", must)
		}
	}
	if creds.token != "" && (r.Header.Get("X-Amz-Security-Token") != creds.token || !contains(signed, "x-amz-security-token")) {
		return errors.New("session token missing or not signed")
	}
	var canon strings.Builder
	canon.WriteString(r.Method + "\n")
	canon.WriteString(uriEncode(r.URL.EscapedPath(), false) + "\n")
	canon.WriteString(canonicalQuery(r) + "\n")
	for _, h := range signed {
		v := r.Header.Values(h)
		if h == "host" {
			v = []string{r.Host}
		}
		for i := range v {
			v[i] = strings.Join(strings.Fields(v[i]), " ")
		}
		canon.WriteString(h + ":" + strings.Join(v, ",") + "\n")
	}
	canon.WriteString("\n" + strings.Join(signed, ";") + "\n")
	sum := sha256.Sum256(body)
	canon.WriteString(hex.EncodeToString(sum[:]))
	creq := sha256.Sum256([]byte(canon.String()))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(creq[:])
	key := []byte("AWS4" + creds.secret)
	for _, part := range []string{amzDate[:8], region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	if want := hex.EncodeToString(hmacSHA256(key, toSign)); !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return fmt.Errorf("signature %s, want %s; canonical request:\n%s", fields["Signature"], want, canon.String())
	}
	return nil
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// uriEncode is the specification's UriEncode: every byte but A-Z a-z 0-9
// - _ . ~ (and / when it is a path) as %XY. For a path this encodes the
// escaped path again, as SigV4 does for every service but S3.
func uriEncode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func canonicalQuery(r *http.Request) string {
	var pairs []string
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// TestSigV4VerifierVectors: the verifier accepts AWS's published SigV4
// test vectors (aws-sig-v4-test-suite: get-vanilla,
// get-vanilla-query-order-key-case, post-vanilla) and refuses them with a
// wrong secret or a changed body.
func TestSigV4VerifierVectors(t *testing.T) {
	creds := sigv4Creds{id: "AKIDEXAMPLE", secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	for _, v := range []struct {
		name, method, target, body string
		headers                    map[string]string
		signedHeaders, signature   string
	}{
		{"get-vanilla", "GET", "/", "", nil, "host;x-amz-date",
			"5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"get-vanilla-query-order-key-case", "GET", "/?Param2=value2&Param1=value1", "", nil, "host;x-amz-date",
			"b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
		{"post-vanilla", "POST", "/", "", nil, "host;x-amz-date",
			"5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
	} {
		req := httptest.NewRequest(v.method, "http://example.amazonaws.com"+v.target, strings.NewReader(v.body))
		req.Host = "example.amazonaws.com"
		req.Header.Set("X-Amz-Date", "20150830T123600Z")
		for k, hv := range v.headers {
			req.Header.Set(k, hv)
		}
		auth := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=" +
			v.signedHeaders + ", Signature=" + v.signature
		req.Header.Set("Authorization", auth)
		if err := sigv4Verify(req, []byte(v.body), creds, "us-east-1", "service"); err != nil {
			t.Errorf("%s: %v", v.name, err)
		}
		wrong := creds
		wrong.secret = strings.Replace(wrong.secret, "K7", "K8", 1)
		if sigv4Verify(req, []byte(v.body), wrong, "us-east-1", "service") == nil {
			t.Errorf("%s: accepted with a wrong secret", v.name)
		}
		if sigv4Verify(req, []byte(v.body+"x"), creds, "us-east-1", "service") == nil {
			t.Errorf("%s: accepted with a changed body", v.name)
		}
	}
}

// sigv4Gate plays API Gateway's IAM authorizer in front of a real server:
// an unsigned or badly signed request is API Gateway's 403.
type sigv4Gate struct {
	next   http.Handler
	creds  sigv4Creds
	region string

	mu       sync.Mutex
	verified int
	refused  []string
}

func (g *sigv4Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	err = sigv4Verify(r, body, g.creds, g.region, "execute-api")
	g.mu.Lock()
	if err != nil {
		g.refused = append(g.refused, r.Method+" "+r.URL.Path+": "+err.Error())
	} else {
		g.verified++
	}
	g.mu.Unlock()
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintln(w, `{"message":"Forbidden"}`)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *sigv4Gate) counts() (int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, r := g.verified, g.refused
	g.verified, g.refused = 0, nil
	return v, r
}

// sigv4Env is an environment with exactly these AWS settings: no AWS_*
// variable of the developer's, no config or credentials files, no IMDS.
func sigv4Env(t *testing.T, extra ...string) []string {
	var env []string
	for _, kv := range cliEnv() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "TIERLOG_SIGV4=") {
			env = append(env, kv)
		}
	}
	none := filepath.Join(t.TempDir(), "none")
	env = append(env, "AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none, "AWS_EC2_METADATA_DISABLED=true")
	return append(env, extra...)
}

func cliEnvRun(t *testing.T, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tierlogBinary(t), args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return cliResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// TestCLISigV4: with --sigv4 (or TIERLOG_SIGV4=1) every request the CLI
// sends verifies under the independent check, with the credentials of the
// SDK's default chain (here the environment's, with a session token) and
// the region of --region, of AWS_REGION, or of an execute-api host; without
// it, nothing is signed and the gate refuses.
func TestCLISigV4(t *testing.T) {
	skipShort(t, "the tierlog binary")
	srv, err := tlserver.Open(context.Background(), tlserver.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	creds := sigv4Creds{id: "AKIDTIERLOGTEST", secret: "c2VjcmV0IHRlc3Qga2V5IGZvciB0aWVybG9n", token: "session-token-42"}
	gate := &sigv4Gate{next: srv.Handler(), creds: creds, region: "eu-west-1"}
	hs := httptest.NewServer(gate)
	t.Cleanup(hs.Close)
	awsCreds := []string{"AWS_ACCESS_KEY_ID=" + creds.id, "AWS_SECRET_ACCESS_KEY=" + creds.secret, "AWS_SESSION_TOKEN=" + creds.token}

	must := func(r cliResult, what string) cliResult {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", what, r.code, r.stderr)
		}
		verified, refused := gate.counts()
		if verified == 0 || len(refused) > 0 {
			t.Fatalf("%s: %d requests verified, refused: %v", what, verified, refused)
		}
		return r
	}
	// --sigv4 --region, credentials from the environment (region us-east-1
	// there, which --region overrides).
	env := sigv4Env(t, append(awsCreds, "AWS_REGION=us-east-1")...)
	must(cliEnvRun(t, env, "", "topics", "create", "signed", "--partitions", "2", "--url", hs.URL, "--sigv4", "--region", "eu-west-1"), "topics create")
	must(cliEnvRun(t, env, "a\nb\nc\n", "produce", "--topic", "signed", "--partition", "1", "--url", hs.URL, "--sigv4", "--region", "eu-west-1"), "produce")
	// Binary bodies are signed too.
	must(cliEnvRun(t, env, "d\n", "produce", "--binary", "--topic", "signed", "--partition", "1", "--url", hs.URL, "--sigv4", "--region", "eu-west-1"), "produce --binary")
	out := must(cliEnvRun(t, env, "", "consume", "--topic", "signed", "--partition", "1", "-o", "beginning", "-e", "--url", hs.URL, "--sigv4", "--region", "eu-west-1"), "consume")
	if out.stdout != "a\nb\nc\nd\n" {
		t.Fatalf("consume through the gate: %q", out.stdout)
	}
	must(cliEnvRun(t, env, "", "groups", "commit", "--group", "g", "--topic", "signed", "--partition", "1", "--offset", "2", "--url", hs.URL, "--sigv4", "--region", "eu-west-1"), "groups commit")

	// TIERLOG_SIGV4=1, region from the SDK's chain (AWS_REGION).
	env = sigv4Env(t, append(awsCreds, "AWS_REGION=eu-west-1", "TIERLOG_SIGV4=1")...)
	if r := must(cliEnvRun(t, env, "", "topics", "list", "--url", hs.URL), "TIERLOG_SIGV4=1 topics list"); !strings.Contains(r.stdout, "signed") {
		t.Fatalf("topics list: %q", r.stdout)
	}

	// Unsigned: the gate refuses, and the CLI fails.
	env = sigv4Env(t, append(awsCreds, "AWS_REGION=eu-west-1")...)
	if r := cliEnvRun(t, env, "", "topics", "list", "--url", hs.URL); r.code == 0 {
		t.Fatalf("unsigned topics list succeeded through the gate")
	}
	if verified, refused := gate.counts(); verified != 0 || len(refused) == 0 {
		t.Fatalf("unsigned: %d verified, %d refused", verified, len(refused))
	}

	// A region the gate does not expect fails verification: the region is
	// really the one signed for.
	env = sigv4Env(t, append(awsCreds, "AWS_REGION=us-east-2", "TIERLOG_SIGV4=1")...)
	if r := cliEnvRun(t, env, "", "topics", "list", "--url", hs.URL); r.code == 0 {
		t.Fatalf("signed for us-east-2, accepted by a eu-west-1 gate")
	}
	gate.counts()

	// No region anywhere is a usage error (exit 2), before any request.
	env = sigv4Env(t, awsCreds...)
	if r := cliEnvRun(t, env, "", "topics", "list", "--url", hs.URL, "--sigv4"); r.code != 2 || !strings.Contains(r.stderr, "region") {
		t.Fatalf("--sigv4 without a region: exit %d %s", r.code, r.stderr)
	}
	if r := cliEnvRun(t, env, "", "topics", "list", "--url", hs.URL, "--region", "eu-west-1"); r.code != 2 {
		t.Fatalf("--region without --sigv4: exit %d %s", r.code, r.stderr)
	}
	if verified, refused := gate.counts(); verified != 0 || len(refused) != 0 {
		t.Fatalf("usage errors sent requests: %d verified, %v refused", verified, refused)
	}
}

func TestURLRegion(t *testing.T) {
	for in, want := range map[string]string{
		"https://a1b2c3.execute-api.eu-west-1.amazonaws.com":         "eu-west-1",
		"https://a1b2c3.execute-api.cn-north-1.amazonaws.com.cn/x":   "cn-north-1",
		"https://a1b2c3.execute-api.us-east-1.amazonaws.com:443/v1/": "us-east-1",
		"http://127.0.0.1:8080":                                      "",
		"https://api.example.com":                                    "",
		"https://a.lambda-url.eu-west-1.on.aws":                      "",
	} {
		if got := urlRegion(in); got != want {
			t.Errorf("urlRegion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCurlSigV4Example: the README's curl --aws-sigv4 command, with and
// without a session token, verifies under the same check (skipped where
// curl is missing or too old for --aws-sigv4).
func TestCurlSigV4Example(t *testing.T) {
	skipShort(t, "curl")
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	srv, err := tlserver.Open(context.Background(), tlserver.Config{DataDir: t.TempDir(), CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	for _, token := range []string{"", "session-token-42"} {
		creds := sigv4Creds{id: "AKIDTIERLOGTEST", secret: "c2VjcmV0IHRlc3Qga2V5IGZvciB0aWVybG9n", token: token}
		gate := &sigv4Gate{next: srv.Handler(), creds: creds, region: "eu-west-1"}
		hs := httptest.NewServer(gate)
		args := []string{"-s", "--aws-sigv4", "aws:amz:eu-west-1:execute-api", "--user", creds.id + ":" + creds.secret}
		if token != "" {
			args = append(args, "-H", "x-amz-security-token: "+token)
		}
		out, err := exec.Command(curl, append(args, hs.URL+"/v1/topics")...).CombinedOutput()
		hs.Close()
		if err != nil && strings.Contains(string(out), "aws-sigv4") {
			t.Skipf("curl without --aws-sigv4: %s", out)
		}
		verified, refused := gate.counts()
		if err != nil || verified != 1 || len(refused) != 0 || !strings.Contains(string(out), `"topics"`) {
			t.Fatalf("token %q: curl %v %s; verified %d, refused %v", token, err, out, verified, refused)
		}
	}
}
