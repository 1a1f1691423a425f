package redigo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"

	"github.com/scriptlock/scriptlock/drivers/internal/boxed"
	"github.com/scriptlock/scriptlock/drivers/internal/pubsubmux"
	"github.com/scriptlock/scriptlock/drivers/internal/scriptload"
	"github.com/scriptlock/scriptlock/drivers/internal/servererr"
	"github.com/scriptlock/scriptlock/locker"
)

// Routing limits for Cluster calls: redisc.RetryConn follows at most
// redirectAttempts MOVED, ASK or TRYAGAIN replies per call, sleeping
// tryAgainDelay before retrying after a TRYAGAIN.
const (
	redirectAttempts = 4
	tryAgainDelay    = 10 * time.Millisecond
)

// Scripter runs scriptlock's scripts through redigo, on a single server or a
// Redis Cluster. It is safe for concurrent use by multiple goroutines.
type Scripter struct {
	b    backend
	mux  *pubsubmux.Mux // pub/sub connections for Subscribe, opened on demand
	shas boxed.Cache    // script SHA-1s, boxed once as arguments
}

var (
	_ locker.Scripter   = (*Scripter)(nil)
	_ locker.Subscriber = (*Scripter)(nil)
	_ locker.Batcher    = (*Scripter)(nil)
)

// backend is what differs between a single server and a Cluster.
type backend interface {
	// do runs one command routed by keys[0] and returns redigo's reply.
	do(ctx context.Context, keys []string, cmd string, args []any) (any, error)
	// load runs SCRIPT LOAD src wherever EVALSHA may be routed.
	load(ctx context.Context, src string) (string, error)
}

// New returns a Scripter for the single server behind p. The pool stays owned
// by the caller, who closes it; it must stay open while the Scripter is in
// use. Its connections must implement redis.ConnWithContext (those made by
// redis.Dial and redis.DialContext do). The Scripter owns only the pub/sub
// connection it dials for Subscribe with the pool's DialContext (or Dial)
// function, and closes it when the last subscription ends.
func New(p *redis.Pool) *Scripter {
	return &Scripter{b: poolBackend{p: p}, mux: pubsubmux.New("redigo", poolTransport{p: p})}
}

// NewCluster returns a Scripter for the Redis Cluster c. The cluster stays
// owned by the caller, who closes it; it must stay open while the Scripter is
// in use. Calling c.Refresh before use is recommended but not required:
// ScriptLoad refreshes the slot mapping itself, and other calls follow
// redirections. See the package doc for how contexts are honoured. The
// Scripter owns only the pub/sub connections it dials for Subscribe (one per
// master, with c.DialOptions), and closes each when its last subscription
// ends.
func NewCluster(c *redisc.Cluster) *Scripter {
	return &Scripter{b: clusterBackend{c: c}, mux: pubsubmux.New("redigo", &clusterTransport{c: c})}
}

// EvalSha runs EVALSHA sha1 with keys and args and returns the translated
// reply: nil (a Redis nil or a Lua false), int64 (a Lua true becomes 1),
// string, or []any of these. On a Cluster it runs on the node that owns
// keys[0]'s slot, or on any node when there are no keys.
//
// It blocks until the reply arrives or ctx is done; in the latter case it
// returns ctx's error. If the server does not hold the script it returns an
// error that matches locker.ErrNoScript and still carries the server's
// message. Any other error, including a server error raised by the script, is
// returned as redigo reports it.
func (s *Scripter) EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error) {
	return s.eval(ctx, "EVALSHA", s.shas.Box(sha1), keys, args)
}

// Eval runs EVAL src with keys and args. Routing, blocking, replies and errors
// are as for EvalSha.
func (s *Scripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return s.eval(ctx, "EVAL", src, keys, args)
}

