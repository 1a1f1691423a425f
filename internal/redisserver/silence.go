package redisserver

import (
	"fmt"
	"syscall"
)

// A server that falls silent keeps its connections open and answers
// nothing: a paused VM, a partition, a stuck proxy. Freeze makes one, and
// so does a Proxy while muted.

// Freeze stops the server's process with SIGSTOP: connections stay open,
// commands are read by nobody and answered by nobody until Thaw. The
// test's cleanup thaws it before stopping it. It fails on an external
// server or one that is not running.
func (s *Server) Freeze() error { return s.signal("Freeze", syscall.SIGSTOP) }

// Thaw resumes a process stopped by Freeze (SIGCONT): it then runs the
// commands that waited in its sockets, in order.
func (s *Server) Thaw() error { return s.signal("Thaw", syscall.SIGCONT) }

func (s *Server) signal(op string, sig syscall.Signal) error {
	if s.external {
		return s.externalErr(op)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("redisserver: %s %s: the server is not running", op, s.Addr)
	}
	return s.proc.cmd.Process.Signal(sig)
}
