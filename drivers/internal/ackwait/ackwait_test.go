package ackwait

import (
	"errors"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
)

func TestCommand(t *testing.T) {
	name, args := Command(locker.Ack{Replicas: 2, Timeout: 1500 * time.Microsecond})
	assert.Equal(t, "WAIT", name)
	assert.Equal(t, []any{int64(2), int64(2)}, args, "1.5 ms rounds up to 2 ms")

	name, args = Command(locker.Ack{Replicas: 0, Timeout: time.Second, Fsync: true})
	assert.Equal(t, "WAITAOF", name)
	assert.Equal(t, []any{int64(1), int64(0), int64(1000)}, args)

	assert.Equal(t, locker.DefaultAckTimeout.Milliseconds(), Millis(locker.Ack{Replicas: 1}), "no timeout: the default, never WAIT's 0 (forever)")
}

func TestResult(t *testing.T) {
	boom := errors.New("boom")
	assert.Equal(t, locker.Acked{Err: boom}, Result(nil, boom, false))
	assert.Equal(t, locker.Acked{Replicas: 3}, Result(int64(3), nil, false))
	assert.Equal(t, locker.Acked{Local: 1, Replicas: 2}, Result([]any{int64(1), int64(2)}, nil, true))
	for _, bad := range []struct {
		v     any
		fsync bool
	}{{"3", false}, {[]any{int64(1)}, true}, {int64(1), true}, {[]any{"1", int64(2)}, true}} {
		got := Result(bad.v, nil, bad.fsync)
		assert.ErrorIs(t, got.Err, locker.ErrUnexpectedReply, "reply %#v (fsync %v)", bad.v, bad.fsync)
	}
}
