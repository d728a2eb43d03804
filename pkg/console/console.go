// Package console is tierlog's web console: static pages embedded in the
// binary (go:embed) that talk to the JSON API from the browser, and a
// small sampler that keeps the last hour of the server's counters, tier
// sizes and group lags in memory for the pages' charts.
//
// Routes, all under /ui/ (outside the API's route table: `tierlog serve`
// mounts the handler with api.WithRoute, as it mounts /metrics):
//
//	GET /ui/                     the console (index.html; the pages are client-side, #/topics ...)
//	GET /ui/<asset>              app.js, style.css, vendor/uPlot.*
//	GET /ui/api/server           {"interval_ms","window_ms","samples":[Sample...]}, oldest first
//	GET /ui/api/tiers            {"t","topics":[TopicSize...]}: sizes and bounds as the latest sample read them
//	GET /ui/api/lag?group=G      {"times":[ms...],"series":[LagPoint...]}: one group's lag per partition
//
// Memory: the ring holds Window/Interval samples (360 by default). A
// sample is about 200 bytes plus 48 a request series and 48 a lag series
// it carries, at most MaxRequestSeries and MaxLagSeries; group and topic
// names are held once (interned). Measured (TestHistoryMemory): about
// 0.6 MiB for 20 request series and 16 lags a sample, 6.9 MiB at the
// bounds.
//
// A Console is safe for concurrent use.
package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Defaults of the sampler.
const (
	DefaultInterval = 10 * time.Second
	DefaultWindow   = time.Hour
)

// Option configures a Console.
type Option func(*config)

type config struct {
	interval time.Duration
	window   time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// WithInterval sets how often the sampler reads the server. 0 means
// DefaultInterval; < 0 means never on its own (only Sample samples: tests).
func WithInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithWindow sets how much history is kept: Window/Interval samples. 0
// means DefaultWindow.
func WithWindow(d time.Duration) Option { return func(c *config) { c.window = d } }

// WithClock sets the clock that stamps samples (tests). Nil means
// time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithLogger sets the logger of failed samples. Nil means discard.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// applyDefaults is the one place defaults are set.
func applyDefaults(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.interval == 0 {
		c.interval = DefaultInterval
	}
	if c.window <= 0 {
		c.window = DefaultWindow
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Console serves the console's assets and, over Sources, its history.
type Console struct {
	cfg     config
	step    time.Duration // the time between samples the history assumes
	sampler *sampler      // nil: assets only (a proxy to a deployed API)
	files   map[string]file
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

type file struct {
	body  []byte
	etag  string
	ctype string
}

// New returns a console over src, sampling every interval until Close. A
// nil src serves the assets only: /ui/api/ answers 404, and the pages say
// that this server keeps no history.
func New(src *Sources, opts ...Option) *Console {
	c := &Console{cfg: applyDefaults(opts), files: loadAssets()}
	if src == nil {
		return c
	}
	c.step = c.cfg.interval
	if c.step < 0 {
		c.step = DefaultInterval // no ticker: the caller samples at this pace
	}
	c.sampler = newSampler(*src, c.cfg.now, max(int(c.cfg.window/c.step), 1))
	if c.cfg.interval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		c.stop = cancel
		c.wg.Add(1)
		go c.tick(ctx)
	}
	return c
}

func (c *Console) tick(ctx context.Context) {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.Sample(ctx); err != nil && ctx.Err() == nil {
			c.cfg.log.Warn("console sample", "err", err)
		}
	}
}

// Sample reads the server once into the history now (the ticker calls
// it every interval). It is a no-op on an assets-only console.
func (c *Console) Sample(ctx context.Context) error {
	if c.sampler == nil {
		return nil
	}
	return c.sampler.Sample(ctx)
}

// Close stops the sampler. The handler keeps serving what it has.
func (c *Console) Close() {
	if c.stop != nil {
		c.stop()
		c.wg.Wait()
	}
}

// loadAssets reads the embedded files once, with their ETags. (Reading
// an embed.FS does not fail: the files are in the binary.)
func loadAssets() map[string]file {
	out := map[string]file{}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" || strings.HasSuffix(p, "LICENSE") || strings.HasSuffix(p, "VERSION") {
			ct = "text/plain; charset=utf-8"
		}
		out[strings.TrimPrefix(p, "assets/")] = file{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ct}
		return nil
	})
	return out
}

// Prefix is where the console is mounted.
const Prefix = "/ui/"

// DataPrefix is where the console's own data (the in-memory history) is
// served, under Prefix: the pages are static, the data is not.
const DataPrefix = Prefix + "api/"

// contentPolicy lets the pages load only the console's own files and talk
// only to their own origin.
const contentPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// ServeHTTP serves GET and HEAD under Prefix.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no console page %s", r.URL.EscapedPath()))
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if api, ok := strings.CutPrefix(name, "api/"); ok {
		c.serveAPI(w, r, api)
		return
	}
	if name == "" {
		name = "index.html"
	}
	f, ok := c.files[name]
	if !ok || !fs.ValidPath(name) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no console page %s", r.URL.EscapedPath()))
		return
	}
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "no-cache") // revalidate: the ETag answers 304
	if name == "index.html" {
		h.Set("Content-Security-Policy", contentPolicy)
		h.Set("X-Frame-Options", "DENY")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}

func (c *Console) serveAPI(w http.ResponseWriter, r *http.Request, name string) {
	if c.sampler == nil {
		writeError(w, http.StatusNotFound, "not_found",
			"this server keeps no console history: charts need tierlog serve (docs/console.md)")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	switch name {
	case "server":
		writeJSON(w, struct {
			IntervalMs int64    `json:"interval_ms"`
			WindowMs   int64    `json:"window_ms"`
			Samples    []Sample `json:"samples"`
		}{c.step.Milliseconds(), c.cfg.window.Milliseconds(), c.sampler.History()})
	case "tiers":
		topics := c.sampler.Topics()
		if topics == nil {
			topics = []TopicSize{}
		}
		h := c.sampler.History()
		var t int64
		if len(h) > 0 {
			t = h[len(h)-1].T
		}
		writeJSON(w, struct {
			T      int64       `json:"t"`
			Topics []TopicSize `json:"topics"`
		}{t, topics})
	case "lag":
		group := r.URL.Query().Get("group")
		if group == "" {
			writeError(w, http.StatusBadRequest, "invalid_request", "parameter group is required")
			return
		}
		times, series := c.sampler.LagHistory(group)
		if series == nil {
			series = []LagPoint{}
		}
		writeJSON(w, struct {
			Times  []int64    `json:"times"`
			Series []LagPoint `json:"series"`
		}{times, series})
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no console route %s", r.URL.EscapedPath()))
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}

// writeError answers in the API's error shape (docs/api.md "Errors").
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
