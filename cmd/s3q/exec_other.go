//go:build !unix

package main

import "os/exec"

// ownProcessGroup leaves the command as it is where there are no process
// groups; WaitDelay still stops the handler waiting on a pipe a child holds.
func ownProcessGroup(cmd *exec.Cmd) {}
