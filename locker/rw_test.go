package locker_test

// The Go logic of RWMutex with a fake Scripter: what each call sends, how
// replies map to leases and errors, and the clean-ups after calls whose
// outcome is unknown. What the rw_*.lua scripts do is tested against real
// Redis (rw_redis_test.go and the conformance suite).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwScripts are the read-write lock's scripts.
var rwScripts = []string{"rw_cancel", "rw_downgrade", "rw_extend", "rw_lock", "rw_pttl", "rw_release", "rw_rlock"}

// newRW returns an RWMutex on c, failing the test on error.
func newRW(t testing.TB, c *locker.Client, name string, ttl time.Duration, opts *locker.RWMutexOptions) *locker.RWMutex {
	t.Helper()
	rw, err := c.NewRWMutex(name, ttl, opts)
	require.NoError(t, err)
	return rw
}

// exerciseRW runs every RW operation, and so every rw_*.lua script
// (rw_cancel through a writer that gives up and an acquire whose outcome is
// unknown), with ttl on c over the fake f. Clean-ups run in the background:
// close c before counting them.
func exerciseRW(t *testing.T, ctx context.Context, c *locker.Client, f *fakeScripter, ttl time.Duration) {
	t.Helper()
	for _, opts := range []*locker.RWMutexOptions{nil, {Owner: "o"}, {Owner: "r", Reentrant: true}} {
		rw := newRW(t, c, "rw", ttl, opts)
		r, err := rw.TryRLock(ctx)
		require.NoError(t, err)
		_, err = r.TTL(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Extend(ctx, ttl))
		require.NoError(t, r.Unlock(ctx))
		r, err = rw.RLock(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Unlock(ctx))

		w, err := rw.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, w.Unlock(ctx))
		w, err = rw.Lock(ctx)
		require.NoError(t, err)
		d, err := rw.Downgrade(ctx, w)
		require.NoError(t, err)
		require.NoError(t, d.Unlock(ctx))

		// A writer gives up: its intent is dropped.
		f.reply([]any{int64(0), int64(1000)}, "rw_lock")
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err = rw.Lock(wctx)
		cancel()
		require.ErrorIs(t, err, locker.ErrNotObtained)
		f.handle(nil, "rw_lock")

		// An acquire whose outcome is unknown is cancelled.
		f.fail(errBoom, "rw_rlock")
		_, err = rw.TryRLock(ctx)
		require.ErrorIs(t, err, errBoom)
		f.handle(nil, "rw_rlock")
	}
}

func TestRWMutexBadInput(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	for _, b := range []struct {
		name string
		ttl  time.Duration
		opts *locker.RWMutexOptions
		want error
	}{
		{"", time.Second, nil, locker.ErrInvalidName},
		{strings.Repeat("x", locker.MaxNameLen+1), time.Second, nil, locker.ErrInvalidName},
		{"n", 0, nil, locker.ErrInvalidTTL},
		{"n", -time.Second, nil, locker.ErrInvalidTTL},
		{"n", 999 * time.Microsecond, nil, locker.ErrInvalidTTL},
		{"n", locker.MaxTTL + time.Millisecond, nil, locker.ErrInvalidTTL},
		{"n", time.Second, &locker.RWMutexOptions{Reentrant: true}, locker.ErrInvalidOption},
		{"n", time.Second, &locker.RWMutexOptions{Owner: strings.Repeat("o", locker.MaxNameLen+1)}, locker.ErrInvalidOption},
	} {
		rw, err := c.NewRWMutex(b.name, b.ttl, b.opts)
		assert.ErrorIs(t, err, b.want, "NewRWMutex(%.10q, %v, %+v)", b.name, b.ttl, b.opts)
		assert.Nil(t, rw)
	}

	rw := newRW(t, c, "n", time.Second, nil)
	assert.Equal(t, "n", rw.Name())
	var nilCtx context.Context
	calls := map[string]func(ctx context.Context) error{
		"TryRLock":  func(ctx context.Context) error { _, err := rw.TryRLock(ctx); return err },
		"RLock":     func(ctx context.Context) error { _, err := rw.RLock(ctx); return err },
		"TryLock":   func(ctx context.Context) error { _, err := rw.TryLock(ctx); return err },
		"Lock":      func(ctx context.Context) error { _, err := rw.Lock(ctx); return err },
		"Downgrade": func(ctx context.Context) error { _, err := rw.Downgrade(ctx, nil); return err },
		"Do":        func(ctx context.Context) error { return rw.Do(ctx, func(context.Context) error { return nil }) },
		"RDo":       func(ctx context.Context) error { return rw.RDo(ctx, func(context.Context) error { return nil }) },
	}
	for name, call := range calls {
		assert.ErrorIs(t, call(nilCtx), locker.ErrNilContext, "%s(nil ctx)", name)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, name := range []string{"TryRLock", "RLock", "TryLock", "Lock"} {
		err := calls[name](cancelled)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "%s(cancelled ctx)", name)
		assert.ErrorIs(t, err, context.Canceled, "%s(cancelled ctx)", name)
	}
	require.NoError(t, c.Close())
	assert.Zero(t, f.count(), "bad input sends nothing, and a cancelled ctx leaves nothing to clean up")

	for name, call := range calls {
		assert.ErrorIs(t, call(ctx), locker.ErrClosed, "%s after Close", name)
	}
	_, err := c.NewRWMutex("n", time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrClosed, "NewRWMutex after Close")
	assert.Zero(t, f.count(), "nothing is sent after Close")
}

