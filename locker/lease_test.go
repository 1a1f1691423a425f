package locker_test

// The Go logic of Mutex and Lease with a fake Scripter: what each call
// sends, how statuses map to errors, how the validity deadline moves, how
// Lock retries, and what happens after a call whose outcome is unknown.
// What the scripts do with those calls is tested against real Redis.

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.ErrorIs(t, l.Err(), locker.ErrExpired)
	select {
	case <-l.Lost():
	default:
		t.Error("Lost of a nil lease is not closed")
	}
	assert.ErrorIs(t, context.Cause(l.Context()), locker.ErrExpired)
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLeaseCalls(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	m := newMutex(t, c, "orders", 1500*time.Millisecond, nil)
	assert.Equal(t, "orders", m.Name())
	base := c.Key("orders")
	wake := base + ":wake"

	f.reply([]any{int64(1), int64(1_700_000_000_000_123)}, "acquire")
	l, err := m.TryLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "orders", l.Name())
	assert.True(t, l.Valid())
	assert.Equal(t, int64(1_700_000_000_000_123), l.Fence(), "the fence is the script's")

	acq := f.runs("acquire")
	require.Len(t, acq, 1)
	assert.Equal(t, []string{base, base + ":q", base + ":qx", base + ":x"}, acq[0].keys, "lock, queue, queue expiries, abandoned calls")
	id := acq[0].args[1]
	assertToken(t, id)
	assert.Equal(t, []string{"", id, "1500", "", "", wake, ""}, acq[0].args,
		"owner '' (the call id) without Owner; TTL in ms; TryLock does not queue; the wake channel in ARGV; a first try")
	assert.Equal(t, id, l.Token(), "the owner token is the granting call's id")

	// Refused: ErrNotObtained and no lease.
	f.reply([]any{int64(0), int64(700)}, "acquire")
	l2, err := m.TryLock(ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	assert.Nil(t, l2)

	f.reply([]any{int64(1), int64(1234)}, "pttl")
	d, err := l.TTL(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1234*time.Millisecond, d, "TTL reports the script's pttl")
	pt := f.runs("pttl")
	require.Len(t, pt, 1)
	assert.Equal(t, []string{base}, pt[0].keys, "a lease script takes the lock's hash only")
	assert.Equal(t, []string{id, id}, pt[0].args[:2], "owner and hold id")

	require.NoError(t, l.Extend(ctx, 3*time.Second))
	require.NoError(t, l.Extend(ctx, 3*time.Second))
	ex := f.runs("extend")
	require.Len(t, ex, 2)
	for i, e := range ex {
		assert.Equal(t, []string{base}, e.keys)
		assert.Equal(t, []string{id, id, "3000", strconv.Itoa(i + 1)}, e.args[:4], "owner, hold, ttl ms, extend number")
	}

	require.NoError(t, l.Unlock(ctx))
	rel := f.runs("release")
	require.Len(t, rel, 1)
	assert.Equal(t, []string{base}, rel[0].keys)
	assert.Equal(t, []string{id, id, "", wake}, rel[0].args, "owner, hold, only this hold, wake channel")
	assert.False(t, l.Valid())
	assert.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
	assert.NoError(t, l.Err())
	assert.False(t, isClosed(l.Lost()), "a released lease was not lost")

	f.reply([]any{int64(1), int64(5)}, "acquire")
	l3, err := m.TryLock(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, l.Token(), l3.Token(), "a fresh call id per call")
}

