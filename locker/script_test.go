package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

// runOps are operations, one per script, each run on a fresh client over f.
// Each returns the error of its script call.
func runOps(t *testing.T) map[string]func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
	t.Helper()
	// acquireLease takes a lease with every script cached, then resets f so
	// only the operation under test is seen.
	acquireLease := func(ctx context.Context, c *locker.Client, f *fakeScripter) *locker.Lease {
		saved, savedForget, savedFail, savedReply := cloneCache(f), f.forget, f.fail, f.reply
		for _, s := range luaScripts {
			f.cached[s.sha] = true
		}
		f.forget, f.fail, f.reply = false, nil, nil
		l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
		require.NoError(t, err)
		f.cached, f.forget, f.fail, f.reply = saved, savedForget, savedFail, savedReply
		f.reset()
		return l
	}
	return map[string]func(context.Context, *locker.Client, *fakeScripter) error{
		"acquire": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
			return err
		},
		"claim": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := c.Claim(ctx, "k", time.Second)
			return err
		},
		"release": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			return acquireLease(ctx, c, f).Unlock(ctx)
		},
		"extend": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			return acquireLease(ctx, c, f).Extend(ctx, time.Second)
		},
		"pttl": func(ctx context.Context, c *locker.Client, f *fakeScripter) error {
			_, err := acquireLease(ctx, c, f).TTL(ctx)
			return err
		},
	}
}

func cloneCache(f *fakeScripter) map[string]bool {
	m := make(map[string]bool, len(f.cached))
	for k, v := range f.cached {
		m[k] = v
	}
	return m
}

func TestNoScriptLoadsAndRetries(t *testing.T) {
	for name, op := range runOps(t) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			require.NoError(t, op(testCtx(t), c, f))

			calls := f.Calls()
			require.Equal(t, []string{"evalsha:" + name, "load:" + name, "evalsha:" + name}, f.ops())
			want := luaScripts[name]
			assert.Equal(t, want.sha, calls[0].sha, "EVALSHA must use the SHA-1 of lua/%s.lua", name)
			assert.Equal(t, want.src, calls[1].src, "SCRIPT LOAD must send lua/%s.lua", name)
			assert.Equal(t, sha1Hex(calls[1].src), calls[0].sha, "loaded source must hash to the SHA used")
			assert.Equal(t, calls[0].sha, calls[2].sha)
			assert.Equal(t, calls[0].keys, calls[2].keys)
			assert.Equal(t, calls[0].args, calls[2].args, "the retry must resend the same arguments")
		})
	}
}

func TestNoScriptAfterLoadFallsBackToEval(t *testing.T) {
	for name, op := range runOps(t) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			f.forget = true
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			require.NoError(t, op(testCtx(t), c, f))

			calls := f.Calls()
			require.Equal(t, []string{"evalsha:" + name, "load:" + name, "evalsha:" + name, "eval:" + name}, f.ops())
			assert.Equal(t, luaScripts[name].src, calls[3].src, "EVAL must send the script source")
			assert.Equal(t, calls[0].keys, calls[3].keys)
			assert.Equal(t, calls[0].args, calls[3].args)
		})
	}
}

func TestNoScriptLoadWrongSHA(t *testing.T) {
	for name, op := range runOps(t) {
		t.Run(name, func(t *testing.T) {
			f := newColdFake()
			f.load = func(context.Context, string) (string, error) {
				return strings.Repeat("0", 40), nil
			}
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			err = op(testCtx(t), c, f)
			require.ErrorIs(t, err, locker.ErrUnexpectedReply)
			assert.NotErrorIs(t, err, locker.ErrNoScript)
			ops := f.ops()
			require.GreaterOrEqual(t, len(ops), 2)
			assert.Equal(t, []string{"evalsha:" + name, "load:" + name}, ops[:2])
			for _, c := range f.Calls()[2:] {
				// Only a best-effort abandon may follow a failed acquire.
				assert.Equal(t, "acquire", name, "unexpected call after a bad load: %v", c)
				assert.Equal(t, "abandon", c.name, "unexpected call after a bad load: %v", c)
			}
		})
	}
}

func TestNoScriptLoadError(t *testing.T) {
	f := newColdFake()
	f.load = func(context.Context, string) (string, error) { return "", errBoom }
	c, err := locker.New(f, nil)
	require.NoError(t, err)
	first, err := c.Claim(testCtx(t), "k", time.Second)
	require.ErrorIs(t, err, errBoom)
	assert.False(t, first)
	assert.Equal(t, []string{"evalsha:claim", "load:claim"}, f.ops())
}

func TestOtherErrorNoLoad(t *testing.T) {
	for name, op := range runOps(t) {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			f.fail = func(context.Context, call) error { return fmt.Errorf("ERR wrapped: %w", errBoom) }
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			err = op(testCtx(t), c, f)
			require.ErrorIs(t, err, errBoom)
			assert.NotErrorIs(t, err, locker.ErrNoScript)
			assert.NotErrorIs(t, err, locker.ErrNotObtained)
			for _, c := range f.Calls() {
				assert.NotEqual(t, "load", c.op, "no SCRIPT LOAD after a non-NOSCRIPT error")
				assert.NotEqual(t, "eval", c.op, "no EVAL after a non-NOSCRIPT error")
			}
			assert.Equal(t, "evalsha:"+name, f.ops()[0])
		})
	}
}

