// Package ackwait is the wait half of locker.Acknowledger, written once:
// the WAIT or WAITAOF command a locker.Ack asks for, and the locker.Acked
// that the command's reply reports. Each driver sends the command on the
// connection that ran the script and translates the reply into the
// Scripter vocabulary (int64, []any) before handing it to [Result].
package ackwait

import (
	"fmt"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// Millis returns a.Timeout in whole milliseconds, rounded up: WAIT's and
// WAITAOF's timeout argument. A Timeout of zero or less (the core never
// passes one: it validates Options.Ack) counts as
// locker.DefaultAckTimeout, never as the servers' 0, which waits forever.
func Millis(a locker.Ack) int64 {
	d := a.Timeout
	if d <= 0 {
		d = locker.DefaultAckTimeout
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Command returns the wait that a asks for: "WAIT <replicas> <ms>", or
// with a.Fsync "WAITAOF 1 <replicas> <ms>", as a command name and its
// arguments (int64 values).
func Command(a locker.Ack) (name string, args []any) {
	if a.Fsync {
		return "WAITAOF", []any{int64(1), int64(a.Replicas), Millis(a)}
	}
	return "WAIT", []any{int64(a.Replicas), Millis(a)}
}

// Result returns what the wait reported: err as Acked.Err, or, from the
// translated reply v, the replicas that acknowledged (WAIT's integer) or,
// with fsync, WAITAOF's [local, replicas]. A reply of another shape is an
// Acked.Err matching locker.ErrUnexpectedReply.
func Result(v any, err error, fsync bool) locker.Acked {
	if err != nil {
		return locker.Acked{Err: err}
	}
	if !fsync {
		n, ok := v.(int64)
		if !ok {
			return locker.Acked{Err: fmt.Errorf("%w: WAIT replied %#v, want an integer", locker.ErrUnexpectedReply, v)}
		}
		return locker.Acked{Replicas: n}
	}
	if a, ok := v.([]any); ok && len(a) == 2 {
		local, ok1 := a[0].(int64)
		replicas, ok2 := a[1].(int64)
		if ok1 && ok2 {
			return locker.Acked{Local: local, Replicas: replicas}
		}
	}
	return locker.Acked{Err: fmt.Errorf("%w: WAITAOF replied %#v, want [local, replicas]", locker.ErrUnexpectedReply, v)}
}
