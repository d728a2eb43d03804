package metrics

import (
	"net/http"
	"sync"
	"time"
)

// HTTPBuckets are the request duration bounds in seconds, from 1 ms to
// 30 s (a long-poll fetch waits up to 20 s).
var HTTPBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30}

// HTTPKey is one series of HTTP: a route pattern (never a raw path), a
// method, a status code.
type HTTPKey struct {
	Route  string
	Method string
	Code   int
}

// HTTP counts HTTP requests and their durations by HTTPKey. Its
// cardinality is bounded by the caller's routes: the method is one of
// net/http's nine or "OTHER", the code 100-599 or 0. A nil *HTTP counts
// nothing. Safe for concurrent use.
type HTTP struct {
	mu     sync.Mutex
	series map[HTTPKey]*Histogram
}

// NewHTTP returns an empty HTTP.
func NewHTTP() *HTTP { return &HTTP{series: map[HTTPKey]*Histogram{}} }

var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true,
	http.MethodTrace: true,
}

// Observe records one request of route answered with code after d.
func (h *HTTP) Observe(route, method string, code int, d time.Duration) {
	if h == nil {
		return
	}
	if !knownMethods[method] {
		method = "OTHER"
	}
	if code < 100 || code > 599 {
		code = 0
	}
	k := HTTPKey{route, method, code}
	h.mu.Lock()
	hist := h.series[k]
	if hist == nil {
		v := NewHistogram(HTTPBuckets)
		hist = &v
		h.series[k] = hist
	}
	h.mu.Unlock()
	hist.Observe(d.Seconds())
}

// Each calls f for every series seen so far.
func (h *HTTP) Each(f func(HTTPKey, *Histogram)) {
	if h == nil {
		return
	}
	h.mu.Lock()
	keys := make([]HTTPKey, 0, len(h.series))
	hists := make([]*Histogram, 0, len(h.series))
	for k, v := range h.series {
		keys, hists = append(keys, k), append(hists, v)
	}
	h.mu.Unlock()
	for i, k := range keys {
		f(k, hists[i])
	}
}
