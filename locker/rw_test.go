package locker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
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

// exerciseRW runs every RW operation, and so every rw_*.lua script, with
// ttl on c over f (which emulates them, see withRW), and checks that each
// script ran. TestNoClientClock uses it.
func exerciseRW(t *testing.T, ctx context.Context, c *locker.Client, f *fakeScripter, ttl time.Duration) {
	t.Helper()
	for _, opts := range []*locker.RWMutexOptions{nil, {Owner: "o"}, {Owner: "r", Reentrant: true}} {
		rw := newRW(t, c, "rw", ttl, opts)
		r, err := rw.TryRLock(ctx)
		require.NoError(t, err)
		_, err = r.TTL(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Extend(ctx, ttl))
		r2, err := newRW(t, c, "rw", ttl, nil).RLock(ctx)
		require.NoError(t, err)
		require.NoError(t, r2.Unlock(ctx))

		// A writer waits behind the reader and gives up: its intent is dropped.
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err = newRW(t, c, "rw", ttl, nil).Lock(wctx)
		cancel()
		require.ErrorIs(t, err, locker.ErrNotObtained)
		require.NoError(t, r.Unlock(ctx))

		w, err := rw.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, w.Unlock(ctx))
		w, err = rw.Lock(ctx)
		require.NoError(t, err)
		d, err := rw.Downgrade(ctx, w)
		require.NoError(t, err)
		require.NoError(t, d.Unlock(ctx))
	}
	for _, s := range rwScripts {
		require.NotEmpty(t, f.runs(s), "%s never ran", s)
	}
}

func TestRWMutexBadInput(t *testing.T) {
	c, f := newClient(t, nil)
	withRW(f)
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
	}
	for name, call := range calls {
		assert.ErrorIs(t, call(nilCtx), locker.ErrNilContext, "%s(nil ctx)", name)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, name := range []string{"RLock", "Lock"} {
		err := calls[name](cancelled)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "%s(cancelled ctx)", name)
		assert.ErrorIs(t, err, context.Canceled, "%s(cancelled ctx)", name)
	}
	assert.Zero(t, f.count(), "bad input sends nothing")

	require.NoError(t, c.Close())
	for name, call := range calls {
		assert.ErrorIs(t, call(ctx), locker.ErrClosed, "%s after Close", name)
	}
	_, err := c.NewRWMutex("n", time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrClosed, "NewRWMutex after Close")
	assert.Zero(t, f.count(), "nothing is sent after Close")
}

func TestRWMutexCalls(t *testing.T) {
	c, f := newClient(t, nil)
	e := withRW(f)
	ctx := testCtx(t)
	rw := newRW(t, c, "doc", 1500*time.Millisecond, nil)
	k := c.Key("doc")
	acqKeys := []string{k + ":rw", k + ":fence", k + ":wake"}
	leaseKeys := []string{k + ":rw", k + ":wake"}

	r, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "doc", r.Name())
	assert.Zero(t, r.Fence(), "no write grant yet and no counter")
	assert.True(t, r.Valid())
	run := f.runs("rw_rlock")
	require.Len(t, run, 1)
	assert.Equal(t, acqKeys, run[0].keys)
	assert.Equal(t, []string{r.Token(), "r:" + r.Token(), "1500"}, run[0].args)
	assertToken(t, r.Token())

	d, err := r.TTL(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, d)
	require.NoError(t, r.Extend(ctx, 3*time.Second))
	require.NoError(t, r.Unlock(ctx))
	for _, s := range []string{"rw_pttl", "rw_extend", "rw_release"} {
		run := f.runs(s)
		require.Len(t, run, 1, s)
		assert.Equal(t, leaseKeys, run[0].keys, s)
		assert.Equal(t, []string{r.Token(), "r:" + r.Token()}, run[0].args[:2], s)
	}
	assert.Equal(t, "3000", f.runs("rw_extend")[0].args[2])
	assert.Empty(t, e.fields(k+":rw"), "nothing left after the last Unlock")

	w, err := rw.TryLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), w.Fence())
	run = f.runs("rw_lock")
	require.Len(t, run, 1)
	assert.Equal(t, acqKeys, run[0].keys)
	assert.Equal(t, []string{w.Token(), "w:" + w.Token(), "1500", ""}, run[0].args, "TryLock records no intent")
	require.NoError(t, w.Unlock(ctx))

	w, err = rw.Lock(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), w.Fence())
	run = f.runs("rw_lock")
	require.Len(t, run, 2)
	assert.True(t, strings.HasPrefix(run[1].args[3], "i:"), "Lock passes its intent: %q", run[1].args[3])
	assertToken(t, strings.TrimPrefix(run[1].args[3], "i:"))
	assert.Empty(t, f.runs("rw_cancel"), "an acquired Lock needs no clean-up")
	require.NoError(t, w.Unlock(ctx))

	r, err = rw.RLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Fence(), "a read lease reports the last write grant's fence")
	require.NoError(t, r.Unlock(ctx))
	assert.Empty(t, e.errors())
}

