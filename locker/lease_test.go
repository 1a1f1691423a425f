package locker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

func TestNilLease(t *testing.T) {
	var l *locker.Lease
	ctx := testCtx(t)
	assert.NoError(t, l.Unlock(ctx))
	assert.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired)
	_, err := l.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrExpired)
	assert.True(t, l.ValidUntil().IsZero())
	assert.False(t, l.Valid())
	assert.Zero(t, l.Fence())
	assert.Empty(t, l.Token())
	assert.Empty(t, l.Name())
}

func TestLeaseBasics(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	m := newMutex(t, c, "orders", 1500*time.Millisecond, nil)
	assert.Equal(t, "orders", m.Name())

	l1, err := m.TryLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "orders", l1.Name())
	assert.True(t, l1.Valid())
	assert.Equal(t, int64(1), l1.Fence())

	acq := f.runs("acquire")
	require.Len(t, acq, 1)
	base := c.Key("orders")
	assert.Equal(t, []string{base, base + ":fence", base + ":q", base + ":qx", base + ":wake", base + ":x"}, acq[0].keys)
	assert.Equal(t, l1.Token(), acq[0].args[0], "ARGV[1] is the lease token")
	assert.Equal(t, acq[0].args[0], acq[0].args[1], "a single hold uses the token as hold id")
	assert.Equal(t, "1500", acq[0].args[2], "ARGV[3] is the TTL in ms")
	assert.Equal(t, "0", acq[0].args[3], "ARGV[4]: TryLock does not queue")

	// Held: a second TryLock is refused and returns no lease.
	l2, err := m.TryLock(ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	assert.Nil(t, l2)

	d, err := l1.TTL(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, d, "TTL reports the script's pttl")
	pt := f.runs("pttl")
	require.Len(t, pt, 1)
	assert.Equal(t, []string{base, base + ":wake"}, pt[0].keys)
	assert.Equal(t, []string{l1.Token(), l1.Token()}, pt[0].args)

	require.NoError(t, l1.Extend(ctx, 3*time.Second))
	ex := f.runs("extend")
	require.Len(t, ex, 1)
	assert.Equal(t, []string{base, base + ":wake"}, ex[0].keys)
	assert.Equal(t, []string{l1.Token(), l1.Token(), "3000"}, ex[0].args)

	require.NoError(t, l1.Unlock(ctx))
	rel := f.runs("release")
	require.Len(t, rel, 1)
	assert.Equal(t, []string{base, base + ":wake"}, rel[0].keys)
	assert.Equal(t, []string{l1.Token(), l1.Token()}, rel[0].args)
	assert.Empty(t, f.emu.owner(c.Key("orders")))

	// The next grant gets the next fence from the reply.
	l3, err := m.TryLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), l3.Fence())
	assert.NotEqual(t, l1.Token(), l3.Token())
}

func TestUnlockTwice(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	n := f.count()
	require.NoError(t, l.Unlock(ctx), "Unlock twice is harmless")
	assert.Equal(t, n, f.count(), "the second Unlock sends nothing")
}

func TestUnlockExpired(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	f.emu.expire(c.Key("n"))

	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, locker.ErrExpired)
	require.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired)
	err = l.Unlock(ctx)
	require.ErrorIs(t, err, locker.ErrExpired)
	assert.NotErrorIs(t, err, locker.ErrHeldByOther)

	// The lease counts as released now.
	n := f.count()
	require.NoError(t, l.Unlock(ctx))
	require.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired)
	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, locker.ErrExpired)
	assert.Equal(t, n, f.count(), "a released lease sends nothing")
	assert.True(t, l.ValidUntil().IsZero())
}

func TestUnlockHeldByOther(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	vu := l.ValidUntil()
	f.emu.seize(c.Key("n"), "someone-else", 1000)

	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, locker.ErrHeldByOther)
	require.ErrorIs(t, l.Extend(ctx, 5*time.Second), locker.ErrHeldByOther)
	assert.Equal(t, vu, l.ValidUntil(), "a failed Extend leaves the deadline unchanged")
	err = l.Unlock(ctx)
	require.ErrorIs(t, err, locker.ErrHeldByOther)
	assert.NotErrorIs(t, err, locker.ErrExpired)
	assert.Equal(t, "someone-else", f.emu.owner(c.Key("n")), "the other owner keeps the lock")

	n := f.count()
	require.NoError(t, l.Unlock(ctx), "the lease counts as released")
	assert.Equal(t, n, f.count())
}