func TestOwnerArgs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   *locker.MutexOptions
		single string // release ARGV[3]
	}{
		{"random", nil, ""},
		{"owner", &locker.MutexOptions{Owner: "svc-1"}, "1"},
		{"reentrant", &locker.MutexOptions{Owner: "svc-2", Reentrant: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newClient(t, nil)
			ctx := testCtx(t)
			m := newMutex(t, c, "n", time.Second, tc.opts)
			l1, err := m.TryLock(ctx)
			require.NoError(t, err)
			l2, err := m.Lock(ctx)
			require.NoError(t, err)
			acq := f.runs("acquire")
			require.Len(t, acq, 2)
			assertToken(t, acq[0].args[1])
			assertToken(t, acq[1].args[1])
			assert.NotEqual(t, acq[0].args[1], acq[1].args[1], "each call has its own id, which names its hold")
			if tc.opts == nil {
				assert.Empty(t, acq[0].args[0], "no Owner: '' (the call id)")
				assert.Empty(t, acq[1].args[0], "no Owner: '' (the call id)")
				assert.Equal(t, acq[0].args[1], l1.Token(), "the owner token is the call id")
			} else {
				assert.Equal(t, tc.opts.Owner, acq[0].args[0])
				assert.Equal(t, tc.opts.Owner, acq[1].args[0])
				assert.Equal(t, tc.opts.Owner, l1.Token())
			}
			require.NoError(t, l1.Unlock(ctx))
			require.NoError(t, l2.Unlock(ctx))
			rel := f.runs("release")
			require.Len(t, rel, 2)
			for i, r := range rel {
				owner := cmp.Or(acq[i].args[0], acq[i].args[1])
				assert.Equal(t, []string{owner, acq[i].args[1]}, r.args[:2], "Unlock names its own owner and hold")
				assert.Equal(t, tc.single, r.args[2])
			}
		})
	}
}

func TestUnlockTwice(t *testing.T) {
	_, f, ctx, l := heldMutex(t)
	require.NoError(t, l.Unlock(ctx))
	n := f.count()
	require.NoError(t, l.Unlock(ctx), "Unlock twice is harmless")
	assert.Equal(t, n, f.count(), "the second Unlock sends nothing")
}

func TestLeaseStatuses(t *testing.T) {
	for _, tc := range []struct {
		status int64
		want   error
		not    error
	}{
		{0, locker.ErrExpired, locker.ErrHeldByOther},
		{-1, locker.ErrHeldByOther, locker.ErrExpired},
	} {
		t.Run("Unlock/"+strconv.FormatInt(tc.status, 10), func(t *testing.T) {
			c, f := newClient(t, nil)
			ctx := testCtx(t)
			l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
			require.NoError(t, err)
			f.reply(tc.status, "release")
			err = l.Unlock(ctx)
			require.ErrorIs(t, err, tc.want)
			assert.NotErrorIs(t, err, tc.not)
			assert.ErrorIs(t, l.Err(), tc.want, "found gone: the lease was lost")
			assert.True(t, isClosed(l.Lost()))

			// The lease counts as released now: nothing more is sent.
			n := f.count()
			require.NoError(t, l.Unlock(ctx))
			require.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired)
			_, err = l.TTL(ctx)
			require.ErrorIs(t, err, locker.ErrExpired)
			assert.Equal(t, n, f.count(), "a released lease sends nothing")
			assert.True(t, l.ValidUntil().IsZero())
		})
		t.Run("Extend/"+strconv.FormatInt(tc.status, 10), func(t *testing.T) {
			c, f := newClient(t, nil)
			ctx := testCtx(t)
			l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
			require.NoError(t, err)
			vu := l.ValidUntil()
			f.reply(tc.status, "extend")
			require.ErrorIs(t, l.Extend(ctx, time.Minute), tc.want)
			assert.Equal(t, vu, l.ValidUntil(), "a failed Extend leaves the deadline")
			assert.ErrorIs(t, l.Err(), tc.want)
			assert.True(t, isClosed(l.Lost()))
			assert.ErrorIs(t, context.Cause(l.Context()), tc.want)
			require.ErrorIs(t, l.Extend(ctx, time.Minute), tc.want, "a lost lease reports its loss")
			assert.Len(t, f.runs("extend"), 1, "and sends nothing more")
		})
		t.Run("TTL/"+strconv.FormatInt(tc.status, 10), func(t *testing.T) {
			c, f := newClient(t, nil)
			ctx := testCtx(t)
			l, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
			require.NoError(t, err)
			f.reply([]any{tc.status, int64(0)}, "pttl")
			_, err = l.TTL(ctx)
			require.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, l.Err(), tc.want)
		})
	}
}

// TestUnlockAnswered checks that a release the server refused leaves the
// lease as it was.
func TestUnlockAnswered(t *testing.T) {
	c, f, ctx, l := heldMutex(t)
	vu := l.ValidUntil()
	lctx := l.Context()
	f.fail(errAnswered, "release")
	require.ErrorIs(t, l.Unlock(ctx), errAnswered)
	assert.Equal(t, vu, l.ValidUntil(), "the lease is unchanged after a refused release")
	assert.True(t, l.Valid())
	assert.NoError(t, lctx.Err())
	assert.NoError(t, l.Err())
	require.NoError(t, c.Close())
	assert.Len(t, f.runs("release"), 1, "a refused release is not retried in the background")
	f.handle(nil, "release")
	require.NoError(t, l.Unlock(ctx), "Unlock may be called again, also after Close")
	assert.Len(t, f.runs("release"), 2)
}

