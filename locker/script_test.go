package locker_test

// The core's script-call policy, with a fake Scripter: EVALSHA first; on
// NOSCRIPT, SCRIPT LOAD and EVALSHA again; then EVAL; errors wrapped with
// ctx.Err() joined in; replies of the wrong shape rejected.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptOp runs one operation whose script call is the one under test.
type scriptOp func(ctx context.Context, c *locker.Client, f *fakeScripter) error

// runOps are operations, one per script the caller runs directly, each
// run on a fresh client over f. Each returns the error of its script call.
func runOps(t *testing.T) map[string]scriptOp {
	t.Helper()
	// warm runs setup with every script cached and no handler, then
	// restores f and forgets the calls, so only the operation is seen.
	warm := func(f *fakeScripter, setup func()) {
		f.mu.Lock()
		cached, forget, handlers, load := maps.Clone(f.cached), f.forget, maps.Clone(f.handlers), f.load
		for _, s := range luaScripts {
			f.cached[s.sha] = true
		}
		f.forget, f.handlers, f.load = false, map[string]handler{}, nil
		f.mu.Unlock()
		setup()
		f.mu.Lock()
		f.cached, f.forget, f.handlers, f.load = cached, forget, handlers, load
		f.mu.Unlock()
		f.reset()
	}
	lease := func(ctx context.Context, c *locker.Client, f *fakeScripter, acquire func(context.Context) (*locker.Lease, error)) *locker.Lease {
		var l *locker.Lease
		warm(f, func() {
			var err error
			l, err = acquire(ctx)
			require.NoError(t, err)
		})
		return l
	}
	mutexLease := func(ctx context.Context, c *locker.Client, f *fakeScripter) *locker.Lease {
		return lease(ctx, c, f, newMutex(t, c, "n", time.Second, nil).TryLock)
	}
	readLease := func(ctx context.Context, c *locker.Client, f *fakeScripter) *locker.Lease {
		return lease(ctx, c, f, newRW(t, c, "n", time.Second, nil).TryRLock)
	}
	return map[string]scriptOp{
		"acquire": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
			return err
		},
		"claim": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := c.Claim(ctx, "k", time.Second)
			return err
		},
		"release": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			return mutexLease(ctx, c, f).Unlock(ctx)
		},
		"extend": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			return mutexLease(ctx, c, f).Extend(ctx, time.Second)
		},
		"pttl": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := mutexLease(ctx, c, f).TTL(ctx)
			return err
		},
		"rw_rlock": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := newRW(t, c, "n", time.Second, nil).TryRLock(ctx)
			return err
		},
		"rw_lock": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := newRW(t, c, "n", time.Second, nil).TryLock(ctx)
			return err
		},
		"rw_release": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			return readLease(ctx, c, f).Unlock(ctx)
		},
		"rw_extend": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			return readLease(ctx, c, f).Extend(ctx, time.Second)
		},
		"rw_pttl": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := readLease(ctx, c, f).TTL(ctx)
			return err
		},
		"rw_downgrade": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			rw := newRW(t, c, "n", time.Second, nil)
			w := lease(ctx, c, f, rw.TryLock)
			_, err := rw.Downgrade(ctx, w)
			return err
		},
	}
}

