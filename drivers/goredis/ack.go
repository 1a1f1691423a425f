package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/internal/ackwait"
	"github.com/scriptlock/scriptlock/locker"
)

var _ locker.Acknowledger = (*Scripter)(nil)

// EvalShaAck runs EVALSHA as EvalSha does and, pipelined behind it on the
// same connection, WAIT (or, with a.Fsync, WAITAOF): one go-redis pipeline
// of two commands on one *redis.Client, which go-redis sends over one
// connection. On a *redis.ClusterClient that client is the master of
// keys[0]'s slot (MasterForKey; a ClusterClient pipeline would send the
// keyless WAIT to any node). Other clients (Ring, ...) fail with an error
// saying so, before anything is sent.
//
// err is the script's error, translated as EvalSha translates it
// (locker.ErrNoScript included). A MOVED or ASK reply to the script (a
// refusal: it did not run) makes the ClusterClient reload its slot map and
// is followed once: both commands go again, in one pipeline (after
// ASKING, for ASK), to the node the reply names, when the ClusterClient
// knows it (as a master or a replica: one may just have taken over); a
// second redirection, or one to an unknown node, comes back as it is, for
// the core to try again. acked reports the wait: the replicas (and, for
// WAITAOF, the local fsync) that acknowledged, or acked.Err when the wait
// failed (an error reply, a broken connection, ctx). go-redis never
// retries the pipeline (its script command is marked NoRetry), so the
// script runs at most once.
//
// It blocks until both replies arrive or the client gives up. go-redis
// reads a pipeline's replies under the client's ReadTimeout (default 5 s;
// and ctx's deadline, with ContextTimeoutEnabled), not under the longer
// read timeout it gives a lone WAIT: with an a.Timeout that long, a wait
// that runs its full course ends in a read timeout (acked.Err, the
// connection dropped) rather than in a count.
func (s *Scripter) EvalShaAck(ctx context.Context, sha1 string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, command("evalsha", s.shas.Box(sha1), keys, args), keys, a)
}

// EvalAck is EvalShaAck with EVAL src, as Eval.
func (s *Scripter) EvalAck(ctx context.Context, src string, keys, args []string, a locker.Ack) (any, locker.Acked, error) {
	return s.evalAck(ctx, command("eval", src, keys, args), keys, a)
}

func (s *Scripter) evalAck(ctx context.Context, script []any, keys []string, a locker.Ack) (any, locker.Acked, error) {
	switch c := s.c.(type) {
	case *redis.Client:
		return pipelineAck(ctx, c, script, a, false)
	case *redis.ClusterClient:
		key := ""
		if len(keys) > 0 {
			key = keys[0]
		}
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			c.ReloadState(ctx)
			return nil, locker.Acked{}, fmt.Errorf("goredis: the master of key %q: %w", key, err)
		}
		r, acked, err := pipelineAck(ctx, node, script, a, false)
		addr, ask, ok := redirection(err)
		if !ok {
			return r, acked, err
		}
		c.ReloadState(ctx)
		if node = nodeAt(ctx, c, addr); node == nil {
			return r, acked, err
		}
		return pipelineAck(ctx, node, script, a, ask)
	default:
		return nil, locker.Acked{}, fmt.Errorf("goredis: acknowledged calls (WAIT) need a *redis.Client or *redis.ClusterClient, not %T", s.c)
	}
}

// pipelineAck sends script and the wait a asks for to node in one
// pipeline (after ASKING, when asking is set) and returns the script's
// translated reply or error and the wait's outcome.
func pipelineAck(ctx context.Context, node *redis.Client, script []any, a locker.Ack, asking bool) (any, locker.Acked, error) {
	run := redis.NewCmd(ctx, script...)
	name, wargs := ackwait.Command(a)
	wait := redis.NewCmd(ctx, append([]any{name}, wargs...)...)
	pipe := node.Pipeline()
	if asking {
		_ = pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
	}
	_ = pipe.Process(ctx, noRetry{run})
	_ = pipe.Process(ctx, wait)
	_, _ = pipe.Exec(ctx) // each command carries its own error
	r, err := reply(run.Result())
	if err != nil {
		return nil, locker.Acked{}, err
	}
	v, werr := reply(wait.Result())
	return r, ackwait.Result(v, werr, a.Fsync), nil
}

// redirection returns the address of a MOVED or ASK error reply, and
// whether it is ASK.
func redirection(err error) (addr string, ask, ok bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return "", false, false
	}
	f := strings.Fields(re.Error())
	if len(f) != 3 || f[0] != "MOVED" && f[0] != "ASK" {
		return "", false, false
	}
	return f[2], f[0] == "ASK", true
}

// nodeAt returns c's client for the node at addr, master or replica of
// its current view (a replica may just have taken over), or nil.
func nodeAt(ctx context.Context, c *redis.ClusterClient, addr string) *redis.Client {
	var (
		mu    sync.Mutex
		found *redis.Client
	)
	_ = c.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error {
		if n.Options().Addr == addr {
			mu.Lock()
			found = n
			mu.Unlock()
		}
		return nil
	})
	return found
}

// noRetry marks a command that go-redis must not send again: a pipeline
// holding one is never retried (go-redis otherwise runs the whole
// pipeline again after a network error or a read timeout, the script
// included).
type noRetry struct{ *redis.Cmd }

// NoRetry reports true.
func (noRetry) NoRetry() bool { return true }
