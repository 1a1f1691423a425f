package goredis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/internal/boxed"
	"github.com/scriptlock/scriptlock/drivers/internal/pubsubmux"
	"github.com/scriptlock/scriptlock/drivers/internal/scriptload"
	"github.com/scriptlock/scriptlock/drivers/internal/servererr"
	"github.com/scriptlock/scriptlock/locker"
)

// Scripter runs scriptlock's scripts through a go-redis client. It is safe
// for concurrent use by multiple goroutines, as the client is.
type Scripter struct {
	c    redis.Scripter
	do   doer           // c, when it has Do: a call then boxes each argument once
	mux  *pubsubmux.Mux // pub/sub connections for Subscribe, opened on demand
	shas boxed.Cache    // script SHA-1s, boxed once as arguments
}

// doer is the generic command method of go-redis's clients (Client,
// ClusterClient, Ring, Conn). Through it a call builds its argument list
// once; go-redis's EvalSha copies keys and arguments into a list of its own.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

var (
	_ locker.Scripter   = (*Scripter)(nil)
	_ locker.Subscriber = (*Scripter)(nil)
	_ locker.Batcher    = (*Scripter)(nil)
)

// New returns a Scripter that sends its commands through c. The client stays
// owned by the caller: closing it is the caller's job, and c must stay open
// while the Scripter is in use. The Scripter owns only the pub/sub
// connections it opens for Subscribe (through c's node clients), and
// closes each when its last subscription ends.
func New(c redis.Scripter) *Scripter {
	d, _ := c.(doer)
	return &Scripter{c: c, do: d, mux: pubsubmux.New("goredis", newTransport(c))}
}

// EvalSha runs EVALSHA sha1 with keys and args and returns the translated
// reply: nil (a Redis nil or a Lua false), int64 (a Lua
// true becomes 1), string, or []any of these. On a Cluster or Ring the command
// is routed by keys[0]; with no keys it goes to any node.
//
// It blocks until the reply arrives or the client gives up. A ctx that is
// already done fails the call at once; with ContextTimeoutEnabled set, ctx's
// deadline also bounds the socket I/O (see the package doc on cancellation in
// flight). If the server does not hold the script it returns an error that
// matches locker.ErrNoScript and still carries the server's message. Any
// other error, including a server error raised by the script, is returned as
// go-redis reports it.
func (s *Scripter) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	if s.do != nil {
		return reply(s.do.Do(ctx, command("evalsha", s.shas.Box(sha1), keys, args)...).Result())
	}
	return reply(s.c.EvalSha(ctx, sha1, keys, anyArgs(args)...).Result())
}

// command returns the argument list of EVAL or EVALSHA: name, script,
// number of keys, keys, arguments. go-redis routes it by keys[0] (its
// first key position for these commands is 3 when there are keys, which it
// reads from the key count as text). The keys and arguments are not copied
// (boxed.AppendRefs): the list allocates once, whatever their number, and
// go-redis, its hooks included, sees them as strings.
func command(name string, script any, keys, args []string) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, name, script, boxed.Int(len(keys)))
	out = boxed.AppendRefs(out, keys)
	return boxed.AppendRefs(out, args)
}

// Eval runs EVAL src with keys and args. Routing, blocking, replies and errors
// are as for EvalSha.
func (s *Scripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	if s.do != nil {
		return reply(s.do.Do(ctx, command("eval", src, keys, args)...).Result())
	}
	return reply(s.c.Eval(ctx, src, keys, anyArgs(args)...).Result())
}

// ScriptLoad sends SCRIPT LOAD src to every master the client knows, one
// after the other in the order of their addresses, and returns the SHA-1
// they report: on a *redis.ClusterClient every master of its slot map
// (never a replica: go-redis's own ClusterClient.ScriptLoad also loads the
// replicas and fails when one is down), on a *redis.Ring every live shard
// (its own ScriptLoad reaches one random shard), and on any other client
// the server it talks to.
//
// It blocks until every master has answered or ctx is done, and tries every
// master even when some fail. It returns the SHA-1 only when all of them
// loaded the script; otherwise an error that names each failed master with
// its error (a master not tried because ctx ended fails with ctx's error).
// It adds no retry of its own (go-redis may retry a command on a network
// error); masters that loaded the script keep it.
func (s *Scripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	var (
		nodes []scriptload.Node
		err   error
	)
	switch c := s.c.(type) {
	case *redis.ClusterClient:
		nodes, err = shards(ctx, c.ForEachMaster, src)
	case *redis.Ring:
		nodes, err = shards(ctx, c.ForEachShard, src)
	default:
		addr := "the server"
		if o, ok := c.(interface{ Options() *redis.Options }); ok {
			addr = o.Options().Addr
		}
		nodes = []scriptload.Node{{Addr: addr, Load: func(ctx context.Context) (string, error) {
			return s.c.ScriptLoad(ctx, src).Result()
		}}}
	}
	if err != nil {
		return "", fmt.Errorf("goredis: SCRIPT LOAD: list the masters: %w", err)
	}
	return scriptload.Run(ctx, "goredis", nodes)
}