// sortedOps returns the names of ops in order, for stable subtests.
func sortedOps(ops map[string]scriptOp) []string {
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// notCleanUp drops the background clean-up calls from ops.
func notCleanUp(ops []string) []string {
	var out []string
	for _, o := range ops {
		if !strings.HasSuffix(o, ":abandon") && !strings.HasSuffix(o, ":rw_cancel") && !strings.HasSuffix(o, ":unclaim") {
			out = append(out, o)
		}
	}
	return out
}

func TestScriptName(t *testing.T) {
	for _, name := range protocolScripts {
		require.Contains(t, luaScripts, name, "lua/%s.lua missing", name)
	}
	for name, s := range luaScripts {
		assert.Equal(t, name, locker.ScriptName(s.sha), "ScriptName of the SHA-1 of lua/%s.lua, assembled", name)
	}
	assert.Empty(t, locker.ScriptName(""))
	assert.Empty(t, locker.ScriptName(strings.Repeat("0", 40)))
	assert.Empty(t, locker.ScriptName(sha1Hex(locker.AssembleLua("rw_prelude"))), "the prelude is not a script")
	assert.Empty(t, locker.ScriptName(sha1Hex(locker.AssembleLua("mutex_prelude"))), "the prelude is not a script")
}

func TestNoScriptLoadsAndRetries(t *testing.T) {
	ops := runOps(t)
	for _, name := range sortedOps(ops) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			c := clientOn(t, f, nil)
			require.NoError(t, ops[name](testCtx(t), c, f))

			calls := f.Calls()
			require.Equal(t, []string{"evalsha:" + name, "load:" + name, "evalsha:" + name}, f.ops())
			want := luaScripts[name]
			assert.Equal(t, want.sha, calls[0].sha, "EVALSHA must use the SHA-1 of lua/%s.lua", name)
			assert.Equal(t, want.src, calls[1].src, "SCRIPT LOAD must send lua/%s.lua", name)
			assert.Equal(t, calls[0].sha, calls[2].sha)
			assert.Equal(t, calls[0].keys, calls[2].keys)
			assert.Equal(t, calls[0].args, calls[2].args, "the retry must resend the same arguments")
		})
	}
}

func TestNoScriptAfterLoadFallsBackToEval(t *testing.T) {
	ops := runOps(t)
	for _, name := range sortedOps(ops) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			f.forget = true
			c := clientOn(t, f, nil)
			require.NoError(t, ops[name](testCtx(t), c, f))

			calls := f.Calls()
			require.Equal(t, []string{"evalsha:" + name, "load:" + name, "evalsha:" + name, "eval:" + name}, f.ops())
			assert.Equal(t, luaScripts[name].src, calls[3].src, "EVAL must send the script source")
			assert.Equal(t, calls[0].keys, calls[3].keys)
			assert.Equal(t, calls[0].args, calls[3].args)
		})
	}
}

func TestNoScriptLoadWrongSHA(t *testing.T) {
	ops := runOps(t)
	for _, name := range sortedOps(ops) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			f.load = func(context.Context, string) (string, error) {
				return strings.Repeat("0", 40), nil
			}
			c := clientOn(t, f, nil)
			err := ops[name](testCtx(t), c, f)
			require.ErrorIs(t, err, locker.ErrUnexpectedReply)
			assert.NotErrorIs(t, err, locker.ErrNoScript)
			require.NoError(t, c.Close())
			assert.Equal(t, []string{"evalsha:" + name, "load:" + name}, notCleanUp(f.ops()),
				"no run after a load that returned another SHA")
		})
	}
}

// TestNoScriptLoadFails checks that a failed SCRIPT LOAD is a cache miss,
// not the call's failure: the core sends EVAL at once.
func TestNoScriptLoadFails(t *testing.T) {
	ops := runOps(t)
	for _, name := range sortedOps(ops) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			f.load = func(context.Context, string) (string, error) { return "", errConn }
			c := clientOn(t, f, nil)
			require.NoError(t, ops[name](testCtx(t), c, f))
			assert.Equal(t, []string{"evalsha:" + name, "load:" + name, "eval:" + name}, f.ops())
		})
	}

	t.Run("eval fails too", func(t *testing.T) {
		loadErr := errors.New("fake: load refused")
		f := newColdFake()
		f.load = func(context.Context, string) (string, error) { return "", loadErr }
		c := clientOn(t, f, nil)
		evalErr := locker.NewServerError("ERR eval refused", nil) // an answer: nothing to clean up
		f.handle(func(_ context.Context, c call) (any, error) {
			if c.op == "eval" {
				return nil, evalErr
			}
			return nil, errNoScript
		}, "claim")
		_, err := c.Claim(testCtx(t), "k", time.Second)
		require.ErrorIs(t, err, evalErr, "the error is EVAL's")
		assert.NotErrorIs(t, err, loadErr, "the load's error is in the text only")
		assert.Contains(t, err.Error(), loadErr.Error())
		assert.Equal(t, []string{"evalsha:claim", "load:claim", "eval:claim"}, f.ops())
	})

	t.Run("ctx ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := newColdFake()
		f.load = func(context.Context, string) (string, error) { cancel(); return "", errConn }
		c := clientOn(t, f, nil)
		_, err := c.Claim(ctx, "k", time.Second)
		require.ErrorIs(t, err, errConn)
		require.ErrorIs(t, err, context.Canceled)
		require.NoError(t, c.Close())
		assert.Equal(t, []string{"evalsha:claim", "load:claim"}, notCleanUp(f.ops()), "no EVAL once ctx ended")
	})
}

