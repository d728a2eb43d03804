//go:build !linux

package bench

import "syscall"

// childSysProcAttr: outside Linux there is no parent-death signal; the
// harness kills its children when it returns or is interrupted.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