// shards lists, through forEach (ClusterClient.ForEachMaster or
// Ring.ForEachShard, which reload the client's view of the nodes when it is
// stale), the node clients that ScriptLoad loads src on. It sends nothing
// to the nodes.
func shards(ctx context.Context, forEach func(context.Context, func(context.Context, *redis.Client) error) error, src string) ([]scriptload.Node, error) {
	var (
		mu    sync.Mutex
		nodes []scriptload.Node
	)
	err := forEach(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, scriptload.Node{Addr: c.Options().Addr, Load: func(ctx context.Context) (string, error) {
			return c.ScriptLoad(ctx, src).Result()
		}})
		return nil
	})
	return nodes, err
}

// anyArgs converts string arguments to the []any go-redis takes.
func anyArgs(args []string) []any {
	if len(args) == 0 {
		return nil
	}
	return boxed.AppendRefs(make([]any, 0, len(args)), args)
}

// reply translates a go-redis result into the Scripter vocabulary. A
// server's error reply (go-redis's redis.Error that is not a network
// error) becomes a locker.ServerError; other errors pass unchanged.
func reply(v any, err error) (any, error) {
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		return nil, serverErr(err)
	}
	return translate(v)
}

// serverErr returns err as a locker.ServerError when it is a server's
// error reply, else unchanged.
func serverErr(err error) error {
	var re redis.Error
	if !errors.As(err, &re) || isNetErr(err) {
		return err
	}
	return servererr.New(re.Error(), err)
}

// translate maps one reply value, as go-redis decodes RESP2 and RESP3, onto
// nil, int64, string and []any. An error nested in an array is returned as
// the call's error.
func translate(r any) (any, error) {
	switch v := r.(type) {
	case nil, int64, string: // returned as they are, not boxed again
		return r, nil
	case bool: // RESP3 boolean: Lua true is 1 and Lua false is nil, as in RESP2.
		if v {
			return int64(1), nil
		}
		return nil, nil
	case []any: // go-redis made it for this call alone: translated in place
		for i, e := range v {
			t, err := translate(e)
			if err != nil {
				return nil, err
			}
			v[i] = t
		}
		return r, nil
	case map[any]any: // RESP3 map: flattened to key, value pairs as RESP2 sends them.
		out := make([]any, 0, 2*len(v))
		for k, e := range v {
			tk, err := translate(k)
			if err != nil {
				return nil, err
			}
			te, err := translate(e)
			if err != nil {
				return nil, err
			}
			out = append(out, tk, te)
		}
		return out, nil
	case float64: // RESP3 double: its text, as RESP2 sends it.
		return formatDouble(v), nil
	case *big.Int: // RESP3 big number: its text, as RESP2 sends it.
		return v.String(), nil
	case error: // A server error nested in an array.
		return nil, serverErr(v)
	default:
		return nil, fmt.Errorf("%w: goredis: reply of type %T", locker.ErrUnexpectedReply, v)
	}
}

// formatDouble renders a RESP3 double the way Redis renders it as a RESP2
// bulk string (printf "%.17g", inf, -inf, nan).
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// EvalShaBatch runs calls as EvalSha would, in one go-redis pipeline (one
// round trip per node: a ClusterClient or Ring splits it by key), and
// returns their results in order. With a client that has no Pipeline it
// runs them one after the other. It blocks until every call has a result
// or ctx is done.
func (s *Scripter) EvalShaBatch(ctx context.Context, calls []locker.ScriptCall) []locker.ScriptResult {
	out := make([]locker.ScriptResult, len(calls))
	p, ok := s.c.(interface{ Pipeline() redis.Pipeliner })
	if !ok || s.do == nil {
		for i, c := range calls {
			out[i].Reply, out[i].Err = s.EvalSha(ctx, c.SHA1, c.Keys, c.Args)
		}
		return out
	}
	pipe := p.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = pipe.Do(ctx, command("evalsha", s.shas.Box(c.SHA1), c.Keys, c.Args)...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, cmd := range cmds {
		out[i].Reply, out[i].Err = reply(cmd.Result())
	}
	return out
}