func TestRWMutexCalls(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	rw := newRW(t, c, "doc", 1500*time.Millisecond, nil)
	k := c.Key("doc")
	keys := []string{k + ":rw", k + ":rwr"}
	wake := k + ":wake"

	f.reply([]any{int64(1), int64(77)}, "rw_rlock")
	r, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "doc", r.Name())
	assert.Equal(t, int64(77), r.Fence(), "the fence is the script's")
	assert.True(t, r.Valid())
	run := f.runs("rw_rlock")
	require.Len(t, run, 1)
	id := run[0].args[0]
	assertToken(t, id)
	assert.Equal(t, keys, run[0].keys, "the hash is the only key")
	assert.Equal(t, []string{id, "r:" + id, "1500", wake}, run[0].args, "owner = call id, hold field named by the call id, ttl, wake channel")
	assert.Equal(t, id, r.Token())

	f.reply([]any{int64(1), int64(1234)}, "rw_pttl")
	d, err := r.TTL(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1234*time.Millisecond, d)
	require.NoError(t, r.Extend(ctx, 3*time.Second))
	require.NoError(t, r.Unlock(ctx))
	want := map[string][]string{
		"rw_pttl":    {id, "r:" + id, wake},
		"rw_extend":  {id, "r:" + id, "3000", "1", wake},
		"rw_release": {id, "r:" + id, "", wake},
	}
	for s, args := range want {
		run := f.runs(s)
		require.Len(t, run, 1, s)
		assert.Equal(t, keys, run[0].keys, s)
		assert.Equal(t, args, run[0].args, s)
	}

	w, err := rw.TryLock(ctx)
	require.NoError(t, err)
	run = f.runs("rw_lock")
	require.Len(t, run, 1)
	wid := run[0].args[0]
	assert.Equal(t, keys, run[0].keys)
	assert.Equal(t, []string{wid, "w:" + wid, "1500", "", wake, ""}, run[0].args, "TryLock records no intent (and does not starve)")
	assert.NotEqual(t, id, wid)
	require.NoError(t, w.Unlock(ctx))
	assert.Equal(t, []string{wid, "w:" + wid, "", wake}, f.runs("rw_release")[1].args)

	w, err = rw.Lock(ctx)
	require.NoError(t, err)
	run = f.runs("rw_lock")
	require.Len(t, run, 2)
	assert.True(t, strings.HasPrefix(run[1].args[3], "i:"), "Lock passes its intent: %q", run[1].args[3])
	assertToken(t, strings.TrimPrefix(run[1].args[3], "i:"))
	require.NoError(t, w.Unlock(ctx))
	require.NoError(t, c.Close())
	assert.Empty(t, f.runs("rw_cancel"), "an acquired Lock needs no clean-up")

	// A caller-chosen Owner that is not reentrant: a release also drops the
	// owner's earlier holds.
	for _, tc := range []struct {
		opts   *locker.RWMutexOptions
		single string
	}{{&locker.RWMutexOptions{Owner: "svc"}, "1"}, {&locker.RWMutexOptions{Owner: "svc", Reentrant: true}, ""}} {
		c, f := newClient(t, nil)
		rw := newRW(t, c, "doc", time.Second, tc.opts)
		for _, acquire := range []func(context.Context) (*locker.Lease, error){rw.TryRLock, rw.TryLock} {
			l, err := acquire(ctx)
			require.NoError(t, err)
			assert.Equal(t, "svc", l.Token())
			require.NoError(t, l.Unlock(ctx))
		}
		for _, r := range append(f.runs("rw_rlock"), f.runs("rw_lock")...) {
			assert.Equal(t, "svc", r.args[0])
			assertToken(t, r.args[1][2:])
		}
		for _, r := range f.runs("rw_release") {
			assert.Equal(t, tc.single, r.args[2], "%+v", tc.opts)
		}
	}
}

