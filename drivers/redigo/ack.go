package redigo

import (
	"context"
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"

	"github.com/scriptlock/scriptlock/drivers/internal/ackwait"
	"github.com/scriptlock/scriptlock/locker"
)

var _ locker.Acknowledger = (*Scripter)(nil)

// waitSlack is how much longer than the wait's own timeout a Cluster
// connection waits for the wait's reply.
const waitSlack = 5 * time.Second

// EvalShaAck runs EVALSHA as EvalSha does and, pipelined behind it on the
// same connection, WAIT (or, with a.Fsync, WAITAOF): both are sent with
// Send, one Flush, and two Receives. Through a Pool the connection is one
// of the pool's; on a Cluster it is bound to keys[0]'s node (any node when
// there are no keys).
//
// err is the script's error, translated as EvalSha translates it
// (locker.ErrNoScript included). On a Cluster, a MOVED reply to the script
// (a refusal: it did not run) is followed once: redisc points the slot at
// the node the reply names, and both commands go again on a connection
// bound anew. A second MOVED, and ASK (redisc binds connections by key
// only), come back as they are, for the core to try again. acked reports the wait: the replicas (and, for WAITAOF, the
// local fsync) that acknowledged, or acked.Err when the wait failed (an
// error reply, a broken connection, ctx). Nothing else is sent twice.
//
// It blocks until both replies arrive or ctx is done, as EvalSha does.
// Through a Pool, ctx bounds the replies (the connection's write timeout
// the sending), and the replies are read under the connection's read
// timeout too (DialReadTimeout; none by default): keep it above
// a.Timeout. On a Cluster the wait's reply is read with a.Timeout plus 5 s
// as its read timeout, whatever the dial options say.
func (s *Scripter) EvalShaAck(ctx context.Context, sha1 string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, "EVALSHA", s.shas.Box(sha1), keys, args, a)
}

// EvalAck is EvalShaAck with EVAL src, as Eval.
func (s *Scripter) EvalAck(ctx context.Context, src string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, "EVAL", src, keys, args, a)
}

// ackResult is what evalAck's connection work returns.
type ackResult struct {
	reply any
	acked locker.Acked
}

func (s *Scripter) evalAck(ctx context.Context, cmd string, script any, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	if err := ctx.Err(); err != nil {
		return nil, locker.Acked{}, err
	}
	cmdArgs := command(script, keys, args)
	var (
		res ackResult
		err error
	)
	switch b := s.b.(type) {
	case poolBackend:
		res, err = b.ack(ctx, cmd, cmdArgs, a)
	case clusterBackend:
		var v any
		v, err = withContext(ctx, func() (any, error) { return b.ack(keys, cmd, cmdArgs, a) })
		if err == nil {
			res = v.(ackResult)
		}
	default:
		err = errors.New("redigo: acknowledged calls need a Pool or a Cluster")
	}
	if err != nil {
		return nil, locker.Acked{}, translateErr(err)
	}
	return res.reply, res.acked, nil
}

// ack sends the script and the wait on one pooled connection; ctx bounds
// the replies.
func (b poolBackend) ack(ctx context.Context, cmd string, args []any, a locker.Ack) (ackResult, error) {
	conn, err := b.p.GetContext(ctx)
	if err != nil {
		return ackResult{}, err
	}
	defer conn.Close()
	return pipelineAck(conn, cmd, args, a, func() (any, error) { return redis.ReceiveContext(conn, ctx) },
		func() (any, error) { return redis.ReceiveContext(conn, ctx) })
}

// ack sends the script and the wait on one connection bound to keys[0]'s
// node, and, after a MOVED reply to the script (a refusal: it did not run;
// redisc has then pointed the slot at the node it names), once more on a
// connection bound anew. It takes no context: the caller runs it under
// withContext.
func (b clusterBackend) ack(keys []string, cmd string, args []any, a locker.Ack) (any, error) {
	res, err := b.ackOnce(keys, cmd, args, a)
	if re := redisc.ParseRedir(err); re != nil && re.Type == "MOVED" {
		res, err = b.ackOnce(keys, cmd, args, a)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ackOnce is ack without the redirection.
func (b clusterBackend) ackOnce(keys []string, cmd string, args []any, a locker.Ack) (ackResult, error) {
	conn, err := b.bound(keys)
	if err != nil {
		return ackResult{}, err
	}
	defer conn.Close()
	return pipelineAck(conn, cmd, args, a, conn.Receive, func() (any, error) {
		return redis.ReceiveWithTimeout(conn, time.Duration(ackwait.Millis(a))*time.Millisecond+waitSlack)
	})
}

// pipelineAck sends the script and the wait on conn and reads both
// replies, the script's with receive and the wait's with receiveWait (also
// after the script failed, so that no reply is left pending on the
// connection). The error is the script's (or the connection's, when the
// script's reply never came); the wait's own failure is in acked.Err.
func pipelineAck(conn redis.Conn, cmd string, args []any, a locker.Ack, receive, receiveWait func() (any, error)) (ackResult, error) {
	name, wargs := ackwait.Command(a)
	if err := conn.Send(cmd, args...); err != nil {
		return ackResult{}, err
	}
	if err := conn.Send(name, wargs...); err != nil {
		return ackResult{}, err // a full buffer may have been written: the script's outcome is unknown
	}
	if err := conn.Flush(); err != nil {
		return ackResult{}, err
	}
	v, err := receive()
	w, werr := receiveWait() // fails at once when the connection already failed
	if err != nil {
		return ackResult{}, err
	}
	r, err := translate(v)
	if err != nil {
		return ackResult{}, err
	}
	if werr == nil {
		w, werr = translate(w)
	}
	return ackResult{reply: r, acked: ackwait.Result(w, werr, a.Fsync)}, nil
}
