//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the command of an --exec task, and everything it
// starts, in a process group of its own, and makes a cancel (a lost lease,
// a cancel asked for, the end of the shutdown grace) kill that whole group:
// killing only sh would leave `a | b` or a backgrounded child running,
// holding the output pipe and the handler with it. A Ctrl-C at the terminal
// then reaches the worker only, which lets running commands finish within
// its grace, as 's3q worker --help' says.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
