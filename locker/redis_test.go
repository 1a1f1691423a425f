package locker_test

// Helpers for the tests that run the scripts on the redis-server TestMain
// starts (one per test binary); each test gets a fresh key prefix.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/resptest"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// redisEnv is one test's view of the shared test server.
type redisEnv struct {
	t      *testing.T
	ctx    context.Context
	rdb    *resptest.Client
	prefix string
}

// newRedisEnv returns a client on the test server (the core module's
// stdlib RESP client: it requires no third-party module) and a fresh key
// prefix.
func newRedisEnv(t *testing.T) *redisEnv {
	t.Helper()
	rdb := resptest.New(redisAddr)
	t.Cleanup(func() { _ = rdb.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &redisEnv{t: t, ctx: testCtx(t), rdb: rdb, prefix: "lockertest:" + hex.EncodeToString(b[:]) + ":"}
}

// client returns a Client with the env's prefix on the test client (a
// Scripter without a Subscriber, so waits poll) wrapped by wrap, if not
// nil.
func (e *redisEnv) client(wrap func(locker.Scripter) locker.Scripter) *locker.Client {
	e.t.Helper()
	var s locker.Scripter = plainScripter{e.rdb}
	if wrap != nil {
		s = wrap(s)
	}
	return clientOn(e.t, s, &locker.Options{Prefix: e.prefix, MinRetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond})
}

// eval runs lua/<name>.lua (assembled) on the server and returns its reply.
func (e *redisEnv) eval(name string, keys []string, args ...any) any {
	e.t.Helper()
	s, ok := luaScripts[name]
	require.True(e.t, ok, "no script %s", name)
	cmd := append([]any{"EVAL", s.src, len(keys)}, anys(keys)...)
	r, err := e.rdb.Do(e.ctx, append(cmd, args...)...)
	require.NoError(e.t, err, "%s keys=%q args=%v", name, keys, args)
	return r
}

// do runs a command on the server and returns its reply.
func (e *redisEnv) do(args ...any) any {
	e.t.Helper()
	r, err := e.rdb.Do(e.ctx, args...)
	require.NoError(e.t, err, "%v", args)
	return r
}

// strs turns an array reply of strings into a []string.
func (e *redisEnv) strs(r any) []string {
	e.t.Helper()
	return arrayOf[string](e.t, r)
}

// ints turns a script's array reply into int64s.
func (e *redisEnv) ints(r any) []int64 {
	e.t.Helper()
	return arrayOf[int64](e.t, r)
}

// arrayOf turns an array reply whose elements are all T into a []T.
func arrayOf[T any](t testing.TB, r any) []T {
	t.Helper()
	a, ok := r.([]any)
	require.True(t, ok, "reply %#v is not an array", r)
	out := make([]T, len(a))
	for i, v := range a {
		out[i], ok = v.(T)
		require.True(t, ok, "reply %#v is not an array of %T", r, out[i])
	}
	return out
}

// hash returns the fields of a hash ({} when the key does not exist).
func (e *redisEnv) hash(key string) map[string]string {
	e.t.Helper()
	kv := e.strs(e.do("HGETALL", key))
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// get returns a string key's value, "" when it does not exist.
func (e *redisEnv) get(key string) string {
	e.t.Helper()
	v, _ := e.do("GET", key).(string) // nil: no key
	return v
}

// zrange returns the members of a sorted set, lowest score first.
func (e *redisEnv) zrange(key string) []string {
	e.t.Helper()
	return e.strs(e.do("ZRANGE", key, 0, -1))
}

// zscore returns a sorted set member's score, and whether it is there.
func (e *redisEnv) zscore(key, member string) (float64, bool) {
	e.t.Helper()
	r := e.do("ZSCORE", key, member)
	if r == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(r.(string), 64)
	require.NoError(e.t, err, "ZSCORE reply %q", r)
	return f, true
}

// pttl returns a key's remaining time to live (negative: none, or no key).
func (e *redisEnv) pttl(key string) time.Duration {
	e.t.Helper()
	ms, ok := e.do("PTTL", key).(int64)
	require.True(e.t, ok, "PTTL reply")
	if ms < 0 {
		return time.Duration(ms) // -1 no TTL, -2 no key
	}
	return time.Duration(ms) * time.Millisecond
}

// keys returns every key under the env's prefix.
func (e *redisEnv) keys() []string {
	e.t.Helper()
	var out []string
	for cursor := "0"; ; {
		r, ok := e.do("SCAN", cursor, "MATCH", e.prefix+"*", "COUNT", 1000).([]any)
		require.True(e.t, ok && len(r) == 2, "SCAN reply %#v", r)
		cursor, _ = r[0].(string)
		out = append(out, e.strs(r[1])...)
		if cursor == "0" {
			return out
		}
	}
}

// micros returns the server's clock in microseconds.
func (e *redisEnv) micros() int64 {
	e.t.Helper()
	tm := e.strs(e.do("TIME"))
	require.Len(e.t, tm, 2, "TIME reply")
	return e.num(tm[0])*1_000_000 + e.num(tm[1])
}

// num parses a decimal integer.
func (e *redisEnv) num(s string) int64 {
	e.t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(e.t, err, "%q is not an integer", s)
	return n
}

// wakeCounter counts the messages published on one wake channel.
type wakeCounter struct {
	e       *redisEnv
	channel string
	msgs    <-chan resptest.Message
	plain   bool // SUBSCRIBE/PUBLISH: the server has no sharded pub/sub
	// payloads are those of the wake-ups counted so far: '' but for a
	// hand-over's, on a waiter's own channel (its grant's fence).
	payloads []string
}

// subscribe subscribes to the wake channel of name.
func (e *redisEnv) subscribe(channel string) *wakeCounter {
	e.t.Helper()
	ps, err := e.rdb.Subscribe(e.ctx, "SSUBSCRIBE", channel) // waits for the confirmation
	plain := err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
	if plain { // a server without sharded pub/sub (Redis 6.2): the scripts PUBLISH
		ps, err = e.rdb.Subscribe(e.ctx, "SUBSCRIBE", channel)
	}
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = ps.Close() })
	return &wakeCounter{e: e, channel: channel, msgs: ps.Messages(), plain: plain}
}

// published returns how many wake-ups op sent: the messages before a
// marker published after it.
func (w *wakeCounter) published(op func()) int {
	t := w.e.t
	t.Helper()
	op()
	if w.plain {
		w.e.do("PUBLISH", w.channel, "mark")
	} else {
		w.e.do("SPUBLISH", w.channel, "mark")
	}
	n := 0
	for {
		select {
		case m := <-w.msgs:
			if m.Payload == "mark" {
				return n
			}
			w.payloads = append(w.payloads, m.Payload)
			n++
		case <-w.e.ctx.Done():
			t.Fatal("no marker")
		}
	}
}

// plainScripter hides the driver's Subscriber, so waits poll and the tests
// need no pub/sub connection of their own beyond the ones they open.
type plainScripter struct{ s locker.Scripter }

func (p plainScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	return p.s.EvalSha(ctx, sha, keys, args)
}
func (p plainScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return p.s.Eval(ctx, src, keys, args)
}
func (p plainScripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	return p.s.ScriptLoad(ctx, src)
}

// resender is a Scripter that, while dup is set, sends every EvalSha twice
// and returns the second reply: a client's network retry of a script that
// had already run.
type resender struct {
	locker.Scripter
	dup atomic.Bool
}

func (r *resender) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	if r.dup.Load() {
		if _, err := r.Scripter.EvalSha(ctx, sha, keys, args); err != nil {
			return nil, err
		}
	}
	return r.Scripter.EvalSha(ctx, sha, keys, args)
}

