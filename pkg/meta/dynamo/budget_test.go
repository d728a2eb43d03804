package dynamo

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tierlog/tierlog/pkg/meta"
)

var t0 = time.UnixMilli(1_700_000_000_000)

const ttl = 10 * time.Second

// emulator is a DynamoDB endpoint the package tests run against.
type emulator struct {
	name string
	// exactArithmetic: numbers above 2^53 survive UpdateItem. minidyn
	// v0.8.2 evaluates update expressions in float64 and rounds every
	// number of an updated item; dynalite (big.js) and DynamoDB do not.
	exactArithmetic bool
	// conditionItem: a ConditionalCheckFailed carries the old item when
	// asked (ReturnValuesOnConditionCheckFailure ALL_OLD). dynalite
	// ignores the parameter.
	conditionItem bool
	endpoint      func(t *testing.T) string
}

var emulators = []emulator{
	{name: "minidyn", exactArithmetic: false, conditionItem: true, endpoint: func(t *testing.T) string { return startMinidyn(t).URL }},
	{name: "dynalite", exactArithmetic: true, conditionItem: false, endpoint: dynaliteEndpoint},
}

// eachEmulator runs fn as one subtest per emulator, on a fresh table.
func eachEmulator(t *testing.T, fn func(t *testing.T, em emulator, s *Store)) {
	for _, em := range emulators {
		t.Run(em.name, func(t *testing.T) {
			fn(t, em, newTableStore(t, testClient(em.endpoint(t))))
		})
	}
}

// delta is b - a, field by field.
func delta(a, b Stats) Stats {
	return Stats{
		GetItem: b.GetItem - a.GetItem, UpdateItem: b.UpdateItem - a.UpdateItem, PutItem: b.PutItem - a.PutItem,
		Query: b.Query - a.Query, DeleteItem: b.DeleteItem - a.DeleteItem,
		ConditionalCheckFailed: b.ConditionalCheckFailed - a.ConditionalCheckFailed,
		LeaseConflicts:         b.LeaseConflicts - a.LeaseConflicts,
		Retries:                b.Retries - a.Retries, Throttled: b.Throttled - a.Throttled,
	}
}

// measure returns the requests fn sent.
func measure(s *Store, fn func()) Stats {
	before := s.Counters().Snapshot()
	fn()
	return delta(before, s.Counters().Snapshot())
}

// The produce path's metadata budget (docs/design.md "The write path"):
// Acquire plus Commit is exactly two write requests, both UpdateItem, and
// no reads.
func TestProduceBudget(t *testing.T) {
	eachEmulator(t, func(t *testing.T, _ emulator, s *Store) {
		ctx := t.Context()
		k := meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 3}
		for i, release := range []bool{true, false, true} { // first write, after a release, after a takeover
			now := t0.Add(time.Duration(i) * time.Hour)
			got := measure(s, func() {
				a, err := s.Acquire(ctx, k, "A", now, ttl)
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				a.NextOffset += 10
				a.LastTS = now.UnixMilli()
				a.Active = &meta.SegmentInfo{Base: 0, Epoch: a.Epoch, Size: 100, NextOffset: a.NextOffset, FirstTS: 1, LastTS: a.LastTS}
				if err := s.Commit(ctx, a.Partition, release, now, ttl); err != nil {
					t.Fatalf("Commit: %v", err)
				}
			})
			if want := (Stats{UpdateItem: 2}); got != want {
				t.Fatalf("round %d: Acquire+Commit sent %+v, want %+v", i, got, want)
			}
		}
		// The reads are one request each too.
		if got := measure(s, func() { _, _ = s.Partition(ctx, k) }); got != (Stats{GetItem: 1}) {
			t.Fatalf("Partition sent %+v", got)
		}
		for i := range int64(5) {
			if err := s.PutSegment(ctx, k, meta.CatalogEntry{Base: i * 10, NextOffset: i*10 + 10, Key: fmt.Sprint(i)}); err != nil {
				t.Fatalf("PutSegment: %v", err)
			}
		}
		var segs []meta.CatalogEntry
		if got := measure(s, func() { segs, _ = s.Segments(ctx, k, 15, 2) }); got != (Stats{Query: 1}) || len(segs) != 2 || segs[0].Base != 10 {
			t.Fatalf("Segments(15, 2) sent %+v and returned %+v", got, segs)
		}
	})
}