func TestRWMutexOwners(t *testing.T) {
	c, f := newClient(t, nil)
	e := withRW(f)
	ctx := testCtx(t)
	key := c.Key("o") + ":rw"

	// A fixed owner: one read hold, one write hold, the owner as hold id.
	fixed := newRW(t, c, "o", time.Second, &locker.RWMutexOptions{Owner: "svc"})
	a, err := fixed.TryRLock(ctx)
	require.NoError(t, err)
	b, err := fixed.TryRLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "svc", a.Token())
	assert.Equal(t, []string{"r:svc"}, keysOf(e.fields(key)))
	require.NoError(t, b.Unlock(ctx))
	assert.ErrorIs(t, a.Unlock(ctx), locker.ErrExpired, "one hold per owner: b's Unlock dropped it")

	// Reentrant: a random hold id per hold, counted.
	re := newRW(t, c, "o", time.Second, &locker.RWMutexOptions{Owner: "job", Reentrant: true})
	var holds []*locker.Lease
	for range 3 {
		l, err := re.RLock(ctx)
		require.NoError(t, err)
		holds = append(holds, l)
	}
	assert.Len(t, e.fields(key), 3)
	for _, run := range f.runs("rw_rlock")[2:] {
		assert.Equal(t, "job", run.args[0])
		assertToken(t, strings.TrimPrefix(run.args[1], "r:"))
	}
	for i, l := range holds {
		require.NoError(t, l.Unlock(ctx))
		assert.Len(t, e.fields(key), 2-i)
	}

	// The owner of the write lock may take read holds and more write holds.
	w1, err := re.Lock(ctx)
	require.NoError(t, err)
	w2, err := re.TryLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, w1.Fence(), w2.Fence(), "a reentrant write hold shares the grant's fence")
	r, err := re.TryRLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, w1.Fence(), r.Fence())
	_, err = newRW(t, c, "o", time.Second, nil).TryRLock(ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "another owner cannot read while job writes")
	require.NoError(t, w1.Unlock(ctx))
	require.NoError(t, w2.Unlock(ctx))
	// No upgrade: job's own read hold refuses its write.
	_, err = re.TryLock(ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "no upgrade while the owner reads")
	require.NoError(t, r.Unlock(ctx))
	assert.Empty(t, e.fields(key))
	assert.Empty(t, e.errors())
}

func keysOf(m map[string]rwField) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRWMutexWriterPreference(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	e := withRW(f)
	ctx := testCtx(t)
	key := c.Key("p") + ":rw"
	reader := newRW(t, c, "p", time.Minute, &locker.RWMutexOptions{Owner: "reader", Reentrant: true})
	r, err := reader.TryRLock(ctx)
	require.NoError(t, err)

	// The waiting writer's first refusal records its intent; it lets the
	// reader leave after its third refusal.
	refusals := 0 // touched only by the writer's calls
	done := make(chan struct{})
	f.after = func(c call, rep any) {
		if v, ok := rep.([]any); ok && c.name == "rw_lock" && v[0] == int64(0) {
			refusals++
			assert.LessOrEqual(t, v[1], int64(30_000), "refused with an intent: retry within ttl/2")
			if refusals == 1 {
				go func() {
					defer close(done)
					_, err := newRW(t, otherClient(f), "p", time.Minute, nil).TryRLock(ctx)
					assert.ErrorIs(t, err, locker.ErrNotObtained, "a new reader while a writer waits")
					r2, err := reader.TryRLock(ctx)
					assert.NoError(t, err, "a reader already inside may add holds while a writer waits")
					assert.NoError(t, r2.Unlock(ctx))
					assert.NoError(t, r.Unlock(ctx))
				}()
			}
		}
	}
	w, err := newRW(t, c, "p", time.Minute, nil).Lock(ctx)
	require.NoError(t, err)
	<-done
	assert.GreaterOrEqual(t, refusals, 1)
	for k := range e.fields(key) {
		assert.False(t, strings.HasPrefix(k, "i:"), "intent %q left after the writer acquired", k)
	}
	require.NoError(t, w.Unlock(ctx))
	assert.Empty(t, e.errors())
}

