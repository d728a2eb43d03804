//go:build unix

package hrsleep

import (
	"syscall"
	"time"
)

func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR { // ts holds what is left
	}
}
