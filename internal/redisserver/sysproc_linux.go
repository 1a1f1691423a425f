//go:build linux

package redisserver

import "syscall"

// sysProcAttr makes the kernel kill the server when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
