package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/subscribe"
	"github.com/tierlog/tierlog/pkg/subscribe/lambdatarget"
)

// webhookIdleConns bounds the idle connections kept per webhook host.
const webhookIdleConns = 16

// openSubscriptions builds the subscription service over the metadata
// store, if it keeps subscriptions (every adapter does).
func (s *Server) openSubscriptions() error {
	store, ok := s.Meta.(meta.SubscriptionStore)
	if !ok {
		return nil
	}
	c := s.cfg.Subscribe
	c.Store, c.Source, c.Owner, c.Logger = store, s.Broker, s.cfg.Owner, s.cfg.Logger
	if c.Targets == nil {
		lambdas := &lambdatarget.Factory{}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = webhookIdleConns
		c.Targets = subscribe.HTTPTargets(&http.Client{Transport: tr}, lambdas.Invoker)
	}
	svc, err := subscribe.New(c)
	if err != nil {
		return err
	}
	s.Subscriptions = svc
	return nil
}

func (s *Server) startSubscriptions() {
	if !s.cfg.RunSubscriptions || s.Subscriptions == nil || s.subsStop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.subsStop = cancel
	s.Subscriptions.Start(ctx)
}

func (s *Server) closeSubscriptions() {
	if s.subsStop != nil {
		s.Subscriptions.Close()
		s.subsStop()
	}
}

// subscriptionCollector exposes the deliverers' counters of this process
// (docs/metrics.md "Subscriptions").
type subscriptionCollector struct {
	stats                                          *subscribe.Stats
	lag, lagAge, invocations, delivered, failures  *prometheus.Desc
	retries, sentToOnFailure, dropped, keysDropped *prometheus.Desc
}

func newSubscriptionCollector(stats *subscribe.Stats) *subscriptionCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("tierlog_subscription_"+name, help, labels, nil)
	}
	l := []string{"subscription", "partition"}
	return &subscriptionCollector{
		stats:           stats,
		lag:             d("lag_records", "Records of the partition not yet delivered (high watermark minus the next offset to deliver), as the deliverer last saw it.", l...),
		lagAge:          d("lag_age_seconds", "Age of the oldest record not yet delivered, as the deliverer last saw it (0: none).", l...),
		invocations:     d("invocations_total", "Target invocations, whatever their outcome.", l...),
		delivered:       d("delivered_records_total", "Records the target took.", l...),
		failures:        d("failures_total", "Failed invocations (a whole or a partial failure).", l...),
		retries:         d("retried_records_total", "Records sent again after a failure.", l...),
		sentToOnFailure: d("on_failure_records_total", "Records given up and produced to the on_failure topic.", l...),
		dropped:         d("dropped_records_total", "Records given up without an on_failure topic.", l...),
		keysDropped:     d("series_dropped_total", "Subscription partitions not counted (over subscribe.MaxStatSeries)."),
	}
}

func (c *subscriptionCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *subscriptionCollector) Collect(ch chan<- prometheus.Metric) {
	c.stats.Each(func(k subscribe.StatKey, p *subscribe.PartitionStats) {
		labels := []string{k.Subscription, strconv.Itoa(k.Partition)}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		counter := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		gauge(c.lag, float64(p.LagRecords.Load()))
		gauge(c.lagAge, (time.Duration(p.LagAgeMs.Load()) * time.Millisecond).Seconds())
		counter(c.invocations, p.Invocations.Load())
		counter(c.delivered, p.Delivered.Load())
		counter(c.failures, p.Failures.Load())
		counter(c.retries, p.Retries.Load())
		counter(c.sentToOnFailure, p.SentToOnFailure.Load())
		counter(c.dropped, p.Dropped.Load())
	})
	ch <- prometheus.MustNewConstMetric(c.keysDropped, prometheus.CounterValue, float64(c.stats.Dropped()))
}