// otherClient returns a second client on the same fake (another process).
func otherClient(f *fakeScripter) *locker.Client {
	c, err := locker.New(f, nil)
	if err != nil {
		panic(err)
	}
	return c
}

func TestRWMutexLockGivesUpDropsIntent(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	e := withRW(f)
	key := c.Key("g") + ":rw"
	rw := newRW(t, c, "g", time.Minute, nil)
	r, err := rw.TryRLock(testCtx(t))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	w, err := rw.Lock(ctx)
	require.Nil(t, w)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	attempts, cancels := f.runs("rw_lock"), f.runs("rw_cancel")
	require.NotEmpty(t, attempts)
	require.Len(t, cancels, 1, "one clean-up call")
	assert.Equal(t, []string{"", "", attempts[0].args[3], "0"}, cancels[0].args, "the clean-up drops the intent")
	for _, a := range attempts {
		assert.Equal(t, attempts[0].args[3], a.args[3], "one intent for all attempts of a Lock")
	}
	assert.Equal(t, []string{"r:" + r.Token()}, keysOf(e.fields(key)), "only the reader is left")
	assert.Equal(t, 1, e.published(c.Key("g")+":wake"), "dropping the last intent wakes readers")
	r2, err := rw.TryRLock(testCtx(t))
	require.NoError(t, err, "readers proceed at once")
	require.NoError(t, r2.Unlock(testCtx(t)))
	require.NoError(t, r.Unlock(testCtx(t)))
}

func TestRWMutexFailedAcquireIsAbandoned(t *testing.T) {
	for _, opts := range []*locker.RWMutexOptions{nil, {Owner: "svc", Reentrant: true}, {Owner: "one"}} {
		for _, op := range []string{"TryRLock", "RLock", "TryLock", "Lock"} {
			f, _ := newRWFake()
			f.fail = func(_ context.Context, c call) error {
				if c.name == "rw_rlock" || c.name == "rw_lock" {
					return errBoom
				}
				return nil
			}
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			rw := newRW(t, c, "n", time.Second, opts)
			var l *locker.Lease
			switch op {
			case "TryRLock":
				l, err = rw.TryRLock(testCtx(t))
			case "RLock":
				l, err = rw.RLock(testCtx(t))
			case "TryLock":
				l, err = rw.TryLock(testCtx(t))
			case "Lock":
				l, err = rw.Lock(testCtx(t))
			}
			require.ErrorIs(t, err, errBoom, op)
			require.Nil(t, l, op)
			var acq []call
			if strings.HasSuffix(op, "RLock") {
				acq = f.runs("rw_rlock")
			} else {
				acq = f.runs("rw_lock")
			}
			require.Len(t, acq, 1, "%s %+v: no retry after a server error", op, opts)
			intent := ""
			if op == "Lock" {
				intent = acq[0].args[3]
			}
			cancels := f.runs("rw_cancel")
			unique := opts == nil || opts.Reentrant
			switch {
			case unique:
				require.Len(t, cancels, 1, "%s %+v: one clean-up", op, opts)
				assert.Equal(t, []string{acq[0].args[0], acq[0].args[1], intent, "30000"}, cancels[0].args, "%s %+v", op, opts)
			case intent != "":
				require.Len(t, cancels, 1, "%s %+v: one clean-up", op, opts)
				assert.Equal(t, []string{"", "", intent, "0"}, cancels[0].args, "%s %+v: a fixed owner's hold is kept, the intent dropped", op, opts)
			default:
				assert.Empty(t, cancels, "%s %+v: a fixed owner's hold is not dropped", op, opts)
			}
		}
	}
}

