//go:build !linux

package local

import "os"

// datasync makes f's data and size durable. Outside Linux it is f.Sync
// (F_FULLFSYNC on macOS).
func datasync(f *os.File) error {
	return f.Sync()
}
