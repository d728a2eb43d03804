package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/pkg/console"
)

// defaultConsoleListen is where `tierlog console` serves: this machine
// only, beside `tierlog serve`'s default port.
const defaultConsoleListen = "127.0.0.1:8081"

// maxProxyBody bounds a request body the console proxy forwards: the API's
// own limit (docs/api.md "Request bodies"), so a bigger one is refused here
// as the API would.
const maxProxyBody = 5 << 20

func newConsoleCmd() *cobra.Command {
	var f clientFlags
	var listen string
	c := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console for a deployed stack's API (a local proxy that signs with --sigv4)",
		Long: `Serve the web console at http://` + defaultConsoleListen + `/ui/ for the API at --url,
forwarding the pages' /v1/ requests to it: signed with AWS SigV4 with --sigv4
(an IAM-authorized API Gateway), or with the access token the console's
header sends. The charts of the server page and of group lag need the
history tierlog serve keeps: against a deployed stack they are absent
(docs/console.md).`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := f.consoleHandler(cmd.Context())
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			fmt.Fprintf(cmd.ErrOrStderr(), "tierlog console for %s at http://%s/ui/\n", f.url, ln.Addr())
			select {
			case err := <-errc:
				return fmt.Errorf("serve: %w", err)
			case <-cmd.Context().Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("shutdown: %w", err)
			}
			return nil
		},
	}
	addClientFlags(c, &f, 0)
	c.Flags().StringVar(&listen, "listen", defaultConsoleListen, "address the console listens on")
	return c
}

// consoleHandler is the proxy the flags describe.
func (f *clientFlags) consoleHandler(ctx context.Context) (http.Handler, error) {
	target, err := url.Parse(f.url)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, usagef("--url %q: want http(s)://host[:port][/stage]", f.url)
	}
	var rt http.RoundTripper = http.DefaultTransport
	if f.sigv4 {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("--sigv4: AWS configuration: %w", err)
		}
		region := f.region
		if region == "" {
			region = urlRegion(f.url)
		}
		if region == "" {
			region = cfg.Region
		}
		if region == "" {
			return nil, usagef("--sigv4 needs a region: --region, AWS_REGION, or a profile with one")
		}
		rt = &sigv4Transport{next: rt, signer: v4.NewSigner(), creds: aws.NewCredentialsCache(cfg.Credentials), region: region}
	} else if f.region != "" {
		return nil, usagef("--region is only for --sigv4")
	}
	log := clientLogger(os.Stderr, isTerminal(os.Stderr), f.verbose)
	return newConsoleProxy(target, rt, log), nil
}

// forwarded are the request headers the proxy passes on: what the API
// reads. Cookies, the browser's Origin and the like stay here.
var forwarded = []string{"Accept", "Content-Type", "Idempotency-Key", "Last-Event-ID", "Authorization"}

// newConsoleProxy serves the console's pages at /ui/ (without history:
// console.New(nil)) and forwards /v1/ to target through rt.
func newConsoleProxy(target *url.URL, rt http.RoundTripper, log *slog.Logger) http.Handler {
	pages := console.New(nil)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			h := http.Header{}
			for _, k := range forwarded {
				if v := pr.In.Header.Values(k); len(v) > 0 {
					h[k] = v
				}
			}
			pr.Out.Header = h
		},
		Transport:     rt,
		FlushInterval: -1, // streams (Server-Sent Events) pass at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("console proxy", "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"error":{"code":"unavailable","message":"the console proxy could not reach the API at %s"}}`+"\n", target.Host)
		},
	}
	// No ServeMux: it would clean ".." out of paths and redirect, turning
	// one request into another (as pkg/api explains); paths go on as sent.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		switch {
		case strings.HasPrefix(p, "/v1/"):
			r.Body = http.MaxBytesReader(w, r.Body, maxProxyBody)
			rp.ServeHTTP(w, r)
		case strings.HasPrefix(p, console.Prefix) && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			pages.ServeHTTP(w, r)
		case p == "/" || p == "/ui":
			http.Redirect(w, r, console.Prefix, http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintln(w, `{"error":{"code":"not_found","message":"the console proxy serves /ui/ and forwards /v1/"}}`)
		}
	})
}

// sigv4Transport signs each request with SigV4 for execute-api: the
// proxy's own credentials stand in for the browser's (any Authorization
// header the page sent is replaced).
type sigv4Transport struct {
	next   http.RoundTripper
	signer *v4.Signer
	creds  aws.CredentialsProvider
	region string
}

func (s *sigv4Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("console proxy: read body: %w", err)
		}
		body = b
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	out.Header.Del("Authorization")
	creds, err := s.creds.Retrieve(req.Context())
	if err != nil {
		return nil, fmt.Errorf("console proxy: SigV4 credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := s.signer.SignHTTP(req.Context(), creds, out, hex.EncodeToString(sum[:]), "execute-api", s.region, time.Now()); err != nil {
		return nil, fmt.Errorf("console proxy: SigV4 sign: %w", err)
	}
	return s.next.RoundTrip(out)
}