func TestRWMutexLockGivesUp(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	k := c.Key("g")
	f.reply([]any{int64(0), int64(30_000)}, "rw_lock")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	w, err := newRW(t, c, "g", time.Minute, nil).Lock(ctx)
	require.Nil(t, w)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Close())

	attempts, cancels := f.runs("rw_lock"), f.runs("rw_cancel")
	require.NotEmpty(t, attempts)
	ids := map[string]bool{}
	for _, a := range attempts {
		assert.Equal(t, attempts[0].args[3], a.args[3], "one intent for all attempts of a Lock")
		ids[a.args[1]] = true
	}
	assert.Len(t, ids, len(attempts), "a fresh hold field per attempt")
	require.Len(t, cancels, 1, "one clean-up")
	assert.Equal(t, []string{k + ":rw", k + ":rwr"}, cancels[0].keys)
	assert.Equal(t, []string{"", attempts[0].args[3], "0", k + ":wake"}, cancels[0].args, "the clean-up drops the intent only")
}

func TestRWMutexAcquireUnknown(t *testing.T) {
	for _, opts := range []*locker.RWMutexOptions{nil, {Owner: "svc", Reentrant: true}, {Owner: "one"}} {
		for _, op := range []string{"TryRLock", "RLock", "TryLock", "Lock"} {
			c, f := newClient(t, nil)
			k := c.Key("n")
			f.fail(errBoom, "rw_rlock", "rw_lock")
			rw := newRW(t, c, "n", time.Second, opts)
			acquire := map[string]func(context.Context) (*locker.Lease, error){
				"TryRLock": rw.TryRLock, "RLock": rw.RLock, "TryLock": rw.TryLock, "Lock": rw.Lock,
			}[op]
			l, err := acquire(testCtx(t))
			require.ErrorIs(t, err, errBoom, op)
			require.Nil(t, l, op)
			require.NoError(t, c.Close())
			script := "rw_lock"
			if strings.HasSuffix(op, "RLock") {
				script = "rw_rlock"
			}
			acq := f.runs(script)
			require.Len(t, acq, 1, "%s %+v: no retry after an error that is not transient", op, opts)
			intent := ""
			if op == "Lock" {
				intent = acq[0].args[3]
			}
			want := [][]string{{acq[0].args[0], intent, "30000", k + ":wake", acq[0].args[1]}}
			if op == "Lock" {
				want = append(want, []string{"", intent, "0", k + ":wake"}) // Lock gave up: its intent
			}
			var got [][]string
			for _, c := range f.runs("rw_cancel") {
				assert.Equal(t, []string{k + ":rw", k + ":rwr"}, c.keys)
				got = append(got, c.args)
			}
			assert.ElementsMatch(t, want, got, "%s %+v: the call's hold dropped and the call refused, in every owner mode", op, opts)
		}
	}
	t.Run("answered", func(t *testing.T) {
		c, f := newClient(t, nil)
		f.fail(errAnswered, "rw_rlock", "rw_lock")
		rw := newRW(t, c, "n", time.Second, nil)
		_, err := rw.TryRLock(testCtx(t))
		require.ErrorIs(t, err, errAnswered)
		_, err = rw.TryLock(testCtx(t))
		require.ErrorIs(t, err, errAnswered)
		require.NoError(t, c.Close())
		assert.Empty(t, f.runs("rw_cancel"), "a refused call granted nothing and cannot arrive later")
	})
}

