package s3local

import "syscall"

// sysProcAttr has the kernel kill the gateway if this process dies without
// closing it (a test binary that panics or times out).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
