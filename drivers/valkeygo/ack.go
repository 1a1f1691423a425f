package valkeygo

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/locker"
)

// EvalShaAck runs EVALSHA as EvalSha does and, pipelined behind it on the
// same connection, WAIT (or, with a.Fsync, WAITAOF).
//
// valkey-go marks WAIT and WAITAOF as blocking commands, so the two never
// travel on the shared auto-pipelined connections: on a single server
// (and a Sentinel-managed primary) one DoMulti sends both on one
// connection of the client's blocking pool, which valkey-go closes rather
// than reuses when a reply failed (ctx included). On a Cluster, DoMulti
// would not keep them together (valkey-go follows a MOVED or ASK reply by
// sending the script alone to another node, leaving the wait's reply from
// the first one), so the two go through a dedicated client (Dedicate)
// bound to keys[0]'s slot, whose connection is closed, not reused, when a
// reply failed. A MOVED or ASK reply to the script (a refusal: it did not
// run) is followed once: both commands go, in one DoMulti, to the node it
// names (see redirect); a second one comes back as it is, for the core to
// try again. Nothing else is sent twice, and valkey-go retries neither
// command.
//
// err is the script's error, translated as EvalSha translates it
// (locker.ErrNoScript included); acked reports the wait: the replicas (and,
// for WAITAOF, the local fsync) that acknowledged, or acked.Err when the
// wait failed (an error reply, a broken connection, ctx). It blocks until
// both replies arrive or ctx is done; a blocking command has no read
// timeout in valkey-go other than ctx's deadline (WAIT's own timeout bounds
// it on the server).
func (s *Scripter) EvalShaAck(ctx context.Context, sha1 string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, a, func(b valkey.Builder) valkey.Completed {
		return b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

// EvalAck is EvalShaAck with EVAL src, as Eval.
func (s *Scripter) EvalAck(ctx context.Context, src string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, a, func(b valkey.Builder) valkey.Completed {
		return b.Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

func (s *Scripter) evalAck(ctx context.Context, a locker.Ack, script func(valkey.Builder) valkey.Completed) (any, locker.Acked, error) {
	wait := func(b valkey.Builder) valkey.Completed {
		if a.Fsync {
			return b.Waitaof().Numlocal(1).Numreplicas(int64(a.Replicas)).Timeout(ackMillis(a)).Build()
		}
		return b.Wait().Numreplicas(int64(a.Replicas)).Timeout(ackMillis(a)).Build()
	}
	var res []valkey.ValkeyResult
	if s.c.Mode() == valkey.ClientModeCluster {
		// The keyed script first: the dedicated client binds to its slot.
		dc, release := s.c.Dedicate()
		res = dc.DoMulti(ctx, script(dc.B()), wait(dc.B()))
		if res[0].NonValkeyError() != nil || res[1].NonValkeyError() != nil {
			dc.Close() // a reply may be pending: never hand the connection on
		} else {
			release()
		}
		res = s.redirect(ctx, res, script, wait)
	} else {
		res = s.c.DoMulti(ctx, script(s.c.B()), wait(s.c.B()))
	}
	r, err := reply(res[0])
	if err != nil {
		return nil, locker.Acked{}, err
	}
	v, werr := reply(res[1])
	return r, ackResult(v, werr, a.Fsync), nil
}

// redirect follows one MOVED or ASK reply to the script (a refusal: the
// script did not run there) by sending the script and the wait again, in
// one DoMulti, to the node the reply names, reached through the client's
// own connection to it (Nodes); after ASK, ASKING goes first on that same
// connection. valkey-go's lazy refresh of the slot map, which the
// redirection also starts, may take up to a second. It returns res
// unchanged for any other reply, or when the client does not know the
// node.
func (s *Scripter) redirect(ctx context.Context, res []valkey.ValkeyResult, script, wait func(valkey.Builder) valkey.Completed) []valkey.ValkeyResult {
	re, ok := valkey.IsValkeyErr(res[0].Error())
	if !ok {
		return res
	}
	addr, moved := re.IsMoved()
	if !moved {
		var ask bool
		if addr, ask = re.IsAsk(); !ask {
			return res
		}
	}
	node, ok := s.c.Nodes()[addr]
	if !ok {
		return res
	}
	b := node.B()
	if moved {
		return node.DoMulti(ctx, script(b), wait(b))
	}
	return node.DoMulti(ctx, b.Asking().Build(), script(b), wait(b))[1:]
}

// ackMillis returns a.Timeout in whole milliseconds, rounded up: WAIT's
// and WAITAOF's timeout argument. A Timeout of zero or less (the core
// never passes one: it validates Options.Ack) counts as
// locker.DefaultAckTimeout, never as the servers' 0, which waits forever.
func ackMillis(a locker.Ack) int64 {
	d := a.Timeout
	if d <= 0 {
		d = locker.DefaultAckTimeout
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// ackResult returns what the wait reported: err as Acked.Err, or, from the
// translated reply v, the replicas that acknowledged (WAIT's integer) or,
// with fsync, WAITAOF's [local, replicas]. A reply of another shape is an
// Acked.Err matching locker.ErrUnexpectedReply.
func ackResult(v any, err error, fsync bool) locker.Acked {
	if err != nil {
		return locker.Acked{Err: err}
	}
	if !fsync {
		n, ok := v.(int64)
		if !ok {
			return locker.Acked{Err: fmt.Errorf("%w: valkeygo: WAIT replied %#v, want an integer", locker.ErrUnexpectedReply, v)}
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
	return locker.Acked{Err: fmt.Errorf("%w: valkeygo: WAITAOF replied %#v, want [local, replicas]", locker.ErrUnexpectedReply, v)}
}
