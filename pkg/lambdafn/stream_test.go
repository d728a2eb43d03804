package lambdafn

import (
	"encoding/json"
	"strings"
	"testing"
)

// Behind API Gateway (HTTP API, buffered answers) a fetch with Accept:
// text/event-stream answers as a plain fetch (docs/api.md "Streaming fetch
// (Server-Sent Events)"): the functions are built with streaming off.
func TestFetchFunctionAnswersEventStreamAsPlainFetch(t *testing.T) {
	awsEnv(t)
	hot := t.TempDir()
	produce, _ := newFunction(t, "produce", hot, nil)
	fetch, _ := newFunction(t, "fetch", hot, nil)
	if fetch.Server().Streams != nil || produce.Server().Streams != nil {
		t.Fatal("a Lambda function's server streams")
	}
	ph, fh := produce.HTTP(WriteMethods...), fetch.HTTP(ReadMethods...)
	for _, ev := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/topics", `{"name":"t"}`, 201},
		{"POST", "/v1/topics/t/partitions/0/records", `{"records":[{"value":"a"},{"value":"b"}]}`, 200},
	} {
		if resp, err := ph(lambdaCtx(), event(ev.method, ev.path, ev.body)); err != nil || resp.StatusCode != ev.status {
			t.Fatalf("%s %s: %d %s %v", ev.method, ev.path, resp.StatusCode, resp.Body, err)
		}
	}

	for _, accept := range []string{"text/event-stream", "text/event-stream, application/json;q=0.5"} {
		ev := event("GET", "/v1/topics/t/partitions/0/records?offset=1", "")
		ev.Headers = map[string]string{"accept": accept, "last-event-id": "0"}
		resp, err := fh(lambdaCtx(), ev)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("Accept %q: %d %s %v", accept, resp.StatusCode, resp.Body, err)
		}
		if ct := resp.Headers["Content-Type"]; !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("Accept %q: Content-Type %q, want the plain fetch's JSON", accept, ct)
		}
		var body struct {
			Records []struct {
				Offset int64  `json:"offset"`
				Value  string `json:"value"`
			} `json:"records"`
			NextOffset int64 `json:"next_offset"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("Accept %q: %v: %s", accept, err, resp.Body)
		}
		// A plain fetch from offset: Last-Event-ID means nothing to it.
		if len(body.Records) != 1 || body.Records[0].Offset != 1 || body.Records[0].Value != "b" || body.NextOffset != 2 {
			t.Fatalf("Accept %q: %s", accept, resp.Body)
		}
	}
}
