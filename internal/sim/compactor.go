package sim

// What drives pkg/compactor over the simulated NFS (through its Config's
// FS): left out of an older checkout, where compat_ba945fc.go.txt
// stands in for it.

import (
	"fmt"
	"log/slog"

	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/segment"
)

// AddCompactor adds a compactor (a Lambda invocation per pass, each its own
// NFS client; passes of several compactors may overlap).
func (w *World) AddCompactor(name string) *Actor {
	return w.s.addActor(name, "compactor", w.skew(), w.compactorBody)
}

func (w *World) newCompactor(a *Actor, cli *Client) *compactor.Compactor {
	var o objects
	if a == nil {
		o = objects{inner: w.objs}
	} else {
		o = objects{inner: w.objs, a: a, w: w}
	}
	now := a.Now
	if a == nil {
		now = w.s.Time
	}
	c, err := compactor.New(compactor.Config{
		Meta: w.net.Client(a), Objects: o,
		HotDir: w.root, FS: cli, Grace: w.cfg.LeaseTTL, IndexIntervalBytes: w.idxB,
		Now: now, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	return c
}

// compactorBody: each pass reads the topic (as the compactor Lambda does)
// and passes over its partitions in a random order, so passes and writers
// interleave across partitions.
func (w *World) compactorBody(a *Actor) {
	for {
		w.idle(a)
		cli := w.srv.NewClient(a)
		a.onCrash = cli.crash
		c := w.newCompactor(a, cli)
		t, err := w.net.Client(a).Topic(bg, w.topic.Name)
		if err != nil {
			a.note("COMPACT: topic: %v", err)
			continue
		}
		for _, p := range w.s.rng.Perm(t.Partitions) {
			a.note("COMPACT pass %d", p)
			st, err := c.Partition(bg, t, p)
			st.FinalizeSeconds = 0 // wall clock: not part of the deterministic trace
			a.note("COMPACT pass %d: %+v %v", p, st, err)
			w.res.Faults["compactor pass"]++
		}
	}
}

// finalTiering runs two compactor passes over every partition after the
// faults stopped, with no yields, and checks that every sealed segment
// above the log start whose file is not damaged was tiered: one damaged
// segment must not stop tiering of the others.
func (w *World) finalTiering() error {
	if len(w.parts) == 0 {
		return nil
	}
	c := w.newCompactor(nil, w.srv.NewClient(nil))
	for range 2 {
		for p := range w.parts {
			c.Partition(bg, w.topic, p)
		}
	}
	for _, pm := range w.parts {
		p := w.committed(pm)
		cat, _ := w.net.inner.Segments(bg, pm.key, 0, 0)
		for _, s := range p.Sealed {
			if s.NextOffset <= p.LogStartOffset || s.NextOffset == s.Base || pm.dmgFiles[segment.ID{Base: s.Base, Epoch: s.Epoch}.String()] {
				continue
			}
			ok := false
			for _, e := range cat {
				if e.Base == s.Base && e.NextOffset == s.NextOffset {
					ok = true
				}
			}
			if !ok {
				var dmg []string
				for f := range pm.dmgFiles {
					dmg = append(dmg, f)
				}
				return fmt.Errorf("tiering (audit finding 9): %d: sealed segment [%d,%d) epoch %d is not tiered after two passes with the faults stopped (damaged files %v): %s",
					pm.p, s.Base, s.NextOffset, s.Epoch, dmg, itemString(&p))
			}
		}
	}
	return nil
}
