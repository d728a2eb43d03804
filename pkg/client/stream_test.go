package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/server"
)

// streamServer is the local server (server.Open, its HTTPServer) on
// 127.0.0.1, recording the Last-Event-ID of every streaming request.
type streamServer struct {
	*httptest.Server
	s *server.Server

	mu      sync.Mutex
	lastIDs []string // Last-Event-ID of each request with Accept: text/event-stream
}

func newStreamServer(t *testing.T, cfg server.Config) *streamServer {
	t.Helper()
	cfg.DataDir, cfg.CompactInterval = t.TempDir(), -1
	cfg.StreamKeepAlive = 50 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	s, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := &streamServer{s: s}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = s.HTTPServer()
	inner := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "text/event-stream" {
			ss.mu.Lock()
			ss.lastIDs = append(ss.lastIDs, r.Header.Get("Last-Event-ID"))
			ss.mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	})
	srv.Start()
	ss.Server = srv
	t.Cleanup(func() {
		s.EndStreams()
		srv.Close()
		if err := s.Close(); err != nil {
			t.Errorf("server.Close: %v", err)
		}
	})
	return ss
}

func (ss *streamServer) client(t *testing.T) *client.Client {
	c, err := client.New(ss.URL, client.WithBackoff(client.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, MaxElapsed: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (ss *streamServer) ids() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]string(nil), ss.lastIDs...)
}

// expectStream reads n records and checks they are offsets from.. with the
// values produce gave them.
func expectStream(t *testing.T, st *client.Stream, from int64, n int) {
	t.Helper()
	for i := range n {
		m, err := st.Next(ctxT(t))
		if err != nil {
			t.Fatalf("record %d of %d: %v", i, n, err)
		}
		want := from + int64(i)
		if m.Offset != want || string(m.Value) != fmt.Sprint("v", want) {
			t.Fatalf("offset %d value %q, want %d v%d", m.Offset, m.Value, want, want)
		}
	}
}

func streamProduce(t *testing.T, c *client.Client, from, n int) {
	t.Helper()
	var recs []client.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, client.Record{Value: []byte(fmt.Sprint("v", i))})
	}
	if _, err := c.ProduceTo(ctxT(t), "t", 0, recs); err != nil {
		t.Fatal(err)
	}
}

func TestStreamFollowsCommitsAndReconnects(t *testing.T) {
	ss := newStreamServer(t, server.Config{})
	c := ss.client(t)
	createTopic(t, c, "t", 1)
	streamProduce(t, c, 0, 3)

	st, err := c.Stream(ctxT(t), "t", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Polling() {
		t.Fatal("polling a server that streams")
	}
	expectStream(t, st, 1, 2)
	for round := range 3 { // commits made while streaming
		streamProduce(t, c, 3+4*round, 4)
		expectStream(t, st, int64(3+4*round), 4)
	}
	// Offsets 0..14 produced, all read. The connection drops (the server
	// closes it): the next records come over a new one that resumes
	// after the last record received.
	ss.CloseClientConnections()
	streamProduce(t, c, 15, 5)
	expectStream(t, st, 15, 5)
	ids := ss.ids()
	if len(ids) < 2 || ids[0] != "0" || ids[len(ids)-1] != "14" {
		t.Fatalf("Last-Event-ID of the streaming requests: %q, want \"0\" first and \"14\" last", ids)
	}
	if st.Polling() || st.Offset() != 20 {
		t.Fatalf("Polling %v Offset %d", st.Polling(), st.Offset())
	}

	// Next bounded by its context: the stream stays usable.
	short, cancel := context.WithCancel(ctxT(t))
	cancel()
	if _, err := st.Next(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled context: %v", err)
	}
	streamProduce(t, c, 20, 1)
	expectStream(t, st, 20, 1)

	// Close frees the server's stream.
	if err := ss.s.Streams.WaitActive(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := st.Next(ctxT(t)); !errors.Is(err, client.ErrStreamClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := ss.s.Streams.WaitActive(ctxT(t), 0); err != nil {
		t.Fatal(err)
	}
}

func TestStreamErrors(t *testing.T) {
	ss := newStreamServer(t, server.Config{})
	c := ss.client(t)
	createTopic(t, c, "t", 1)
	streamProduce(t, c, 0, 2)
	if _, err := c.Stream(ctxT(t), "t", 0, 3); !client.IsCode(err, client.CodeOffsetOutOfRange) {
		t.Fatalf("out of range: %v", err)
	}
	if _, err := c.Stream(ctxT(t), "nope", 0, 0); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
	st, err := c.Stream(ctxT(t), "t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	expectStream(t, st, 0, 2)
	if err := c.DeleteTopic(ctxT(t), "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(ctxT(t)); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := st.Next(ctxT(t)); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatalf("again after delete: %v", err)
	}
}

// A server that answers a plain fetch (API Gateway; here, the local
// server with streaming disabled): the Stream polls, and sees the same.
func TestStreamFallsBackToPolling(t *testing.T) {
	ss := newStreamServer(t, server.Config{DisableStreaming: true})
	c := ss.client(t)
	createTopic(t, c, "t", 1)
	streamProduce(t, c, 0, 3)
	st, err := c.StreamWith(ctxT(t), "t", 0, 0, client.StreamOptions{MaxRecords: 2, Wait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Polling() {
		t.Fatal("not polling a server that does not stream")
	}
	expectStream(t, st, 0, 3)
	streamProduce(t, c, 3, 3)
	expectStream(t, st, 3, 3)
	if err := c.DeleteTopic(ctxT(t), "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(ctxT(t)); !client.IsCode(err, client.CodeTopicNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
