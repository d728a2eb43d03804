package broker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
)

// answerer fetches through FetchAnswer with JSON of the result as the
// encoding, counting the encodings it was asked for.
type answerer struct {
	t       *testing.T
	e       *coldEnv
	topic   string
	encoded int
}

// ask fetches 10 records from off and returns the answer decoded, the
// answer's bytes, and whether they came without an encoding.
func (a *answerer) ask(off int64) (broker.FetchResult, []byte, bool, error) {
	a.t.Helper()
	before := a.encoded
	body, _, err := a.e.b.FetchAnswer(a.e.ctx, broker.FetchRequest{Topic: a.topic, Offset: off, MaxRecords: 10}, "test-json", nil,
		func(dst []byte, res *broker.FetchResult) ([]byte, error) {
			a.encoded++
			out, err := json.Marshal(res)
			return append(dst, out...), err
		})
	if err != nil {
		return broker.FetchResult{}, nil, false, err
	}
	var res broker.FetchResult
	if err := json.Unmarshal(body, &res); err != nil {
		a.t.Fatalf("answer does not decode: %v", err)
	}
	return res, body, a.encoded == before, nil
}

func (a *answerer) produce(n int, tag string) {
	a.t.Helper()
	recs := make([]broker.ProduceRecord, n)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: fmt.Appendf(nil, "%s-%03d-%0200d", tag, i, 0), Partition: 0}
	}
	if _, err := a.e.b.ProducePartition(a.e.ctx, a.topic, 0, recs); err != nil {
		a.t.Fatal(err)
	}
}

// TestFetchAnswerKeptWhileBoundsHold: the second ask of a fetch keeps its
// answer and the third is answered with it, byte for byte, without an
// encoding; a commit (the high watermark moves), retention (the log start
// moves past the offset) and a new incarnation of the topic each stop the
// kept answer from being used.
func TestFetchAnswerKeptWhileBoundsHold(t *testing.T) {
	e := newColdEnv(t, true)
	a := &answerer{t: t, e: e, topic: "fan"}
	spec := broker.TopicSpec{Name: a.topic, SegmentBytes: ref(int64(4 << 10)), RetentionMs: ref(int64(60_000))}
	if _, err := e.b.CreateTopic(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	a.produce(30, "one")

	var bodies [][]byte
	for i := range 3 {
		res, body, kept, err := a.ask(0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 10 || !strings.HasPrefix(string(res.Records[0].Value), "one-000-") || res.HighWatermark != 30 {
			t.Fatalf("ask %d: %d records, hw %d", i, len(res.Records), res.HighWatermark)
		}
		if kept != (i == 2) {
			t.Fatalf("ask %d answered without an encoding: %v, want %v", i, kept, i == 2)
		}
		bodies = append(bodies, body)
	}
	if string(bodies[2]) != string(bodies[1]) || string(bodies[1]) != string(bodies[0]) {
		t.Fatalf("the kept answer differs:\n%s\n%s", bodies[1], bodies[2])
	}

	// A commit: the answer kept says hw 30, the partition's is 60.
	e.clock.advance(2 * time.Minute)
	a.produce(30, "two") // newer: retention keeps these
	res, _, kept, err := a.ask(0)
	if err != nil || kept || res.HighWatermark != 60 {
		t.Fatalf("after a commit: kept %v, hw %d, %v; want a new answer with hw 60", kept, res.HighWatermark, err)
	}
	for range 2 {
		if _, _, _, err := a.ask(0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, kept, _ := a.ask(0); !kept {
		t.Fatal("asked again with the same bounds: not answered with the kept answer")
	}

	// Retention: offset 0 goes, the high watermark stays; the kept
	// answer must not bring offset 0 back.
	e.tier(a.topic)
	e.clock.advance(2 * time.Minute)
	e.tier(a.topic)
	o, err := e.b.Offsets(e.ctx, a.topic, 0)
	if err != nil || o.LogStartOffset == 0 || o.HighWatermark != 60 {
		t.Fatalf("retention did not move the log start alone: %+v, %v", o, err)
	}
	var oor *broker.OffsetOutOfRangeError
	if _, _, _, err := a.ask(0); !errors.As(err, &oor) {
		t.Fatalf("fetch below the log start %d after retention: %v, want out of range", o.LogStartOffset, err)
	}

	// A new incarnation with other records at the same offsets.
	if err := e.b.DeleteTopic(e.ctx, a.topic); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.CreateTopic(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	a.produce(30, "new")
	for i := range 3 {
		res, _, kept, err := a.ask(0)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(res.Records[0].Value), "new-000-") || kept != (i == 2) {
			t.Fatalf("new incarnation, ask %d: first value %q, kept %v", i, res.Records[0].Value, kept)
		}
	}
}

// TestFetchAnswerReadBuffers: FetchAnswer reads records into buffers that
// later fetches reuse; concurrent fetches never see each other's, and
// every record an encoder is handed is the record at its offset until the
// encoder returns. In the hot tier, and in the cold tier (below the last
// segment) of each store, read whole from the cache or in place.
func TestFetchAnswerReadBuffers(t *testing.T) {
	t.Run("hot", func(t *testing.T) { fetchAnswerReadBuffers(t, newColdEnv(t, true), false) })
	for _, st := range coldStores {
		t.Run("tiered/"+st.name, func(t *testing.T) { fetchAnswerReadBuffers(t, newColdEnvOn(t, true, st.new(t)), true) })
	}
}

func fetchAnswerReadBuffers(t *testing.T, e *coldEnv, tiered bool) {
	const topic, n = "bufs", 400
	spec := broker.TopicSpec{Name: topic, Partitions: ref(1)}
	if tiered {
		spec.SegmentBytes = ref(int64(8 << 10))
	}
	if _, err := e.b.CreateTopic(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	value := func(off int64) string { return fmt.Sprintf("v%05d-%0*d", off, int(off%300), off) }
	for i := 0; i < n; i += 50 {
		recs := make([]broker.ProduceRecord, 50)
		for j := range recs {
			recs[j] = broker.ProduceRecord{Value: []byte(value(int64(i + j)))}
		}
		if _, err := e.b.ProducePartition(e.ctx, topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	if tiered {
		if hotStart := e.tier(topic); hotStart < n/2 {
			t.Fatalf("hot start %d: want most records tiered", hotStart)
		}
	}
	check := func(res *broker.FetchResult, from int64) error {
		for i, r := range res.Records {
			if r.Offset != from+int64(i) || string(r.Value) != value(r.Offset) {
				return fmt.Errorf("fetch from %d: record %d is offset %d %.12q, want %.12q", from, i, r.Offset, r.Value, value(from+int64(i)))
			}
		}
		return nil
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 150 {
				from := int64((g*151 + i*37) % n)
				req := broker.FetchRequest{Topic: topic, Offset: from, MaxRecords: 1 + (i*7+g)%60, MaxBytes: 1 + (i*97)%20000}
				var inside error
				body, _, err := e.b.FetchAnswer(e.ctx, req, fmt.Sprint("json-", g%2), nil, func(dst []byte, res *broker.FetchResult) ([]byte, error) {
					runtime.Gosched() // let other fetches read meanwhile
					inside = check(res, from)
					out, err := json.Marshal(res)
					return append(dst, out...), err
				})
				if err == nil {
					err = inside
				}
				if err == nil {
					var res broker.FetchResult
					if err = json.Unmarshal(body, &res); err == nil {
						err = check(&res, from)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
