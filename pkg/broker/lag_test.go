package broker

import (
	"fmt"
	"testing"
)

// The lags kept for metrics are bounded: past MaxGroupLags keys, new keys
// are counted, not kept; known keys still update; a deleted topic's go.
func TestGroupLagsBounded(t *testing.T) {
	var b Broker
	for i := range MaxGroupLags + 5 {
		b.lags.record(fmt.Sprint("g", i), "t", 0, int64(i))
	}
	b.lags.record("g0", "t", 0, 42)
	got, dropped := b.GroupLags()
	if len(got) != MaxGroupLags || dropped != 5 {
		t.Fatalf("%d lags kept, %d dropped; want %d and 5", len(got), dropped, MaxGroupLags)
	}
	if got[0].Group != "g0" || got[0].Lag != 42 {
		t.Errorf("first lag %+v, want g0 updated to 42", got[0])
	}
	b.lags.forget("t")
	if got, _ := b.GroupLags(); len(got) != 0 {
		t.Errorf("%d lags left after the topic was deleted", len(got))
	}
}
