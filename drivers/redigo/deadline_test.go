package redigo

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// timeoutErr is an I/O timeout, as redigo returns when its read deadline
// passes.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read tcp: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

// TestDeadlineErr checks that an I/O timeout at or after the context's
// deadline carries context.DeadlineExceeded, before the context's own
// timer has fired, and that other errors are left as they are.
func TestDeadlineErr(t *testing.T) {
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	future, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()

	err := deadlineErr(past, timeoutErr{})
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a timeout after the deadline")
	var ne net.Error
	assert.True(t, errors.As(err, &ne), "the I/O cause is kept")

	assert.Equal(t, error(timeoutErr{}), deadlineErr(future, timeoutErr{}), "a timeout before the deadline is the connection's")
	assert.Equal(t, error(timeoutErr{}), deadlineErr(context.Background(), timeoutErr{}), "no deadline")
	other := errors.New("ERR other")
	assert.Equal(t, other, deadlineErr(past, other), "not a timeout")
}
