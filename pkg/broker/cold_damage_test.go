package broker_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/partition"
)

// TestColdDamageTable damages one artifact of the cold tier in each way
// it can be (a flipped byte in its log, in its offset index, in its time
// index; truncated; deleted), with and without the cold-tier cache, and
// checks what a fetch answers before the damaged records, at them, after
// them, and after a restart: the records before and after are served, a
// fetch at damaged records answers a *partition.DamagedError (the API's
// corrupt_record) whose next offset reads, and each such answer is counted
// in the damaged-reads metric. A damaged index damages no record: the log
// is scanned instead, and the damage is counted. Never another error.
func TestColdDamageTable(t *testing.T) {
	kinds := []string{"log byte", "index byte", "time index byte", "truncated", "deleted"}
	for _, st := range coldStores {
		for _, cache := range []bool{false, true} {
			for _, kind := range kinds {
				t.Run(fmt.Sprintf("%s/%s/cache=%v", st.name, kind, cache), func(t *testing.T) {
					coldDamage(t, newColdEnvOn(t, cache, st.new(t)), kind, cache)
				})
			}
		}
	}
}

func coldDamage(t *testing.T, e *coldEnv, kind string, cache bool) {
	const topic, n = "d", 600
	if _, err := e.b.CreateTopic(e.ctx, broker.TopicSpec{Name: topic, SegmentBytes: ref(int64(8 << 10)), CacheEnabled: ref(cache)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		var recs []broker.ProduceRecord
		for j := range 10 {
			recs = append(recs, broker.ProduceRecord{Value: fmt.Appendf(nil, "v%05d-%s", i+j, strings.Repeat("x", 80)), Partition: 0})
		}
		if _, err := e.b.Produce(e.ctx, topic, recs); err != nil {
			t.Fatal(err)
		}
	}
	e.tier(topic)
	tp, _ := e.b.Topic(e.ctx, topic)
	entries, err := e.store.Segments(e.ctx, partitionKey(tp), -1, 0)
	if err != nil || len(entries) < 3 {
		t.Fatalf("catalog: %d entries, %v", len(entries), err)
	}
	victim := entries[1]
	obj, err := e.objs.Get(e.ctx, victim.Key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), obj...)
	switch kind {
	case "log byte":
		bad[victim.LogOff+victim.LogLen/2] ^= 0xff
	case "index byte":
		bad[victim.IndexOff+3] ^= 0xff
	case "time index byte":
		bad[victim.TimeOff+1] ^= 0xff
	case "truncated":
		bad = bad[:victim.LogOff+victim.LogLen/2]
	}
	if kind == "deleted" {
		err = e.objs.Delete(e.ctx, victim.Key)
	} else {
		err = e.objs.Put(e.ctx, victim.Key, strings.NewReader(string(bad)), int64(len(bad)))
	}
	if err != nil {
		t.Fatal(err)
	}
	indexOnly := strings.Contains(kind, "index")
	check := func(b *broker.Broker, when string) {
		before := e.m.DamagedReads.Load()
		// Before the damaged artifact: served whole.
		f, err := b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Offset: entries[0].Base, MaxRecords: 5, MaxBytes: 1 << 20})
		if err != nil || len(f.Records) == 0 {
			t.Fatalf("%s: fetch before the damage: %d records, %v", when, len(f.Records), err)
		}
		// Every offset of the damaged artifact: records, or damage whose
		// next offset reads.
		damaged := 0
		for off := victim.Base; off < victim.NextOffset; off++ {
			f, err := b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Offset: off, MaxRecords: 5, MaxBytes: 1 << 20})
			var de *partition.DamagedError
			switch {
			case errors.As(err, &de):
				damaged++
				if indexOnly || de.First != off || de.Next <= off || de.Next > victim.NextOffset {
					t.Fatalf("%s: fetch at %d: %v (first %d, next %d)", when, off, err, de.First, de.Next)
				}
				nf, err := b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Offset: de.Next, MaxRecords: 5, MaxBytes: 1 << 20})
				if err != nil || len(nf.Records) == 0 || nf.Records[0].Offset != de.Next {
					t.Fatalf("%s: fetch at next offset %d: %d records, %v", when, de.Next, len(nf.Records), err)
				}
			case err != nil:
				t.Fatalf("%s: fetch at %d answered %v: neither records nor damage", when, off, err)
			case len(f.Records) == 0 || f.Records[0].Offset != off || !strings.HasPrefix(string(f.Records[0].Value), fmt.Sprintf("v%05d-", off)):
				t.Fatalf("%s: fetch at %d: %d records, first %+v", when, off, len(f.Records), f.Records)
			}
		}
		if !indexOnly && damaged == 0 {
			t.Errorf("%s: no fetch in [%d, %d) answered damage", when, victim.Base, victim.NextOffset)
		}
		if counted := e.m.DamagedReads.Load() - before; counted == 0 || !indexOnly && counted < int64(damaged) {
			t.Errorf("%s: %d damaged answers, %d counted", when, damaged, counted)
		}
		// After it: the next artifact, and the hot tier.
		f, err = b.Fetch(e.ctx, broker.FetchRequest{Topic: topic, Offset: victim.NextOffset, MaxRecords: 5, MaxBytes: 1 << 20})
		if err != nil || len(f.Records) == 0 {
			t.Fatalf("%s: fetch after the damage: %d records, %v", when, len(f.Records), err)
		}
		t.Logf("%s: %d of %d offsets of the damaged artifact answered damage", when, damaged, victim.NextOffset-victim.Base)
	}
	check(e.b, "at the damage")
	b2, err := broker.New(e.ctx, e.cfg) // a restarted process
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	check(b2, "after a restart")
}
