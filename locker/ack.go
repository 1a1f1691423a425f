package locker

import (
	"context"
	"fmt"
	"time"
)

// Acknowledger is an optional interface a Scripter may implement: a script
// call followed, on the same connection, by WAIT (or WAITAOF), so that the
// call's writes are known to have reached replicas (or disk) before it
// returns. WAIT counts only the writes of its own connection and is refused
// inside scripts, so only the driver can do this: it sends the script and
// the wait together (pipelined) on the connection of the node that serves
// keys[0] (on a Cluster, that key's master; after a MOVED or ASK reply the
// driver may follow, the node it names).
//
// The core uses it only when Options.Ack is set, and New refuses that
// option (ErrInvalidOption) for a Scripter that does not implement it;
// without Options.Ack the core never calls it. With Options.Ack every call
// that may write (all but the read-only TTL and Inspect scripts) goes
// through EvalShaAck or EvalAck, one by one (auto-refresh then does not
// batch refreshes).
type Acknowledger interface {
	// EvalShaAck runs the cached script as EvalSha does and then, on the
	// same connection, waits as a describes. err is the script's error,
	// exactly as EvalSha returns it (ErrNoScript included); when it is
	// not nil the wait's outcome does not matter. When the script ran,
	// acked reports the wait: how many replicas (and, for WAITAOF, whether
	// the node itself) acknowledged, or acked.Err when the wait failed
	// (refused by the server, the connection broke, ctx ended). It follows
	// the Scripter rules, the re-send rule included.
	EvalShaAck(ctx context.Context, sha1 string, keys, args []string, a Ack) (reply any, acked Acked, err error)
	// EvalAck is EvalShaAck for the script source src, as Eval.
	EvalAck(ctx context.Context, src string, keys, args []string, a Ack) (reply any, acked Acked, err error)
}

// Ack is what a write must be acknowledged by before a call that made it
// succeeds: Options.Ack, and the argument of Acknowledger's methods.
type Ack struct {
	// Replicas is how many replicas must acknowledge the write: the
	// numreplicas of WAIT (or of WAITAOF, with Fsync). At least 1 without
	// Fsync, at least 0 with it. Required.
	Replicas int

	// Timeout bounds the wait (the timeout of WAIT or WAITAOF, in whole
	// milliseconds, rounded up: never 0, which waits forever); the time
	// counts against the lease's validity, which starts before the call is
	// sent. Drivers read the wait's reply under their client's read
	// timeout, so keep that above Timeout. Must be in [1ms, 1m]. Default
	// 1s.
	Timeout time.Duration

	// Fsync waits with WAITAOF 1 <Replicas> instead of WAIT: the write must
	// be fsynced to the append-only file of the node that ran it and of
	// Replicas replicas. It needs Redis 7.2 or Valkey, with appendonly
	// enabled on those nodes (otherwise every call fails with the server's
	// error as an AckError). Default false: WAIT, acknowledged in memory.
	Fsync bool
}

// DefaultAckTimeout is Ack.Timeout's default.
const DefaultAckTimeout = time.Second

// Acked is the outcome of the wait after a script call.
type Acked struct {
	// Replicas is how many replicas acknowledged (WAIT's reply, or the
	// second number of WAITAOF's).
	Replicas int64
	// Local is WAITAOF's first number: 1 when the node that ran the
	// script fsynced the write. Always 0 for WAIT.
	Local int64
	// Err is the wait's own failure: an error reply (WAITAOF unknown,
	// appendonly disabled, WAIT on a replica), a broken connection or ctx.
	Err error
}

// AckError is the error of a call whose script ran but whose writes were
// not acknowledged as Options.Ack asks: within Timeout fewer replicas
// acknowledged (or the node did not fsync), or the wait itself failed. It
// matches ErrNotAcknowledged. The core treats the call as one with an
// unknown outcome (its writes may be lost by a failover): an acquire is
// undone in the background and returns this error, an Extend does not
// lengthen the lease's validity, an Unlock is retried in the background.
type AckError struct {
	Want Ack   // what was asked
	Got  Acked // what the wait reported
}

// Error says what was asked and what came back.
func (e *AckError) Error() string {
	s := fmt.Sprintf("write not acknowledged: %d of %d replicas", e.Got.Replicas, e.Want.Replicas)
	if e.Want.Fsync {
		s = fmt.Sprintf("write not fsynced: local %d of 1, %d of %d replicas", e.Got.Local, e.Got.Replicas, e.Want.Replicas)
	}
	s += fmt.Sprintf(" within %v", e.Want.Timeout)
	if e.Got.Err != nil {
		s += " (the wait failed: " + e.Got.Err.Error() + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrNotAcknowledged) hold.
func (e *AckError) Is(target error) bool { return target == ErrNotAcknowledged }

// Unwrap returns the wait's own error, if any.
func (e *AckError) Unwrap() error { return e.Got.Err }

// withDefaults validates a and fills in the default timeout.
func (a Ack) withDefaults() (Ack, error) {
	if a.Timeout == 0 {
		a.Timeout = DefaultAckTimeout
	}
	if a.Timeout < time.Millisecond || a.Timeout > time.Minute {
		return a, fmt.Errorf("%w: Ack.Timeout %v not in [1ms, 1m]", ErrInvalidOption, a.Timeout)
	}
	if a.Replicas < 0 || a.Replicas == 0 && !a.Fsync {
		return a, fmt.Errorf("%w: Ack.Replicas %d: want at least 1 (0 only with Fsync)", ErrInvalidOption, a.Replicas)
	}
	return a, nil
}

// met reports whether the wait's outcome meets a.
func (a Ack) met(got Acked) bool {
	return got.Err == nil && got.Replicas >= int64(a.Replicas) && (!a.Fsync || got.Local >= 1)
}

// acked turns an acknowledged call's outcome into run's.
func (c *Client) acked(r any, got Acked, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if !c.ack.met(got) {
		return nil, &AckError{Want: c.ack, Got: got}
	}
	return r, nil
}
