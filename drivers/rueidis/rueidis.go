package rueidis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/drivers/internal/boxed"
	"github.com/scriptlock/scriptlock/drivers/internal/scriptload"
	"github.com/scriptlock/scriptlock/drivers/internal/servererr"
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
	_ locker.Batcher    = (*Scripter)(nil)
)

// New returns a Scripter that sends its commands through c. The client stays
// owned by the caller: closing it is the caller's job, and c must stay open
// while the Scripter is in use. Subscribe uses c's own pub/sub connections;
// the Scripter opens none of its own.
func New(c rueidis.Client) *Scripter {
	return &Scripter{c: c}
}

// EvalSha runs EVALSHA sha1 with keys and args and returns the translated
// reply: nil (a nil reply or a Lua false), int64 (a Lua true becomes 1),
// string, or []any of these. On a Cluster rueidis routes it by the slot of
// keys[0]; with no keys it goes to any node.
//
// It blocks until the reply arrives or ctx is done; rueidis then returns
// ctx's error. If the server does not hold the script it returns an error
// that matches locker.ErrNoScript and still carries the server's message. Any
// other error, including a server error raised by the script, is returned as
// rueidis reports it.
func (s *Scripter) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return reply(do(ctx, s.c, func() rueidis.Completed {
		return s.c.B().Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}))
}

// Eval runs EVAL src with keys and args. Routing, blocking, replies and errors
// are as for EvalSha.
func (s *Scripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return reply(do(ctx, s.c, func() rueidis.Completed {
		return s.c.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}))
}

// ScriptLoad sends SCRIPT LOAD src to every master the client knows, one
// after the other in the order of their addresses, and returns the SHA-1
// they report. On a Cluster the masters are those of the slot map (CLUSTER
// SLOTS, asked of the client's nodes in address order until one answers),
// each reached through its node in c.Nodes(); replicas are never loaded. On
// a single server or a Sentinel-managed master, SCRIPT LOAD goes through
// the client itself to its primary.
//
// It blocks until every master has answered or ctx is done, and tries every
// master even when some fail. It returns the SHA-1 only when all of them
// loaded the script (and reported the same SHA-1); otherwise an error that names each failed master with
// its error (a master of the slot map missing from c.Nodes() fails too; one
// not tried because ctx ended fails with ctx's error, which the returned
// error then matches). It adds no retry
// beyond do's re-send of a command that was never written; masters that
// loaded the script keep it.
func (s *Scripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	load := func(c rueidis.Client) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			return do(ctx, c, func() rueidis.Completed { return c.B().ScriptLoad().Script(src).Build() }).ToString()
		}
	}
	if s.c.Mode() != rueidis.ClientModeCluster {
		addr := "the primary"
		if nodes := s.c.Nodes(); len(nodes) == 1 {
			for a := range nodes {
				addr = a
			}
		}
		return scriptload.Run(ctx, "rueidis", []scriptload.Node{{Addr: addr, Load: load(s.c)}})
	}
	all := s.c.Nodes()
	masters, err := clusterMasters(ctx, all)
	if err != nil {
		return "", err
	}
	nodes := make([]scriptload.Node, 0, len(masters))
	for _, addr := range masters {
		n := scriptload.Node{Addr: addr, Load: func(context.Context) (string, error) {
			return "", errors.New("a master of the slot map the client does not know")
		}}
		if c, ok := all[addr]; ok {
			n.Load = load(c)
		}
		nodes = append(nodes, n)
	}
	return scriptload.Run(ctx, "rueidis", nodes)
}

