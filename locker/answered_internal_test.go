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
		{NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value", nil), true},
		{fmt.Errorf("locker: acquire script: %w", NewServerError("NOPERM User has no permissions", nil)), true},
		{fmt.Errorf("%w: acquire: got 7", ErrUnexpectedReply), true},
		{context.Canceled, false},
		{fmt.Errorf("locker: acquire script: %w", context.DeadlineExceeded), false},
		{io.EOF, false},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{errors.New("redis: connection pool timeout"), false},
		{errors.New("redigo: connection closed"), false},
		{errors.New("WRONGTYPE the text of a reply, not marked by the driver"), false},
		{&unknownError{last: NewServerError("LOADING Redis is loading", nil), first: io.EOF}, false},
	} {
		if got := answered(tc.err); got != tc.want {
			t.Errorf("answered(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestTransient checks which failures Lock and the lease operations retry:
// connection failures and timeouts, and the passing server states a
// driver marked as a ServerError.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("write: %w", syscall.EPIPE), true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("locker: acquire script: %w", NewServerError("TRYAGAIN Multiple keys request during rehashing of slot", nil)), true},
		{NewServerError("CLUSTERDOWN The cluster is down", nil), true},
		{NewServerError("LOADING Redis is loading the dataset in memory", nil), true},
		{NewServerError("MASTERDOWN Link with MASTER is down", nil), true},
		{NewServerError("READONLY You can't write against a read only replica.", nil), true},
		{NewServerError("MOVED 3999 127.0.0.1:6381", nil), true},
		{NewServerError("ASK 3999 127.0.0.1:6381", nil), true},
		{NewServerError("NOPERM User has no permissions", nil), false},
		{NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value", nil), false},
		{fmt.Errorf("%w: acquire: got 7", ErrUnexpectedReply), false},
		{context.Canceled, false},
		{fmt.Errorf("locker: no answer: %w", context.DeadlineExceeded), true},
		{errors.New("fake: i/o failure"), false},
		{errors.New("LOADING the text of a reply, not marked by the driver"), false},
		{&unknownError{last: NewServerError("LOADING Redis is loading", nil), first: io.EOF}, false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