// ScriptLoad sends SCRIPT LOAD src to every master the client knows, one
// after the other, and returns the SHA-1 they report: on a Pool its
// server; on a Cluster it first refreshes the slot mapping (CLUSTER SLOTS
// on one known node) and then loads every master of that mapping, never a
// replica.
//
// It blocks until every master has answered or ctx is done, and tries every
// master even when some fail. It returns the SHA-1 only when all of them
// loaded the script; otherwise an error that names each failed master with
// its error. It never retries; masters that loaded the script keep it. On a
// Cluster, whose calls do not take a context, it returns ctx's error as soon
// as ctx is done, and the masters not tried by then are not sent anything.
func (s *Scripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return s.b.load(ctx, src)
}

func (s *Scripter) eval(ctx context.Context, cmd string, script any, keys, args []string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := s.b.do(ctx, keys, cmd, command(script, keys, args))
	if err != nil {
		return nil, deadlineErr(ctx, translateErr(err))
	}
	return translate(v)
}

// deadlineErr joins context.DeadlineExceeded to an I/O timeout that came at
// or after ctx's deadline: redigo reads with the time left as its timeout,
// whose timer can fire before ctx's own, and the caller is owed the
// context's error.
func deadlineErr(ctx context.Context, err error) error {
	var ne net.Error
	if dl, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(dl) && !errors.Is(err, context.DeadlineExceeded) {
		return errors.Join(context.DeadlineExceeded, err)
	}
	return err
}

// command returns the arguments of EVAL or EVALSHA after the command name:
// script, number of keys, keys, arguments. The keys and arguments are not
// copied (boxed.AppendRefs): the list allocates once, whatever their
// number, and redigo sees them as strings.
func command(script any, keys, args []string) []any {
	out := make([]any, 0, 2+len(keys)+len(args))
	out = append(out, script, len(keys))
	out = boxed.AppendRefs(out, keys)
	return boxed.AppendRefs(out, args)
}

// poolBackend serves a single server through a redigo Pool.
type poolBackend struct {
	p *redis.Pool
}

func (b poolBackend) do(ctx context.Context, _ []string, cmd string, args []any) (any, error) {
	conn, err := b.p.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	v, err := redis.DoContext(conn, ctx, cmd, args...)
	if err != nil && protocolError(err) {
		// Redis closes a connection after a protocol error (such as an
		// unauthenticated client's): read its end, so that the pool drops
		// the connection instead of handing it to the next call.
		_, _ = redis.ReceiveWithTimeout(conn, time.Second)
	}
	return v, err
}

// protocolError reports whether err is a server's "ERR Protocol error".
// (Apart from the call, so that a call without an error does not allocate
// the target of errors.As.)
func protocolError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(string(re), "ERR Protocol error")
}

func (b poolBackend) load(ctx context.Context, src string) (string, error) {
	return scriptload.Run(ctx, "redigo", []scriptload.Node{{Addr: "the pool's server", Load: func(ctx context.Context) (string, error) {
		conn, err := b.p.GetContext(ctx)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return redis.String(redis.DoContext(conn, ctx, "SCRIPT", "LOAD", src))
	}}})
}

// clusterBackend serves a Redis Cluster through redisc.
type clusterBackend struct {
	c *redisc.Cluster
}

func (b clusterBackend) do(ctx context.Context, keys []string, cmd string, args []any) (any, error) {
	return withContext(ctx, func() (any, error) {
		conn, err := b.bound(keys)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		rc, err := redisc.RetryConn(conn, redirectAttempts, tryAgainDelay)
		if err != nil {
			return nil, err
		}
		v, err := rc.Do(cmd, args...)
		if err != nil && err.Error() == errTooManyAttempts {
			// Every attempt was answered MOVED, ASK or TRYAGAIN: none ran.
			// redisc drops the replies; the call was refused by a passing
			// state of the Cluster.
			return nil, &locker.ServerError{Code: "TRYAGAIN", Msg: "TRYAGAIN " + err.Error() + " (MOVED, ASK or TRYAGAIN replies)", Err: err}
		}
		return v, err
	})
}

// errTooManyAttempts is the text of the error redisc.RetryConn returns
// (an unexported errors.New) when every attempt met a redirection or
// TRYAGAIN; it can end no other way.
const errTooManyAttempts = "redisc: too many attempts"

