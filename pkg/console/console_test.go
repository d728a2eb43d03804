package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tierlog/tierlog/pkg/console"
)

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

func TestAssets(t *testing.T) {
	cs := startServer(t)
	res, body := get(t, cs.url+"/ui/", nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(body), `<script src="app.js">`) {
		t.Fatalf("GET /ui/: %d %s %.200s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if res, body := get(t, cs.url+"/ui", nil); res.StatusCode != 200 || !strings.Contains(string(body), "<title>tierlog console</title>") {
		t.Errorf("GET /ui (followed): %d %.100s, want the console", res.StatusCode, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("index CSP %q", csp)
	}
	for path, ctype := range map[string]string{
		"/ui/app.js": "text/javascript", "/ui/style.css": "text/css", "/ui/vendor/uPlot.iife.min.js": "text/javascript",
		"/ui/vendor/uPlot.LICENSE": "text/plain",
	} {
		res, body := get(t, cs.url+path, nil)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) || len(body) == 0 {
			t.Errorf("GET %s: %d %q, %d bytes", path, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
		etag := res.Header.Get("ETag")
		if res, _ := get(t, cs.url+path, map[string]string{"If-None-Match": etag}); etag == "" || res.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag %q: %d, want 304", path, etag, res.StatusCode)
		}
	}
	for _, path := range []string{"/ui/nope.js", "/ui/../v1/health", "/ui/vendor/", "/ui/api/nope"} {
		res, body := get(t, cs.url+path, nil)
		var e apiError
		if res.StatusCode != 404 || json.Unmarshal(body, &e) != nil || e.Error.Code != "not_found" {
			t.Errorf("GET %s: %d %s, want 404 not_found in the API's shape", path, res.StatusCode, body)
		}
		if strings.Contains(string(body), "assets") {
			t.Errorf("GET %s names the embedded directory: %s", path, body)
		}
	}
	req, _ := http.NewRequest("POST", cs.url+"/ui/", strings.NewReader("{}"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", res.StatusCode)
	}
	if res, body := get(t, cs.url+"/ui/api/lag", nil); res.StatusCode != 400 {
		t.Errorf("GET /ui/api/lag without a group: %d %s, want 400", res.StatusCode, body)
	}
}

// TestAssetsOnly is the console without a server behind it (a proxy to a
// deployed API): the pages, and 404 for the history.
func TestAssetsOnly(t *testing.T) {
	c := console.New(nil)
	defer c.Close()
	for path, want := range map[string]int{"/ui/": 200, "/ui/app.js": 200, "/ui/api/server": 404, "/ui/api/tiers": 404} {
		w := httptest.NewRecorder()
		c.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != want {
			t.Errorf("GET %s: %d, want %d", path, w.Code, want)
		}
	}
}

type history struct {
	IntervalMs int64 `json:"interval_ms"`
	Samples    []struct {
		T         int64 `json:"t"`
		RecordsIn int64 `json:"records_in"`
		BytesIn   int64 `json:"bytes_in"`
		Fetches   int64 `json:"fetches"`
		HotBytes  int64 `json:"hot_bytes"`
		Requests  []struct {
			Route, Method string
			Code          int
			Count         int64
		} `json:"requests"`
	} `json:"samples"`
}

func TestSampler(t *testing.T) {
	cs := startServer(t)
	ctx := context.Background()
	cs.call(t, "POST", "/v1/topics", rec{"name": "orders", "partitions": 2}, 201, nil)
	cs.call(t, "POST", "/v1/topics/orders/partitions/0/records", rec{"records": []rec{{"value": "a"}, {"value": "b"}, {"value": "c"}}}, 200, nil)
	if err := cs.Console.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	cs.call(t, "POST", "/v1/topics/orders/partitions/1/records", rec{"records": []rec{{"value": "d"}}}, 200, nil)
	cs.call(t, "GET", "/v1/topics/orders/partitions/1/records?offset=0", nil, 200, nil)
	cs.call(t, "PUT", "/v1/groups/billing/offsets", rec{"offsets": []rec{{"topic": "orders", "partition": 0, "offset": 1}}}, 204, nil)
	if err := cs.Console.Sample(ctx); err != nil {
		t.Fatal(err)
	}

	var h history
	cs.call(t, "GET", "/ui/api/server", nil, 200, &h)
	if len(h.Samples) != 2 || h.IntervalMs != console.DefaultInterval.Milliseconds() {
		t.Fatalf("%d samples at %d ms, want 2 at %d", len(h.Samples), h.IntervalMs, console.DefaultInterval.Milliseconds())
	}
	a, b := h.Samples[0], h.Samples[1]
	if b.T-a.T != console.DefaultInterval.Milliseconds() {
		t.Errorf("samples %d ms apart", b.T-a.T)
	}
	if a.RecordsIn != 3 || b.RecordsIn != 1 || b.Fetches != 1 || b.HotBytes <= a.HotBytes || a.HotBytes <= 0 {
		t.Errorf("samples %+v then %+v: want 3 then 1 record in, 1 fetch, hot bytes growing", a, b)
	}
	var produce int64
	for _, r := range b.Requests {
		if r.Route == "/v1/topics/{topic}/partitions/{partition}/records" && r.Method == "POST" && r.Code == 200 {
			produce = r.Count
		}
	}
	if produce != 1 {
		t.Errorf("second sample counts %d produce requests, want 1: %+v", produce, b.Requests)
	}

	var tiers struct {
		Topics []console.TopicSize `json:"topics"`
	}
	cs.call(t, "GET", "/ui/api/tiers", nil, 200, &tiers)
	if len(tiers.Topics) != 1 || len(tiers.Topics[0].Partitions) != 2 ||
		tiers.Topics[0].Partitions[0].HighWatermark != 3 || tiers.Topics[0].Partitions[1].HighWatermark != 1 ||
		tiers.Topics[0].HotBytes <= 0 || tiers.Topics[0].ColdBytes != 0 {
		t.Errorf("tiers %+v", tiers.Topics)
	}

	var lag struct {
		Times  []int64            `json:"times"`
		Series []console.LagPoint `json:"series"`
	}
	cs.call(t, "GET", "/ui/api/lag?group=billing", nil, 200, &lag)
	if len(lag.Times) != 2 || len(lag.Series) != 1 || lag.Series[0].Topic != "orders" || lag.Series[0].Partition != 0 ||
		lag.Series[0].Lags[0] != -1 || lag.Series[0].Lags[1] != 2 {
		t.Errorf("lag history %+v", lag)
	}
	cs.call(t, "GET", "/ui/api/lag?group=nobody", nil, 200, &lag)
	if len(lag.Series) != 0 {
		t.Errorf("a group without offsets has lag series %+v", lag.Series)
	}
}

// TestSamplerWindow: the history keeps Window/Interval samples, dropping
// the oldest.
func TestSamplerWindow(t *testing.T) {
	var n int64
	base := time.Unix(1_700_000_000, 0)
	c := console.New(&console.Sources{}, console.WithInterval(-1), console.WithWindow(3*console.DefaultInterval),
		console.WithClock(func() time.Time { n++; return base.Add(time.Duration(n) * time.Second) }))
	defer c.Close()
	for range 5 {
		if err := c.Sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/ui/api/server", nil))
	var h history
	if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, s := range h.Samples {
		got = append(got, (s.T-base.UnixMilli())/1000)
	}
	if len(got) != 3 || got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Errorf("kept samples at seconds %v, want [3 4 5]", got)
	}
}

// TestTicker: the console samples on its own every interval until Close
// (in a synctest bubble: the clock is the bubble's).
func TestTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := console.New(&console.Sources{}, console.WithInterval(time.Second), console.WithWindow(time.Minute))
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		c.Close()
		time.Sleep(5 * time.Second) // closed: no more samples
		w := httptest.NewRecorder()
		c.ServeHTTP(w, httptest.NewRequest("GET", "/ui/api/server", nil))
		var h history
		if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		if len(h.Samples) != 3 || h.IntervalMs != 1000 {
			t.Errorf("%d samples at %d ms after 3 s and a Close, want 3 at 1000", len(h.Samples), h.IntervalMs)
		}
		for i, s := range h.Samples {
			if want := start.Add(time.Duration(i+1) * time.Second).UnixMilli(); s.T != want {
				t.Errorf("sample %d at %d, want %d", i, s.T, want)
			}
		}
	})
}