func TestRWMutexDowngrade(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	k := c.Key("d")
	rw := newRW(t, c, "d", 2*time.Second, nil)

	f.reply([]any{int64(1), int64(42)}, "rw_lock", "rw_downgrade")
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	r, err := rw.Downgrade(ctx, w)
	require.NoError(t, err)
	run := f.runs("rw_downgrade")
	require.Len(t, run, 1)
	assert.Equal(t, []string{k + ":rw", k + ":rwr"}, run[0].keys)
	read := run[0].args[3]
	assert.True(t, strings.HasPrefix(read, "r:"), "a read hold field %q", read)
	assertToken(t, read[2:])
	assert.Equal(t, []string{w.Token(), "w:" + w.Token(), "2000", read, k + ":wake", ""}, run[0].args)
	assert.Equal(t, int64(42), r.Fence())
	assert.Equal(t, w.Token(), r.Token())
	assert.True(t, r.Valid())

	// The write lease counts as released.
	n := f.count()
	assert.NoError(t, w.Unlock(ctx))
	assert.ErrorIs(t, w.Extend(ctx, time.Second), locker.ErrExpired)
	assert.False(t, w.Valid())
	assert.ErrorIs(t, context.Cause(w.Context()), context.Canceled)
	_, err = rw.Downgrade(ctx, w)
	assert.ErrorIs(t, err, locker.ErrExpired, "Downgrade of a released lease")
	assert.Equal(t, n, f.count(), "nothing sent for a released lease")

	// The read lease's calls name the new hold.
	require.NoError(t, r.Unlock(ctx))
	assert.Equal(t, []string{w.Token(), read, "", k + ":wake"}, f.runs("rw_release")[0].args)

	// Leases that are not write leases of this lock.
	other := newRW(t, c, "other", time.Second, nil)
	ow, err := other.TryLock(ctx)
	require.NoError(t, err)
	ml, err := newMutex(t, c, "d", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	rl, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	c2 := clientOn(t, f, &locker.Options{Prefix: "elsewhere:"})
	pw, err := newRW(t, c2, "d", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	n = f.count()
	for name, l := range map[string]*locker.Lease{"nil": nil, "read": rl, "other name": ow, "mutex": ml, "other prefix": pw} {
		d, err := rw.Downgrade(ctx, l)
		assert.ErrorIs(t, err, locker.ErrInvalidOption, name)
		assert.Nil(t, d, name)
	}
	assert.Equal(t, n, f.count(), "nothing sent for a lease of another kind or lock")

	// Gone: ErrExpired or ErrHeldByOther, and the write lease counts as released.
	for status, want := range map[int64]error{0: locker.ErrExpired, -1: locker.ErrHeldByOther} {
		w, err = rw.TryLock(ctx)
		require.NoError(t, err)
		f.reply([]any{status, int64(0)}, "rw_downgrade")
		d, err := rw.Downgrade(ctx, w)
		assert.ErrorIs(t, err, want)
		assert.Nil(t, d)
		assert.ErrorIs(t, w.Err(), want)
		n = f.count()
		assert.NoError(t, w.Unlock(ctx))
		assert.Equal(t, n, f.count())
	}
}

func TestRWMutexDowngradeFails(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		c, f := newClient(t, nil)
		ctx := testCtx(t)
		rw := newRW(t, c, "d", time.Minute, nil)
		w, err := rw.TryLock(ctx)
		require.NoError(t, err)
		vu := w.ValidUntil()
		f.fail(errAnswered, "rw_downgrade")
		_, err = rw.Downgrade(ctx, w)
		require.ErrorIs(t, err, errAnswered)
		assert.Equal(t, vu, w.ValidUntil(), "the write lease is unchanged")
		assert.NoError(t, w.Context().Err())
		require.NoError(t, c.Close())
		assert.Empty(t, f.runs("rw_cancel"))
		require.NoError(t, w.Unlock(ctx), "and may be unlocked")
		assert.Len(t, f.runs("rw_release"), 1)
	})
	t.Run("unknown", func(t *testing.T) {
		c, f := newClient(t, nil)
		k := c.Key("d")
		rw := newRW(t, c, "d", time.Minute, nil)
		w, err := rw.TryLock(testCtx(t))
		require.NoError(t, err)
		lost := w.Lost()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f.handle(cancelOn(cancel), "rw_downgrade")
		d, err := rw.Downgrade(ctx, w)
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, d)
		assert.False(t, w.Valid(), "the write lease ends at once")
		assert.True(t, w.ValidUntil().IsZero())
		assert.ErrorIs(t, context.Cause(w.Context()), context.Canceled)
		assert.NoError(t, w.Err())
		assert.False(t, isClosed(lost))
		require.NoError(t, c.Close())
		dg, cancels := f.runs("rw_downgrade"), f.runs("rw_cancel")
		require.Len(t, cancels, 1)
		assert.Equal(t, []string{k + ":rw", k + ":rwr"}, cancels[0].keys)
		assert.Equal(t, []string{w.Token(), "", "0", k + ":wake", "w:" + w.Token(), dg[0].args[3]}, cancels[0].args,
			"the clean-up drops the write hold and the read hold the call may have made")
		n := f.count()
		require.NoError(t, w.Unlock(testCtx(t)))
		assert.Equal(t, n, f.count(), "the write lease counts as released")
	})
}

func TestRWMutexNoScript(t *testing.T) {
	// Every RW script is loaded and retried on NOSCRIPT like the mutex's.
	f := newColdFake()
	c := clientOn(t, f, nil)
	exerciseRW(t, testCtx(t), c, f, time.Second)
	require.NoError(t, c.Close())
	loaded := map[string]bool{}
	for _, call := range f.Calls() {
		if call.op == "load" {
			loaded[call.name] = true
			assert.Equal(t, luaScripts[call.name].src, call.src)
		}
	}
	for _, s := range rwScripts {
		assert.NotEmpty(t, f.runs(s), "%s never ran", s)
		assert.True(t, loaded[s], "%s never loaded", s)
	}
}