// Refused conditions: lease conflicts are counted, and a refused advance
// costs one extra GetItem only where the emulator does not return the old
// item with the failure.
func TestConditionCounters(t *testing.T) {
	eachEmulator(t, func(t *testing.T, em emulator, s *Store) {
		ctx := t.Context()
		k := meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 0}
		a, err := s.Acquire(ctx, k, "A", t0, ttl)
		if err != nil {
			t.Fatal(err)
		}
		got := measure(s, func() {
			if _, err := s.Acquire(ctx, k, "B", t0, ttl); err == nil {
				t.Fatal("B acquired a live lease")
			}
			stale := a.Partition
			stale.Epoch++
			if err := s.Commit(ctx, stale, false, t0, ttl); err == nil {
				t.Fatal("commit with a wrong epoch landed")
			}
		})
		// Without the old item in the refusal, Acquire reads it: held or
		// fenced?
		want := Stats{UpdateItem: 2, ConditionalCheckFailed: 2, LeaseConflicts: 2}
		if !em.conditionItem {
			want.GetItem = 1
		}
		if got != want {
			t.Fatalf("refused Acquire+Commit: %+v, want %+v", got, want)
		}
		if err := s.AdvanceColdEnd(ctx, k, 10); err != nil {
			t.Fatal(err)
		}
		got = measure(s, func() {
			if err := s.AdvanceColdEnd(ctx, k, 5); err != nil {
				t.Fatalf("AdvanceColdEnd backwards: %v", err)
			}
		})
		want = Stats{UpdateItem: 1, ConditionalCheckFailed: 1}
		if !em.conditionItem {
			want.GetItem = 1
		}
		if got != want {
			t.Fatalf("refused advance: %+v, want %+v", got, want)
		}
	})
}