// TestUnlockUnknown checks an Unlock whose release may or may not have
// run: the lease ends at once and the release is completed in the
// background.
func TestUnlockUnknown(t *testing.T) {
	c, f := newClient(t, nil)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(testCtx(t))
	require.NoError(t, err)
	lost := l.Lost()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tries atomic.Int32
	f.handle(func(ctx context.Context, c call) (any, error) {
		if tries.Add(1) == 1 {
			return cancelOn(cancel)(ctx, c)
		}
		return int64(1), nil
	}, "release")
	err = l.Unlock(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, l.Valid())
	assert.True(t, l.ValidUntil().IsZero())
	assert.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
	assert.NoError(t, l.Err())
	assert.False(t, isClosed(lost), "an unknown release is not a loss")
	require.NoError(t, l.Unlock(testCtx(t)), "a second Unlock returns nil")

	require.NoError(t, c.Close(), "Close waits for the background release")
	rel := f.runs("release")
	require.Len(t, rel, 2, "the release is sent again in the background until it is done")
	assert.Equal(t, rel[0].args, rel[1].args)
	assert.Equal(t, rel[0].keys, rel[1].keys)
}

// TestUnlockEarlierTryReleased checks the status of a release retried after
// a connection failure: while the lease is valid, "gone" means the earlier
// try released it.
func TestUnlockEarlierTryReleased(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		status int64
		want   error
	}{
		{"gone", time.Minute, 0, nil},
		{"taken", time.Minute, -1, nil},
		{"gone after the deadline", locker.MinTTL, 0, locker.ErrExpired},
		{"taken after the deadline", locker.MinTTL, -1, locker.ErrHeldByOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newClient(t, nil)
			ctx := testCtx(t)
			l, err := newMutex(t, c, "n", tc.ttl, nil).TryLock(ctx)
			require.NoError(t, err)
			tries := failFirst(f, tc.status, "release")
			err = l.Unlock(ctx)
			if tc.want == nil {
				require.NoError(t, err)
				assert.NoError(t, l.Err())
			} else {
				require.ErrorIs(t, err, tc.want)
			}
			assert.Equal(t, int32(2), tries.Load())
		})
	}
	t.Run("unexpected status after a retry", func(t *testing.T) {
		_, f, ctx, l := heldMutex(t)
		failFirst(f, int64(7), "release")
		require.ErrorIs(t, l.Unlock(ctx), locker.ErrUnexpectedReply)
	})
	t.Run("one try", func(t *testing.T) {
		_, f, ctx, l := heldMutex(t)
		f.reply(int64(0), "release")
		require.ErrorIs(t, l.Unlock(ctx), locker.ErrExpired, "one try: gone means expired")
	})
}

func TestExtendAfterUnlock(t *testing.T) {
	_, f, ctx, l := heldMutex(t)
	require.NoError(t, l.Unlock(ctx))
	n := f.count()
	require.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired)
	_, err := l.TTL(ctx)
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

func TestExtendNumbers(t *testing.T) {
	_, f, ctx, l := heldMutex(t)

	// A retry after a connection failure resends the same number.
	failFirst(f, int64(1), "extend")
	require.NoError(t, l.Extend(ctx, time.Minute))
	f.handle(nil, "extend")
	require.NoError(t, l.Extend(ctx, time.Minute))
	var nums []string
	for _, e := range f.runs("extend") {
		nums = append(nums, e.args[3])
	}
	assert.Equal(t, []string{"1", "1", "2"}, nums)

	// Status 2: a later Extend of this lease was applied; it set the deadline.
	vu := l.ValidUntil()
	f.reply(int64(2), "extend")
	require.NoError(t, l.Extend(ctx, 2*time.Minute))
	assert.Equal(t, vu, l.ValidUntil(), "a refused late Extend does not move the deadline")
	assert.True(t, l.Valid())
	assert.NoError(t, l.Err())
}

