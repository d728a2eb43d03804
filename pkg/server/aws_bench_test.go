package server_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/server"
)

// awsServer is the aws backend against the in-process S3 + DynamoDB
// emulator (gofakes3 and minidyn behind one endpoint).
func awsServer(b *testing.B) *server.Server {
	b.Helper()
	useEmulator(b)
	s, err := server.Open(context.Background(), server.Config{
		Backend: server.BackendAWS, HotDir: b.TempDir(), Table: "bench", Bucket: "bench",
		CreateResources: true, CompactInterval: -1, CompactGrace: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func metaWrites(s *server.Server) int64 {
	m := s.MetaCounters()
	return m["UpdateItem"] + m["PutItem"] + m["DeleteItem"]
}

func metaRequests(s *server.Server) int64 {
	var n int64
	for _, v := range s.MetaCounters() {
		n += v
	}
	return n
}

func objRequests(c *objstore.Counters) int64 {
	var n int64
	for _, op := range objstore.Ops {
		n += c.Calls(op)
	}
	return n
}

func batchOf(n, size int) []broker.ProduceRecord {
	recs := make([]broker.ProduceRecord, n)
	for i := range recs {
		recs[i] = broker.ProduceRecord{Value: bytes.Repeat([]byte{'v'}, size)}
	}
	return recs
}

// BenchmarkAWSProduce reports the AWS requests of one produce batch on the
// aws backend (acquire, write+fsync, commit-and-release): the goal is
// exactly 2 DynamoDB writes and no S3 request.
func BenchmarkAWSProduce(b *testing.B) {
	s := awsServer(b)
	ctx := context.Background()
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "p"}); err != nil {
		b.Fatal(err)
	}
	recs := batchOf(100, 1024)
	s.Broker.ProducePartition(ctx, "p", 0, recs) // create the partition item
	w0, r0, o0 := metaWrites(s), metaRequests(s), objRequests(s.Counters)
	b.SetBytes(100 * 1024)
	for b.Loop() {
		if _, err := s.Broker.ProducePartition(ctx, "p", 0, recs); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(metaWrites(s)-w0)/n, "ddb-writes/batch")
	b.ReportMetric(float64(metaRequests(s)-r0)/n, "ddb-requests/batch")
	b.ReportMetric(float64(objRequests(s.Counters)-o0)/n, "s3-requests/batch")
}

// BenchmarkAWSFinalize reports the AWS requests per MB the compactor spends
// to finalize 1 MiB segments.
func BenchmarkAWSFinalize(b *testing.B) {
	s := awsServer(b)
	ctx := context.Background()
	seg := int64(1 << 20)
	t, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "f", SegmentBytes: &seg})
	if err != nil {
		b.Fatal(err)
	}
	recs := batchOf(100, 1024)
	var mb, reqs float64
	b.SetBytes(seg)
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < 11; i++ { // a little over one segment: one roll
			if _, err := s.Broker.ProducePartition(ctx, "f", 0, recs); err != nil {
				b.Fatal(err)
			}
		}
		r0, o0, up0 := metaRequests(s), objRequests(s.Counters), s.Counters.BytesUp()
		b.StartTimer()
		if _, err := s.Compactor.Partition(ctx, t, 0); err != nil {
			b.Fatal(err)
		}
		reqs += float64(metaRequests(s) - r0 + objRequests(s.Counters) - o0)
		mb += float64(s.Counters.BytesUp()-up0) / (1 << 20)
	}
	if mb > 0 {
		b.ReportMetric(reqs/mb, "aws-requests/MB")
	}
}

// BenchmarkAWSFetch reads a 16 MiB partition sequentially in 1 MiB fetches
// from the hot tier and from the cold tier (S3 through gofakes3), with the
// cache off and with read-ahead, in the same run.
func BenchmarkAWSFetch(b *testing.B) {
	s := awsServer(b)
	ctx := context.Background()
	seg := int64(1 << 20)
	recs := batchOf(1000, 1024)
	cases := []struct {
		name      string
		cold      bool
		cache     bool
		readAhead int
	}{
		{"hot", false, false, 0},
		{"cold/nocache", true, false, 0},
		{"cold/index-cache", true, true, 0},
		{"cold/read-ahead=2", true, true, 2},
	}
	for i, c := range cases {
		name := fmt.Sprintf("fetch%d", i)
		t, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: name, SegmentBytes: &seg, CacheEnabled: &c.cache, ReadAheadSegments: &c.readAhead})
		if err != nil {
			b.Fatal(err)
		}
		for range 16 {
			if _, err := s.Broker.ProducePartition(ctx, name, 0, recs); err != nil {
				b.Fatal(err)
			}
		}
		if c.cold {
			if _, err := s.Compactor.Partition(ctx, t, 0); err != nil {
				b.Fatal(err)
			}
		}
		o, _ := s.Broker.Offsets(ctx, name, 0)
		b.Run(c.name, func(b *testing.B) {
			var fetches, gets int64
			b.SetBytes(16 * 1000 * 1024)
			for b.Loop() {
				s.Cache.Reset()
				g0 := s.Counters.Calls(objstore.OpGet)
				for off := int64(0); off < o.HighWatermark; {
					f, err := s.Broker.Fetch(ctx, broker.FetchRequest{Topic: name, Offset: off, MaxRecords: broker.MaxFetchRecords, MaxBytes: 1 << 20})
					if err != nil {
						b.Fatal(err)
					}
					if len(f.Records) == 0 {
						b.Fatalf("empty fetch at %d", off)
					}
					off = f.NextOffset
					fetches++
				}
				gets += s.Counters.Calls(objstore.OpGet) - g0
			}
			b.ReportMetric(float64(gets)/float64(fetches), "s3-gets/fetch")
		})
	}
}
