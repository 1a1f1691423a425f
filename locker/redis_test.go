package locker_test

// Helpers for the tests that run the scripts on the redis-server TestMain
// starts (one per test binary); each test gets a fresh key prefix.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// redisEnv is one test's view of the shared test server.
type redisEnv struct {
	t      *testing.T
	ctx    context.Context
	rdb    *redis.Client
	prefix string
}

// newRedisEnv returns a go-redis client on the test server and a fresh
// key prefix.
func newRedisEnv(t *testing.T) *redisEnv {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &redisEnv{t: t, ctx: testCtx(t), rdb: rdb, prefix: "lockertest:" + hex.EncodeToString(b[:]) + ":"}
}

// client returns a Client with the env's prefix on the go-redis driver
// (without its Subscriber, so waits poll) wrapped by wrap, if not nil.
func (e *redisEnv) client(wrap func(locker.Scripter) locker.Scripter) *locker.Client {
	e.t.Helper()
	var s locker.Scripter = plainScripter{goredis.New(e.rdb)}
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
	r, err := e.rdb.Eval(e.ctx, s.src, keys, args...).Result()
	require.NoError(e.t, err, "%s keys=%q args=%v", name, keys, args)
	return r
}

// ints turns a script's array reply into int64s.
func (e *redisEnv) ints(r any) []int64 {
	e.t.Helper()
	a, ok := r.([]any)
	require.True(e.t, ok, "reply %#v is not an array", r)
	out := make([]int64, len(a))
	for i, v := range a {
		out[i], ok = v.(int64)
		require.True(e.t, ok, "reply %#v is not an array of integers", r)
	}
	return out
}

// hash returns the fields of a hash ({} when the key does not exist).
func (e *redisEnv) hash(key string) map[string]string {
	e.t.Helper()
	m, err := e.rdb.HGetAll(e.ctx, key).Result()
	require.NoError(e.t, err)
	return m
}

// get returns a string key's value, "" when it does not exist.
func (e *redisEnv) get(key string) string {
	e.t.Helper()
	v, err := e.rdb.Get(e.ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(e.t, err)
	return v
}

// pttl returns a key's remaining time to live (negative: none, or no key).
func (e *redisEnv) pttl(key string) time.Duration {
	e.t.Helper()
	d, err := e.rdb.PTTL(e.ctx, key).Result()
	require.NoError(e.t, err)
	return d
}

// keys returns every key under the env's prefix.
func (e *redisEnv) keys() []string {
	e.t.Helper()
	var out []string
	iter := e.rdb.Scan(e.ctx, 0, e.prefix+"*", 1000).Iterator()
	for iter.Next(e.ctx) {
		out = append(out, iter.Val())
	}
	require.NoError(e.t, iter.Err())
	return out
}

// micros returns the server's clock in microseconds.
func (e *redisEnv) micros() int64 {
	e.t.Helper()
	now, err := e.rdb.Time(e.ctx).Result()
	require.NoError(e.t, err)
	return now.UnixMicro()
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
	msgs    <-chan *redis.Message
	plain   bool // SUBSCRIBE/PUBLISH: the server has no sharded pub/sub
}

// subscribe subscribes to the wake channel of name.
func (e *redisEnv) subscribe(channel string) *wakeCounter {
	e.t.Helper()
	ps := e.rdb.SSubscribe(e.ctx, channel)
	_, err := ps.Receive(e.ctx) // the subscription's confirmation
	plain := err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
	if plain { // a server without sharded pub/sub (Redis 6.2): the scripts PUBLISH
		_ = ps.Close()
		ps = e.rdb.Subscribe(e.ctx, channel)
		_, err = ps.Receive(e.ctx)
	}
	e.t.Cleanup(func() { _ = ps.Close() })
	require.NoError(e.t, err)
	return &wakeCounter{e: e, channel: channel, msgs: ps.Channel(), plain: plain}
}

// published returns how many wake-ups op sent: the messages before a
// marker published after it.
func (w *wakeCounter) published(op func()) int {
	t := w.e.t
	t.Helper()
	op()
	if w.plain {
		require.NoError(t, w.e.rdb.Publish(w.e.ctx, w.channel, "mark").Err())
	} else {
		require.NoError(t, w.e.rdb.SPublish(w.e.ctx, w.channel, "mark").Err())
	}
	n := 0
	for {
		select {
		case m := <-w.msgs:
			if m.Payload == "mark" {
				return n
			}
			require.Empty(t, m.Payload)
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
