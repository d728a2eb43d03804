package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// End-to-end semantics of idempotent and conditional produce (docs/api.md
// "Produce: many writers, exactly once, conditionally") through the real
// handler over a real broker.

// offsetsOf decodes a 200 produce answer's offsets.
func offsetsOf(t *testing.T, what string, r response) []produceOffset {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d, want 200; body %.300s", what, r.status, r.body)
	}
	var out produceResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return out.Offsets
}

func sameOffsets(a, b []produceOffset) bool {
	return slices.EqualFunc(a, b, func(x, y produceOffset) bool {
		return x.Partition == y.Partition && x.Offset != nil && y.Offset != nil && *x.Offset == *y.Offset &&
			x.Timestamp != nil && y.Timestamp != nil && *x.Timestamp == *y.Timestamp
	})
}

// TestIdempotentReplay: the same key with the same body answers the
// first attempt's offsets and timestamps with Idempotent-Replayed: true,
// and appends once, on both routes.
func TestIdempotentReplay(t *testing.T) {
	for _, route := range []struct{ name, path, body string }{
		{"single partition", "/v1/topics/i/partitions/1/records", `{"records":[{"key":"a","value":"1"},{"value":"2"}]}`},
		{"multi partition", "/v1/topics/i/records", `{"records":[{"key":"a","value":"1","partition":0},{"value":"2","partition":1},{"value":"3","partition":1}]}`},
	} {
		t.Run(route.name, func(t *testing.T) {
			s := newServer(t)
			s.createTopic("i", 2)
			h := keyHeader("replay-" + route.name)
			first := s.doHeader("POST", route.path, route.body, h)
			want := offsetsOf(t, "first", first)
			if v := first.header.Get("Idempotent-Replayed"); v != "" {
				t.Errorf("first attempt: Idempotent-Replayed %q, want none", v)
			}
			hws := s.highWatermarks("i", 2)
			second := s.doHeader("POST", route.path, route.body, h)
			got := offsetsOf(t, "second", second)
			if !sameOffsets(got, want) {
				t.Errorf("replay answered %s, want the first attempt's %s", second.body, first.body)
			}
			if v := second.header.Get("Idempotent-Replayed"); v != "true" {
				t.Errorf("replay: Idempotent-Replayed %q, want true", v)
			}
			if after := s.highWatermarks("i", 2); !slices.Equal(after, hws) {
				t.Errorf("high watermarks %v after the replay, %v before: appended twice", after, hws)
			}
			// Another key appends again.
			third := s.doHeader("POST", route.path, route.body, keyHeader("other"))
			offsetsOf(t, "other key", third)
			if third.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("a new key answered as a replay")
			}
		})
	}
}

// TestIdempotencyKeyReused: the same key with another body is 422 and
// appends nothing.
func TestIdempotencyKeyReused(t *testing.T) {
	s := newServer(t)
	s.createTopic("i", 2)
	for _, path := range []string{"/v1/topics/i/partitions/0/records", "/v1/topics/i/records"} {
		h := keyHeader("k " + path)
		offsetsOf(t, "first", s.doHeader("POST", path, `{"records":[{"value":"one"}]}`, h))
		hws := s.highWatermarks("i", 2)
		r := s.doHeader("POST", path, `{"records":[{"value":"two"}]}`, h)
		msg := checkError(t, "other body, "+path, r, http.StatusUnprocessableEntity, "idempotency_key_reused")
		if !strings.Contains(msg, `"k `+path+`"`) {
			t.Errorf("message %q does not name the key", msg)
		}
		if after := s.highWatermarks("i", 2); !slices.Equal(after, hws) {
			t.Errorf("%s: high watermarks %v after the refused request, %v before", path, after, hws)
		}
	}
}

// TestConditionalAppend: expected_offset equal to the high watermark
// appends; any other value is 409 offset_mismatch with high_watermark at
// the top level, and appends nothing. In the JSON body and in the query
// (the binary format's way).
func TestConditionalAppend(t *testing.T) {
	s := newServer(t)
	s.createTopic("c", 1)
	const path = "/v1/topics/c/partitions/0/records"
	body := func(expected string) string {
		return `{"records":[{"value":"x"},{"value":"y"}],"expected_offset":` + expected + `}`
	}
	offs := offsetsOf(t, "expected 0 on an empty partition", s.doHeader("POST", path, body("0"), nil))
	if *offs[0].Offset != 0 || *offs[1].Offset != 1 {
		t.Fatalf("offsets %v, want 0 and 1", offs)
	}
	offsetsOf(t, "expected 2 in the query", s.doHeader("POST", path+"?expected_offset=2", `{"records":[{"value":"z"}]}`, nil))
	for _, c := range []struct{ what, path, body string }{
		{"behind", path, body("2")},
		{"ahead", path, body("4")},
		{"far ahead", path, body("9223372036854775807")},
		{"in the query", path + "?expected_offset=0", `{"records":[{"value":"z"}]}`},
	} {
		r := s.doHeader("POST", c.path, c.body, nil)
		if r.status != http.StatusConflict {
			t.Errorf("%s: status %d, want 409; body %s", c.what, r.status, r.body)
			continue
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &top); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if keys := sortedKeys(top); !slices.Equal(keys, []string{"error", "high_watermark"}) {
			t.Errorf("%s: top-level keys %v, want [error high_watermark]", c.what, keys)
		}
		var e struct{ Code, Message string }
		var hw int64
		if json.Unmarshal(top["error"], &e) != nil || json.Unmarshal(top["high_watermark"], &hw) != nil ||
			e.Code != "offset_mismatch" || hw != 3 {
			t.Errorf("%s: body %s, want offset_mismatch with high_watermark 3", c.what, r.body)
		}
		if hws := s.highWatermarks("c", 1); hws[0] != 3 {
			t.Errorf("%s: high watermark %d after a refused conditional append, want 3", c.what, hws[0])
		}
	}
	offsetsOf(t, "expected 3 after the refusals", s.doHeader("POST", path, body("3"), nil))
}

// TestConditionalReplay: a conditional request repeated with its key
// answers its first result even though the high watermark has moved past
// expected_offset since (a retry after an unknown outcome).
func TestConditionalReplay(t *testing.T) {
	s := newServer(t)
	s.createTopic("c", 1)
	const path = "/v1/topics/c/partitions/0/records"
	const body = `{"records":[{"value":"x"}],"expected_offset":0}`
	h := keyHeader("cond")
	want := offsetsOf(t, "first", s.doHeader("POST", path, body, h))
	r := s.doHeader("POST", path, body, h)
	if got := offsetsOf(t, "retry", r); !sameOffsets(got, want) || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry answered %s (Idempotent-Replayed %q), want the first result replayed", r.body, r.header.Get("Idempotent-Replayed"))
	}
	if hws := s.highWatermarks("c", 1); hws[0] != 1 {
		t.Errorf("high watermark %d, want 1", hws[0])
	}
}