func TestRWMutexUnexpectedReplies(t *testing.T) {
	shapes := []any{nil, "OK", int64(1), []any{}, []any{int64(1)}, []any{int64(1), "7"}, []any{int64(2), int64(7)}, []any{int64(-1), int64(0)}}
	for _, script := range []string{"rw_rlock", "rw_lock"} {
		for _, shape := range shapes {
			f := newFake()
			f.reply = func(c call) (any, bool) { return shape, c.name == script }
			withRW(f)
			c, err := locker.New(f, nil)
			require.NoError(t, err)
			rw := newRW(t, c, "n", time.Second, nil)
			var l *locker.Lease
			if script == "rw_rlock" {
				l, err = rw.RLock(testCtx(t))
			} else {
				l, err = rw.Lock(testCtx(t))
			}
			require.ErrorIs(t, err, locker.ErrUnexpectedReply, "%s reply %#v", script, shape)
			require.Nil(t, l)
			require.Len(t, f.runs(script), 1, "no retry after an unexpected reply")
			require.Len(t, f.runs("rw_cancel"), 1, "the clean-up after an undecodable reply")
		}
	}
	for _, shape := range append(shapes, []any{int64(-2), int64(0)}) {
		if v, ok := shape.([]any); ok && len(v) == 2 && v[1] == int64(0) && v[0] == int64(-1) {
			continue // -1 is a valid downgrade status
		}
		f := newFake()
		f.reply = func(c call) (any, bool) { return shape, c.name == "rw_downgrade" }
		withRW(f)
		c, err := locker.New(f, nil)
		require.NoError(t, err)
		rw := newRW(t, c, "n", time.Second, nil)
		w, err := rw.TryLock(testCtx(t))
		require.NoError(t, err)
		d, err := rw.Downgrade(testCtx(t), w)
		require.ErrorIs(t, err, locker.ErrUnexpectedReply, "rw_downgrade reply %#v", shape)
		require.Nil(t, d)
		assert.True(t, w.Valid(), "the write lease is unchanged after a failed Downgrade")
	}
}