// Numbers round-trip exactly: int64 and uint64 extremes where the emulator
// computes exactly, and everything below 2^53 (every realistic offset,
// timestamp and epoch) everywhere.
func TestNumbersRoundTrip(t *testing.T) {
	eachEmulator(t, func(t *testing.T, em emulator, s *Store) {
		ctx := t.Context()
		maxI, minI, maxU := int64(math.MaxInt64), int64(math.MinInt64), uint64(math.MaxUint64)
		epoch := maxU - 5
		if !em.exactArithmetic {
			maxI, minI, maxU = 1<<53-1, -(1<<53 - 1), 1<<53-1
			epoch = maxU - 5
		}
		k := meta.PartitionKey{Topic: "big", TopicID: "id", Partition: 1}
		// Plant an item whose epoch is near the top, as if acquired that often.
		item := stateKey(k)
		item[attrEpoch] = num(epoch)
		item[attrNextOffset] = num(maxI - 1)
		item[attrColdEnd] = num(maxI - 2)
		if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: item}); err != nil {
			t.Fatal(err)
		}
		a, err := s.Acquire(ctx, k, "A", t0, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if a.Epoch != epoch+1 || a.NextOffset != maxI-1 || a.ColdEnd != maxI-2 || a.TakenOver || a.Owner != "A" {
			t.Fatalf("Acquire: %+v", a.Partition)
		}
		p := a.Partition
		p.NextOffset, p.LastTS = maxI, minI
		p.Active = &meta.SegmentInfo{Base: maxI, Epoch: maxU, Size: minI, NextOffset: maxI - 1, FirstTS: minI + 1, LastTS: -1, CreatedMs: maxI}
		p.Sealed = []meta.SegmentInfo{{Base: minI, Epoch: maxU - 1, Size: maxI, NextOffset: 0, FirstTS: -1, LastTS: minI, CreatedMs: 1}}
		if err := s.Commit(ctx, p, false, t0, ttl); err != nil {
			t.Fatal(err)
		}
		got, err := s.Partition(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		want := p
		want.LeaseUntil = t0.Add(ttl).UnixMilli()
		if got.Epoch != want.Epoch || got.NextOffset != want.NextOffset || got.LastTS != want.LastTS ||
			got.Active == nil || *got.Active != *want.Active || len(got.Sealed) != 1 || got.Sealed[0] != want.Sealed[0] {
			t.Fatalf("round trip:\n got  %+v %+v\n want %+v %+v", got, got.Active, want, want.Active)
		}
		// Catalog entries are written with PutItem, no expression: exact on
		// every emulator.
		maxI, minI, maxU = math.MaxInt64, math.MinInt64, math.MaxUint64
		e := meta.CatalogEntry{Base: maxI - 10, NextOffset: maxI, Epoch: maxU, Key: "k", Size: maxI, FirstTS: minI, LastTS: maxI,
			LogCRC: math.MaxUint32, IndexCRC: 1 << 31, TimeCRC: 0, LogLen: maxI, CreatedMs: minI}
		if err := s.PutSegment(ctx, k, e); err != nil {
			t.Fatal(err)
		}
		segs, err := s.Segments(ctx, k, maxI-1, 0)
		if err != nil || len(segs) != 1 || segs[0] != e {
			t.Fatalf("Segments: %v %+v, want %+v", err, segs, e)
		}
	})
}

// Keys escape their components: tuples that would join to the same string
// name different items.
func TestKeyEscaping(t *testing.T) {
	pairs := [][2]meta.PartitionKey{
		{{Topic: "a#b", TopicID: "c", Partition: 1}, {Topic: "a", TopicID: "b#c", Partition: 1}},
		{{Topic: "a%23b", TopicID: "c"}, {Topic: "a#b", TopicID: "c"}},
	}
	for _, p := range pairs {
		if partKey(p[0]) == partKey(p[1]) || catalogPK(p[0]) == catalogPK(p[1]) {
			t.Fatalf("%v and %v share key %q", p[0], p[1], partKey(p[0]))
		}
	}
	if groupPK("g#x", "t") == groupPK("g", "x#t") {
		t.Fatal("group keys collide")
	}
	if partKey(meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 7}) != "p#orders#id-1#7" {
		t.Fatal("plain names must read as themselves")
	}
	srv := startMinidyn(t)
	s := newTableStore(t, testClient(srv.URL))
	ctx := t.Context()
	if _, err := s.Acquire(ctx, pairs[0][0], "A", t0, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, pairs[0][1], "B", t0, ttl); err != nil {
		t.Fatalf("Acquire of a distinct key: %v", err)
	}
}

// CreateTable is idempotent and NewClientFromEnv honours the endpoint
// variables.
func TestCreateTableAndEnvClient(t *testing.T) {
	srv := startMinidyn(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := t.Context()
	client, err := NewClientFromEnv(ctx, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueTable("env")
	for range 2 {
		if err := CreateTable(ctx, client, name); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
	}
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Table.KeySchema) != 2 || *out.Table.KeySchema[0].AttributeName != attrPK || out.Table.KeySchema[1].KeyType != types.KeyTypeRange {
		t.Fatalf("key schema %+v", out.Table.KeySchema)
	}
	s := New(client, name)
	if err := s.CreateTopic(ctx, meta.TopicConfig{Name: "t", ID: "1", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if ts, err := s.Topics(ctx); err != nil || len(ts) != 1 {
		t.Fatalf("Topics: %v %+v", err, ts)
	}
}
