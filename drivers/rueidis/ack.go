package rueidis

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/drivers/internal/ackwait"
	"github.com/scriptlock/scriptlock/locker"
)

var _ locker.Acknowledger = (*Scripter)(nil)

// EvalShaAck runs EVALSHA as EvalSha does and, pipelined behind it on the
// same connection, WAIT (or, with a.Fsync, WAITAOF).
//
// rueidis marks WAIT and WAITAOF as blocking commands, so the two never
// travel on the shared auto-pipelined connections: on a single server
// (and a Sentinel-managed primary) one DoMulti sends both on one
// connection of the client's blocking pool, which rueidis closes rather
// than reuses when a reply failed (ctx included). On a Cluster, DoMulti
// would not keep them together (rueidis follows a MOVED or ASK reply by
// sending the script alone to another node, leaving the wait's reply from
// the first one), so the two go through a dedicated client (Dedicate)
// bound to keys[0]'s slot, whose connection is closed, not reused, when a
// reply failed. A MOVED or ASK reply to the script (a refusal: it did not
// run) is followed once: both commands go, in one DoMulti, to the node it
// names (see redirect); a second one comes back as it is, for the core to
// try again. Nothing else is sent twice, and rueidis retries neither
// command.
//
// err is the script's error, translated as EvalSha translates it
// (locker.ErrNoScript included); acked reports the wait: the replicas (and,
// for WAITAOF, the local fsync) that acknowledged, or acked.Err when the
// wait failed (an error reply, a broken connection, ctx). It blocks until
// both replies arrive or ctx is done; a blocking command has no read
// timeout in rueidis other than ctx's deadline (WAIT's own timeout bounds
// it on the server).
func (s *Scripter) EvalShaAck(ctx context.Context, sha1 string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, a, func(b rueidis.Builder) rueidis.Completed {
		return b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

// EvalAck is EvalShaAck with EVAL src, as Eval.
func (s *Scripter) EvalAck(ctx context.Context, src string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, a, func(b rueidis.Builder) rueidis.Completed {
		return b.Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	})
}

func (s *Scripter) evalAck(ctx context.Context, a locker.Ack, script func(rueidis.Builder) rueidis.Completed) (any, locker.Acked, error) {
	wait := func(b rueidis.Builder) rueidis.Completed {
		if a.Fsync {
			return b.Waitaof().Numlocal(1).Numreplicas(int64(a.Replicas)).Timeout(ackwait.Millis(a)).Build()
		}
		return b.Wait().Numreplicas(int64(a.Replicas)).Timeout(ackwait.Millis(a)).Build()
	}
	var res []rueidis.RedisResult
	if s.c.Mode() == rueidis.ClientModeCluster {
		// The keyed script first: the dedicated client binds to its slot.
		dc, release := s.c.Dedicate()
		res = dc.DoMulti(ctx, script(dc.B()), wait(dc.B()))
		if res[0].NonRedisError() != nil || res[1].NonRedisError() != nil {
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
	return r, ackwait.Result(v, werr, a.Fsync), nil
}

// redirect follows one MOVED or ASK reply to the script (a refusal: the
// script did not run there) by sending the script and the wait again, in
// one DoMulti, to the node the reply names, reached through the client's
// own connection to it (Nodes); after ASK, ASKING goes first on that same
// connection. rueidis's lazy refresh of the slot map, which the
// redirection also starts, may take up to a second. It returns res
// unchanged for any other reply, or when the client does not know the
// node.
func (s *Scripter) redirect(ctx context.Context, res []rueidis.RedisResult, script, wait func(rueidis.Builder) rueidis.Completed) []rueidis.RedisResult {
	re, ok := rueidis.IsRedisErr(res[0].Error())
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
