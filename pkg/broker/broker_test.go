package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
)

func ptr[T any](v T) *T { return &v }

func newBroker(t *testing.T, store meta.Store, dir string) *Broker {
	t.Helper()
	b, err := New(context.Background(), Config{DataDir: dir, Meta: store, IndexIntervalBytes: 128})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProduceFetchRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "orders", Partitions: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic(ctx, TopicSpec{Name: "orders"}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v", err)
	}
	recs := []ProduceRecord{
		{Key: []byte("21"), Value: []byte("a"), Partition: -1},
		{Key: nil, Value: []byte("b"), Partition: 2},
		{Key: []byte{}, Value: nil, Partition: 2},
	}
	res, err := b.Produce(ctx, "orders", recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := KeyPartition([]byte("21"), 3); res[0].Partition != want {
		t.Errorf("keyed record went to %d, want %d", res[0].Partition, want)
	}
	if res[1].Partition != 2 || res[2].Partition != 2 || res[2].Offset != res[1].Offset+1 {
		t.Errorf("explicit partition results: %+v", res[1:])
	}
	f, err := b.Fetch(ctx, FetchRequest{Topic: "orders", Partition: 2, Offset: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Records) != 2 || f.HighWatermark != 2 || f.NextOffset != 2 {
		t.Fatalf("fetch: %+v", f)
	}
	if f.Records[0].Key != nil || string(f.Records[0].Value) != "b" {
		t.Errorf("record 0: %+v", f.Records[0])
	}
	if f.Records[1].Key == nil || len(f.Records[1].Key) != 0 || f.Records[1].Value != nil {
		t.Errorf("record 1 should have an empty key and a null value: %+v", f.Records[1])
	}
	if _, err := b.Fetch(ctx, FetchRequest{Topic: "orders", Partition: 2, Offset: 3}); !isOutOfRange(err) {
		t.Errorf("fetch past hw: %v", err)
	}
	if _, err := b.Fetch(ctx, FetchRequest{Topic: "orders", Partition: 3, Offset: 0}); !errors.Is(err, ErrPartitionNotFound) {
		t.Errorf("fetch partition 3: %v", err)
	}
	if _, err := b.Fetch(ctx, FetchRequest{Topic: "nope", Partition: 0, Offset: 0}); !errors.Is(err, ErrTopicNotFound) {
		t.Errorf("fetch unknown topic: %v", err)
	}
}

func isOutOfRange(err error) bool {
	var e *OffsetOutOfRangeError
	return errors.As(err, &e)
}

func TestRoundRobinWithoutKey(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	b.CreateTopic(ctx, TopicSpec{Name: "rr", Partitions: ptr(3)})
	var recs []ProduceRecord
	for i := 0; i < 9; i++ {
		recs = append(recs, ProduceRecord{Value: []byte{byte(i)}, Partition: -1})
	}
	res, err := b.Produce(ctx, "rr", recs)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, r := range res {
		count[r.Partition]++
	}
	for p := 0; p < 3; p++ {
		if count[p] != 3 {
			t.Errorf("partition %d got %d records, want 3: %v", p, count[p], count)
		}
	}
}

// Concurrent producers to one partition: offsets dense, each batch
// contiguous, every acknowledged record readable with its bytes.
func TestConcurrentProduceDense(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	b.CreateTopic(ctx, TopicSpec{Name: "c", SegmentBytes: ptr(int64(8 << 10))})
	var mu sync.Mutex
	acked := map[int64][]byte{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				var recs []ProduceRecord
				for j := 0; j < 5; j++ {
					recs = append(recs, ProduceRecord{Value: []byte(fmt.Sprintf("w%d-b%d-r%d", w, i, j)), Partition: 0})
				}
				res, err := b.ProducePartition(ctx, "c", 0, recs)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for j, r := range res {
					if j > 0 && r.Offset != res[j-1].Offset+1 {
						t.Errorf("batch not contiguous: %+v", res)
					}
					if _, dup := acked[r.Offset]; dup {
						t.Errorf("offset %d acknowledged twice", r.Offset)
					}
					acked[r.Offset] = recs[j].Value
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	checkAcked(t, b, "c", 0, acked)
}

func checkAcked(t *testing.T, b *Broker, topic string, p int, acked map[int64][]byte) {
	t.Helper()
	ctx := context.Background()
	off := int64(0)
	var lastTS int64
	for {
		f, err := b.Fetch(ctx, FetchRequest{Topic: topic, Partition: p, Offset: off, MaxRecords: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Records {
			if r.Offset != off {
				t.Fatalf("offset %d where %d expected", r.Offset, off)
			}
			if r.Timestamp < lastTS {
				t.Fatalf("timestamp went back at %d", r.Offset)
			}
			lastTS = r.Timestamp
			if v, ok := acked[r.Offset]; ok && !bytes.Equal(v, r.Value) {
				t.Fatalf("offset %d: %q, acknowledged %q", r.Offset, r.Value, v)
			}
			off++
		}
		if off >= f.HighWatermark {
			break
		}
	}
	for o := range acked {
		if o >= off {
			t.Fatalf("acknowledged offset %d missing (hw %d)", o, off)
		}
	}
}

// A restart continues where the last commit left off, whether the previous
// process released its leases (Close) or not (a crash: takeover).
func TestRestartContinues(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			ctx := context.Background()
			store, dir := mem.New(), t.TempDir()
			acked := map[int64][]byte{}
			for round := 0; round < 4; round++ {
				b := newBroker(t, store, dir)
				if round == 0 {
					b.CreateTopic(ctx, TopicSpec{Name: "r", SegmentBytes: ptr(int64(4096))})
				}
				for i := 0; i < 20; i++ {
					v := []byte(fmt.Sprintf("round%d-%d", round, i))
					res, err := b.ProducePartition(ctx, "r", 0, []ProduceRecord{{Value: v}})
					if err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
					acked[res[0].Offset] = v
				}
				if clean {
					b.Close()
				}
			}
			b := newBroker(t, store, dir)
			defer b.Close()
			checkAcked(t, b, "r", 0, acked)
			if o, _ := b.Offsets(ctx, "r", 0); o.HighWatermark != 80 {
				t.Errorf("hw %d, want 80", o.HighWatermark)
			}
		})
	}
}

func TestWaitForData(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	b.CreateTopic(ctx, TopicSpec{Name: "w"})
	type fetched struct {
		f   FetchResult
		err error
	}
	done := make(chan fetched, 1)
	start := time.Now()
	go func() {
		f, err := b.Fetch(ctx, FetchRequest{Topic: "w", Offset: 0, Wait: 5 * time.Second})
		done <- fetched{f, err}
	}()
	waitForWaiters(t, 1)
	if _, err := b.ProducePartition(ctx, "w", 0, []ProduceRecord{{Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.f.Records) != 1 {
		t.Fatalf("%v %+v", r.err, r.f)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("waited %v", d)
	}
}

func TestOffsetForTime(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b, _ := New(ctx, Config{DataDir: t.TempDir(), Meta: mem.New(), Now: clock, IndexIntervalBytes: 64})
	defer b.Close()
	b.CreateTopic(ctx, TopicSpec{Name: "t", SegmentBytes: ptr(int64(4096))})
	for i := 0; i < 100; i++ {
		mu.Lock()
		now = time.UnixMilli(1_000_000 + int64(i)*10)
		mu.Unlock()
		b.ProducePartition(ctx, "t", 0, []ProduceRecord{{Value: bytes.Repeat([]byte("v"), 100)}})
	}
	for _, c := range []struct {
		ts     int64
		off    int64
		found  bool
		wantTS int64
	}{
		{0, 0, true, 1_000_000},
		{1_000_000, 0, true, 1_000_000},
		{1_000_001, 1, true, 1_000_010},
		{1_000_500, 50, true, 1_000_500},
		{1_000_990, 99, true, 1_000_990},
		{1_000_991, 100, false, 0},
	} {
		got, err := b.OffsetForTime(ctx, "t", 0, c.ts)
		if err != nil {
			t.Fatal(err)
		}
		if got.Offset != c.off || got.Found != c.found || (c.found && got.Timestamp != c.wantTS) {
			t.Errorf("ts %d: got %+v, want offset %d found %v ts %d", c.ts, got, c.off, c.found, c.wantTS)
		}
	}
}

func TestDeleteAndRecreate(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	b.CreateTopic(ctx, TopicSpec{Name: "d"})
	b.ProducePartition(ctx, "d", 0, []ProduceRecord{{Value: []byte("old")}})
	if err := b.DeleteTopic(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTopic(ctx, "d"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	b.CreateTopic(ctx, TopicSpec{Name: "d"})
	o, err := b.Offsets(ctx, "d", 0)
	if err != nil || o.HighWatermark != 0 {
		t.Fatalf("recreated topic: %+v %v", o, err)
	}
}

func TestGroupOffsets(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, mem.New(), t.TempDir())
	defer b.Close()
	b.CreateTopic(ctx, TopicSpec{Name: "g", Partitions: ptr(2)})
	b.ProducePartition(ctx, "g", 1, []ProduceRecord{{Value: []byte("a")}, {Value: []byte("b")}})
	if err := b.CommitGroupOffsets(ctx, "grp", []meta.GroupOffset{{Topic: "g", Partition: 1, Offset: 3}}); !isOutOfRange(err) {
		t.Fatalf("commit beyond hw: %v", err)
	}
	if err := b.CommitGroupOffsets(ctx, "grp", []meta.GroupOffset{{Topic: "g", Partition: 1, Offset: 1, Metadata: "m"}}); err != nil {
		t.Fatal(err)
	}
	got, err := b.GroupOffsets(ctx, "grp", "g")
	if err != nil || len(got) != 1 || got[0].Offset != 1 || got[0].Lag != 1 || got[0].Metadata != "m" {
		t.Fatalf("%+v %v", got, err)
	}
}

// A read-only broker (the fetch function) reads what another wrote and
// never touches the hot tier.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	store, dir := mem.New(), t.TempDir()
	w := newBroker(t, store, dir)
	defer w.Close()
	w.CreateTopic(ctx, TopicSpec{Name: "ro", Partitions: ptr(2)})
	w.ProducePartition(ctx, "ro", 0, []ProduceRecord{{Value: []byte("x")}})
	before := listTree(t, dir)
	r, err := New(ctx, Config{DataDir: dir, Meta: store, ReadOnly: true, ReleaseEachBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := r.Fetch(ctx, FetchRequest{Topic: "ro", Partition: 0, Offset: 0})
	if err != nil || len(f.Records) != 1 {
		t.Fatalf("read-only fetch: %v %+v", err, f)
	}
	if o, err := r.Offsets(ctx, "ro", 1); err != nil || o.HighWatermark != 0 {
		t.Fatalf("unwritten partition: %+v %v", o, err)
	}
	if _, err := r.ProducePartition(ctx, "ro", 0, []ProduceRecord{{Value: []byte("y")}}); err == nil {
		t.Fatal("read-only broker produced")
	}
	if _, err := r.CreateTopic(ctx, TopicSpec{Name: "other"}); err == nil {
		t.Fatal("read-only broker created a topic")
	}
	if after := listTree(t, dir); after != before {
		t.Fatalf("read-only broker changed the hot tier:\n%s\nthen\n%s", before, after)
	}
}

func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		fmt.Fprintf(&b, "%s %d\n", path, info.Size())
		return nil
	})
	return b.String()
}

// Two processes share the metadata and the hot tier (as Lambda containers
// do). When one deletes a topic and creates it again, the other must not
// keep writing into, or reading from, the incarnation it had cached.
func TestStaleTopicAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	store, dir := mem.New(), t.TempDir()
	open := func() *Broker {
		b, err := New(ctx, Config{DataDir: dir, Meta: store, ReleaseEachBatch: true, Owner: fmt.Sprint("p", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b := open(), open()
	a.CreateTopic(ctx, TopicSpec{Name: "s", Partitions: ptr(2)})
	if _, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("old")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fetch(ctx, FetchRequest{Topic: "s", Partition: 1, Offset: 0}); err != nil {
		t.Fatal(err) // b now caches the first incarnation, partition 1 never written
	}
	if err := a.DeleteTopic(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	a.CreateTopic(ctx, TopicSpec{Name: "s", Partitions: ptr(2)})
	a.ProducePartition(ctx, "s", 1, []ProduceRecord{{Value: []byte("new-1")}})

	// b's first write after the re-creation lands nowhere and says so;
	// the retry goes to the new incarnation.
	_, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("new-0")}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("write through a stale topic: %v, want a retryable error", err)
	}
	res, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("new-0")}})
	if err != nil || res[0].Offset != 0 {
		t.Fatalf("retry: %+v %v", res, err)
	}
	for p, want := range []string{"new-0", "new-1"} {
		f, err := a.Fetch(ctx, FetchRequest{Topic: "s", Partition: p, Offset: 0})
		if err != nil || len(f.Records) != 1 || string(f.Records[0].Value) != want {
			t.Fatalf("partition %d through a: %+v %v, want %q", p, f, err, want)
		}
		if f, err = b.Fetch(ctx, FetchRequest{Topic: "s", Partition: p, Offset: 0}); err != nil || len(f.Records) != 1 || string(f.Records[0].Value) != want {
			t.Fatalf("partition %d through b: %+v %v, want %q", p, f, err, want)
		}
	}
	// Deleted for good: b finds out.
	a.DeleteTopic(ctx, "s")
	_, err = b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("x")}})
	if err == nil {
		t.Fatal("b wrote into a deleted topic")
	}
	if _, err := b.ProducePartition(ctx, "s", 0, []ProduceRecord{{Value: []byte("x")}}); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("after deletion: %v, want topic not found", err)
	}
}
