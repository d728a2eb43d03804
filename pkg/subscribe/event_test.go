package subscribe

import (
	"bytes"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
)

// The event decodes into aws-lambda-go's events.KafkaEvent unchanged:
// base64 key and value (absent for none and for a tombstone), headers as
// signed bytes, the timestamp type, one partition, offset order.
func TestEventDecodesAsKafkaEvent(t *testing.T) {
	recs := []broker.Record{
		{Offset: 41, Timestamp: 1764500000000, Key: []byte("k1"), Value: []byte("hello"),
			Headers: []broker.Header{{Key: "trace-id", Value: []byte("abc")}, {Key: "bin", Value: []byte{0x80, 0xff, 0x7f, 0}}}},
		{Offset: 42, Timestamp: 1764500000001, Key: nil, Value: []byte{0, 1, 2}},
		{Offset: 43, Timestamp: 1764500000002, Key: []byte("gone"), Value: nil},
	}
	enc := newEncoder("arn:aws:tierlog:orders \"quoted\"", "orders", 7)
	var ps []*pending
	for i := range recs {
		ps = append(ps, &pending{rec: recs[i], json: recordJSON(nil, "orders", 7, timestampCreate, &recs[i])})
	}
	body := enc.event(ps)
	ev, got := decodeEvent(t, body)
	if ev.EventSource != "tierlog" || ev.EventSourceARN != "arn:aws:tierlog:orders \"quoted\"" || ev.BootstrapServers != "" {
		t.Fatalf("envelope = %+v", ev)
	}
	if _, ok := ev.Records["orders-7"]; !ok {
		t.Fatalf("records key: %v", ev.Records)
	}
	if len(got) != 3 {
		t.Fatalf("%d records", len(got))
	}
	r := got[0]
	if r.Topic != "orders" || r.Partition != 7 || r.Offset != 41 || r.TimestampType != "CREATE_TIME" ||
		!r.Timestamp.Time.Equal(time.UnixMilli(1764500000000)) || r.Key != "azE=" || r.Value != "aGVsbG8=" {
		t.Fatalf("record 0 = %+v", r)
	}
	if len(r.Headers) != 2 || !bytes.Equal(r.Headers[0]["trace-id"], []byte("abc")) || !bytes.Equal(r.Headers[1]["bin"], []byte{0x80, 0xff, 0x7f, 0}) {
		t.Fatalf("headers = %v", r.Headers)
	}
	if !bytes.Contains(body, []byte(`{"bin":[-128,-1,127,0]}`)) {
		t.Fatalf("header values are not signed bytes: %s", body)
	}
	if got[1].Key != "" || bytes.Contains(body, []byte(`"offset":42,"timestamp":1764500000001,"timestampType":"CREATE_TIME","key"`)) {
		t.Fatalf("a record without key carries one: %s", body)
	}
	if got[2].Value != "" || bytes.Contains(body, []byte(`"Z29uZQ==","value"`)) {
		t.Fatalf("a tombstone carries a value: %s", body)
	}
	for i, want := range []int64{41, 42, 43} {
		if got[i].Offset != want {
			t.Fatalf("offset order: %d at %d", got[i].Offset, i)
		}
	}
}

