package lambdafn

//go:generate go test -run ^TestCDKRoutesGenerated$ -update-cdk-routes .

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tierlog/tierlog/pkg/api"
)

// The methods each HTTP function serves. API Gateway routes each docs/api.md
// route to one of them by method; the route filter enforces the same split
// in the function, so a misrouted request is refused rather than served by
// the wrong function (a fetch container must never produce).
var (
	// WriteMethods are the produce function's: record appends, topic
	// create, update and delete, group commits, membership (join,
	// heartbeat, leave), group delete and offsets reset.
	WriteMethods = []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}
	// ReadMethods are the fetch function's: fetch, offsets, topic and
	// group reads, health.
	ReadMethods = []string{http.MethodGet, http.MethodHead}
)

// apiRoute is one path of docs/api.md with the methods it allows (GET implies
// HEAD), from package api's route table.
type apiRoute struct {
	segs    []string // "{}" matches any non-empty segment
	methods []string
}

// apiRoutes are api.Routes by path.
var apiRoutes = func() []apiRoute {
	var out []apiRoute
	seen := map[string]bool{}
	for _, rt := range api.Routes() {
		if seen[rt.Path] {
			continue
		}
		seen[rt.Path] = true
		segs := split(rt.Path)
		for i, s := range segs {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				segs[i] = "{}"
			}
		}
		out = append(out, apiRoute{segs: segs, methods: api.Allow(rt.Path)})
	}
	return out
}()

// FunctionFor returns the HTTP function that serves method: "produce" for
// WriteMethods, "fetch" for ReadMethods, "" for any other.
func FunctionFor(method string) string {
	switch {
	case slices.Contains(WriteMethods, method):
		return "produce"
	case slices.Contains(ReadMethods, method):
		return "fetch"
	}
	return ""
}

func split(p string) []string { return strings.Split(strings.TrimPrefix(p, "/"), "/") }

// routeMethods returns the methods docs/api.md allows on the escaped path p, or
// nil if p is no docs/api.md route.
func routeMethods(p string) []string {
	if !strings.HasPrefix(p, "/") {
		return nil
	}
	segs := split(p)
next:
	for _, rt := range apiRoutes {
		if len(rt.segs) != len(segs) {
			continue
		}
		for i, s := range rt.segs {
			if segs[i] == "" || (s != "{}" && s != segs[i]) {
				continue next
			}
		}
		return rt.methods
	}
	return nil
}

// routeFilter passes the requests whose method is one of methods to next,
// and answers the rest itself: an unknown path (including the local
// server's /metrics, which is not part of the API) with 404 not_found, a
// known path with 405 method_not_allowed naming the allowed methods. A HEAD
// answer's body is dropped, as net/http would.
type routeFilter struct {
	function string
	methods  []string
	next     http.Handler
}

func (f *routeFilter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	allowed := routeMethods(p)
	switch {
	case allowed == nil:
		f.refuse(w, r, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", r.Method, p), "")
		return
	case !slices.Contains(f.methods, r.Method):
		allow := strings.Join(allowed, ", ")
		msg := fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, p, allow)
		if slices.Contains(allowed, r.Method) {
			msg = fmt.Sprintf("%s %s is not served by the %s function (it serves %s): check the API Gateway routes",
				r.Method, p, f.function, strings.Join(f.methods, ", "))
		}
		f.refuse(w, r, http.StatusMethodNotAllowed, "method_not_allowed", msg, allow)
		return
	}
	if r.Method == http.MethodHead {
		w = &headWriter{ResponseWriter: w}
	}
	f.next.ServeHTTP(w, r)
}

// refuse answers in docs/api.md's error shape.
func (f *routeFilter) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg, allow string) {
	type body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var b body
	b.Error.Code, b.Error.Message = code, msg
	out, _ := json.Marshal(&b) // cannot fail: two strings
	out = append(out, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	h.Set("X-Request-Id", requestID(r))
	if status == http.StatusMethodNotAllowed {
		h.Set("Allow", allow)
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(out)
	}
}

// requestID is the Lambda request id, else a fresh random one: docs/api.md's
// answers always carry an X-Request-Id.
func requestID(r *http.Request) string {
	if lc, ok := lambdacontext.FromContext(r.Context()); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// headWriter drops the body of a HEAD answer (the API Gateway adapter
// would otherwise return it). Headers, Content-Length included, stay.
type headWriter struct {
	http.ResponseWriter
	wrote bool
}

func (h *headWriter) WriteHeader(code int) {
	h.wrote = true
	h.ResponseWriter.WriteHeader(code)
}

func (h *headWriter) Write(b []byte) (int, error) {
	if !h.wrote {
		h.WriteHeader(http.StatusOK)
	}
	return len(b), nil
}
