package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

type membershipBody struct {
	MemberID    string `json:"member_id"`
	Generation  int64  `json:"generation"`
	Assignments []struct {
		Topic      string `json:"topic"`
		Partitions []int  `json:"partitions"`
	} `json:"assignments"`
}

func (m membershipBody) parts() []int {
	for _, a := range m.Assignments {
		if a.Topic == "orders" {
			return a.Partitions
		}
	}
	return nil
}

func TestGroupMembershipHTTP(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 4)
	s.produce("orders", `{"records":[{"value":"a","partition":0},{"value":"b","partition":1},{"value":"c","partition":2},{"value":"d","partition":3}]}`)

	var a, b membershipBody
	s.ok("POST", "/v1/groups/billing/members", `{"topics":["orders"],"session_timeout_ms":30000}`, http.StatusCreated, &a)
	if a.MemberID == "" || a.Generation < 1 || !slices.Equal(a.parts(), []int{0, 1, 2, 3}) {
		t.Fatalf("first join: %+v", a)
	}
	s.ok("POST", "/v1/groups/billing/members", `{"topics":["orders"]}`, http.StatusCreated, &b)
	if b.Generation <= a.Generation || len(b.parts()) != 2 {
		t.Fatalf("second join: %+v after %+v", b, a)
	}
	// Heartbeats: no body, or {}.
	hbPath := "/v1/groups/billing/members/" + a.MemberID + "/heartbeat"
	var ha membershipBody
	s.ok("POST", hbPath, nil, http.StatusOK, &ha)
	s.ok("POST", hbPath, `{}`, http.StatusOK, &ha)
	if ha.Generation != b.Generation || len(ha.parts()) != 2 || slices.ContainsFunc(ha.parts(), func(p int) bool { return slices.Contains(b.parts(), p) }) {
		t.Fatalf("heartbeat of a: %+v, b holds %v", ha, b.parts())
	}
	checkError(t, "heartbeat with an old generation", s.do("POST", hbPath, fmt.Sprintf(`{"generation":%d}`, a.Generation)), 409, "stale_generation")
	checkError(t, "heartbeat of an unknown member", s.do("POST", "/v1/groups/billing/members/m-nobody/heartbeat", nil), 404, "member_not_found")

	commit := func(member string, gen int64, p int) response {
		return s.do("PUT", "/v1/groups/billing/offsets", fmt.Sprintf(`{"offsets":[{"topic":"orders","partition":%d,"offset":1}],"member_id":%q,"generation":%d}`, p, member, gen))
	}
	checkError(t, "commit with an old generation", commit(a.MemberID, a.Generation, ha.parts()[0]), 409, "stale_generation")
	checkError(t, "commit of another member's partition", commit(a.MemberID, ha.Generation, b.parts()[0]), 409, "not_assigned")
	checkError(t, "commit without membership", s.do("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`), 409, "stale_generation")
	checkError(t, "member_id without generation", s.do("PUT", "/v1/groups/billing/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}],"member_id":"x"}`), 400, "invalid_request")
	if r := commit(a.MemberID, ha.Generation, ha.parts()[0]); r.status != http.StatusNoContent {
		t.Fatalf("fenced commit of an assigned partition: %d %s", r.status, r.body)
	}
	checkError(t, "reset while members", s.do("POST", "/v1/groups/billing/offsets/reset", `{"topic":"orders","to":"earliest"}`), 409, "stale_generation")

	var list struct {
		Groups []struct {
			Group   string `json:"group"`
			Members int    `json:"members"`
		} `json:"groups"`
	}
	s.ok("GET", "/v1/groups", nil, http.StatusOK, &list)
	if len(list.Groups) != 1 || list.Groups[0].Group != "billing" || list.Groups[0].Members != 2 {
		t.Fatalf("groups: %+v", list)
	}
	var desc struct {
		Generation int64 `json:"generation"`
		Members    []struct {
			MemberID string `json:"member_id"`
		} `json:"members"`
		OffsetTopics []string `json:"offset_topics"`
	}
	s.ok("GET", "/v1/groups/billing", nil, http.StatusOK, &desc)
	if len(desc.Members) != 2 || !slices.Equal(desc.OffsetTopics, []string{"orders"}) {
		t.Fatalf("describe: %+v", desc)
	}

	// Leaving.
	s.ok("DELETE", "/v1/groups/billing/members/"+a.MemberID, nil, http.StatusNoContent, nil)
	checkError(t, "leave again", s.do("DELETE", "/v1/groups/billing/members/"+a.MemberID, nil), 404, "member_not_found")
	s.ok("DELETE", "/v1/groups/billing/members/"+b.MemberID, nil, http.StatusNoContent, nil)

	// Join validation.
	for _, body := range []string{`{}`, `{"topics":[]}`, `{"topics":["orders"],"session_timeout_ms":999}`, `{"topics":["orders"],"session_timeout_ms":300001}`, `{"topics":["bad/name"]}`} {
		checkError(t, "join "+body, s.do("POST", "/v1/groups/billing/members", body), 400, "invalid_request")
	}
	checkError(t, "join of an unknown topic", s.do("POST", "/v1/groups/billing/members", `{"topics":["nope"]}`), 404, "topic_not_found")
}

func TestGroupLifecycleHTTP(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.createTopic("orders", 2)
	s.produce("orders", `{"records":[{"value":"a","partition":0},{"value":"b","partition":0},{"value":"c","partition":1}]}`)
	s.ok("PUT", "/v1/groups/g/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, http.StatusNoContent, nil)

	type offs struct {
		Offsets []struct {
			Partition int   `json:"partition"`
			Offset    int64 `json:"offset"`
			Lag       int64 `json:"lag"`
		} `json:"offsets"`
	}
	var got offs
	s.ok("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","to":"latest"}`, http.StatusOK, &got)
	if len(got.Offsets) != 2 || got.Offsets[0].Offset != 2 || got.Offsets[1].Offset != 1 || got.Offsets[0].Lag != 0 {
		t.Fatalf("reset to latest: %+v", got)
	}
	s.ok("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","offset":1,"partitions":[0]}`, http.StatusOK, &got)
	if len(got.Offsets) != 1 || got.Offsets[0].Offset != 1 || got.Offsets[0].Lag != 1 {
		t.Fatalf("reset to offset: %+v", got)
	}
	s.ok("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","timestamp":0}`, http.StatusOK, &got)
	if len(got.Offsets) != 2 || got.Offsets[0].Offset != 0 || got.Offsets[1].Offset != 0 {
		t.Fatalf("reset to timestamp 0: %+v", got)
	}
	checkError(t, "reset out of range", s.do("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","offset":5,"partitions":[0]}`), 416, "offset_out_of_range")
	checkError(t, "reset to nowhere", s.do("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders"}`), 400, "invalid_request")
	checkError(t, "reset to two places", s.do("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","to":"earliest","offset":0}`), 400, "invalid_request")
	checkError(t, "reset to middle", s.do("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","to":"middle"}`), 400, "invalid_request")
	checkError(t, "reset of an unknown partition", s.do("POST", "/v1/groups/g/offsets/reset", `{"topic":"orders","to":"earliest","partitions":[7]}`), 404, "partition_not_found")

	s.ok("DELETE", "/v1/groups/g", nil, http.StatusNoContent, nil)
	checkError(t, "delete again", s.do("DELETE", "/v1/groups/g", nil), 404, "group_not_found")
	checkError(t, "describe deleted", s.do("GET", "/v1/groups/g", nil), 404, "group_not_found")
	s.ok("GET", "/v1/groups/g/offsets?topic=orders", nil, http.StatusOK, &got)
	if len(got.Offsets) != 0 {
		t.Fatalf("offsets of a deleted group: %+v", got)
	}

	// A topic delete removes its offsets: created again, it has none.
	s.ok("PUT", "/v1/groups/g/offsets", `{"offsets":[{"topic":"orders","partition":0,"offset":1}]}`, http.StatusNoContent, nil)
	s.ok("DELETE", "/v1/topics/orders", nil, http.StatusNoContent, nil)
	s.createTopic("orders", 2)
	s.ok("GET", "/v1/groups/g/offsets?topic=orders", nil, http.StatusOK, &got)
	if len(got.Offsets) != 0 {
		t.Fatalf("offsets of a re-created topic: %+v", got)
	}
}

func TestTopicPatchAndTimestampType(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	type topic struct {
		Name              string `json:"name"`
		Partitions        int    `json:"partitions"`
		RetentionMs       int64  `json:"retention_ms"`
		CacheEnabled      bool   `json:"cache_enabled"`
		ReadAheadSegments int    `json:"read_ahead_segments"`
		TimestampType     string `json:"timestamp_type"`
	}
	var got topic
	s.ok("POST", "/v1/topics", `{"name":"orders","partitions":2}`, http.StatusCreated, &got)
	if got.TimestampType != "append" {
		t.Fatalf("default timestamp_type %q", got.TimestampType)
	}
	s.ok("POST", "/v1/topics", `{"name":"events","timestamp_type":"create"}`, http.StatusCreated, &got)
	if got.TimestampType != "create" {
		t.Fatalf("timestamp_type %q, want create", got.TimestampType)
	}
	checkError(t, "timestamp_type log", s.do("POST", "/v1/topics", `{"name":"x","timestamp_type":"log"}`), 400, "invalid_request")

	s.ok("PATCH", "/v1/topics/orders", `{"partitions":5,"retention_ms":1000,"cache_enabled":false,"read_ahead_segments":3}`, http.StatusOK, &got)
	if got.Partitions != 5 || got.RetentionMs != 1000 || got.CacheEnabled || got.ReadAheadSegments != 3 || got.TimestampType != "append" {
		t.Fatalf("patched: %+v", got)
	}
	s.ok("GET", "/v1/topics/orders", nil, http.StatusOK, &got)
	if got.Partitions != 5 {
		t.Fatalf("after patch: %+v", got)
	}
	// The new partitions are there at once in this process.
	s.produce("orders", `{"records":[{"value":"new","partition":4}]}`)
	if f := s.fetch("/v1/topics/orders/partitions/4/records?offset=0"); len(f.Records) != 1 {
		t.Fatalf("fetch of a new partition: %+v", f)
	}
	for _, c := range []struct{ body, field string }{
		{`{"partitions":3}`, "partitions"},
		{`{"retention_ms":0}`, "retention_ms"},
		{`{"cleanup_policy":"delete"}`, "cleanup_policy"},
		{`{"timestamp_type":"create"}`, "timestamp_type"},
		{`{"name":"other"}`, "name"},
	} {
		msg := checkError(t, "patch "+c.body, s.do("PATCH", "/v1/topics/orders", c.body), 400, "invalid_request")
		if !strings.Contains(msg, c.field) {
			t.Errorf("patch %s: message %q does not name %s", c.body, msg, c.field)
		}
	}
	checkError(t, "patch of an unknown topic", s.do("PATCH", "/v1/topics/nope", `{"retention_ms":1000}`), 404, "topic_not_found")
}
