package client_test

// The examples of docs/client.md: each runs against a whole tierlog
// embedded in the test process (as `tierlog serve` would run it) and
// checks its output.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/server"
)

// embedded starts a whole tierlog (local backend under a temporary
// directory) on 127.0.0.1 and returns its URL and a function that stops
// it and removes the directory.
func embedded() (string, func()) {
	dir, err := os.MkdirTemp("", "tierlog-client-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := server.Open(context.Background(), server.Config{DataDir: dir, CompactInterval: -1})
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	return hs.URL, func() { hs.Close(); s.Close(); os.RemoveAll(dir) }
}

// A producer, then a consumer of a new group: it starts at the earliest
// offset (DefaultReset), as the CLI does, and commits what it read.
func Example() {
	url, stop := embedded()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := client.New(url) // or "127.0.0.1:8080", as kcat's -b
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Partitions: 3}); err != nil {
		log.Fatal(err)
	}
	p, err := c.NewProducer(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range []string{"created", "paid", "shipped"} {
		// One key, one partition: in order.
		if _, err := p.Send(ctx, client.Record{Key: []byte("order-17"), Value: []byte(v)}); err != nil {
			log.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil { // flushes and waits for every result
		log.Fatal(err)
	}

	k, err := c.NewConsumer(ctx, "orders", client.WithGroup("billing"))
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close(context.Background())
	for n := 0; n < 3; {
		msgs, err := k.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range msgs {
			fmt.Printf("%s=%s\n", m.Key, m.Value)
		}
		n += len(msgs)
	}
	if err := k.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// order-17=created
	// order-17=paid
	// order-17=shipped
}

// A wrong URL is an error at once, naming the URL: the client does not
// retry a server it never reached (WithRetryUnreachable does).
func Example_failFast() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	c, err := client.New(addr)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	_, err = c.Topics(context.Background())
	fmt.Println("unreachable:", client.IsUnreachable(err))
	fmt.Println("within a second:", time.Since(start) < time.Second)
	// Output:
	// unreachable: true
	// within a second: true
}

// Errors are *client.Error with the API's code; IsCode and errors.As
// read them.
func ExampleIsCode() {
	url, stop := embedded()
	defer stop()
	c, _ := client.New(url)
	_, err := c.Topic(context.Background(), "nope")
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, client.IsCode(err, client.CodeTopicNotFound), client.IsRetriable(err))
	}
	// Output:
	// 404 topic_not_found true false
}

// SendFunc calls a function with each record's result (kgo's promise),
// in order within a partition.
func ExampleProducer_SendFunc() {
	url, stop := embedded()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "events"}); err != nil {
		log.Fatal(err)
	}
	p, err := c.NewProducer(ctx, "events")
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range []string{"a", "b"} {
		err := p.SendFunc(ctx, client.Record{Value: []byte(v)}, func(r client.Record, res client.Result) {
			if res.Err != nil {
				log.Printf("%s not stored: %v", r.Value, res.Err)
				return
			}
			fmt.Printf("%s at partition %d offset %d\n", r.Value, res.Partition, res.Offset)
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a at partition 0 offset 0
	// b at partition 0 offset 1
}

// Rebalance callbacks tell a group member which partitions it gained and
// gave up.
func ExampleWithOnAssigned() {
	url, stop := embedded()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Partitions: 2}); err != nil {
		log.Fatal(err)
	}
	show := func(what string) client.PartitionsFunc {
		return func(_ context.Context, topic string, ps []int) { fmt.Println(what, topic, ps) }
	}
	k, err := c.NewConsumer(ctx, "orders", client.WithGroup("billing"),
		client.WithOnAssigned(show("assigned")), client.WithOnRevoked(show("revoked")))
	if err != nil {
		log.Fatal(err)
	}
	if err := k.Close(ctx); err != nil { // leaves the group
		log.Fatal(err)
	}
	// Output:
	// assigned orders [0 1]
	// revoked orders [0 1]
}

// Seek moves a partition's position; Pause and Resume stop and restart
// its records.
func ExampleConsumer_Seek() {
	url, stop := embedded()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "log"}); err != nil {
		log.Fatal(err)
	}
	recs := []client.Record{{Value: []byte("r0")}, {Value: []byte("r1")}, {Value: []byte("r2")}}
	if _, err := c.ProduceTo(ctx, "log", 0, recs); err != nil {
		log.Fatal(err)
	}
	k, err := c.NewConsumer(ctx, "log")
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close(ctx)
	if err := k.Seek(0, 2); err != nil {
		log.Fatal(err)
	}
	msgs, err := k.Poll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after Seek(0, 2): %s\n", msgs[0].Value)
	// Output:
	// after Seek(0, 2): r2
}

// Hooks see every request: here a count by status for metrics, and a
// header added for tracing.
func ExampleWithHooks() {
	url, stop := embedded()
	defer stop()
	var ok, failed atomic.Int64
	c, _ := client.New(url, client.WithHooks(client.Hooks{
		BeforeRequest: func(r *http.Request) {
			r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		},
		AfterRequest: func(i client.RequestInfo) {
			if i.Err != nil {
				failed.Add(1)
				return
			}
			ok.Add(1)
		},
	}))
	ctx := context.Background()
	c.Topics(ctx)
	c.Topic(ctx, "nope")
	fmt.Println("ok", ok.Load(), "failed", failed.Load())
	// Output:
	// ok 1 failed 1
}
