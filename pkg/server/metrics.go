package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/segment"
)

// collector exposes the server's counters at scrape time.
type collector struct {
	s *Server

	flush, flushRecords, flushBytes, conflicts      *prometheus.Desc
	afterAnswer                                     *prometheus.Desc
	s3Requests, s3Errors, s3Bytes                   *prometheus.Desc
	metaRequests, hotFSOps                          *prometheus.Desc
	hotFSBytes, hotFSRoundTrips, hotFSCharged       *prometheus.Desc
	cacheHits, cacheMisses, cacheEvictions, cacheSz *prometheus.Desc
	finalized, finalizedBytes, logStartAdvances     *prometheus.Desc
	damagedReads, quarantined                       *prometheus.Desc
	httpRequests, httpDuration                      *prometheus.Desc
	highWatermark, logStart, partitionsCut          *prometheus.Desc
	groupLag, groupLagsCut                          *prometheus.Desc
}

// MaxPartitionSeries bounds the per-partition gauges of one scrape: the
// first MaxPartitionSeries open partitions by topic and partition; the
// number left out is tierlog_partition_series_dropped.
const MaxPartitionSeries = 1000

func newCollector(s *Server) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tierlog_"+name, help, labels, nil)
	}
	return &collector{
		s:                s,
		flush:            d("flush_seconds", "Group-commit flush latency: write, fsync and metadata commit."),
		flushRecords:     d("flush_records_total", "Records written by flushes."),
		flushBytes:       d("flush_bytes_total", "Record bytes written by flushes."),
		conflicts:        d("lease_conflicts_total", "Lease busy or commit fenced."),
		afterAnswer:      d("after_answer_seconds_total", "Time spent on produce work after the answer: the checkpoint of a round of a writer alone (Lambda bills it)."),
		s3Requests:       d("object_requests_total", "Object store calls by operation (S3 requests on the aws backend).", "op"),
		s3Errors:         d("object_errors_total", "Failed object store calls by operation.", "op"),
		s3Bytes:          d("object_bytes_total", "Object store bytes moved.", "direction"),
		metaRequests:     d("metadata_requests_total", "Metadata store requests by operation (DynamoDB on the aws backend).", "op"),
		hotFSOps:         d("hot_fs_ops_total", "Hot-tier file-system calls by operation (EFS operations on the aws backend), failed ones included.", "op"),
		hotFSBytes:       d("hot_fs_bytes_total", "Bytes moved by hot-tier reads and writes.", "direction"),
		hotFSRoundTrips:  d("hot_fs_round_trips_total", "Hot-tier network round trips charged by the latency profile (--hot-fs-latency), by class: read or durable.", "class"),
		hotFSCharged:     d("hot_fs_latency_seconds_total", "Latency of the hot-tier calls the latency profile (--hot-fs-latency) charged: as charged, and as taken (the local call and the wait).", "kind"),
		cacheHits:        d("cache_hits_total", "Cold-tier cache hits."),
		cacheMisses:      d("cache_misses_total", "Cold-tier cache misses."),
		cacheEvictions:   d("cache_evictions_total", "Cold-tier cache evictions."),
		cacheSz:          d("cache_bytes", "Bytes held by the cold-tier cache."),
		finalized:        d("segments_finalized_total", "Segments moved to the cold tier."),
		finalizedBytes:   d("segment_bytes_finalized_total", "Artifact bytes uploaded by the compactor."),
		logStartAdvances: d("log_start_advances_total", "Retention passes that advanced a log start."),
		highWatermark:    d("partition_high_watermark", "High watermark of a partition this process has open, as it last saw it.", "topic", "partition"),
		logStart:         d("partition_log_start_offset", "Log start offset of a partition this process has open, as it last saw it.", "topic", "partition"),
		partitionsCut:    d("partition_series_dropped", "Open partitions left out of the per-partition gauges (over MaxPartitionSeries)."),
		groupLag:         d("group_lag", "A consumer group's lag on a partition (high watermark minus committed offset) when this process last committed or read the group's offsets.", "group", "topic", "partition"),
		groupLagsCut:     d("group_lag_keys_dropped_total", "Group lags not recorded because broker.MaxGroupLags keys were already."),
		damagedReads:     d("damaged_reads_total", "Reads that reached records damaged on disk (answered corrupt_record, never served)."),
		quarantined:      d("segments_quarantined_total", "Sealed segments the compactor could not verify and kept hot (counted by every pass that finds one)."),
		httpRequests:     d("http_requests_total", "HTTP requests by route pattern (not path), method and status code.", "route", "method", "code"),
		httpDuration:     d("http_request_duration_seconds", "HTTP request duration by route pattern, method and status code (long polls included).", "route", "method", "code"),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.Metrics
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	bounds, cum, sum, n := m.Flush.Snapshot()
	buckets := make(map[float64]uint64, len(bounds))
	for i, b := range bounds {
		buckets[b] = cum[i]
	}
	ch <- prometheus.MustNewConstHistogram(c.flush, n, sum, buckets)
	counter(c.flushRecords, m.FlushRecords.Load())
	counter(c.flushBytes, m.FlushBytes.Load())
	counter(c.conflicts, m.LeaseConflicts.Load())
	ch <- prometheus.MustNewConstMetric(c.afterAnswer, prometheus.CounterValue, time.Duration(m.AfterAnswer.Load()).Seconds())
	for _, op := range objstore.Ops {
		counter(c.s3Requests, c.s.Counters.Calls(op), op.String())
		counter(c.s3Errors, c.s.Counters.Errors(op), op.String())
	}
	counter(c.s3Bytes, c.s.Counters.BytesUp(), "up")
	counter(c.s3Bytes, c.s.Counters.BytesDown(), "down")
	if c.s.MetaCounters != nil {
		for op, v := range c.s.MetaCounters() {
			counter(c.metaRequests, v, strings.ToLower(op))
		}
	}
	for _, op := range segment.FSOps {
		counter(c.hotFSOps, c.s.HotFS.Calls(op), op.String())
	}
	counter(c.hotFSBytes, c.s.HotFS.Bytes(segment.FSRead), "read")
	counter(c.hotFSBytes, c.s.HotFS.Bytes(segment.FSWrite), "written")
	if rt := c.s.HotFSRoundTrips; rt != nil {
		for _, r := range segment.RoundTrips {
			counter(c.hotFSRoundTrips, rt.Calls(r), r.String())
		}
		ch <- prometheus.MustNewConstMetric(c.hotFSCharged, prometheus.CounterValue, rt.Charged().Seconds(), "charged")
		ch <- prometheus.MustNewConstMetric(c.hotFSCharged, prometheus.CounterValue, rt.Taken().Seconds(), "taken")
	}
	cs := c.s.Cache.Stats()
	counter(c.cacheHits, cs.Hits)
	counter(c.cacheMisses, cs.Misses)
	counter(c.cacheEvictions, cs.Evictions)
	ch <- prometheus.MustNewConstMetric(c.cacheSz, prometheus.GaugeValue, float64(cs.Bytes))
	counter(c.finalized, m.SegmentsFinalized.Load())
	counter(c.finalizedBytes, m.BytesFinalized.Load())
	counter(c.logStartAdvances, m.LogStartAdvances.Load())
	counter(c.damagedReads, m.DamagedReads.Load())
	counter(c.quarantined, m.SegmentsQuarantined.Load())
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	open := c.s.Broker.OpenPartitions()
	for _, p := range open[:min(len(open), MaxPartitionSeries)] {
		gauge(c.highWatermark, p.HighWatermark, p.Topic, strconv.Itoa(p.Partition))
		gauge(c.logStart, p.LogStartOffset, p.Topic, strconv.Itoa(p.Partition))
	}
	gauge(c.partitionsCut, int64(max(len(open)-MaxPartitionSeries, 0)))
	lags, dropped := c.s.Broker.GroupLags()
	for _, l := range lags {
		gauge(c.groupLag, l.Lag, l.Group, l.Topic, strconv.Itoa(l.Partition))
	}
	counter(c.groupLagsCut, dropped)
	c.s.Requests.Each(func(k metrics.HTTPKey, h *metrics.Histogram) {
		code := strconv.Itoa(k.Code)
		bounds, cum, sum, n := h.Snapshot()
		buckets := make(map[float64]uint64, len(bounds))
		for i, b := range bounds {
			buckets[b] = cum[i]
		}
		counter(c.httpRequests, int64(n), k.Route, k.Method, code)
		ch <- prometheus.MustNewConstHistogram(c.httpDuration, n, sum, buckets, k.Route, k.Method, code)
	})
}

// metricsHandler serves GET /metrics: tierlog's own series, the HTTP
// API's requests, and the Go runtime's (go_*), the process's (process_*)
// and the build's (go_build_info).
func (s *Server) metricsHandler() http.Handler {
	c := newCollector(s)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector())
	if s.Subscriptions != nil {
		reg.MustRegister(newSubscriptionCollector(s.Subscriptions.Stats()))
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
