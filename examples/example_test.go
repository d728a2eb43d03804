package examples_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/server"
)

// embedded starts a whole tierlog (local backend: metadata, hot and cold
// tier under dir) behind an HTTP test server on 127.0.0.1, as `tierlog
// serve` would, and returns its URL and a function that stops it.
func embedded(dir string) (string, func()) {
	s, err := server.Open(context.Background(), server.Config{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	s.Start() // the compactor, on its timer
	hs := httptest.NewServer(s.Handler())
	return hs.URL, func() { hs.Close(); s.Close() }
}

// Embed the server, then produce and consume with the client.
func Example() {
	dir, _ := os.MkdirTemp("", "tierlog-example-")
	defer os.RemoveAll(dir)
	url, stop := embedded(dir)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(url)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Partitions: 3}); err != nil {
		log.Fatal(err)
	}

	// One key: one partition, in order.
	p, err := c.NewProducer(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range []string{"created", "paid", "shipped"} {
		if _, err := p.Send(ctx, client.Record{Key: []byte("order-17"), Value: []byte(v)}); err != nil {
			log.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil { // flushes and waits for every result
		log.Fatal(err)
	}

	// A new group has nothing committed: it starts at the log start
	// (the client's default, as the CLI's and franz-go's).
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
			fmt.Printf("offset %d: %s=%s\n", m.Offset, m.Key, m.Value)
		}
		n += len(msgs)
	}
	if err := k.Commit(ctx); err != nil { // the next run of "billing" resumes after "shipped"
		log.Fatal(err)
	}
	// Output:
	// offset 0: order-17=created
	// offset 1: order-17=paid
	// offset 2: order-17=shipped
}

// The reset policy decides where a group without a committed offset
// starts: ResetEarliest (the default, as the CLI and franz-go) at the log
// start, ResetLatest (Kafka's Java default) at the end of the log, so
// records produced before the consumer started are not read.
func Example_resetPolicy() {
	dir, _ := os.MkdirTemp("", "tierlog-example-")
	defer os.RemoveAll(dir)
	url, stop := embedded(dir)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := client.New(url)
	if _, err := c.CreateTopic(ctx, client.TopicSpec{Name: "events"}); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Produce(ctx, "events", []client.Record{{Value: []byte("a")}, {Value: []byte("b")}}); err != nil {
		log.Fatal(err)
	}

	latest, err := c.NewConsumer(ctx, "events", client.WithGroup("new-group"), client.WithReset(client.ResetLatest))
	if err != nil {
		log.Fatal(err)
	}
	pos, _ := latest.Position(0)
	fmt.Println("ResetLatest starts at offset", pos)
	latest.Close(ctx)

	earliest, err := c.NewConsumer(ctx, "events", client.WithGroup("new-group"))
	if err != nil {
		log.Fatal(err)
	}
	defer earliest.Close(ctx)
	msgs, err := earliest.PollN(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("the default (ResetEarliest) reads %d records from offset %d\n", len(msgs), msgs[0].Offset)
	// Output:
	// ResetLatest starts at offset 2
	// the default (ResetEarliest) reads 2 records from offset 0
}

// A client of tierlog deployed on AWS (`make deploy`): every route of the
// HTTP API needs IAM authorization, so requests are signed with SigV4.
// Credentials would normally come from the SDK's default chain
// (config.LoadDefaultConfig); static ones keep the example short. Not
// run: it needs a deployed stack.
func Example_sigV4() {
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	c, err := client.New("https://abc123.execute-api.eu-west-1.amazonaws.com",
		client.WithSigV4(creds, "eu-west-1"))
	if err != nil {
		log.Fatal(err)
	}
	topics, err := c.Topics(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(topics), "topics")
}