func TestOtherErrorNoLoad(t *testing.T) {
	ops := runOps(t)
	for _, name := range sortedOps(ops) {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			c := clientOn(t, f, nil)
			wrapped := locker.NewServerError("ERR wrapped", errBoom) // an answer wrapping the client's error
			f.fail(wrapped, name)
			err := ops[name](testCtx(t), c, f)
			require.ErrorIs(t, err, errBoom)
			assert.Contains(t, err.Error(), name+" script", "the error names the script")
			assert.NotErrorIs(t, err, locker.ErrNoScript)
			assert.NotErrorIs(t, err, locker.ErrNotObtained)
			require.NoError(t, c.Close())
			for _, c := range f.Calls() {
				assert.NotEqual(t, "load", c.op, "no SCRIPT LOAD after a non-NOSCRIPT error")
				assert.NotEqual(t, "eval", c.op, "no EVAL after a non-NOSCRIPT error")
			}
			assert.Equal(t, []string{"evalsha:" + name}, notCleanUp(f.ops()), "an answered error is not retried")
		})
	}
}

func TestCancelledContextJoined(t *testing.T) {
	plain := errors.New("fake: i/o error")
	ops := runOps(t)
	for _, name := range sortedOps(ops) {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			c := clientOn(t, f, nil)
			ctx, cancel := context.WithCancel(context.Background())
			first := true
			f.handle(func(_ context.Context, c call) (any, error) {
				if first { // later: a background clean-up's retry
					first = false
					cancel()
					return nil, plain
				}
				return canned(c), nil
			}, name)
			err := ops[name](ctx, c, f)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, plain)
		})
	}
	for _, op := range []string{"Mutex.Lock", "RLock", "RWMutex.Lock"} {
		t.Run(op, func(t *testing.T) {
			f := newFake()
			c := clientOn(t, f, nil)
			ctx, cancel := context.WithCancel(context.Background())
			f.handle(func(context.Context, call) (any, error) { cancel(); return nil, plain }, "acquire", "rw_rlock", "rw_lock")
			var l *locker.Lease
			var err error
			switch op {
			case "Mutex.Lock":
				l, err = newMutex(t, c, "n", time.Second, nil).Lock(ctx)
			case "RLock":
				l, err = newRW(t, c, "n", time.Second, nil).RLock(ctx)
			case "RWMutex.Lock":
				l, err = newRW(t, c, "n", time.Second, nil).Lock(ctx)
			}
			require.Nil(t, l)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, locker.ErrNotObtained)
		})
	}
}

// replyShapes are replies of the wrong shape for scripts that answer an
// array of two integers and for those that answer one integer.
var (
	arrayWant = map[string]any{
		"nil":                     nil,
		"string":                  "OK",
		"int64":                   int64(1),
		"bytes":                   []byte("1"),
		"empty array":             []any{},
		"array len 1":             []any{int64(1)},
		"array len 3":             []any{int64(1), int64(1), int64(1)},
		"array with string":       []any{int64(1), "7"},
		"array with string first": []any{"1", int64(7)},
		"array with nil":          []any{int64(1), nil},
		"array with int":          []any{int(1), int64(7)},
		"nested array":            []any{[]any{int64(1)}, int64(7)},
		"typed slice":             []int64{1, 7},
	}
	// acquireWant: acquire.lua also answers a bare fence, above 0, and a
	// waiter's refusal an array of three integers.
	acquireWant = map[string]any{
		"zero":        int64(0),
		"negative":    int64(-7),
		"array len 4": []any{int64(0), int64(1), int64(1), int64(1)},
	}
	intWant = map[string]any{
		"nil":        nil,
		"string":     "1",
		"bytes":      []byte("1"),
		"int":        int(1),
		"float":      float64(1),
		"array":      []any{int64(1)},
		"array of 2": []any{int64(1), int64(0)},
	}
)

