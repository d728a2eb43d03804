package bench

import "syscall"

// childSysProcAttr has the kernel kill the harness's children (dynalite,
// the servers) when the harness dies, even by SIGKILL.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