func TestFailedAcquireIsAbandoned(t *testing.T) {
	// A failed acquire call may have run on the server, or may yet run: the
	// core abandons that call id, dropping the hold unless it belongs to a
	// caller-chosen single-hold owner.
	for _, tc := range []struct {
		opts *locker.MutexOptions
		drop string
	}{{nil, "1"}, {&locker.MutexOptions{Owner: "svc", Reentrant: true}, "1"}, {&locker.MutexOptions{Owner: "svc"}, "0"}} {
		f := newFake()
		f.fail = func(_ context.Context, c call) error {
			if c.name == "acquire" {
				return errBoom
			}
			return nil
		}
		c, err := locker.New(f, nil)
		require.NoError(t, err)
		l, err := newMutex(t, c, "n", time.Second, tc.opts).TryLock(testCtx(t))
		require.ErrorIs(t, err, errBoom)
		require.Nil(t, l)
		acq, ab := f.runs("acquire"), f.runs("abandon")
		require.Len(t, acq, 1)
		require.Len(t, ab, 1, "one clean-up abandon")
		assert.Equal(t, []string{acq[0].keys[0], acq[0].keys[4], acq[0].keys[5]}, ab[0].keys, "lock, wake channel, abandoned calls")
		assert.Equal(t, append(acq[0].args[:2:2], acq[0].args[4], tc.drop, "30000"), ab[0].args,
			"the same owner, hold and call id")
		assert.Empty(t, f.runs("release"))
	}
}

func TestCancelledContextJoined(t *testing.T) {
	plain := errors.New("fake: i/o error")
	for name, op := range runOps(t) {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			ctx, cancel := context.WithCancel(context.Background())
			f.fail = func(context.Context, call) error { cancel(); return plain }
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			err = op(ctx, c, f)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, plain)
		})
	}
	t.Run("Lock", func(t *testing.T) {
		f := newFake()
		ctx, cancel := context.WithCancel(context.Background())
		f.fail = func(context.Context, call) error { cancel(); return plain }
		c, err := locker.New(f, nil)
		require.NoError(t, err)
		l, err := newMutex(t, c, "n", time.Second, nil).Lock(ctx)
		require.Nil(t, l)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, locker.ErrNotObtained)
	})
}

func TestUnexpectedReplies(t *testing.T) {
	arrayWant := []struct {
		name  string
		reply any
	}{
		{"nil", nil},
		{"string", "OK"},
		{"int64", int64(1)},
		{"bytes", []byte("1")},
		{"empty array", []any{}},
		{"array len 1", []any{int64(1)}},
		{"array len 3", []any{int64(1), int64(1), int64(1)}},
		{"array with string", []any{int64(1), "7"}},
		{"array with string first", []any{"1", int64(7)}},
		{"array with nil", []any{int64(1), nil}},
		{"array with int", []any{int(1), int64(7)}},
		{"nested array", []any{[]any{int64(1)}, int64(7)}},
		{"typed slice", []int64{1, 7}},
	}
	intWant := []struct {
		name  string
		reply any
	}{
		{"nil", nil},
		{"string", "1"},
		{"bytes", []byte("1")},
		{"int", int(1)},
		{"float", float64(1)},
		{"array", []any{int64(1)}},
		{"array of 2", []any{int64(1), int64(0)}},
	}
	cases := map[string][]struct {
		name  string
		reply any
	}{"acquire": arrayWant, "pttl": arrayWant, "release": intWant, "extend": intWant, "claim": intWant}

	ops := runOps(t)
	for script, shapes := range cases {
		for _, shape := range shapes {
			t.Run(script+"/"+shape.name, func(t *testing.T) {
				f := newFake()
				f.reply = func(c call) (any, bool) {
					return shape.reply, c.name == script
				}
				c, err := locker.New(f, nil)
				require.NoError(t, err)
				var opErr error
				require.NotPanics(t, func() { opErr = ops[script](testCtx(t), c, f) })
				require.ErrorIs(t, opErr, locker.ErrUnexpectedReply)
			})
		}
	}
}

func TestUnexpectedStatus(t *testing.T) {
	// An integer outside the documented statuses of release, extend and pttl.
	cases := map[string]any{
		"release": int64(2),
		"extend":  int64(-2),
		"pttl":    []any{int64(7), int64(0)},
	}
	ops := runOps(t)
	for script, reply := range cases {
		t.Run(script, func(t *testing.T) {
			f := newFake()
			f.reply = func(c call) (any, bool) { return reply, c.name == script }
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			require.ErrorIs(t, ops[script](testCtx(t), c, f), locker.ErrUnexpectedReply)
		})
	}
}

func TestTryLockBadReplyReturnsNoLease(t *testing.T) {
	f := newFake()
	f.reply = func(c call) (any, bool) { return "OK", c.name == "acquire" }
	c, err := locker.New(f, nil)
	require.NoError(t, err)
	m := newMutex(t, c, "n", time.Second, nil)
	l, err := m.TryLock(testCtx(t))
	require.ErrorIs(t, err, locker.ErrUnexpectedReply)
	assert.Nil(t, l)
	l, err = m.Lock(testCtx(t))
	require.ErrorIs(t, err, locker.ErrUnexpectedReply, "Lock returns a non-contention error at once")
	assert.Nil(t, l)
	assert.Len(t, f.runs("acquire"), 2, "Lock must not retry after an unexpected reply")
}
