package api

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/wire"
)

// FuzzReadBinaryProduce checks that no binary body makes the produce
// decoder panic or fail with an error classify would call internal, and
// that accepted records follow the JSON path's rules.
func FuzzReadBinaryProduce(f *testing.F) {
	valid, _ := wire.AppendProduceRequest(nil, 2, func(i int) wire.Record {
		return []wire.Record{{Key: []byte("k"), Value: []byte("v"), Partition: 1}, {Partition: -1}}[i]
	})
	v2, _ := wire.AppendProduceRequestV(nil, wire.Version2, 2, func(i int) wire.Record {
		return []wire.Record{{Key: []byte("k"), Value: []byte("v"), Partition: 1, Timestamp: 5, HasTimestamp: true,
			Headers: []wire.Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}}, {Partition: -1}}[i]
	})
	for _, seed := range [][]byte{nil, valid, valid[:wire.HeaderSize], append(bytes.Clone(valid), 0), []byte(`{"records":[]}`), v2, v2[:len(v2)-3]} {
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body []byte, allowPartition bool) {
		r := httptest.NewRequest("POST", "/v1/topics/t/records", bytes.NewReader(body))
		r.Header.Set("Content-Type", wire.MediaType)
		recs, release, err := readProduceBody(httptest.NewRecorder(), r, allowPartition)
		defer release()
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				t.Fatalf("unclassified error %T %v", err, err)
			}
			if ae.status != 400 && ae.status != 413 {
				t.Fatalf("status %d for a body", ae.status)
			}
			return
		}
		if len(recs) == 0 || len(recs) > 10000 {
			t.Fatalf("%d records accepted", len(recs))
		}
		for _, rec := range recs {
			if jsonrec.RecordSize(&rec) > 1<<20 || (!allowPartition && rec.Partition != -1) || rec.Partition < -1 ||
				len(rec.Headers) > jsonrec.MaxHeaders || rec.Timestamp < 0 || (!rec.HasTimestamp && rec.Timestamp != 0) {
				t.Fatalf("bad record accepted: %+v", rec)
			}
			for _, h := range rec.Headers {
				if len(h.Key) == 0 || len(h.Key) > jsonrec.MaxHeaderKeySize || !utf8.ValidString(h.Key) {
					t.Fatalf("bad header accepted: %+v", h)
				}
			}
		}
	})
}
