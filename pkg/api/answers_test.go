package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/wire"
)

// TestKeptAnswersAreTheAnswers: a fetch asked for again is answered with
// the answer the broker kept (broker.FetchAnswer); in every encoding and
// binary layout, for every offset, it is byte for byte (headers included)
// what a broker that keeps nothing answers over the same data.
func TestKeptAnswersAreTheAnswers(t *testing.T) {
	ctx := context.Background()
	br, uncached := benchBrokers(t)
	kept := httptest.NewServer(api.New(br))
	defer kept.Close()
	plain := httptest.NewServer(api.New(uncached))
	defer plain.Close()

	if _, err := br.CreateTopic(ctx, broker.TopicSpec{Name: "mix", TimestampType: new(broker.TimestampCreate)}); err != nil {
		t.Fatal(err)
	}
	var recs []broker.ProduceRecord
	for i := range 40 {
		r := broker.ProduceRecord{Partition: 0, Timestamp: int64(1_700_000_000_000 - i%7), HasTimestamp: true}
		switch i % 4 {
		case 0:
			r.Key, r.Value = []byte("k"), []byte(`{"n":1}`)
		case 1:
			r.Value = []byte{0xff, 0xfe, byte(i)} // not UTF-8: base64 in every JSON encoding
		case 2:
			r.Value, r.Headers = []byte(`"a<b>&\u2028"`), []broker.Header{{Key: "h", Value: []byte("v")}, {Key: "n"}}
		case 3: // a tombstone
		}
		recs = append(recs, r)
	}
	if _, err := br.ProducePartition(ctx, "mix", 0, recs); err != nil {
		t.Fatal(err)
	}

	get := func(base, query, accept string) (http.Header, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/topics/mix/partitions/0/records?"+query, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v: %s", query, res.StatusCode, err, body)
		}
		res.Header.Del("Date")
		res.Header.Del("X-Request-Id")
		return res.Header, body
	}
	formats := []struct{ query, accept string }{
		{"", ""}, {"&encoding=base64", ""}, {"&encoding=json", ""},
		{"", wire.MediaType}, {"", wire.MediaTypeOf(wire.Version2)},
	}
	for _, f := range formats {
		for _, off := range []int64{0, 1, 17, 39} {
			query := fmt.Sprintf("offset=%d&max_records=9%s", off, f.query)
			wantH, want := get(plain.URL, query, f.accept)
			for ask := range 3 { // the second ask keeps the answer, the third is answered with it
				h, body := get(kept.URL, query, f.accept)
				if !bytes.Equal(body, want) || fmt.Sprint(h) != fmt.Sprint(wantH) {
					t.Fatalf("%s (Accept %q), ask %d:\n%v\n%q\nwant\n%v\n%q", query, f.accept, ask, h, body, wantH, want)
				}
			}
		}
	}
}
