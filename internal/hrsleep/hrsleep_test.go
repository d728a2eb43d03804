package hrsleep

import (
	"testing"
	"time"
)

// Sleep waits at least d: never less, whatever the timer.
func TestSleepWaitsAtLeastD(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 500 * time.Microsecond, 2700 * time.Microsecond} {
		start := time.Now()
		Sleep(d)
		if took := time.Since(start); took < d {
			t.Errorf("Sleep(%v) returned after %v", d, took)
		}
	}
}

// BenchmarkOvershoot reports how late each wakes from a 2.2 ms wait, as
// ns/op beyond it: Sleep against time.Sleep, on this machine.
func BenchmarkOvershoot(b *testing.B) {
	const d = 2200 * time.Microsecond
	for _, c := range []struct {
		name  string
		sleep func(time.Duration)
	}{{"hrsleep", Sleep}, {"time.Sleep", time.Sleep}} {
		b.Run(c.name, func(b *testing.B) {
			var late time.Duration
			for b.Loop() {
				start := time.Now()
				c.sleep(d)
				late += time.Since(start) - d
			}
			b.ReportMetric(float64(late.Microseconds())/float64(b.N), "µs-late/op")
		})
	}
}