// TestExtendRepliesOutOfOrder checks that the reply of an older Extend
// never moves the deadline set by a newer one: the server applied them in
// the order their replies say.
func TestExtendRepliesOutOfOrder(t *testing.T) {
	_, f, ctx, l := heldMutex(t)
	arrived, proceed := make(chan struct{}), make(chan struct{})
	f.handle(func(_ context.Context, c call) (any, error) {
		if c.args[3] == "1" {
			close(arrived)
			<-proceed
		}
		return int64(1), nil
	}, "extend")
	done := make(chan error, 1)
	go func() { done <- l.Extend(ctx, time.Hour) }()
	<-arrived
	before := time.Now()
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	vu := l.ValidUntil()
	assert.True(t, vu.After(before) && vu.Before(before.Add(10*time.Second)), "set by the second Extend")
	close(proceed)
	require.NoError(t, <-done)
	assert.Equal(t, vu, l.ValidUntil(), "the first Extend's late reply does not move the deadline")
}

// TestExtendUnknown checks the validity deadline after an Extend whose
// outcome is unknown: the earlier of the old deadline and the one the call
// would set.
func TestExtendUnknown(t *testing.T) {
	c, f := newClient(t, nil)
	l, err := newMutex(t, c, "n", time.Minute, nil).TryLock(testCtx(t))
	require.NoError(t, err)
	vu := l.ValidUntil()

	extendLost := func(ttl time.Duration) (start time.Time) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f.handle(cancelOn(cancel), "extend")
		start = time.Now()
		require.ErrorIs(t, l.Extend(ctx, ttl), context.Canceled)
		f.handle(nil, "extend")
		return start
	}
	extendLost(time.Hour)
	assert.Equal(t, vu, l.ValidUntil(), "a longer TTL the server may not have applied")
	start := extendLost(10 * time.Second)
	assert.True(t, l.ValidUntil().Before(start.Add(10*time.Second)), "a shorter TTL the server may have applied")
	assert.True(t, l.Valid())
	assert.NoError(t, l.Err())
	assert.False(t, isClosed(l.Lost()))
	assert.Empty(t, f.runs("release"), "an unknown Extend needs no clean-up")

	before := time.Now()
	require.NoError(t, l.Extend(testCtx(t), time.Hour))
	assert.True(t, l.ValidUntil().After(before.Add(50*time.Minute)), "a successful Extend sets it from its own start")
}

// holding answers acquire calls with a refusal: another owner holds the
// lock for pttl ms.
func holding(f *fakeScripter, pttl int64) {
	f.reply([]any{int64(0), pttl}, "acquire")
}

func TestLockDeadlineWhileHeld(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	holding(f, 60_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	l, err := newMutex(t, c, "n", time.Second, &locker.MutexOptions{StarvationThreshold: -1}).Lock(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Close())
	assert.NotEmpty(t, f.runs("acquire"))
	assert.Empty(t, f.runs("abandon"), "a refused acquire needs no clean-up")
	assert.Empty(t, f.runs("dequeue"), "a non-FIFO Lock that never starved never queued")
}

// TestLockDeadlineWhileStarving checks that a default-mode Lock that
// waited past its starvation threshold and gave up leaves the lock's
// starving waiters at once (dequeue.lua), with the waiter id its tries
// were kept under.
func TestLockDeadlineWhileStarving(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	holding(f, 60_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	l, err := newMutex(t, c, "n", time.Second, &locker.MutexOptions{StarvationThreshold: time.Millisecond}).Lock(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.NoError(t, c.Close())
	acq := f.runs("acquire")
	last := acq[len(acq)-1]
	require.Equal(t, "2", last.args[6], "the last tries starved")
	assertWaiterID(t, last.args[4])
	dq := f.runs("dequeue")
	require.Len(t, dq, 1, "a starving waiter that gives up leaves")
	assert.Equal(t, last.args[4], dq[0].args[0], "under its waiter id")
	assert.Empty(t, f.runs("abandon"), "a refused acquire needs no clean-up")
}

func TestLockCancelWhileHeld(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	f.handle(func(context.Context, call) (any, error) {
		cancel() // while Lock waits a minute before its next attempt
		return []any{int64(0), int64(60_000)}, nil
	}, "acquire")
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, f.runs("acquire"), 1)
}

// TestLockWaitBoundedByHolderTTL checks that the pause between attempts
// never exceeds the holder's remaining TTL. The retry delays are set to one
// minute and the holder reports 1 ms left: Lock must make its second
// attempt and succeed well within the 10 s context. No timing is measured:
// only the outcome and the number of attempts.
func TestLockWaitBoundedByHolderTTL(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute})
	var n atomic.Int32
	f.handle(func(context.Context, call) (any, error) {
		if n.Add(1) == 1 {
			return []any{int64(0), int64(1)}, nil
		}
		return []any{int64(1), int64(2)}, nil
	}, "acquire")
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(testCtx(t))
	require.NoError(t, err)
	assert.Len(t, f.runs("acquire"), 2)
	assert.Equal(t, int64(2), l.Fence())
}

