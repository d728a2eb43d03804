package api

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzReadProduce checks that no body makes the produce decoder panic or
// fail with an error classify would call internal, and that accepted
// records follow the rules (value absent is never accepted, sizes hold).
func FuzzReadProduce(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`{"records":[{"key":"k","value":"v","partition":0}]}`,
		`{"encoding":"base64","records":[{"key":null,"value":"aGk="}]}`,
		`{"records":[{"value":null},{"value":""}]} `,
		`{"records":[{"value":"\ud83d\ude00"}]}x`,
		`{"records":[{"value":"\ud800"}]}`,
		`{"records":[{"value":"x","partition":1e3}]}`,
		`{"Records":[{"VALUE":"x"}],"encoding":null}`,
		`[{"value":"x"}]`,
		`{"records":[1,2,3]}`,
	} {
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, allowPartition bool) {
		r := httptest.NewRequest("POST", "/v1/topics/t/records", strings.NewReader(body))
		recs, err := readProduce(httptest.NewRecorder(), r, allowPartition)
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
			if len(rec.Key)+len(rec.Value) > 1<<20 || (!allowPartition && rec.Partition != -1) || rec.Partition < -1 {
				t.Fatalf("bad record accepted: %+v", rec)
			}
		}
	})
}
