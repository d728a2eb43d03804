package sim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	flagSeeds = flag.Int("sim.seeds", 0, "number of seeds TestSimulate runs (0: the default, or $SIM_SEEDS)")
	flagSeed  = flag.Int64("sim.seed", -1, "run only this seed, with its trace")
	flagSteps = flag.Int("sim.steps", 0, "steps with faults per seed (0: the default)")
	flagFirst = flag.Int64("sim.first", 1, "first seed")
	flagAll   = flag.Bool("sim.traceall", false, "with -sim.seed: print every event, not the last 200")
	flagScale = flag.Float64("sim.faults", 1, "multiply every fault rate by this")
	flagModes = flag.String("sim.modes", "", "weights of plain, keyed, conditional and key-reusing batches, as 4,12,3,1 (empty: the default)")
	flagLone  = flag.Bool("sim.lone", false, "TestSimulate runs the lone-writer world (TestSimulateLone) for every seed")
)

// defaultSeeds is what CI runs: at least 2,000 seeds.
const defaultSeeds = 2000

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

func simConfig(seed uint64) Config {
	cfg := DefaultConfig(seed)
	if *flagLone {
		lone(&cfg)
	}
	if *flagSteps > 0 {
		cfg.Steps = *flagSteps
	} else if n := envInt("SIM_STEPS"); n > 0 {
		cfg.Steps = n
	} else if raceSteps > 0 {
		cfg.Steps = raceSteps
	}
	if *flagScale != 1 {
		cfg.Scale(*flagScale)
	}
	if *flagModes != "" {
		if _, err := fmt.Sscanf(*flagModes, "%d,%d,%d,%d", &cfg.Modes[0], &cfg.Modes[1], &cfg.Modes[2], &cfg.Modes[3]); err != nil {
			panic("sim.modes: " + err.Error())
		}
	}
	applyOpen(&cfg)
	return cfg
}

// TestSimulate runs many seeds of the default world (writers, zombies,
// readers over the simulated NFS and metadata store) and fails on the
// first violation, printing its seed, its trace and the command that runs
// it again.
func TestSimulate(t *testing.T) {
	logOpen(t)
	if *flagSeed >= 0 {
		runOne(t, uint64(*flagSeed))
		return
	}
	sweep(t, seeds(), uint64(*flagFirst), simConfig)
}

// seeds is how many seeds TestSimulate runs: -sim.seeds, $SIM_SEEDS or
// defaultSeeds.
func seeds() int {
	n := *flagSeeds
	if n == 0 {
		n = envInt("SIM_SEEDS")
	}
	if n == 0 {
		n = defaultSeeds
	}
	return n
}

// lone makes cfg the lone-writer world: one Lambda container alone on its
// partitions (with readers, compactors, maybe an admin), so it parks its
// lease and hands what follows each round's answers to Config.Detach,
// where the scheduler's crashes and freezes meet it.
func lone(cfg *Config) {
	cfg.Solo, cfg.Detach, cfg.Churn = true, 1, -1
	cfg.AtDetached = 0.2
}

// TestSimulateLone runs a quarter as many seeds as TestSimulate of the
// lone-writer world (lone), which TestSimulate gives an eighth of its
// seeds, half of them without Detach.
func TestSimulateLone(t *testing.T) {
	if *flagSeed >= 0 || *flagLone {
		t.Skip("TestSimulate runs the seeds asked for")
	}
	sweep(t, max(1, seeds()/4), uint64(*flagFirst), func(seed uint64) Config {
		cfg := simConfig(seed)
		lone(&cfg)
		return cfg
	})
}