// TestLockAttemptIDs checks the identities of a Lock's attempts: a fresh
// call id each (naming its hold), and for FIFO one waiter id for all.
func TestLockAttemptIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *locker.MutexOptions
	}{
		{"random", &locker.MutexOptions{StarvationThreshold: -1}},
		{"owner", &locker.MutexOptions{Owner: "svc", StarvationThreshold: -1}},
		{"fifo", &locker.MutexOptions{FIFO: true}},
		{"starving", &locker.MutexOptions{StarvationThreshold: time.Nanosecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
			var n atomic.Int32
			f.handle(func(context.Context, call) (any, error) {
				if n.Add(1) <= 5 {
					return []any{int64(0), int64(60_000)}, nil
				}
				return []any{int64(1), int64(9)}, nil
			}, "acquire")
			l, err := newMutex(t, c, "n", time.Second, tc.opts).Lock(testCtx(t))
			require.NoError(t, err)
			acq := f.runs("acquire")
			require.Len(t, acq, 6)
			ids := map[string]bool{}
			for _, a := range acq {
				ids[a.args[1]] = true
				if tc.opts.Owner != "" {
					assert.Equal(t, tc.opts.Owner, a.args[0])
				} else {
					assert.Empty(t, a.args[0], "without Owner the owner is '': the call id")
				}
				if tc.opts.StarvationThreshold > 0 && a.args[1] != acq[0].args[1] {
					assert.Equal(t, "1000", a.args[3], "entry ttl: the lock's TTL within [200ms, 5s]")
					assertWaiterID(t, a.args[4])
					assert.Equal(t, acq[1].args[4], a.args[4], "one waiter id for all starving attempts of one Lock")
				} else if tc.opts.FIFO {
					assert.Equal(t, "1000", a.args[3], "queue ttl: the lock's TTL within [200ms, 5s]")
					assertWaiterID(t, a.args[4])
					assert.Equal(t, acq[0].args[4], a.args[4], "one waiter id for all attempts of one Lock")
					assert.NotEqual(t, a.args[1], a.args[4])
				} else {
					assert.Equal(t, []string{"", ""}, a.args[3:5], "not queued")
				}
			}
			assert.Empty(t, acq[0].args[6], "the first attempt has not waited")
			for _, a := range acq[1:] {
				if tc.opts.StarvationThreshold > 0 {
					assert.Equal(t, "2", a.args[6], "later attempts starved (past a 1 ns threshold): kept in the lock's mark when refused")
					continue
				}
				assert.Equal(t, "1", a.args[6], "later attempts waited: their grant keeps the lock marked for the waiters behind")
			}
			assert.Len(t, ids, 6, "a fresh call id per attempt")
			assert.Equal(t, cmp.Or(acq[5].args[0], acq[5].args[1]), l.Token())
			require.NoError(t, l.Unlock(testCtx(t)))
			assert.Equal(t, acq[5].args[1], f.runs("release")[0].args[1], "the hold is the granting call's")
		})
	}
}