func init() {
	for k, v := range arrayWant {
		if k != "int64" && k != "array len 3" {
			acquireWant[k] = v
		}
	}
}

func TestUnexpectedReplies(t *testing.T) {
	cases := map[string]map[string]any{
		"acquire": acquireWant, "pttl": arrayWant, "release": intWant, "extend": intWant, "claim": intWant,
		"rw_rlock": arrayWant, "rw_lock": arrayWant, "rw_pttl": arrayWant, "rw_downgrade": arrayWant,
		"rw_release": intWant, "rw_extend": intWant,
	}
	ops := runOps(t)
	for _, script := range sortedOps(ops) {
		for shape, reply := range cases[script] {
			t.Run(script+"/"+shape, func(t *testing.T) {
				f := newFake()
				c := clientOn(t, f, nil)
				f.reply(reply, script)
				var err error
				require.NotPanics(t, func() { err = ops[script](testCtx(t), c, f) })
				require.ErrorIs(t, err, locker.ErrUnexpectedReply)
				require.NoError(t, c.Close())
				assert.Len(t, f.runs(script), 1, "an unexpected reply is not retried")
				assert.Empty(t, f.runs("abandon"), "an unexpected reply is an answer: nothing to clean up")
				assert.Empty(t, f.runs("rw_cancel"), "an unexpected reply is an answer: nothing to clean up")
				assert.Empty(t, f.runs("unclaim"), "an unexpected reply is an answer: nothing to clean up")
			})
		}
	}
}

func TestUnexpectedStatus(t *testing.T) {
	// Integers outside the documented statuses.
	cases := map[string][]any{
		"acquire":      {[]any{int64(2), int64(1)}, []any{int64(-1), int64(0)}},
		"claim":        {int64(2), int64(-1)},
		"release":      {int64(2), int64(-2)},
		"extend":       {int64(3), int64(-2)},
		"pttl":         {[]any{int64(7), int64(0)}, []any{int64(-2), int64(0)}},
		"rw_rlock":     {[]any{int64(2), int64(1)}, []any{int64(-1), int64(0)}},
		"rw_lock":      {[]any{int64(2), int64(1)}, []any{int64(-1), int64(0)}},
		"rw_release":   {int64(2), int64(-2)},
		"rw_extend":    {int64(3), int64(-2)},
		"rw_pttl":      {[]any{int64(2), int64(0)}},
		"rw_downgrade": {[]any{int64(2), int64(0)}, []any{int64(-2), int64(0)}},
	}
	ops := runOps(t)
	for _, script := range sortedOps(ops) {
		for _, reply := range cases[script] {
			t.Run(fmt.Sprintf("%s/%v", script, reply), func(t *testing.T) {
				f := newFake()
				c := clientOn(t, f, nil)
				f.reply(reply, script)
				require.ErrorIs(t, ops[script](testCtx(t), c, f), locker.ErrUnexpectedReply)
			})
		}
	}
}

func TestLockBadReplyReturnsAtOnce(t *testing.T) {
	c, f := newClient(t, nil)
	f.reply("OK", "acquire")
	m := newMutex(t, c, "n", time.Second, nil)
	l, err := m.TryLock(testCtx(t))
	require.ErrorIs(t, err, locker.ErrUnexpectedReply)
	assert.Nil(t, l)
	l, err = m.Lock(testCtx(t))
	require.ErrorIs(t, err, locker.ErrUnexpectedReply, "Lock returns a non-contention error at once")
	assert.Nil(t, l)
	assert.Len(t, f.runs("acquire"), 2, "Lock must not retry after an unexpected reply")
}
