package sim

import (
	"context"
	"reflect"
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

// setHooks sets the simulation's hooks in a partition.Config or
// broker.Config (cfg: a pointer to it) where the checkout has them: Sleep
// (virtual time), Rand (the seed) and BusyWait (chosen by the seed). By
// name, so that the simulation builds against checkouts before them (as
// compat.go does for older contracts).
func (w *World) setHooks(cfg any, a *Actor) {
	v := reflect.ValueOf(cfg).Elem()
	set := func(name string, x any) {
		f := v.FieldByName(name)
		if f.IsValid() && f.CanSet() && reflect.TypeOf(x).AssignableTo(f.Type()) {
			f.Set(reflect.ValueOf(x))
		}
	}
	set("Sleep", w.sleeper(a))
	set("Rand", w.rand64)
	if w.busyWait > 0 {
		set("BusyWait", w.busyWait)
	}
}