func TestScripterErrorLeavesLeaseUsable(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	f.fail = func(context.Context, call) error { return errBoom }
	require.ErrorIs(t, l.Unlock(ctx), errBoom)
	f.fail = nil
	assert.False(t, l.ValidUntil().IsZero(), "the lease is unchanged after a Scripter error")
	require.NoError(t, l.Unlock(ctx), "Unlock may be called again")
	assert.Empty(t, f.emu.owner(c.Key("n")))
}

func TestExtendAfterUnlock(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	n := f.count()
	require.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired)
	_, err = l.TTL(ctx)
	require.ErrorIs(t, err, locker.ErrExpired)
	assert.Equal(t, n, f.count(), "no call for a released lease")
}

func TestValidUntil(t *testing.T) {
	for _, drift := range []float64{0, 0.1} { // 0 means the default 0.01
		c, _ := newClient(t, &locker.Options{DriftFactor: drift})
		if drift == 0 {
			drift = locker.DefaultDriftFactor
		}
		ctx := testCtx(t)
		ttl := 10 * time.Second
		margin := time.Duration(float64(ttl)*drift) + 2*time.Millisecond
		m := newMutex(t, c, "n", ttl, nil)

		before := time.Now()
		l, err := m.TryLock(ctx)
		after := time.Now()
		require.NoError(t, err)
		vu := l.ValidUntil()
		assert.True(t, vu.Before(before.Add(ttl)), "deadline before start+ttl")
		assert.False(t, vu.Before(before.Add(ttl-margin)), "deadline %v earlier than start+ttl-margin", before.Add(ttl-margin).Sub(vu))
		assert.False(t, vu.After(after.Add(ttl-margin)), "deadline %v later than end+ttl-margin", vu.Sub(after.Add(ttl-margin)))
		assert.True(t, l.Valid())

		// Extend moves the deadline to the new call's start + new ttl - margin.
		ttl2 := 20 * time.Second
		margin2 := time.Duration(float64(ttl2)*drift) + 2*time.Millisecond
		before = time.Now()
		require.NoError(t, l.Extend(ctx, ttl2))
		after = time.Now()
		vu = l.ValidUntil()
		assert.False(t, vu.Before(before.Add(ttl2-margin2)))
		assert.False(t, vu.After(after.Add(ttl2-margin2)))

		require.NoError(t, l.Unlock(ctx))
		assert.True(t, l.ValidUntil().IsZero(), "zero after Unlock")
		assert.False(t, l.Valid())
	}
}

func TestOwnerOptions(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)

	// A fixed owner: token and hold id are the owner; re-acquiring succeeds
	// with the same fence (take-over after a restart).
	m := newMutex(t, c, "fixed", time.Second, &locker.MutexOptions{Owner: "svc-1"})
	l1, err := m.TryLock(ctx)
	require.NoError(t, err)
	l2, err := m.TryLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "svc-1", l1.Token())
	assert.Equal(t, l1.Fence(), l2.Fence())
	acqs := f.runs("acquire")
	require.Len(t, acqs, 2)
	for _, a := range acqs {
		require.Len(t, a.args, 5)
		assert.Equal(t, []string{"svc-1", "svc-1", "1000", "0"}, a.args[:4])
		assertToken(t, a.args[4]) // the call id: the owner repeats, so a fresh token
	}
	assert.NotEqual(t, acqs[0].args[4], acqs[1].args[4], "each call has its own id")

	// Reentrant: one owner, a fresh random hold id per hold, shared fence;
	// the lock is free after the last hold is dropped.
	f.reset()
	r := newMutex(t, c, "re", time.Second, &locker.MutexOptions{Owner: "svc-2", Reentrant: true})
	h1, err := r.TryLock(ctx)
	require.NoError(t, err)
	h2, err := r.Lock(ctx)
	require.NoError(t, err)
	assert.Equal(t, h1.Fence(), h2.Fence())
	acq := f.runs("acquire")
	require.Len(t, acq, 2)
	assert.Equal(t, "svc-2", acq[0].args[0])
	assert.Equal(t, "svc-2", acq[1].args[0])
	assert.NotEqual(t, "svc-2", acq[0].args[1])
	assert.NotEqual(t, acq[0].args[1], acq[1].args[1], "each hold has its own id")
	assertToken(t, acq[0].args[1])
	assertToken(t, acq[1].args[1])

	require.NoError(t, h1.Unlock(ctx))
	assert.Equal(t, "svc-2", f.emu.owner(c.Key("re")), "one hold left")
	rel := f.runs("release")
	require.Len(t, rel, 1)
	assert.Equal(t, acq[0].args[:2], rel[0].args, "Unlock drops its own hold")
	_, err = h2.TTL(ctx)
	require.NoError(t, err)
	require.NoError(t, h2.Unlock(ctx))
	assert.Empty(t, f.emu.owner(c.Key("re")))
}