// sweep runs n seeds from first, configured by config, on every core,
// and fails with the trace of the lowest failing seed.
func sweep(t *testing.T, n int, first uint64, config func(uint64) Config) {
	workers := runtime.GOMAXPROCS(0)
	var (
		next     atomic.Uint64
		steps    atomic.Int64
		acked    atomic.Int64
		reads    atomic.Int64
		kept     atomic.Int64
		detached atomic.Int64  // Result.Detached
		lost     atomic.Int64  // Result.DetachedLost
		slowest  time.Duration // the longest Result.Recovery, and its seed: under mu
		slowSeed uint64
		mu       sync.Mutex
		faults   = map[string]int{}
		failed   []uint64
		stopped  atomic.Bool
		wg       sync.WaitGroup
	)
	next.Store(first)
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped.Load() {
				seed := next.Add(1) - 1
				if seed >= first+uint64(n) {
					return
				}
				res := Run(config(seed))
				steps.Add(int64(res.Steps))
				acked.Add(int64(res.Acked))
				reads.Add(int64(res.Reads))
				kept.Add(int64(res.KeptAnswers))
				detached.Add(int64(res.Detached))
				lost.Add(int64(res.DetachedLost))
				mu.Lock()
				if res.Recovery > slowest {
					slowest, slowSeed = res.Recovery, seed
				}
				for k, v := range res.Faults {
					faults[k] += v
				}
				if res.Violation != nil {
					failed = append(failed, seed)
					stopped.Store(true)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	t.Logf("%d seeds from %d, %d steps in %v: %.0f steps/s, %d records acknowledged (%.1f per seed), %d reads (%d answered with a kept answer), slowest recovery %v (seed %d)",
		n, first, steps.Load(), el.Round(time.Millisecond), float64(steps.Load())/el.Seconds(), acked.Load(), float64(acked.Load())/float64(n), reads.Load(), kept.Load(), slowest, slowSeed)
	t.Logf("faults injected: %v", faults)
	t.Logf("work after a lone writer's answer (partition.Config.Detach): %d ran, %d lost with their process", detached.Load(), lost.Load())
	if len(failed) > 0 {
		seed := failed[0]
		for _, s := range failed {
			seed = min(seed, s)
		}
		report(t, seed, config)
	}
}

// runOne runs one seed with its trace.
func runOne(t *testing.T, seed uint64) {
	cfg := simConfig(seed)
	cfg.Trace, cfg.TraceAll = true, *flagAll
	cfg.Logf = t.Logf
	res := Run(cfg)
	t.Logf("seed %d: %d steps, %d appends (%d ok), %d records acknowledged, %d reads (%d kept answers), hw %d, faults %v",
		seed, res.Steps, res.Appends, res.AppendOK, res.Acked, res.Reads, res.KeptAnswers, res.HW, res.Faults)
	if res.Violation != nil {
		t.Errorf("%v\n\ntrace (step, virtual time, actor, what):\n%s\nrun again: %s", res.Violation, res.Violation.Trace, rerun(seed))
		return
	}
	if testing.Verbose() {
		t.Logf("trace:\n%s", res.Trace)
	}
}

// report re-runs a failing seed with tracing (the run is deterministic: it
// must fail the same way) and fails the test with the trace.
func report(t *testing.T, seed uint64, config func(uint64) Config) {
	t.Helper()
	cfg := config(seed)
	plain := Run(cfg)
	cfg.Trace = true
	res := Run(cfg)
	if res.Violation == nil {
		t.Fatalf("seed %d failed (%v) but not when traced: the simulation is not deterministic", seed, plain.Violation)
	}
	if plain.Violation != nil && (plain.Violation.Step != res.Violation.Step || plain.Violation.Err.Error() != res.Violation.Err.Error()) {
		t.Errorf("seed %d: traced run differs: %v vs %v (not deterministic)", seed, plain.Violation, res.Violation)
	}
	again := rerun(seed)
	if cfg.Solo && !*flagLone {
		again += " -sim.lone"
	}
	t.Fatalf("%v\n\ntrace (step, virtual time, actor, what):\n%s\nrun again: %s", res.Violation, res.Violation.Trace, again)
}

func rerun(seed uint64) string {
	s := fmt.Sprintf("go test ./internal/sim -run 'TestSimulate$' -sim.seed %d", seed)
	if *flagSteps > 0 {
		s += fmt.Sprintf(" -sim.steps %d", *flagSteps)
	}
	if *flagScale != 1 {
		s += fmt.Sprintf(" -sim.faults %g", *flagScale)
	}
	if *flagModes != "" {
		s += fmt.Sprintf(" -sim.modes %s", *flagModes)
	}
	if *flagLone {
		s += " -sim.lone"
	}
	return s + " -v"
}

// TestDeterministic runs a few seeds twice and compares the traces.
func TestDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := simConfig(seed)
		cfg.Trace, cfg.TraceAll = true, true
		a, b := Run(cfg), Run(cfg)
		if a.Trace != b.Trace {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		if a.Steps < 100 || a.Appends == 0 {
			t.Fatalf("seed %d: only %d steps, %d appends", seed, a.Steps, a.Appends)
		}
	}
}

// TestChecksCatchLostData is the simulation's self-test: with an fsync that
// lies (drops the pages, reports success) acknowledged records are lost, and
// the checks must say so within a few seeds.
func TestChecksCatchLostData(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		cfg := DefaultConfig(seed)
		cfg.FS = FSFaults{LyingFsync: 0.3}
		cfg.Meta = MetaFaults{}
		if res := Run(cfg); res.Violation != nil {
			t.Logf("seed %d: %v", seed, res.Violation)
			return
		}
	}
	t.Fatal("50 seeds with a lying fsync and no violation found: the checks are blind")
}