// clusterMasters returns the master addresses of the Cluster's slot map,
// asking CLUSTER SLOTS of each of nodes in address order until one answers.
// It blocks until a node answers or ctx is done, and fails, naming every
// node's error, when none answers.
func clusterMasters(ctx context.Context, nodes map[string]rueidis.Client) ([]string, error) {
	addrs := slices.Sorted(maps.Keys(nodes))
	var errs []error
	for _, addr := range addrs {
		if ctx.Err() != nil {
			break
		}
		n := nodes[addr]
		slots, err := do(ctx, n, func() rueidis.Completed { return n.B().ClusterSlots().Build() }).ToArray()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		host, _, _ := net.SplitHostPort(addr)
		var masters []string
		for _, r := range slots {
			e, err := r.ToArray() // start, end, master, replicas...
			if err != nil || len(e) < 3 {
				return nil, fmt.Errorf("rueidis: SCRIPT LOAD: CLUSTER SLOTS on %s: unexpected entry %s", addr, r.String())
			}
			m, err := e[2].ToArray() // ip, port, id, ...
			if err != nil || len(m) < 2 {
				return nil, fmt.Errorf("rueidis: SCRIPT LOAD: CLUSTER SLOTS on %s: unexpected master %s", addr, e[2].String())
			}
			ip, _ := m[0].ToString()
			port, err := m[1].AsInt64()
			if err != nil || ip == "?" {
				continue // a master without an address: unreachable anyway
			}
			if ip == "" {
				ip = host // the node answering is that master
			}
			if a := net.JoinHostPort(ip, strconv.FormatInt(port, 10)); !slices.Contains(masters, a) {
				masters = append(masters, a)
			}
		}
		return masters, nil
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("rueidis: SCRIPT LOAD: no node answers CLUSTER SLOTS: %w", errors.Join(errs...))
}

// do sends the command that build makes through c and returns its result.
// rueidis opens a multiplexed connection on first use under the context of
// the call that needs it, and hands that dial's outcome to every call
// waiting for the same connection: when that first caller's context ends
// during the dial, the others get its context.Canceled (or a dial
// "operation was canceled", which matches it) although their own context
// is live, and their command was never written to any connection. do sends
// such a command again, up to borrowedRetries times, while ctx is live:
// the re-send rule of the locker.Scripter contract allows a re-send only
// when the command is certain never to have been written, and a command
// that failed with another call's cancelled dial is one (TestBorrowedCancel
// checks it). Any other error, and context.Canceled once ctx itself is
// done, is returned as is.
func do(ctx context.Context, c rueidis.Client, build func() rueidis.Completed) rueidis.RedisResult {
	for try := 1; ; try++ {
		res := c.Do(ctx, build())
		err := res.NonRedisError()
		if err == nil || ctx.Err() != nil || try == borrowedRetries || !errors.Is(err, context.Canceled) {
			return res
		}
	}
}

// borrowedRetries bounds the tries of one command in do.
const borrowedRetries = 3

// reply translates a rueidis result into the Scripter vocabulary. A
// server's error reply (rueidis's *RedisError) becomes a locker.ServerError;
// other errors pass unchanged.
func reply(res rueidis.RedisResult) (any, error) {
	m, err := res.ToMessage()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return nil, nil
		}
		return nil, serverErr(err)
	}
	return translate(&m)
}

// serverErr returns err as a locker.ServerError when it is a server's
// error reply, else unchanged.
func serverErr(err error) error {
	if re, ok := rueidis.IsRedisErr(err); ok {
		return servererr.New(re.Error(), err)
	}
	return err
}

// translate maps one RESP2 or RESP3 message onto nil, int64, string and
// []any, the way RESP2 would have sent it. An error nested in an array is
// returned as the call's error.
func translate(m *rueidis.RedisMessage) (any, error) {
	if m.IsNil() {
		return nil, nil
	}
	if err := m.Error(); err != nil {
		return nil, serverErr(err)
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
	case m.IsArray(): // arrays and RESP3 sets
		elems, err := m.ToArray()
		if err != nil {
			return nil, err
		}
		if len(elems) <= boxed.ArrayMax {
			return small(elems)
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

// small translates a short array (most replies of the lock scripts: a
// status and a fence or TTL) in one allocation, with boxed.Array.
func small(elems []rueidis.RedisMessage) (any, error) {
	a := boxed.NewArray(len(elems))
	for i := range elems {
		if elems[i].IsInt64() {
			n, err := elems[i].ToInt64()
			if err != nil {
				return nil, err
			}
			a.SetInt(i, n)
			continue
		}
		v, err := translate(&elems[i])
		if err != nil {
			return nil, err
		}
		a.Set(i, v)
	}
	return a.Value(), nil
}

// EvalShaBatch runs calls as EvalSha would, with one DoMulti (rueidis
// pipelines them, one round trip per node on a Cluster), and returns their
// results in order. It blocks until every call has a result or ctx is
// done; the calls without a reply then fail with ctx's error.
func (s *Scripter) EvalShaBatch(ctx context.Context, calls []locker.ScriptCall) []locker.ScriptResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, c := range calls {
		cmds[i] = s.c.B().Evalsha().Sha1(c.SHA1).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(c.Args...).Build()
	}
	out := make([]locker.ScriptResult, len(calls))
	for i, res := range s.c.DoMulti(ctx, cmds...) {
		out[i].Reply, out[i].Err = reply(res)
	}
	return out
}
