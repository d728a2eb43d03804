package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/tierlog/tierlog/pkg/client"
)

// TestRedirectsRefused: docs/api.md has no 3xx. A redirect is an *Error, never
// followed (robustness.md 3.2: a followed 307 that keeps the method turned
// a DELETE of a partition path into a DELETE of the topic), and never
// retried, with the default HTTP client and with the caller's.
func TestRedirectsRefused(t *testing.T) {
	t.Parallel()
	var sent, followed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/topics/victim2":
			followed.Add(1)
			w.WriteHeader(http.StatusNoContent)
		default:
			sent.Add(1)
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			if status == 0 {
				status = http.StatusTemporaryRedirect
			}
			http.Redirect(w, r, "/v1/topics/victim2", status)
		}
	}))
	defer srv.Close()
	callers := &http.Client{}
	for _, opts := range [][]client.Option{nil, {client.WithHTTPClient(callers)}} {
		c, err := client.New(srv.URL, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		sent.Store(0)
		var e *client.Error
		err = c.DeleteTopic(ctx, "redirected")
		if !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect || client.IsRetriable(err) {
			t.Errorf("delete: %v, want a 307 *Error", err)
		}
		// A GET is retried on retriable errors; a redirect is not one.
		_, err = c.Topic(ctx, "redirected")
		if !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect {
			t.Errorf("get: %v, want a 307 *Error", err)
		}
		if err := c.CommitGroupOffsets(ctx, "g", []client.GroupOffset{{Topic: "t", Offset: 1}}); !errors.As(err, &e) || e.Status/100 != 3 {
			t.Errorf("put: %v, want a 3xx *Error", err)
		}
		if n := sent.Load(); n != 3 {
			t.Errorf("%d requests sent, want 3 (no retries)", n)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("%d redirects followed", n)
	}
	if callers.CheckRedirect != nil {
		t.Error("the caller's http.Client was modified")
	}
}

// stubPartition serves topic "t" (1 partition) whose offsets 5 to 19 are
// damaged on disk, as the server reports it: a fetch below 5 returns the
// good records up to the damage, one at the damage is 500 corrupt_record
// with next_offset 20, one after it works. hw is 30.
func stubPartition(t *testing.T, fetches *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/topics/t":
			fmt.Fprint(w, `{"name":"t","partitions":1}`)
			return
		case "/v1/topics/t/partitions/0/records":
		default:
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":{"code":"not_found","message":"no"}}`)
			return
		}
		fetches.Add(1)
		off, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
		if off >= 5 && off < 20 {
			w.WriteHeader(500)
			fmt.Fprint(w, `{"error":{"code":"corrupt_record","message":"records 5 to 19 of topic \"t\" partition 0 are damaged on disk"},"next_offset":20}`)
			return
		}
		end := int64(30)
		if off < 5 {
			end = 5
		}
		type rec struct {
			Offset int64  `json:"offset"`
			Value  string `json:"value"`
		}
		recs := []rec{}
		for o := off; o < end; o++ {
			recs = append(recs, rec{o, "v" + strconv.FormatInt(o, 10)})
		}
		next := max(off, end)
		_ = json.NewEncoder(w).Encode(map[string]any{"records": recs, "next_offset": next, "high_watermark": 30, "log_start_offset": 0})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDamagedRecords: corrupt_record is a *DamagedError with the offset to
// go on from. Nothing skips it silently: Fetch returns it (once, no
// retry) and a Consumer stops the partition and returns it from Poll,
// unless WithSkipDamaged asks it to go on from Next.
func TestDamagedRecords(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int64
	srv := stubPartition(t, &fetches)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)

	_, err = c.Fetch(ctx, "t", 0, 7, client.FetchOptions{})
	var dmg *client.DamagedError
	if !errors.As(err, &dmg) || dmg.Next != 20 || dmg.Offset != 7 || dmg.Topic != "t" || dmg.Partition != 0 {
		t.Fatalf("fetch at the damage: %v, want a *DamagedError with Next 20", err)
	}
	if !client.IsCode(err, client.CodeCorruptRecord) || client.IsRetriable(err) || fetches.Load() != 1 {
		t.Errorf("corrupt_record: code %v retriable %v after %d fetches", client.IsCode(err, client.CodeCorruptRecord), client.IsRetriable(err), fetches.Load())
	}
	if res, err := c.Fetch(ctx, "t", 0, dmg.Next, client.FetchOptions{}); err != nil || len(res.Messages) != 10 {
		t.Fatalf("fetch after the damage: %v", err)
	}

	// Default: the consumer hands out what precedes the damage, then the
	// error, and stays before the damage.
	k, err := c.NewConsumer(ctx, "t", client.WithStartOffset(0), client.WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := k.Poll(ctx)
	if err != nil || len(msgs) != 5 || msgs[4].Offset != 4 {
		t.Fatalf("first poll: %d records, %v", len(msgs), err)
	}
	if _, err := k.Poll(ctx); !errors.As(err, &dmg) || dmg.Next != 20 {
		t.Fatalf("second poll: %v, want the *DamagedError", err)
	}
	if pos, _ := k.Position(0); pos != 5 {
		t.Errorf("position %d after the damage was reported, want 5 (not skipped)", pos)
	}
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// WithSkipDamaged: the consumer goes on from Next.
	k, err = c.NewConsumer(ctx, "t", client.WithStartOffset(0), client.WithWait(0), client.WithSkipDamaged())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	var got []int64
	for len(got) < 15 {
		msgs, err := k.Poll(ctx)
		if err != nil {
			t.Fatalf("poll with skip: %v", err)
		}
		for _, m := range msgs {
			got = append(got, m.Offset)
		}
	}
	if got[4] != 4 || got[5] != 20 || got[14] != 29 {
		t.Errorf("offsets %v, want 0-4 then 20-29", got)
	}
	if pos, _ := k.Position(0); pos != 30 {
		t.Errorf("position %d, want 30", pos)
	}
}

// TestFetchStrictBase64: a base64 field of a fetch answer is decoded as
// strictly as the server decodes produce bodies: line breaks and non-zero
// padding bits are errors, not silently different bytes.
func TestFetchStrictBase64(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value string
		ok    bool
	}{
		{"aGk=", true},
		{`aG\nk=`, false},
		{`\r\n`, false},
		{`aGk=\r\n`, false},
		{"aGl=", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"records":[{"offset":0,"timestamp":1,"key":null,"value":"%s","value_encoding":"base64"}],"next_offset":1,"high_watermark":1,"log_start_offset":0}`, c.value)
		}))
		cl, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cl.Fetch(ctxT(t), "t", 0, 0, client.FetchOptions{})
		srv.Close()
		if (err == nil) != c.ok {
			t.Errorf("value %q: %v, want ok=%v", c.value, err, c.ok)
		}
		if c.ok && (err != nil || string(res.Messages[0].Value) != "hi") {
			t.Errorf("value %q: %v", c.value, res)
		}
	}
}
