package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
)

// Twenty consumers long-poll one partition through a reader process while
// a writer process commits once a second: the reader learns of commits from
// the hot tier's checkpoint, so its metadata requests stay a handful (one
// item read a second while it waits, plus setup), and every record reaches
// every poller soon after its commit.
func TestLongPollFanOutCostsFewMetadataReads(t *testing.T) {
	useEmulator(t)
	hot := t.TempDir()
	open := func(owner string) *server.Server {
		s, err := server.Open(context.Background(), server.Config{
			Backend: server.BackendAWS, HotDir: hot, Table: "fanout", Bucket: "fanout", Owner: owner,
			CreateResources: true, CompactInterval: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, reader := open("writer"), open("reader")
	ctx := context.Background()
	if _, err := writer.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "fan"}); err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(reader.Handler())
	t.Cleanup(rs.Close)

	const pollers, commits = 20, 12
	var mu sync.Mutex
	committedAt := map[int64]time.Time{}
	var worst time.Duration
	var wg sync.WaitGroup
	done := make(chan struct{})
	// Warm up: one record (the partition has a checkpoint), and the
	// reader opens the topic and partition once.
	if _, err := writer.Broker.ProducePartition(ctx, "fan", 0, []broker.ProduceRecord{{Value: []byte("first")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(rs.URL + "/v1/topics/fan/partitions/0/records?offset=0"); err != nil {
		t.Fatal(err)
	}
	before := metaRequests(reader)
	for i := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(1)
			for next < commits+1 {
				resp, err := http.Get(fmt.Sprintf("%s/v1/topics/fan/partitions/0/records?offset=%d&wait_ms=20000", rs.URL, next))
				if err != nil {
					t.Errorf("poller %d: %v", i, err)
					return
				}
				var body struct {
					Records []struct {
						Offset int64 `json:"offset"`
					} `json:"records"`
				}
				err = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("poller %d: %d %v", i, resp.StatusCode, err)
					return
				}
				now := time.Now()
				for _, r := range body.Records {
					if r.Offset != next {
						t.Errorf("poller %d: offset %d where %d expected", i, r.Offset, next)
						return
					}
					mu.Lock()
					if at, ok := committedAt[r.Offset]; ok {
						worst = max(worst, now.Sub(at))
					}
					mu.Unlock()
					next++
				}
			}
		}()
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := range commits {
			<-tick.C
			res, err := writer.Broker.ProducePartition(ctx, "fan", 0, []broker.ProduceRecord{{Value: []byte(fmt.Sprint("rec-", i))}})
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			mu.Lock()
			committedAt[res[0].Offset] = time.Now()
			mu.Unlock()
		}
	}()
	<-done
	wg.Wait()
	t.Logf("reader metadata requests by operation: %v", reader.MetaCounters())
	n := metaRequests(reader) - before
	t.Logf("%d pollers, %d commits a second apart: the reader made %d metadata requests; slowest delivery %v after its commit", pollers, commits, n, worst)
	if n > 60 {
		t.Errorf("the reader made %d metadata requests, want at most 60", n)
	}
	if worst > 1500*time.Millisecond {
		t.Errorf("a record reached a poller %v after its commit, want at most 1.5 s", worst)
	}
}