func TestRWMutexDowngrade(t *testing.T) {
	c, f := newClient(t, nil)
	e := withRW(f)
	ctx := testCtx(t)
	key := c.Key("d") + ":rw"
	rw := newRW(t, c, "d", 2*time.Second, nil)

	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	r, err := rw.Downgrade(ctx, w)
	require.NoError(t, err)
	run := f.runs("rw_downgrade")
	require.Len(t, run, 1)
	assert.Equal(t, []string{c.Key("d") + ":rw", c.Key("d") + ":wake"}, run[0].keys)
	assert.Equal(t, []string{w.Token(), "w:" + w.Token(), "2000", "r:" + w.Token()}, run[0].args)
	assert.Equal(t, w.Fence(), r.Fence(), "the read lease keeps the write grant's fence")
	assert.Equal(t, w.Token(), r.Token())
	assert.True(t, r.Valid())
	assert.Equal(t, []string{"r:" + w.Token()}, keysOf(e.fields(key)))
	assert.Equal(t, 1, e.published(c.Key("d")+":wake"), "downgrade wakes waiting readers")

	// The write lease counts as released.
	n := f.count()
	assert.NoError(t, w.Unlock(ctx))
	assert.ErrorIs(t, w.Extend(ctx, time.Second), locker.ErrExpired)
	assert.False(t, w.Valid())
	assert.ErrorIs(t, w.Context().Err(), context.Canceled)
	_, err = rw.Downgrade(ctx, w)
	assert.ErrorIs(t, err, locker.ErrExpired, "Downgrade of a released lease")
	assert.Equal(t, n, f.count(), "nothing sent for a released lease")

	// Leases that are not write leases of this lock.
	other := newRW(t, c, "other", time.Second, nil)
	ow, err := other.TryLock(ctx)
	require.NoError(t, err)
	ml, err := newMutex(t, c, "d", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	n = f.count()
	for name, l := range map[string]*locker.Lease{"nil": nil, "read": r, "other name": ow, "mutex": ml} {
		d, err := rw.Downgrade(ctx, l)
		assert.ErrorIs(t, err, locker.ErrInvalidOption, name)
		assert.Nil(t, d, name)
	}
	assert.Equal(t, n, f.count(), "nothing sent for a lease of another kind or lock")
	require.NoError(t, r.Unlock(ctx))

	// An expired write lease: ErrExpired, and it counts as released.
	w, err = rw.TryLock(ctx)
	require.NoError(t, err)
	e.advance(2001)
	d, err := rw.Downgrade(ctx, w)
	assert.ErrorIs(t, err, locker.ErrExpired)
	assert.Nil(t, d)
	n = f.count()
	assert.NoError(t, w.Unlock(ctx))
	assert.Equal(t, n, f.count())

	// Superseded by a reader: ErrHeldByOther, the reader untouched.
	w, err = rw.TryLock(ctx)
	require.NoError(t, err)
	e.advance(2001)
	r, err = rw.TryRLock(ctx)
	require.NoError(t, err)
	_, err = rw.Downgrade(ctx, w)
	assert.ErrorIs(t, err, locker.ErrHeldByOther)
	assert.Equal(t, []string{"r:" + r.Token()}, keysOf(e.fields(key)))
	require.NoError(t, r.Unlock(ctx))

	// A Scripter error leaves the write lease usable and drops the read
	// hold the failed call may have created.
	w, err = rw.TryLock(ctx)
	require.NoError(t, err)
	f.fail = func(_ context.Context, c call) error {
		if c.name == "rw_downgrade" {
			return errBoom
		}
		return nil
	}
	_, err = rw.Downgrade(ctx, w)
	require.ErrorIs(t, err, errBoom)
	f.fail = nil
	cancels := f.runs("rw_cancel")
	require.Len(t, cancels, 1)
	assert.Equal(t, []string{w.Token(), "r:" + w.Token(), "", "30000"}, cancels[0].args)
	assert.True(t, w.Valid())
	require.NoError(t, w.Unlock(ctx))
	assert.Empty(t, e.fields(key))
	assert.Empty(t, e.errors())
}

func TestRWMutexStaleLeases(t *testing.T) {
	c, f := newClient(t, nil)
	e := withRW(f)
	ctx := testCtx(t)
	short := newRW(t, c, "s", 100*time.Millisecond, nil)
	long := newRW(t, c, "s", time.Minute, nil)

	// A stale reader: ErrExpired while only readers hold, ErrHeldByOther
	// once a writer does.
	r, err := short.TryRLock(ctx)
	require.NoError(t, err)
	other, err := long.TryRLock(ctx)
	require.NoError(t, err)
	e.advance(101)
	_, err = r.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrExpired)
	assert.ErrorIs(t, r.Extend(ctx, time.Minute), locker.ErrExpired)
	assert.ErrorIs(t, r.Unlock(ctx), locker.ErrExpired)
	ttl, err := other.TTL(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Minute-101*time.Millisecond, ttl, "the other reader's expiry is its own")
	require.NoError(t, other.Unlock(ctx))

	r, err = short.TryRLock(ctx)
	require.NoError(t, err)
	e.advance(101)
	w, err := long.TryLock(ctx)
	require.NoError(t, err)
	_, err = r.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrHeldByOther)
	assert.ErrorIs(t, r.Extend(ctx, time.Minute), locker.ErrHeldByOther)
	assert.ErrorIs(t, r.Unlock(ctx), locker.ErrHeldByOther)

	// A stale writer: ErrExpired while nobody holds, ErrHeldByOther while a
	// reader (or writer) of another owner holds.
	e.advance(60_001)
	w2, err := long.TryLock(ctx)
	require.NoError(t, err)
	e.advance(60_001)
	_, err = w2.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrExpired)
	r, err = long.TryRLock(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, w.Extend(ctx, time.Minute), locker.ErrHeldByOther)
	assert.ErrorIs(t, w.Unlock(ctx), locker.ErrHeldByOther)
	assert.ErrorIs(t, w2.Unlock(ctx), locker.ErrHeldByOther)
	_, err = r.TTL(ctx)
	require.NoError(t, err, "the reader is untouched")
	require.NoError(t, r.Unlock(ctx))
	assert.Empty(t, e.errors())
}

func TestRWMutexNoScript(t *testing.T) {
	// Every RW script is loaded and retried on NOSCRIPT like the mutex's.
	f := newColdFake()
	withRW(f)
	c, err := locker.New(f, nil)
	require.NoError(t, err)
	exerciseRW(t, testCtx(t), c, f, time.Second)
	loaded := map[string]bool{}
	for _, call := range f.Calls() {
		if call.op == "load" {
			assert.False(t, loaded[call.name], "%s loaded twice", call.name)
			loaded[call.name] = true
			assert.Equal(t, luaScripts[call.name].src, call.src)
		}
	}
	for _, s := range rwScripts {
		assert.True(t, loaded[s], "%s never loaded", s)
	}
}