func TestLockDeadlineWhileHeld(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	f.emu.seize(c.Key("n"), "holder", 60_000)
	m := newMutex(t, c, "n", time.Second, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	l, err := m.Lock(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotEmpty(t, f.runs("acquire"))
	assert.Equal(t, "holder", f.emu.owner(c.Key("n")))
	assert.Empty(t, f.runs("release"), "a refused acquire needs no clean-up")
}

func TestLockCancelWhileHeld(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute})
	f.emu.seize(c.Key("n"), "holder", 60_000)
	ctx, cancel := context.WithCancel(context.Background())
	f.after = func(c call, _ any) {
		if c.name == "acquire" {
			cancel() // cancel while Lock waits a minute before its next attempt
		}
	}
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, f.runs("acquire"), 1)
}

// TestLockWaitBoundedByHolderTTL checks that the pause between attempts
// never exceeds the holder's remaining TTL. The retry delays are set to one
// minute and the holder reports 1 ms left, then releases: Lock must make its
// second attempt and succeed well within the 10 s context. Without the bound
// it would pause 30 s or more and fail with ErrNotObtained. No timing is
// measured: only the outcome and the number of attempts.
func TestLockWaitBoundedByHolderTTL(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute})
	key := c.Key("n")
	f.emu.seize(key, "holder", 1)
	f.after = func(c call, r any) {
		if c.name == "acquire" {
			if v, ok := r.([]any); ok && v[0] == int64(0) {
				f.emu.expire(key) // the holder's last millisecond runs out
			}
		}
	}
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(testCtx(t))
	require.NoError(t, err)
	require.NotNil(t, l)
	assert.Len(t, f.runs("acquire"), 2)
	assert.Equal(t, int64(2), l.Fence())
}

func TestLockAcquiresWhenFree(t *testing.T) {
	c, f := newClient(t, nil)
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(testCtx(t))
	require.NoError(t, err)
	assert.True(t, l.Valid())
	assert.Len(t, f.runs("acquire"), 1)
}

func TestLockRetriesUntilReleased(t *testing.T) {
	// The holder reports a long TTL (no bound) and releases after a few
	// refusals; Lock keeps trying with backoff and gets the lock.
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	key := c.Key("n")
	f.emu.seize(key, "holder", 60_000)
	refusals := 0
	f.after = func(c call, r any) {
		if v, ok := r.([]any); ok && c.name == "acquire" && v[0] == int64(0) {
			refusals++
			if refusals == 5 {
				f.emu.expire(key)
			}
		}
	}
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(testCtx(t))
	require.NoError(t, err)
	require.NotNil(t, l)
	assert.Len(t, f.runs("acquire"), 6)
	tokens := map[string]bool{}
	for _, a := range f.runs("acquire") {
		tokens[a.args[0]] = true
	}
	assert.Len(t, tokens, 1, "every attempt of one Lock call uses the same token (its FIFO queue identity)")
}

func TestClaim(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	first, err := c.Claim(ctx, "msg-1", 90*time.Second)
	require.NoError(t, err)
	assert.True(t, first)
	first, err = c.Claim(ctx, "msg-1", 90*time.Second)
	require.NoError(t, err)
	assert.False(t, first)
	first, err = c.Claim(ctx, "msg-2", 90*time.Second)
	require.NoError(t, err)
	assert.True(t, first)

	runs := f.runs("claim")
	require.Len(t, runs, 3)
	assert.Equal(t, []string{c.Key("msg-1") + ":claim"}, runs[0].keys)
	assert.Equal(t, strconv.Itoa(90_000), runs[0].args[1], "ARGV[2] is the TTL in ms")
	assertToken(t, runs[0].args[0])
	assert.NotEqual(t, runs[0].args[0], runs[1].args[0], "a fresh token per Claim call")
}
