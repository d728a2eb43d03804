package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tierlog/tierlog/pkg/console"
	"github.com/tierlog/tierlog/pkg/server"
)

// screenshots, when set, is the directory the browser test writes each
// page's PNG into (docs/console/: `go test ./pkg/console -run TestBrowser
// -console.screenshots ../../docs/console`).
var screenshots = flag.String("console.screenshots", "", "write a PNG of each console page into this directory")

// chromiumPath is Debian's chromium (make test-deps installs it);
// TIERLOG_CHROMIUM names another.
func chromiumPath() string {
	if p := os.Getenv("TIERLOG_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// consoleServer is a local server with the console on, on 127.0.0.1,
// whose history the test fills (no ticker: Sample is called directly, on a
// clock that steps one interval a sample).
type consoleServer struct {
	*server.Server
	url  string
	tick atomic.Int64
}

func startServer(t *testing.T, opts ...func(*server.Config)) *consoleServer {
	t.Helper()
	cs := &consoleServer{}
	start := time.Now().Add(-time.Hour)
	cfg := server.Config{
		DataDir: t.TempDir(), CompactInterval: -1, Console: true,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		ConsoleOptions: []console.Option{console.WithInterval(-1), console.WithClock(func() time.Time {
			return start.Add(time.Duration(cs.tick.Add(1)) * console.DefaultInterval)
		})},
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs.Server = s
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		s.EndStreams()
		if err := hs.Close(); err != nil {
			t.Errorf("http close: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	cs.url = "http://" + ln.Addr().String()
	return cs
}

// call sends a JSON request and decodes the answer into out (if not nil);
// it fails the test unless the status is want.
func (cs *consoleServer) call(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, cs.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

type rec = map[string]any

// seed makes the data the pages show: a topic with JSON values and
// headers, a consumer group behind it, and samples of an hour of traffic
// (a produce, a commit and a sample per interval).
func (cs *consoleServer) seed(t *testing.T, samples int) {
	t.Helper()
	cs.call(t, "POST", "/v1/topics", rec{"name": "orders", "partitions": 3, "segment_bytes": 16384}, 201, nil)
	cs.call(t, "POST", "/v1/topics", rec{"name": "clicks", "timestamp_type": "create"}, 201, nil)
	committed := 0
	var member struct {
		MemberID string `json:"member_id"`
	}
	cs.call(t, "POST", "/v1/groups/analytics/members", rec{"topics": []string{"orders"}, "session_timeout_ms": 300000}, 201, &member)
	for i := range samples {
		var recs []rec
		for j := range 3 + int(2.5*math.Sin(float64(i)/25)) + i%2 {
			n := i*10 + j
			recs = append(recs, rec{"key": fmt.Sprintf("customer-%d", n%13), "partition": n % 3,
				"value":   rec{"order": n, "amount": 12.5 + float64(n%40), "currency": "EUR"},
				"headers": []rec{{"key": "trace-id", "value": fmt.Sprintf("t-%04d", n)}}})
		}
		cs.call(t, "POST", "/v1/topics/orders/records", rec{"encoding": "json", "records": recs}, 200, nil)
		if i%3 == 0 {
			var o struct {
				HighWatermark int64 `json:"high_watermark"`
			}
			cs.call(t, "GET", "/v1/topics/orders/partitions/0/offsets", nil, 200, &o)
			committed = int(o.HighWatermark) - 1 - i%5
			cs.call(t, "PUT", "/v1/groups/billing/offsets", rec{"offsets": []rec{
				{"topic": "orders", "partition": 0, "offset": max(committed, 0)},
				{"topic": "orders", "partition": 1, "offset": max(committed/2, 0)}}}, 204, nil)
		}
		if i%10 == 0 {
			cs.call(t, "GET", "/v1/topics/orders/partitions/1/records?offset=0&max_records=20", nil, 200, nil)
		}
		if i%40 == 39 {
			if _, err := cs.Compactor.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := cs.Console.Sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// browser starts headless Chromium with a fresh profile and no network
// beyond the test's server, and fails on any uncaught page exception.
func browser(t *testing.T, width, height int) context.Context {
	t.Helper()
	path := chromiumPath()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (make test-deps installs Debian's chromium; TIERLOG_CHROMIUM names another): %v", path, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true), chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}),
		chromedp.WithListener(func(ev any) {
			if e, ok := ev.(*runtime.EventExceptionThrown); ok {
				d := e.ExceptionDetails
				desc := d.Text
				if d.Exception != nil {
					desc += " " + d.Exception.Description
				}
				t.Errorf("page exception at %s:%d: %s", d.URL, d.LineNumber+1, desc)
			}
		}))
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// step is an action that returns nothing.
type step = chromedp.Action[chromedp.Void]

// into runs a and stores its value in dst.
func into[T any](a chromedp.Action[T], dst *T) step {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, tg)
		*dst = v
		return chromedp.Void{}, err
	}
}

// do runs a JavaScript expression for its effect.
func do(expr string) step {
	var v any
	return into(chromedp.Evaluate[any](expr), &v)
}

// setValue sets an input's value from script (chromedp.SetValue cannot
// set every kind of input, nor the empty string).
func setValue(sel, v string) step {
	return do(fmt.Sprintf("document.querySelector(%q).value = %q", sel, v))
}

func run(t *testing.T, ctx context.Context, what string, steps ...step) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("#main")))
		t.Fatalf("%s: %v\npage: %.3000s", what, err, html)
	}
}

// until waits for a JavaScript condition to be true (polled on animation
// frames by chromedp).
func until(cond string) step {
	var ok bool
	return into(chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second)), &ok)
}

// text is the trimmed text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	run(t, ctx, "text of "+sel, into(chromedp.Text(chromedp.CSS(sel)), &s))
	return strings.TrimSpace(s)
}

// confirm clicks the confirmation dialog's button once it is open.
func confirm() step {
	return chromedp.Steps(until(`document.querySelector("#confirm").open`), chromedp.Click(chromedp.CSS("#confirm-ok")))
}

// requests is how many requests the page made since it was shown.
func requests(t *testing.T, ctx context.Context) int {
	t.Helper()
	var n int
	run(t, ctx, "request count", into(chromedp.Evaluate[int](`window.tierlogRequests()`), &n))
	return n
}

// shot checks that the page fits its window's width (tables scroll in
// their own box; the page never does sideways) and, with
// -console.screenshots, writes its PNG.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var over int
	run(t, ctx, "width of "+name, into(chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`), &over))
	if over > 0 {
		t.Errorf("%s: the page is %d px wider than the window", name, over)
	}
	if *screenshots == "" {
		return
	}
	var png []byte
	run(t, ctx, "screenshot "+name, into(chromedp.FullScreenshot(100), &png))
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowser loads every page of the console in headless Chromium against
// a real server with data, and clicks through creating, updating and
// deleting a topic, browsing and producing records, following a partition
// live, and resetting a group's offsets.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser tests run in make test, not make unit (-short)")
	}
	began := time.Now()
	cs := startServer(t)
	cs.seed(t, 360)
	if res, body := get(t, cs.url+"/ui/api/server", nil); res.StatusCode == 200 {
		t.Logf("an hour of history: %d KiB of JSON", len(body)>>10)
	}
	ctx := browser(t, 1280, 800)
	ui := cs.url + "/ui/"
	perPage := map[string]int{}

	t.Run("topics", func(t *testing.T) {
		run(t, ctx, "topics page", chromedp.Navigate(ui+"#/topics"),
			until(`document.querySelector('#topics-table tr[data-topic="orders"]') !== null`))
		row := text(t, ctx, `#topics-table tr[data-topic="orders"]`)
		if !strings.Contains(row, "orders") || !strings.Contains(row, "KiB") {
			t.Errorf("orders row %q: want its name and hot bytes", row)
		}
		perPage["topics"] = requests(t, ctx)
		shot(t, ctx, "topics")

		run(t, ctx, "create a topic",
			chromedp.SetValue(chromedp.CSS(`#create-topic input[name=name]`), "payments"),
			chromedp.SetValue(chromedp.CSS(`#create-topic input[name=partitions]`), "2"),
			chromedp.Click(chromedp.CSS("#create-topic-submit")), confirm(),
			until(`document.querySelector('#topics-table tr[data-topic="payments"]') !== null`))
		var got struct {
			Partitions int `json:"partitions"`
		}
		cs.call(t, "GET", "/v1/topics/payments", nil, 200, &got)
		if got.Partitions != 2 {
			t.Errorf("created topic has %d partitions, want 2", got.Partitions)
		}
		if m := text(t, ctx, "#create-topic-msg"); !strings.Contains(m, "Created topic payments") {
			t.Errorf("create message %q", m)
		}
	})

	t.Run("topic", func(t *testing.T) {
		run(t, ctx, "topic page", chromedp.Navigate(ui+"#/topics/orders"),
			until(`document.querySelectorAll('#partitions-table tbody tr').length === 3`))
		perPage["topic"] = requests(t, ctx)
		if cfg := text(t, ctx, "#topic-config"); !strings.Contains(cfg, "timestamp type") || !strings.Contains(cfg, "append") || strings.Contains(cfg, "[object") {
			t.Errorf("topic configuration shows %q", cfg)
		}
		shot(t, ctx, "topic")
		run(t, ctx, "update retention", chromedp.Navigate(ui+"#/topics/payments"),
			until(`document.querySelector('#edit-topic input[name=retention_ms]').value !== ""`),
			chromedp.SetValue(chromedp.CSS(`#edit-topic input[name=retention_ms]`), "3600000"),
			chromedp.Click(chromedp.CSS("#edit-topic-submit")), confirm(),
			until(`document.querySelector('#topic-msg .ok') !== null`))
		var got struct {
			RetentionMs int64 `json:"retention_ms"`
		}
		cs.call(t, "GET", "/v1/topics/payments", nil, 200, &got)
		if got.RetentionMs != 3600000 {
			t.Errorf("retention_ms %d after the update, want 3600000", got.RetentionMs)
		}
		// Delete: the dialog's button stays disabled until the name is typed.
		var disabled bool
		run(t, ctx, "delete dialog", chromedp.Click(chromedp.CSS("#delete-topic")),
			until(`document.querySelector("#confirm").open`),
			into(chromedp.Evaluate[bool](`document.querySelector("#confirm-ok").disabled`), &disabled))
		if !disabled {
			t.Error("delete is possible before the topic's name is typed")
		}
		run(t, ctx, "delete", chromedp.SendKeys(chromedp.CSS("#confirm-input"), "payments"),
			chromedp.Click(chromedp.CSS("#confirm-ok")),
			until(`location.hash === "#/topics" && document.querySelector('#topics-table tr[data-topic="orders"]') !== null`))
		cs.call(t, "GET", "/v1/topics/payments", nil, 404, nil)
	})

	t.Run("records", func(t *testing.T) {
		var o struct {
			HighWatermark int64 `json:"high_watermark"`
		}
		cs.call(t, "GET", "/v1/topics/orders/partitions/0/offsets", nil, 200, &o)
		run(t, ctx, "records page", chromedp.Navigate(ui+"#/topics/orders/partitions/0"),
			until(`document.querySelector('#records-table tr[data-offset]') !== null`))
		perPage["records"] = requests(t, ctx)
		var first string
		run(t, ctx, "newest first", into(chromedp.Evaluate[string](`document.querySelector("#records-table tr[data-offset]").dataset.offset`), &first))
		if first != fmt.Sprint(o.HighWatermark-1) {
			t.Errorf("first row is offset %s, want the newest, %d", first, o.HighWatermark-1)
		}
		run(t, ctx, "pretty JSON", chromedp.SetValue(chromedp.CSS("#format"), "json"),
			do(`document.querySelector("#format").dispatchEvent(new Event("change"))`),
			until(`document.querySelector('#records-table tr[data-offset] td:nth-child(4) pre').textContent.includes('\n  "amount"')`))
		if h := text(t, ctx, `#records-table tr[data-offset] td:nth-child(5)`); !strings.HasPrefix(h, `trace-id: "t-`) {
			t.Errorf("headers cell %q", h)
		}
		run(t, ctx, "a page of 8", setValue("#mode", "newest"), setValue(`input[name=count]`, "8"), chromedp.Click(chromedp.CSS("#load")),
			until(`document.querySelectorAll('#records-table tr[data-offset]').length === 8`))
		shot(t, ctx, "records")
		run(t, ctx, "hex", chromedp.SetValue(chromedp.CSS("#format"), "hex"),
			do(`document.querySelector("#format").dispatchEvent(new Event("change"))`),
			until(`document.querySelector('#records-table tr[data-offset] td:nth-child(4) pre').textContent.startsWith('7b 22')`))
		run(t, ctx, "from offset", chromedp.SetValue(chromedp.CSS("#mode"), "offset"),
			chromedp.SetValue(chromedp.CSS("#offset"), "5"), chromedp.Click(chromedp.CSS("#load")),
			until(`document.querySelector('#records-table tr[data-offset]').dataset.offset === "5"`),
			chromedp.Click(chromedp.CSS("#newer")),
			until(`document.querySelector('#records-table tr[data-offset]').dataset.offset === "13"`))
		run(t, ctx, "from time", chromedp.SetValue(chromedp.CSS("#mode"), "time"),
			setValue("#time", "2020-01-01T00:00:00"), chromedp.Click(chromedp.CSS("#load")),
			until(`document.querySelector('#records-table tr[data-offset]').dataset.offset === "0"`))

		run(t, ctx, "produce", setValue("#format", "text"), chromedp.SetValue(chromedp.CSS("#produce-key"), "console-key"),
			chromedp.SetValue(chromedp.CSS("#produce-value"), "hello from the console"),
			chromedp.SetValue(chromedp.CSS("#produce-headers"), "source=browser"),
			chromedp.Click(chromedp.CSS("#produce-submit")),
			until(`document.querySelector('#produce-msg .ok') !== null`),
			until(`document.querySelector('#records-table tr[data-offset]').dataset.offset === "`+fmt.Sprint(o.HighWatermark)+`"`))
		var fetched struct {
			Records []struct {
				Key, Value string
				Headers    []struct{ Key, Value string }
			} `json:"records"`
		}
		cs.call(t, "GET", fmt.Sprintf("/v1/topics/orders/partitions/0/records?offset=%d", o.HighWatermark), nil, 200, &fetched)
		if len(fetched.Records) != 1 || fetched.Records[0].Key != "console-key" || fetched.Records[0].Value != "hello from the console" ||
			len(fetched.Records[0].Headers) != 1 || fetched.Records[0].Headers[0].Key != "source" || fetched.Records[0].Headers[0].Value != "browser" {
			t.Errorf("the produced record reads back as %+v", fetched.Records)
		}
		if row := text(t, ctx, `#records-table tr[data-offset]`); !strings.Contains(row, "hello from the console") || !strings.Contains(row, "source: browser") {
			t.Errorf("produced row shows %q", row)
		}

		// Follow: a record produced once the stream is open shows on top.
		run(t, ctx, "follow", chromedp.Click(chromedp.CSS("#follow")), until(`document.querySelector("#follow-state .live") !== null`))
		wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cs.Streams.WaitActive(wctx, 1); err != nil {
			t.Fatalf("no stream opened: %v", err)
		}
		cs.call(t, "POST", "/v1/topics/orders/partitions/0/records", rec{"records": []rec{{"value": "live-1"}}}, 200, nil)
		run(t, ctx, "followed", until(`document.querySelector('#records-table tr[data-offset] td:nth-child(4)').textContent === "live-1"`),
			chromedp.Click(chromedp.CSS("#follow")))
		if err := cs.Streams.WaitActive(wctx, 0); err != nil {
			t.Fatalf("the stream was not closed: %v", err)
		}
	})

	t.Run("groups", func(t *testing.T) {
		run(t, ctx, "groups page", chromedp.Navigate(ui+"#/groups"),
			until(`document.querySelector('#groups-table tbody a') !== null`))
		perPage["groups"] = requests(t, ctx)
		shot(t, ctx, "groups")
		var offs struct {
			Offsets []struct {
				Partition int   `json:"partition"`
				Lag       int64 `json:"lag"`
			} `json:"offsets"`
		}
		cs.call(t, "GET", "/v1/groups/billing/offsets?topic=orders", nil, 200, &offs)
		var lag int64
		for _, o := range offs.Offsets {
			lag += o.Lag
		}
		run(t, ctx, "group page", chromedp.Navigate(ui+"#/groups/billing"),
			until(`document.querySelectorAll('#offsets-table tbody tr').length === 2 && document.querySelector('#lag-chart canvas') !== null`))
		perPage["group"] = requests(t, ctx)
		if got := text(t, ctx, "#group-lag"); got != fmt.Sprint(lag) && got != formatThousands(lag) {
			t.Errorf("total lag shows %q, want %d", got, lag)
		}
		shot(t, ctx, "group")
		run(t, ctx, "reset", chromedp.SetValue(chromedp.CSS("#reset-to"), "earliest"),
			chromedp.Click(chromedp.CSS("#reset-submit")), confirm(),
			until(`document.querySelector('#reset-msg .ok') !== null`))
		cs.call(t, "GET", "/v1/groups/billing/offsets?topic=orders", nil, 200, &offs)
		for _, o := range offs.Offsets {
			var b struct {
				HighWatermark int64 `json:"high_watermark"`
			}
			cs.call(t, "GET", fmt.Sprintf("/v1/topics/orders/partitions/%d/offsets", o.Partition), nil, 200, &b)
			if o.Lag != b.HighWatermark {
				t.Errorf("partition %d: lag %d after a reset to earliest, want %d", o.Partition, o.Lag, b.HighWatermark)
			}
		}
	})

	t.Run("subscriptions", func(t *testing.T) {
		run(t, ctx, "subscriptions page", chromedp.Navigate(ui+"#/subscriptions"),
			until(`document.querySelector('#subscriptions-table tbody td') !== null`))
		if m := text(t, ctx, "#subscriptions-table tbody"); !strings.Contains(m, "no subscriptions yet") {
			t.Errorf("subscriptions page without any says %q", m)
		}
		cs.call(t, "POST", "/v1/topics", rec{"name": "orders-dlq"}, 201, nil)
		cs.call(t, "POST", "/v1/subscriptions", rec{"name": "billing-hook", "topic": "orders",
			"target": rec{"type": "http", "url": "http://127.0.0.1:9/hook"}, "on_failure": rec{"topic": "orders-dlq"}, "enabled": false}, 201, nil)
		run(t, ctx, "subscriptions page", chromedp.Navigate(ui+"#/groups"), chromedp.Navigate(ui+"#/subscriptions"),
			until(`document.querySelector('#subscriptions-table tbody tr td')?.textContent === "billing-hook"`))
		perPage["subscriptions"] = requests(t, ctx)
		row := text(t, ctx, "#subscriptions-table tbody tr")
		for _, want := range []string{"billing-hook", "orders", "http://127.0.0.1:9/hook", "paused", "orders-dlq"} {
			if !strings.Contains(row, want) {
				t.Errorf("subscription row %q lacks %q", row, want)
			}
		}
		shot(t, ctx, "subscriptions")
	})

	t.Run("server", func(t *testing.T) {
		run(t, ctx, "server page", chromedp.Navigate(ui+"#/server"),
			until(`["#chart-records","#chart-requests","#chart-tiers","#chart-compactor"].every((s) => document.querySelector(s + " canvas") !== null)`))
		perPage["server"] = requests(t, ctx)
		if h := text(t, ctx, "#health"); h != "ok" {
			t.Errorf("health shows %q", h)
		}
		if r := text(t, ctx, "#requests-table"); !strings.Contains(r, "/v1/topics/{topic}/records") {
			t.Errorf("requests table lacks the produce route: %.300s", r)
		}
		shot(t, ctx, "server")
	})

	t.Run("token", func(t *testing.T) {
		var auth string
		run(t, ctx, "set a token", chromedp.SetValue(chromedp.CSS("#token"), "secret-1"),
			chromedp.Click(chromedp.CSS("#token-save")), until(`document.querySelector("#token-state").textContent === "token set"`),
			into(chromedp.Evaluate[string](`headers().Authorization`), &auth))
		if auth != "Bearer secret-1" {
			t.Errorf("requests carry Authorization %q, want Bearer secret-1", auth)
		}
		run(t, ctx, "clear the token", setValue("#token", ""),
			chromedp.Click(chromedp.CSS("#token-save")), into(chromedp.Evaluate[string](`headers().Authorization || ""`), &auth))
		if auth != "" {
			t.Errorf("a cleared token still sends %q", auth)
		}
	})

	{
		t.Run("narrow", func(t *testing.T) {
			nctx := browser(t, 390, 844)
			for _, p := range []struct{ name, hash, ready string }{
				{"topics-narrow", "#/topics", `#topics-table tbody tr`},
				{"records-narrow", "#/topics/orders/partitions/0", `#records-table tr[data-offset]`},
				{"group-narrow", "#/groups/billing", `#lag-chart canvas`},
				{"server-narrow", "#/server", `#chart-tiers canvas`},
			} {
				run(t, nctx, p.name, chromedp.Navigate(ui+p.hash), until(`document.querySelector('`+p.ready+`') !== null`))
				if p.name == "records-narrow" {
					run(t, nctx, "a page of 8", setValue(`input[name=count]`, "8"), chromedp.Click(chromedp.CSS("#load")),
						until(`document.querySelectorAll('#records-table tr[data-offset]').length === 8`))
				}
				shot(t, nctx, p.name)
			}
		})
	}
	// A failing subscription's status (what a deliverer shows only after
	// failures), from a stub answering in docs/api.md's shape.
	t.Run("a failing subscription", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/ui/", console.New(nil))
		mux.HandleFunc("GET /v1/subscriptions", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"subscriptions":[{"name":"billing-fn","topic":"orders","target":{"type":"lambda","function":"billing"},"enabled":true}]}`)
		})
		mux.HandleFunc("GET /v1/subscriptions/billing-fn", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"name":"billing-fn","topic":"orders","target":{"type":"lambda","function":"billing"},"enabled":true,`+
				`"on_failure":{"topic":"orders-dlq"},"status":{"state":"failing","delivered":1200,"failed_attempts":3,"sent_to_on_failure":2,`+
				`"partitions":[{"partition":0,"committed_offset":400,"lag":7,"last_error":null},{"partition":1,"committed_offset":380,"lag":5,"last_error":"function error: timeout"}]}}`)
		})
		stub := httptest.NewServer(mux)
		defer stub.Close()
		run(t, ctx, "subscriptions", chromedp.Navigate(stub.URL+"/ui/#/subscriptions"),
			until(`document.querySelector('#subscriptions-table tbody td') !== null`))
		row := text(t, ctx, "#subscriptions-table tbody tr")
		for _, want := range []string{"billing-fn", "orders", "failing", "1,200", "12", "orders-dlq", "1: function error: timeout"} {
			if !strings.Contains(row, want) {
				t.Errorf("subscription row %q lacks %q", row, want)
			}
		}
	})
	// Where the API cannot stream (API Gateway; here a server with
	// streaming off), Follow live follows with long polls.
	t.Run("follow without streaming", func(t *testing.T) {
		plain := startServer(t, func(c *server.Config) { c.DisableStreaming = true })
		plain.call(t, "POST", "/v1/topics", rec{"name": "plain"}, 201, nil)
		plain.call(t, "POST", "/v1/topics/plain/partitions/0/records", rec{"records": []rec{{"value": "before"}}}, 200, nil)
		run(t, ctx, "follow", chromedp.Navigate(plain.url+"/ui/#/topics/plain/partitions/0"),
			until(`document.querySelector('#records-table tr[data-offset="0"]') !== null`),
			chromedp.Click(chromedp.CSS("#follow")), until(`document.querySelector("#follow-state .live") !== null`))
		plain.call(t, "POST", "/v1/topics/plain/partitions/0/records", rec{"records": []rec{{"value": "after"}}}, 200, nil)
		run(t, ctx, "followed", until(`document.querySelector('#records-table tr[data-offset] td:nth-child(4)').textContent === "after"`),
			chromedp.Click(chromedp.CSS("#follow")), until(`document.querySelector("#follow-state .live") === null`))
	})
	t.Logf("requests per page load: %v", perPage)
	t.Logf("browser test wall time: %v", time.Since(began).Round(time.Millisecond))
}

func formatThousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
