package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/tier"
)

// TestSegmentToolsHeadersAndCreateTime: verify passes a create-time
// segment whose timestamps go back (its time index holds the largest so
// far), for the hot files and for the artifact made of them, and dump shows
// the records' headers in text and JSON.
func TestSegmentToolsHeadersAndCreateTime(t *testing.T) {
	dir := t.TempDir()
	id := segment.ID{Base: 10, Epoch: 2}
	w, err := segment.Create(dir, id, segment.Options{IndexIntervalBytes: 64, CreateTime: true})
	if err != nil {
		t.Fatal(err)
	}
	var recs []segment.Record
	for i := 0; i < 40; i++ {
		r := segment.Record{Offset: id.Base + int64(i), Timestamp: 5000 - int64(i%7)*300 + int64(i), Value: []byte("value-" + strings.Repeat("x", i))}
		if i%4 == 0 {
			r.Headers = []segment.Header{{Key: "trace-id", Value: []byte("abc")}, {Key: "bin", Value: []byte{0xff}}, {Key: "null"}}
		}
		recs = append(recs, r)
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res := verifySegment(&segRef{dir: dir, id: id})
	if len(res.problems) > 0 || len(res.warnings) > 0 || res.next != id.Base+40 {
		t.Fatalf("verify: next %d, problems %v, warnings %v", res.next, res.problems, res.warnings)
	}
	log, err := os.ReadFile(id.Path(dir, segment.KindLog))
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := tier.Build(log, id, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyArtifact(obj); err != nil {
		t.Fatalf("verify artifact: %v", err)
	}

	var text, js bytes.Buffer
	if err := dumpRecord(&text, "p", &recs[0], "text", false); err != nil {
		t.Fatal(err)
	}
	if want := `headers=["trace-id":"abc" "bin":base64:/w== "null":null]`; !strings.Contains(text.String(), want) {
		t.Fatalf("text dump %q, want %s", text.String(), want)
	}
	if err := dumpRecord(&js, "p", &recs[0], "json", false); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Headers []struct {
			Key           string  `json:"key"`
			Value         *string `json:"value"`
			ValueEncoding string  `json:"value_encoding"`
		} `json:"headers"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || len(got.Headers) != 3 || *got.Headers[0].Value != "abc" ||
		got.Headers[1].ValueEncoding != "base64" || got.Headers[2].Value != nil {
		t.Fatalf("json dump %s: %+v, %v", js.String(), got, err)
	}
	js.Reset()
	if err := dumpRecord(&js, "p", &recs[1], "json", false); err != nil || strings.Contains(js.String(), "headers") {
		t.Fatalf("json dump of a record without headers: %s, %v", js.String(), err)
	}
}
