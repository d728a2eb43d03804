package subscribe

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
)

// runner runs one goroutine per enabled subscription partition in this
// process. A deliverer waits for records in a long-poll fetch (woken by
// produce commits), never in a polling loop; the runner looks for
// subscriptions when this process changes one and every Config.Rescan.
type runner struct {
	c    *Config
	kick chan struct{}

	mu struct {
		sync.Mutex
		running map[StatKey]*handle
		stopped bool
	}
	wg sync.WaitGroup
}

type handle struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newRunner(c *Config) *runner {
	r := &runner{c: c, kick: make(chan struct{}, 1)}
	r.mu.running = map[StatKey]*handle{}
	return r
}

// Start runs the subscriptions' deliverers until ctx ends or Close.
func (s *Service) Start(ctx context.Context) {
	s.r.wg.Add(1)
	go func() {
		defer s.r.wg.Done()
		s.r.loop(ctx)
	}()
}

// Close stops every deliverer (leases are released) and waits for them.
func (s *Service) Close() {
	s.r.mu.Lock()
	s.r.mu.stopped = true
	hs := make([]*handle, 0, len(s.r.mu.running))
	for _, h := range s.r.mu.running {
		hs = append(hs, h)
	}
	s.r.mu.Unlock()
	for _, h := range hs {
		h.cancel()
		<-h.done
	}
	select {
	case s.r.kick <- struct{}{}:
	default:
	}
	s.r.wg.Wait()
}

// changed stops this process's deliverers of name (waiting for them) and
// asks for a scan, which starts them again if the subscription is still
// there and enabled.
func (r *runner) changed(name string) {
	r.mu.Lock()
	var hs []*handle
	for k, h := range r.mu.running {
		if k.Subscription == name {
			hs = append(hs, h)
		}
	}
	r.mu.Unlock()
	for _, h := range hs {
		h.cancel()
		<-h.done
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *runner) loop(ctx context.Context) {
	for {
		r.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-r.c.Clock.After(r.c.Rescan):
		}
		r.mu.Lock()
		stopped := r.mu.stopped
		r.mu.Unlock()
		if stopped {
			return
		}
	}
}

// scan starts a deliverer for every enabled subscription partition that
// has none running here.
func (r *runner) scan(ctx context.Context) {
	svc := &Service{c: *r.c, r: r}
	subs, err := svc.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.c.Logger.Warn("list subscriptions", "err", err)
		}
		return
	}
	for _, sub := range subs {
		if !sub.Enabled {
			continue
		}
		t, err := r.c.Source.Topic(ctx, sub.Topic)
		if err != nil {
			if !errors.Is(err, broker.ErrTopicNotFound) && ctx.Err() == nil {
				r.c.Logger.Warn("subscription topic", "subscription", sub.Name, "err", err)
			}
			continue
		}
		for p := range t.Partitions {
			r.start(ctx, sub, p)
		}
	}
}

func (r *runner) start(ctx context.Context, sub Subscription, p int) {
	k := StatKey{sub.Name, p}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.stopped || r.mu.running[k] != nil {
		return
	}
	dctx, cancel := context.WithCancel(ctx)
	h := &handle{cancel: cancel, done: make(chan struct{})}
	r.mu.running[k] = h
	d := newDeliverer(r.c, sub, p)
	go func() {
		defer close(h.done)
		defer func() {
			r.mu.Lock()
			if r.mu.running[k] == h {
				delete(r.mu.running, k)
			}
			r.mu.Unlock()
		}()
		r.run(dctx, d)
	}()
}

// run steps d until it stops or ctx ends, then releases its lease.
func (r *runner) run(ctx context.Context, d *deliverer) {
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		d.release(rctx)
	}()
	for {
		wait, err := d.step(ctx, broker.MaxWait)
		if ctx.Err() != nil || errors.Is(err, errStopped) {
			return
		}
		if err != nil && !errors.Is(err, errLost) {
			d.log.Warn("deliverer step", "err", err)
			wait = max(wait, r.c.RetryBase)
		}
		if wait <= 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-r.c.Clock.After(wait):
		}
	}
}

// DrainStats is what a Drain did.
type DrainStats struct {
	Partitions int   `json:"partitions"` // subscription partitions taken
	Busy       int   `json:"busy"`       // held by another deliverer: left to it
	Delivered  int64 `json:"delivered"`  // records the targets took
	Unfinished int   `json:"unfinished"` // stopped by the deadline with work left
}

// Drain delivers until every enabled subscription partition is caught up
// (a fetch finds nothing) or ctx ends, then releases the leases: the
// delivery function's pass, which runs while there is work and then stops.
// A partition another deliverer holds is left to it.
func (s *Service) Drain(ctx context.Context) (DrainStats, error) {
	subs, err := s.List(ctx)
	if err != nil {
		return DrainStats{}, err
	}
	var (
		mu  sync.Mutex
		st  DrainStats
		wg  sync.WaitGroup
		sem = make(chan struct{}, drainParallel)
	)
	for _, sub := range subs {
		if !sub.Enabled {
			continue
		}
		t, err := s.c.Source.Topic(ctx, sub.Topic)
		if err != nil {
			continue // a topic deleted under its subscription: nothing to deliver
		}
		for p := range t.Partitions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				d := newDeliverer(&s.c, sub, p)
				before := d.stats.Delivered.Load()
				busy, done := drainOne(ctx, d, s.c.Clock)
				mu.Lock()
				defer mu.Unlock()
				st.Partitions++
				st.Delivered += d.stats.Delivered.Load() - before
				if busy {
					st.Busy++
				} else if !done {
					st.Unfinished++
				}
			}()
		}
	}
	wg.Wait()
	return st, ctx.Err()
}

// drainParallel bounds the partitions one Drain delivers at once.
const drainParallel = 16

// drainOne steps d until its partition is caught up (done), another
// deliverer holds it (busy), or ctx ends.
func drainOne(ctx context.Context, d *deliverer, clock Clock) (busy, done bool) {
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		d.release(rctx)
	}()
	for ctx.Err() == nil {
		d.idle = false
		wait, err := d.step(ctx, 0)
		switch {
		case errors.Is(err, errStopped):
			return false, true
		case err != nil && !errors.Is(err, errLost):
			d.log.Warn("deliverer step", "err", err)
			wait = max(wait, d.c.RetryBase)
		case !d.held && wait > 0:
			return true, false // another deliverer's lease
		case d.idle && d.batch == nil:
			return false, true
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-clock.After(wait):
			}
		}
	}
	return false, false
}
