package lambdafn

import (
	"encoding/json"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/objstore"
	"github.com/tierlog/tierlog/pkg/server"
)

// EMF: one CloudWatch Embedded Metric Format line per invocation
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
// CloudWatch Logs turns the line into metrics in namespace "tierlog" with
// the dimension Function; the other top-level fields (requestId, method,
// path, status, mode) stay searchable in Logs Insights.
const (
	EMFNamespace = "tierlog"
	emfDimension = "Function"
)

// Metric units, CloudWatch's names.
const (
	unitCount        = "Count"
	unitBytes        = "Bytes"
	unitSeconds      = "Seconds"
	unitMilliseconds = "Milliseconds"
)

// counter is one counted value and its unit.
type counter struct {
	v    float64
	unit string
}

// snapshot is every counter of a server by metric name.
type snapshot map[string]counter

// opMetric turns an objstore op ("put_if_absent") into a metric name
// suffix ("PutIfAbsent").
func opMetric(op string) string {
	var b strings.Builder
	for _, part := range strings.Split(op, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// snapshotOf reads the counters of s: the pkg/metrics set, the object
// store's (S3) and the metadata store's (DynamoDB) request counters, and the
// cold-tier cache.
func snapshotOf(s *server.Server) snapshot {
	m := snapshot{}
	if ms := s.Metrics; ms != nil {
		_, _, sum, n := ms.Flush.Snapshot()
		m["Flushes"] = counter{float64(n), unitCount}
		m["FlushSeconds"] = counter{sum, unitSeconds}
		m["FlushRecords"] = counter{float64(ms.FlushRecords.Load()), unitCount}
		m["FlushBytes"] = counter{float64(ms.FlushBytes.Load()), unitBytes}
		m["LeaseConflicts"] = counter{float64(ms.LeaseConflicts.Load()), unitCount}
		m["SegmentsFinalized"] = counter{float64(ms.SegmentsFinalized.Load()), unitCount}
		m["BytesFinalized"] = counter{float64(ms.BytesFinalized.Load()), unitBytes}
		m["LogStartAdvances"] = counter{float64(ms.LogStartAdvances.Load()), unitCount}
		m["DamagedReads"] = counter{float64(ms.DamagedReads.Load()), unitCount}
		m["SegmentsQuarantined"] = counter{float64(ms.SegmentsQuarantined.Load()), unitCount}
	}
	if c := s.Counters; c != nil {
		var errs int64
		for _, op := range objstore.Ops {
			m["S3"+opMetric(op.String())] = counter{float64(c.Calls(op)), unitCount}
			errs += c.Errors(op)
		}
		m["S3Errors"] = counter{float64(errs), unitCount}
		m["S3BytesUp"] = counter{float64(c.BytesUp()), unitBytes}
		m["S3BytesDown"] = counter{float64(c.BytesDown()), unitBytes}
	}
	if s.MetaCounters != nil {
		for op, v := range s.MetaCounters() {
			m["DynamoDB"+op] = counter{float64(v), unitCount}
		}
	}
	if s.Cache != nil {
		cs := s.Cache.Stats()
		m["CacheHits"] = counter{float64(cs.Hits), unitCount}
		m["CacheMisses"] = counter{float64(cs.Misses), unitCount}
	}
	return m
}

// emfRecord is one invocation's metrics and properties.
type emfRecord struct {
	function   string
	start      time.Time
	duration   time.Duration
	coldStart  bool
	failed     bool
	metrics    snapshot       // invocation-level metrics besides the deltas
	properties map[string]any // searchable fields, not metrics
}

// emfWriter writes EMF lines. Safe for concurrent use.
type emfWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// write emits r with the counters that moved between before and after.
// Invocations, Errors and Duration are always present; a counter that did
// not move is left out (absent is "no data", which alarms treat as such).
func (e *emfWriter) write(r emfRecord, before, after snapshot) error {
	vals := snapshot{
		"Invocations": {1, unitCount},
		"Errors":      {b2f(r.failed), unitCount},
		"ColdStarts":  {b2f(r.coldStart), unitCount},
		"Duration":    {float64(r.duration.Microseconds()) / 1000, unitMilliseconds},
	}
	for k, v := range r.metrics {
		vals[k] = v
	}
	for k, a := range after {
		if d := a.v - before[k].v; d != 0 {
			vals[k] = counter{d, a.unit}
		}
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	type metricDef struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}
	defs := make([]metricDef, 0, len(names))
	root := make(map[string]any, len(names)+len(r.properties)+2)
	for k, v := range r.properties {
		root[k] = v
	}
	for _, n := range names {
		defs = append(defs, metricDef{n, vals[n].unit})
		root[n] = vals[n].v
	}
	root[emfDimension] = r.function
	root["_aws"] = map[string]any{
		"Timestamp": r.start.UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  EMFNamespace,
			"Dimensions": [][]string{{emfDimension}},
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(root)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.w.Write(append(b, '\n'))
	return err
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
