package sim

import (
	"context"
	"time"
)

// opSleep is where an actor waits in virtual time inside an operation
// (a batch waiting for its turn polls the partition item).
const opSleep = "sleep"

// sleeper is the Sleep hook of partition.Config for actor a: a yield point
// that waits d of virtual time. In a scenario (one actor stepped at a
// time) the clock moves by d: nobody else runs meanwhile.
func (w *World) sleeper(a *Actor) func(ctx context.Context, d time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		if a == nil {
			return ctx.Err()
		}
		if w.script {
			w.s.now += d
		} else {
			a.pausedUntil = w.s.now + d
		}
		if !a.enter(opSleep, "") {
			return errDead
		}
		return ctx.Err()
	}
}

// rand64 is the Rand hook: the seeded source.
func (w *World) rand64() uint64 { return w.s.rng.Uint64() }
