package metrics

import (
	"testing"
	"time"
)

func TestHTTPBounded(t *testing.T) {
	h := NewHTTP()
	h.Observe("/v1/topics", "GET", 200, 3*time.Millisecond)
	h.Observe("/v1/topics", "GET", 200, 2*time.Second)
	h.Observe("/v1/topics", "BREW", 405, time.Millisecond)
	h.Observe("/v1/topics", "FROB", 405, time.Millisecond)
	h.Observe("/v1/topics", "GET", 1000, time.Millisecond)
	got := map[HTTPKey]uint64{}
	h.Each(func(k HTTPKey, hist *Histogram) {
		_, cum, _, n := hist.Snapshot()
		got[k] = n
		if k.Code == 200 && cum[2] != 1 { // 3 ms is above 2.5 ms, within 5 ms
			t.Errorf("buckets %v", cum)
		}
	})
	want := map[HTTPKey]uint64{
		{"/v1/topics", "GET", 200}:   2,
		{"/v1/topics", "OTHER", 405}: 2, // unknown methods share one series
		{"/v1/topics", "GET", 0}:     1,
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v: %d, want %d", k, got[k], n)
		}
	}
	var nilHTTP *HTTP
	nilHTTP.Observe("/x", "GET", 200, 0)
	nilHTTP.Each(func(HTTPKey, *Histogram) { t.Error("nil HTTP has series") })
}
