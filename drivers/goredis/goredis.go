package goredis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/internal/pubsubmux"
	"github.com/scriptlock/scriptlock/locker"
)

// Scripter runs scriptlock's scripts through a go-redis client. It is safe
// for concurrent use by multiple goroutines, as the client is.
type Scripter struct {
	c   redis.Scripter
	mux *pubsubmux.Mux // pub/sub connections for Subscribe, opened on demand
}

var (
	_ locker.Scripter   = (*Scripter)(nil)
	_ locker.Subscriber = (*Scripter)(nil)
)

// New returns a Scripter that sends its commands through c. The client stays
// owned by the caller: closing it is the caller's job, and c must stay open
// while the Scripter is in use. The Scripter owns only the pub/sub
// connections it opens for Subscribe (through c's node clients), and
// closes each when its last subscription ends.
func New(c redis.Scripter) *Scripter {
	return &Scripter{c: c, mux: pubsubmux.New("goredis", newTransport(c))}
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
	return reply(s.c.EvalSha(ctx, sha1, keys, anyArgs(args)...).Result())
}

// Eval runs EVAL src with keys and args. Routing, blocking, replies and errors
// are as for EvalSha.
func (s *Scripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return reply(s.c.Eval(ctx, src, keys, anyArgs(args)...).Result())
}

// ScriptLoad sends SCRIPT LOAD src and returns the SHA-1 the server reports.
//
// On a *redis.ClusterClient, go-redis itself loads the script on every known
// master and replica. On a *redis.Ring, whose own ScriptLoad reaches only one
// random shard, ScriptLoad loads it on every live shard. Shards are loaded
// concurrently; the call blocks until all have answered and returns the first
// error met. A script loaded on some shards before an error stays loaded.
func (s *Scripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	ring, ok := s.c.(*redis.Ring)
	if !ok {
		return s.c.ScriptLoad(ctx, src).Result()
	}
	shas := make(chan string, 1)
	err := ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
		sha, err := shard.ScriptLoad(ctx, src).Result()
		if err != nil {
			return err
		}
		select {
		case shas <- sha:
		default:
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	select {
	case sha := <-shas:
		return sha, nil
	default:
		return "", errors.New("goredis: SCRIPT LOAD: the ring has no live shard")
	}
}

// anyArgs converts string arguments to the []any go-redis takes.
func anyArgs(args []string) []any {
	if len(args) == 0 {
		return nil
	}
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// reply translates a go-redis result into the Scripter vocabulary.
func reply(v any, err error) (any, error) {
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
			return nil, fmt.Errorf("%w: %w", locker.ErrNoScript, err)
		}
		return nil, err
	}
	return translate(v)
}

// translate maps one reply value, as go-redis decodes RESP2 and RESP3, onto
// nil, int64, string and []any. An error nested in an array is returned as
// the call's error.
func translate(v any) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return v, nil
	case string:
		return v, nil
	case bool: // RESP3 boolean: Lua true is 1 and Lua false is nil, as in RESP2.
		if v {
			return int64(1), nil
		}
		return nil, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			t, err := translate(e)
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return out, nil
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
		return nil, v
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
