package rueidis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/locker"
)

// Scripter runs scriptlock's scripts through a rueidis client. It is safe for
// concurrent use by multiple goroutines, as the client is.
type Scripter struct {
	c  rueidis.Client
	ps pubsub // Subscribe's state
}

var (
	_ locker.Scripter   = (*Scripter)(nil)
	_ locker.Subscriber = (*Scripter)(nil)
)

// New returns a Scripter that sends its commands through c. The client stays
// owned by the caller: closing it is the caller's job, and c must stay open
// while the Scripter is in use. Subscribe uses c's own pub/sub connections;
// the Scripter opens none of its own.
func New(c rueidis.Client) *Scripter {
	return &Scripter{c: c}
}

// EvalSha runs EVALSHA sha1 with keys and args and returns the translated
// reply: nil (a Redis nil or a Lua false), int64 (a Lua true becomes 1),
// string, or []any of these. On a Cluster rueidis routes it by the slot of
// keys[0]; with no keys it goes to any node.
//
// It blocks until the reply arrives or ctx is done; rueidis then returns
// ctx's error. If the server does not hold the script it returns an error
// that matches locker.ErrNoScript and still carries the server's message. Any
// other error, including a server error raised by the script, is returned as
// rueidis reports it.
func (s *Scripter) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return reply(s.do(ctx, func() rueidis.Completed {
		return s.c.B().Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}))
}

// Eval runs EVAL src with keys and args. Routing, blocking, replies and errors
// are as for EvalSha.
func (s *Scripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return reply(s.do(ctx, func() rueidis.Completed {
		return s.c.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}))
}

// ScriptLoad sends SCRIPT LOAD src to every node of c.Nodes() — for a Cluster
// every node the client knows, replicas included; for a single server that
// server — one after the other, and returns the SHA-1 they report.
//
// It blocks until all have answered or ctx is done, and returns the first
// error met, naming the node; nodes loaded before an error keep the script.
// It fails if the client knows no node or if two nodes report different
// SHA-1s.
func (s *Scripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	nodes := s.c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	var sha string
	for _, addr := range addrs {
		n := nodes[addr]
		got, err := n.Do(ctx, n.B().ScriptLoad().Script(src).Build()).ToString()
		if err != nil {
			return "", fmt.Errorf("rueidis: SCRIPT LOAD on %s: %w", addr, err)
		}
		if sha != "" && got != sha {
			return "", fmt.Errorf("rueidis: SCRIPT LOAD on %s returned %s, another node %s", addr, got, sha)
		}
		sha = got
	}
	if sha == "" {
		return "", errors.New("rueidis: SCRIPT LOAD: the client knows no node")
	}
	return sha, nil
}

// do sends the command that build makes and returns its result. rueidis
// opens a multiplexed connection on first use under the context of the
// call that needs it, and hands that dial's outcome to every call waiting
// for the same connection: when that first caller's context ends during the
// dial, the others get its context.Canceled (or a dial "operation was
// canceled", which matches it) although their own context is live, and
// their command was never sent. do sends such a command again, up to
// borrowedRetries times, while ctx is live.
func (s *Scripter) do(ctx context.Context, build func() rueidis.Completed) rueidis.RedisResult {
	for try := 1; ; try++ {
		res := s.c.Do(ctx, build())
		err := res.NonRedisError()
		if err == nil || ctx.Err() != nil || try == borrowedRetries || !errors.Is(err, context.Canceled) {
			return res
		}
	}
}

// borrowedRetries bounds the tries of one command in do.
const borrowedRetries = 3

// reply translates a rueidis result into the Scripter vocabulary.
func reply(res rueidis.RedisResult) (any, error) {
	m, err := res.ToMessage()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return nil, nil
		}
		if re, ok := rueidis.IsRedisErr(err); ok && re.IsNoScript() {
			return nil, fmt.Errorf("%w: %w", locker.ErrNoScript, err)
		}
		return nil, err
	}
	return translate(&m)
}

// translate maps one RESP2 or RESP3 message onto nil, int64, string and
// []any. An error nested in an array is returned as the call's error.
func translate(m *rueidis.RedisMessage) (any, error) {
	if m.IsNil() {
		return nil, nil
	}
	if err := m.Error(); err != nil {
		return nil, err
	}
	switch {
	case m.IsInt64():
		return m.ToInt64()
	case m.IsString(), m.IsFloat64(): // a RESP3 double keeps its text, as RESP2 sends it
		return m.ToString()
	case m.IsBool(): // RESP3 boolean: Lua true is 1 and Lua false is nil, as in RESP2.
		b, err := m.ToBool()
		if err != nil || !b {
			return nil, err
		}
		return int64(1), nil
	case m.IsArray():
		elems, err := m.ToArray()
		if err != nil {
			return nil, err
		}
		out := make([]any, len(elems))
		for i := range elems {
			if out[i], err = translate(&elems[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	case m.IsMap(): // RESP3 map: flattened to key, value pairs as RESP2 sends them.
		kv, err := m.ToMap()
		if err != nil { // rueidis reads string keys only
			return nil, fmt.Errorf("%w: rueidis: %w", locker.ErrUnexpectedReply, err)
		}
		out := make([]any, 0, 2*len(kv))
		for k, v := range kv {
			tv, err := translate(&v)
			if err != nil {
				return nil, err
			}
			out = append(out, k, tv)
		}
		return out, nil
	}
	// RESP3 verbatim strings and big numbers: their text, as RESP2 sends it
	// (a verbatim string without its "txt:" format prefix; a big number is
	// digits and '-' only, so the check cannot misfire on one).
	if v, err := m.ToAny(); err == nil {
		if s, ok := v.(string); ok {
			if len(s) >= 4 && s[3] == ':' {
				s = s[4:]
			}
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: rueidis: reply %s", locker.ErrUnexpectedReply, m.String())
}