// TestAcquireUnknownAbandoned checks the clean-up of an acquire call whose
// outcome is unknown: one abandon call naming that call, in every mode.
func TestAcquireUnknownAbandoned(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *locker.MutexOptions
	}{
		{"random", nil},
		{"owner", &locker.MutexOptions{Owner: "svc"}},
		{"reentrant", &locker.MutexOptions{Owner: "svc", Reentrant: true}},
		{"fifo", &locker.MutexOptions{FIFO: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newClient(t, nil)
			k := c.Key("n")
			f.fail(errBoom, "acquire")
			l, err := newMutex(t, c, "n", time.Second, tc.opts).TryLock(testCtx(t))
			require.ErrorIs(t, err, errBoom)
			require.Nil(t, l)
			require.NoError(t, c.Close())
			acq, ab := f.runs("acquire"), f.runs("abandon")
			require.Len(t, acq, 1)
			require.Len(t, ab, 1, "one clean-up")
			assert.Equal(t, []string{k, k + ":x"}, ab[0].keys, "lock hash, abandoned calls; no queue keys for a TryLock")
			assert.Equal(t, []string{cmp.Or(acq[0].args[0], acq[0].args[1]), acq[0].args[1], "30000", k + ":wake", ""}, ab[0].args,
				"the call's owner and id, refused for 30 s, the wake channel, no waiter")
		})
	}
	t.Run("answered", func(t *testing.T) {
		c, f := newClient(t, nil)
		f.fail(errAnswered, "acquire")
		_, err := newMutex(t, c, "n", time.Second, nil).TryLock(testCtx(t))
		require.ErrorIs(t, err, errAnswered)
		require.NoError(t, c.Close())
		assert.Empty(t, f.runs("abandon"), "a refused call granted nothing and cannot arrive later")
	})
}

// TestLockRetriesUnknown checks that Lock retries after a connection
// failure with a new call id, and that each failed call is cleaned up.
func TestLockRetriesUnknown(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run("fifo="+strconv.FormatBool(fifo), func(t *testing.T) {
			c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
			k := c.Key("n")
			var n atomic.Int32
			f.handle(func(context.Context, call) (any, error) {
				if n.Add(1) <= 2 {
					return nil, errConn
				}
				return []any{int64(1), int64(9)}, nil
			}, "acquire")
			l, err := newMutex(t, c, "n", time.Second, &locker.MutexOptions{FIFO: fifo}).Lock(testCtx(t))
			require.NoError(t, err)
			require.NoError(t, c.Close())
			acq, ab := f.runs("acquire"), f.runs("abandon")
			require.Len(t, acq, 3)
			assert.Equal(t, acq[2].args[1], l.Token())
			require.Len(t, ab, 2)
			got := map[string]bool{ab[0].args[1]: true, ab[1].args[1]: true}
			assert.Equal(t, map[string]bool{acq[0].args[1]: true, acq[1].args[1]: true}, got, "each failed call is cleaned up, not the granted one")
			for _, a := range ab {
				if fifo {
					assert.Equal(t, []string{k, k + ":x", k + ":q", k + ":qx"}, a.keys)
					assert.Equal(t, acq[0].args[4], a.args[4], "the waiter's queue entry, which the call may have made")
				} else {
					assert.Equal(t, []string{k, k + ":x"}, a.keys)
					assert.Empty(t, a.args[4])
				}
			}
		})
	}
}