// max_batch_bytes counts the whole event, envelope included: every batch
// made from a run of records is at most the limit, and none is cut short
// of what would still fit.
func TestBatchBytesIncludeEnvelope(t *testing.T) {
	var recs []broker.Record
	for i := range 50 {
		recs = append(recs, broker.Record{Offset: int64(i), Timestamp: 1, Key: []byte("key"), Value: bytes.Repeat([]byte{'v'}, 100+i*13)})
	}
	for _, limit := range []int{minBatchBytes, 2000, 4096, 10000} {
		d := &deliverer{sub: Subscription{Topic: "orders", MaxBatchBytes: limit, ParallelizationFactor: 1}, tsType: timestampLogAppend}
		d.enc = newEncoder("orders", "orders", 0)
		for from := 0; from < len(recs); {
			b := d.makeBatch(recs[from:])
			ev := d.enc.event(b.recs)
			if len(ev) > limit && len(b.recs) > 1 {
				t.Fatalf("limit %d: event of %d records is %d bytes", limit, len(b.recs), len(ev))
			}
			if next := from + len(b.recs); next < len(recs) {
				r := recs[next]
				more := append(append([]*pending(nil), b.recs...), &pending{json: recordJSON(nil, "orders", 0, timestampLogAppend, &r)})
				if len(d.enc.event(more)) <= limit {
					t.Fatalf("limit %d: batch stopped at %d records though the next fits", limit, len(b.recs))
				}
			}
			decodeEvent(t, ev)
			from += len(b.recs)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		body    string
		failed  int64
		wantErr bool
	}{
		{"", -1, false},
		{"null", -1, false},
		{`{"ok":true}`, -1, false},
		{`not json`, -1, false},
		{`{"batchItemFailures":[]}`, -1, false},
		{`{"batchItemFailures":[{"itemIdentifier":"15"},{"itemIdentifier":"12"}]}`, 12, false},
		{`{"batchItemFailures":[{"itemIdentifier":13}]}`, 13, false},
		{`{"batchItemFailures":[{"itemIdentifier":"99"}]}`, 0, true},
		{`{"batchItemFailures":[{"itemIdentifier":"x"}]}`, 0, true},
		{`{"batchItemFailures":[{}]}`, 0, true},
	} {
		a, err := parseAnswer([]byte(tc.body), 10, 20)
		if (err != nil) != tc.wantErr || (!tc.wantErr && a.failed != tc.failed) {
			t.Errorf("parseAnswer(%s) = %+v, %v; want failed %d, error %v", tc.body, a, err, tc.failed, tc.wantErr)
		}
	}
}

func TestValidate(t *testing.T) {
	http := &Target{Type: TargetHTTP, URL: "http://127.0.0.1:1/x"}
	good := Spec{Name: "s", Topic: "orders", Target: http}
	s, err := Validate(good)
	if err != nil {
		t.Fatal(err)
	}
	if s.BatchSize != 100 || s.MaxBatchBytes != 5242880 || s.ParallelizationFactor != 1 || s.MaxRetryAttempts != -1 ||
		s.MaxRecordAgeMs != -1 || !s.Enabled || s.Start.Position != StartLatest {
		t.Fatalf("defaults = %+v", s)
	}
	i := func(v int) *int { return &v }
	i64 := func(v int64) *int64 { return &v }
	bad := []func(*Spec){
		func(s *Spec) { s.Name = "a/b" },
		func(s *Spec) { s.Topic = "" },
		func(s *Spec) { s.Target = nil },
		func(s *Spec) { s.Target = &Target{Type: "sqs"} },
		func(s *Spec) { s.Target = &Target{Type: TargetHTTP, URL: "ftp://x"} },
		func(s *Spec) { s.Target = &Target{Type: TargetLambda} },
		func(s *Spec) { s.BatchSize = i(0) },
		func(s *Spec) { s.BatchSize = i(10001) },
		func(s *Spec) { s.BatchWindowMs = i64(300001) },
		func(s *Spec) { s.MaxBatchBytes = i(6000001) },
		func(s *Spec) { s.ParallelizationFactor = i(11) },
		func(s *Spec) { s.MaxRetryAttempts = i(-2) },
		func(s *Spec) { s.MaxRetryAttempts = i(10001) },
		func(s *Spec) { s.MaxRecordAgeMs = i64(59999) },
		func(s *Spec) { s.MaxRecordAgeMs = i64(604800001) },
		func(s *Spec) { s.OnFailure = &OnFailure{Topic: "orders"} },
	}
	for n, f := range bad {
		sp := good
		f(&sp)
		if _, err := Validate(sp); err == nil {
			t.Errorf("case %d: %+v accepted", n, sp)
		}
	}
	for _, ok := range []func(*Spec){
		func(s *Spec) { s.MaxRetryAttempts = i(0) },
		func(s *Spec) { s.MaxRecordAgeMs = i64(60000) },
		func(s *Spec) { s.BatchSize = i(10000) },
		func(s *Spec) {
			s.Target = &Target{Type: TargetLambda, Function: "arn:aws:lambda:eu-west-1:123456789012:function:billing"}
		},
	} {
		sp := good
		ok(&sp)
		if _, err := Validate(sp); err != nil {
			t.Errorf("%+v refused: %v", sp, err)
		}
	}
}
