//go:build !linux

package redisserver

import "syscall"

// sysProcAttr returns nil: only Linux can tie the server's life to ours.
func sysProcAttr() *syscall.SysProcAttr { return nil }