// TestLockReturnsBeforeCleanup checks that Lock returns when its context
// ends without waiting for the clean-ups of its failed calls.
func TestLockReturnsBeforeCleanup(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	f.fail(errConn, "acquire")
	unblock := make(chan struct{})
	var cleaned atomic.Int32
	f.handle(func(ctx context.Context, _ call) (any, error) {
		select {
		case <-unblock:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		cleaned.Add(1)
		return int64(0), nil
	}, "abandon")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	l, err := newMutex(t, c, "n", time.Second, nil).Lock(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, errConn, "the last connection error is joined in")
	assert.Zero(t, cleaned.Load(), "Lock returned while its clean-ups were blocked")
	close(unblock)
	require.NoError(t, c.Close())
	assert.Equal(t, int32(len(f.runs("acquire"))), cleaned.Load(), "every failed call was cleaned up")
}

func TestFIFOLockGivesUpLeavesQueue(t *testing.T) {
	c, f := newClient(t, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
	k := c.Key("n")
	holding(f, 60_000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := newMutex(t, c, "n", time.Second, &locker.MutexOptions{FIFO: true}).Lock(ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.NoError(t, c.Close())
	dq := f.runs("dequeue")
	require.Len(t, dq, 1, "one dequeue in the background")
	assert.Equal(t, []string{k + ":q", k + ":qx", k}, dq[0].keys)
	assert.Equal(t, []string{f.runs("acquire")[0].args[4], k + ":wake"}, dq[0].args)
	assert.Empty(t, f.runs("abandon"), "refused attempts need no clean-up")
}

func TestClaimCalls(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	f.handle(func(_ context.Context, c call) (any, error) {
		if len(f.runs("claim")) == 1 {
			return int64(1), nil
		}
		return int64(0), nil
	}, "claim")
	first, err := c.Claim(ctx, "msg-1", 90*time.Second)
	require.NoError(t, err)
	assert.True(t, first)
	first, err = c.Claim(ctx, "msg-1", 90*time.Second)
	require.NoError(t, err)
	assert.False(t, first)
	runs := f.runs("claim")
	require.Len(t, runs, 2)
	assert.Equal(t, []string{c.Key("msg-1") + ":claim"}, runs[0].keys)
	assert.Equal(t, "90000", runs[0].args[1], "ARGV[2] is the TTL in ms")
	assertToken(t, runs[0].args[0])
	assert.NotEqual(t, runs[0].args[0], runs[1].args[0], "a fresh token per Claim call")

	f.handle(nil, "claim")
	first, err = c.ClaimAs(ctx, "msg-2", "worker-7", time.Minute)
	require.NoError(t, err)
	assert.True(t, first)
	assert.Equal(t, []string{"worker-7", "60000"}, f.runs("claim")[2].args)

	for _, tok := range []string{"", string(make([]byte, locker.MaxNameLen+1))} {
		n := f.count()
		_, err := c.ClaimAs(ctx, "msg-3", tok, time.Minute)
		require.ErrorIs(t, err, locker.ErrInvalidOption, "token of %d bytes", len(tok))
		assert.Equal(t, n, f.count(), "nothing sent")
	}
}

// TestClaimUnknown checks the clean-up of a Claim whose outcome is unknown,
// and that ClaimAs has none.
func TestClaimUnknown(t *testing.T) {
	c, f := newClient(t, nil)
	k := c.Key("m") + ":claim"
	f.fail(errBoom, "claim")
	_, err := c.Claim(testCtx(t), "m", time.Second)
	require.ErrorIs(t, err, errBoom)
	_, err = c.ClaimAs(testCtx(t), "m", "mine", time.Second)
	require.ErrorIs(t, err, errBoom)
	f.fail(errAnswered, "claim")
	_, err = c.Claim(testCtx(t), "m", time.Second)
	require.ErrorIs(t, err, errAnswered)
	require.NoError(t, c.Close())
	cl, un := f.runs("claim"), f.runs("unclaim")
	require.Len(t, cl, 3)
	require.Len(t, un, 1, "only Claim's unknown call is cleaned up: not ClaimAs's, not a refused call")
	assert.Equal(t, []string{k}, un[0].keys)
	assert.Equal(t, []string{cl[0].args[0], "30000"}, un[0].args, "the call's token, refused for 30 s")
}

// TestDo checks that a release error is returned only when fn succeeded.
func TestDo(t *testing.T) {
	c, f := newClient(t, nil)
	m := newMutex(t, c, "n", time.Second, nil)
	fnErr := errors.New("fn failed")
	f.reply(int64(0), "release")
	err := m.Do(testCtx(t), func(ctx context.Context) error { return fnErr })
	require.ErrorIs(t, err, fnErr)
	assert.NotErrorIs(t, err, locker.ErrExpired, "fn's error is not masked")
	err = m.Do(testCtx(t), func(ctx context.Context) error { return nil })
	require.ErrorIs(t, err, locker.ErrExpired, "the release error when fn succeeded")
	assert.Len(t, f.runs("release"), 2, "released after each fn")
}

// TestUnlockRidesOutMoved checks that a release refused with a passing
// Cluster state is retried past the four tries a connection failure gets
// (a client may answer MOVED for up to a second after a failover, until it
// has learned the new master), and that a connection failure is not.
func TestUnlockRidesOutMoved(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		failures  int32
		wantTries int32
		wantErr   bool
	}{
		{"MOVED eight times", locker.NewServerError("MOVED 2933 127.0.0.1:46087", nil), 8, 9, false},
		// The fifth try would succeed: Unlock's error shows it stopped at
		// four (the background release that follows makes the fifth).
		{"connection failures", errConn, 4, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f, ctx, l := heldMutex(t)
			var tries atomic.Int32
			f.handle(func(context.Context, call) (any, error) {
				if tries.Add(1) <= tc.failures {
					return nil, tc.err
				}
				return int64(1), nil
			}, "release")
			err := l.Unlock(ctx)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, c.Close(), "Close waits for a background release")
			assert.Equal(t, tc.wantTries, tries.Load(), "tries of the release")
		})
	}
}
