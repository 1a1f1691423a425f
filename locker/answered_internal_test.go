package locker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

// TestAnswered checks which failed calls count as answered by the server
// (and so need no refusal of a late arrival) and which do not.
func TestAnswered(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{fmt.Errorf("locker: acquire script: %w", errors.New("NOPERM User has no permissions")), true},
		{fmt.Errorf("%w: acquire: got 7", ErrUnexpectedReply), true},
		{context.Canceled, false},
		{fmt.Errorf("locker: acquire script: %w", context.DeadlineExceeded), false},
		{io.EOF, false},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{errors.New("redis: connection pool timeout"), false},
		{errors.New("redigo: connection closed"), false},
	} {
		if got := answered(tc.err); got != tc.want {
			t.Errorf("answered(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