// bound returns a connection bound to the node of keys[0]'s slot (any
// node when there are no keys); the caller closes it.
func (b clusterBackend) bound(keys []string) (redis.Conn, error) {
	conn := b.c.Get()
	var err error
	if len(keys) > 0 {
		err = redisc.BindConn(conn, keys[0])
	} else {
		err = redisc.BindConn(conn) // any node
	}
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

func (b clusterBackend) load(ctx context.Context, src string) (string, error) {
	v, err := withContext(ctx, func() (any, error) {
		if err := b.c.Refresh(); err != nil {
			return nil, fmt.Errorf("redigo: SCRIPT LOAD: refresh the slot mapping: %w", err)
		}
		r := scriptload.New("redigo")
		// EachNode stops at the first error fn returns: fn records each
		// master's outcome and returns nil, so every master is tried.
		err := b.c.EachNode(false, func(addr string, conn redis.Conn) error {
			if err := ctx.Err(); err != nil {
				r.Add(addr, "", fmt.Errorf("not tried: %w", err))
				return nil
			}
			sha, err := redis.String(conn.Do("SCRIPT", "LOAD", src))
			r.Add(addr, sha, err)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("redigo: SCRIPT LOAD: %w", err)
		}
		return r.SHA()
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// withContext runs f and returns its result, or ctx's error as soon as ctx is
// done, whichever comes first. f must release its own resources: when ctx
// ends first, f keeps running in its goroutine and its result is dropped.
func withContext(ctx context.Context, f func() (any, error)) (any, error) {
	if ctx.Done() == nil { // never done: no goroutine needed
		return f()
	}
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// translateErr returns a server's error reply (redigo's redis.Error) as a
// locker.ServerError, and every other error unchanged.
func translateErr(err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	return servererr.New(string(re), err)
}

// translate maps a redigo reply onto nil, int64, string and []any. An error
// nested in an array is returned as the call's error.
func translate(r any) (any, error) {
	switch v := r.(type) {
	case nil, int64, string: // string: status replies; returned as they are, not boxed again
		return r, nil
	case []byte:
		return string(v), nil
	case []any: // redigo made it for this call alone: translated in place
		for i, e := range v {
			t, err := translate(e)
			if err != nil {
				return nil, err
			}
			v[i] = t
		}
		return r, nil
	case redis.Error:
		return nil, translateErr(v)
	default:
		return nil, fmt.Errorf("%w: redigo: reply of type %T", locker.ErrUnexpectedReply, v)
	}
}

// EvalShaBatch runs calls as EvalSha would and returns their results in
// order. Through a Pool it pipelines them on one connection (one round
// trip: ctx bounds the replies, the connection's write timeout the
// sending); on a Cluster it runs them one after the other. It blocks until
// every call has a result or ctx is done.
func (s *Scripter) EvalShaBatch(ctx context.Context, calls []locker.ScriptCall) []locker.ScriptResult {
	out := make([]locker.ScriptResult, len(calls))
	pb, ok := s.b.(poolBackend)
	if !ok {
		for i, c := range calls {
			out[i].Reply, out[i].Err = s.EvalSha(ctx, c.SHA1, c.Keys, c.Args)
		}
		return out
	}
	fail := func(from int, err error) []locker.ScriptResult {
		for i := from; i < len(out); i++ {
			out[i].Err = err
		}
		return out
	}
	if err := ctx.Err(); err != nil {
		return fail(0, err)
	}
	conn, err := pb.p.GetContext(ctx)
	if err != nil {
		return fail(0, err)
	}
	defer conn.Close()
	for _, c := range calls {
		if err := conn.Send("EVALSHA", command(s.shas.Box(c.SHA1), c.Keys, c.Args)...); err != nil {
			return fail(0, err) // a full buffer may have been written: all unknown
		}
	}
	if err := conn.Flush(); err != nil {
		return fail(0, err)
	}
	for i := range calls {
		v, err := redis.ReceiveContext(conn, ctx)
		var re redis.Error
		if err != nil && !errors.As(err, &re) {
			return fail(i, err) // the connection failed: the rest are unknown
		}
		if err != nil {
			out[i].Err = translateErr(err)
			continue
		}
		out[i].Reply, out[i].Err = translate(v)
	}
	return out
}
