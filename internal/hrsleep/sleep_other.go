//go:build !unix

package hrsleep

import "time"

func sleep(d time.Duration) { time.Sleep(d) }
