package client_test

import (
	"fmt"
	"testing"

	"github.com/tierlog/tierlog/pkg/client"
)

// TestRoundRobinStartsAtRandom: producers that each send one record
// without a key do not all pick the same partition (each starts its
// round-robin at a random partition; starting at 0, all 24 would land on
// partition 0).
func TestRoundRobinStartsAtRandom(t *testing.T) {
	s := newServer(t, nil)
	c := s.client()
	createTopic(t, c, "rr", 8)
	seen := map[int]int{}
	for range 24 {
		p, err := c.NewProducer(ctxT(t), "rr")
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Send(ctxT(t), client.Record{Value: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.Wait(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		seen[r.Partition]++
		if err := p.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("24 producers all started at partition %v", seen)
	}
}

// TestStartOffsets: each partition starts at its own offset; a partition
// without one, or an offset out of range with ResetNone, is refused.
func TestStartOffsets(t *testing.T) {
	s := newServer(t, nil)
	c := s.client()
	createTopic(t, c, "so", 2)
	p, err := c.NewProducer(ctxT(t), "so")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := p.Send(ctxT(t), client.Record{Value: fmt.Appendf(nil, "v%d", i), Partition: client.Partition(i % 2)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	k, err := c.NewConsumer(ctxT(t), "so", client.WithStartOffsets(map[int]int64{0: 4, 1: 1}), client.WithReset(client.ResetNone))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int][]int64{}
	for n := 0; n < 1+4; {
		msgs, err := k.Poll(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got[m.Partition] = append(got[m.Partition], m.Offset)
		}
		n += len(msgs)
	}
	k.Close(ctxT(t))
	if fmt.Sprint(got[0]) != "[4]" || fmt.Sprint(got[1]) != "[1 2 3 4]" {
		t.Fatalf("consumed %v, want partition 0 from 4 and 1 from 1", got)
	}
	if _, err := c.NewConsumer(ctxT(t), "so", client.WithStartOffsets(map[int]int64{0: 1})); err == nil {
		t.Error("partition 1 without a start offset was accepted")
	}
	if _, err := c.NewConsumer(ctxT(t), "so", client.WithStartOffsets(map[int]int64{0: 9, 1: 0}), client.WithReset(client.ResetNone)); !client.IsCode(err, client.CodeOffsetOutOfRange) {
		t.Errorf("offset 9 of 5 with ResetNone: %v", err)
	}
}
