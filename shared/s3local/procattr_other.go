//go:build !linux

package s3local

import "syscall"

// sysProcAttr is nil where the kernel cannot tie the gateway's life to
// this process.
func sysProcAttr() *syscall.SysProcAttr { return nil }