// dropper is a Scripter that, while armed for a script, does not send its
// calls and fails them with a timeout: calls whose outcome is unknown to
// the core (that they never ran is known only to the test).
type dropper struct {
	locker.Scripter
	script atomic.Value // string: the script name to drop
	last   atomic.Value // call: the last dropped call
}

func (d *dropper) arm(script string) { d.script.Store(script) }

func (d *dropper) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	if name, _ := d.script.Load().(string); name != "" && locker.ScriptName(sha) == name {
		d.last.Store(call{op: "evalsha", name: name, sha: sha, keys: append([]string(nil), keys...), args: append([]string(nil), args...)})
		return nil, context.DeadlineExceeded
	}
	return d.Scripter.EvalSha(ctx, sha, keys, args)
}

// dropped returns the last call d dropped.
func (d *dropper) dropped() call {
	c, _ := d.last.Load().(call)
	return c
}

// anys converts strings to script arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// splitField parses a read-write hash field's value
// "<expiry ms>:<order µs>:<extend number>:<owner>".
func (e *redisEnv) splitField(v string) (exp, order, n int64, owner string) {
	e.t.Helper()
	parts := strings.SplitN(v, ":", 4)
	require.Len(e.t, parts, 4, "field value %q", v)
	return e.num(parts[0]), e.num(parts[1]), e.num(parts[2]), parts[3]
}
