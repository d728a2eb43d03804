// Package hrsleep waits with the kernel's high-resolution timer, for the
// harnesses that charge latencies of a few milliseconds (the hot tier's
// latency profiles, the DynamoDB delay proxy, the API Gateway overhead).
//
// The Go runtime's timers wake a sleeping goroutine up to a millisecond
// late on Linux: the scheduler's poller waits in whole milliseconds. On
// the machines these benchmarks run on, time.Sleep(2.2 ms) took 3.2 ms at
// the median, nanosleep 2.3 ms: a harness charging 2.7 ms for an EFS write
// and 5 ms for a DynamoDB request on time.Sleep added a millisecond to
// each, about 3 ms to a produce that waits on three of them.
package hrsleep

import "time"

// Sleep waits d (nothing if d <= 0). It blocks its OS thread in nanosleep
// where the platform has it (the runtime hands the thread's processor to
// other goroutines meanwhile), else it is time.Sleep.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	sleep(d)
}
