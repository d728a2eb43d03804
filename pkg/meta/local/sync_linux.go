package local

import (
	"os"
	"syscall"
)

// datasync makes f's data and size durable: fdatasync, which skips the
// timestamps an fsync would also write.
func datasync(f *os.File) error {
	return syscall.Fdatasync(int(f.Fd()))
}
