//go:build unix

package redisserver

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// peekIdle returns nil when nc, a connection nobody reads, is open with
// nothing to read: io.EOF once the server closed it, an error when it
// sent bytes nobody asked for. It does not block.
func peekIdle(nc net.Conn) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var peekErr error
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n == 0 && err == nil:
			peekErr = io.EOF
		case n > 0:
			peekErr = errors.New("redisserver: unread bytes on an idle connection")
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			peekErr = nil
		default:
			peekErr = err
		}
		return true
	})
	if err != nil {
		return err
	}
	return peekErr
}
