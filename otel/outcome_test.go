package otel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
)

// TestErrorType checks the error.type of the errors the core returns.
func TestErrorType(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: %q", locker.ErrExpired, "a"), "expired"},
		{fmt.Errorf("%w: %q", locker.ErrHeldByOther, "a"), "held_by_other"},
		{locker.ErrClosed, "closed"},
		{fmt.Errorf("%w: empty", locker.ErrInvalidName), "invalid_argument"},
		{fmt.Errorf("%w: 0s not in [1ms, 365 days]", locker.ErrInvalidTTL), "invalid_argument"},
		{locker.ErrNilContext, "invalid_argument"},
		{fmt.Errorf("%w: acquire status 9", locker.ErrUnexpectedReply), "unexpected_reply"},
		{fmt.Errorf("locker: acquire script: %w", context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("locker: acquire script: %w", context.Canceled), "canceled"},
		{errors.New("locker: release script: NOPERM this user has no permissions"), "NOPERM"},
		{errors.New("locker: acquire script: TRYAGAIN Multiple keys request during rehashing of slot"), "TRYAGAIN"},
		{errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"), "WRONGTYPE"},
		{fmt.Errorf("locker: acquire script: %w", io.EOF), "network"},
		{fmt.Errorf("locker: acquire script: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), "network"},
		{fmt.Errorf("locker: acquire script: %w", syscall.EPIPE), "network"},
		{errors.New("something else: OK then"), "_OTHER"},
		{fmt.Errorf("%w: %q: x", locker.ErrExpired, "ABC DEF"), "expired"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, errorType(c.err), "errorType(%q)", c.err)
	}
}

// TestRedact checks that only the quoted name is cut out.
func TestRedact(t *testing.T) {
	assert.Equal(t, `locker: lease expired: "<lock>": validity deadline passed`,
		redact(`locker: lease expired: "a": validity deadline passed`, "a"))
	assert.Equal(t, `locker: lock held by another owner: "<lock>"`,
		redact(`locker: lock held by another owner: "x\"y"`, `x"y`))
	assert.Equal(t, "no name here", redact("no name here", ""))
}
