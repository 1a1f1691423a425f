// Package miniredistest runs the user-facing operations of scriptlock
// (Lock, TryLock, Unlock, Extend, TTL, RLock, Downgrade, Claim, FIFO, Semaphore,
// AutoRefresh) through a driver on miniredis (github.com/alicebob/miniredis/v2,
// the in-process fake many Go projects unit-test with), checks each result,
// and checks that no key is left behind. Each driver's miniredis_test.go
// calls [Run].
//
// What differs on miniredis from a real server, and how Run deals with it:
//   - Key TTLs (a mutex's hash, a claim's marker, the FIFO queue) move only
//     with FastForward; Run moves them explicitly.
//   - TIME, which the scripts read for fences and for the expiries they keep
//     inside hashes (read holds, FIFO entries), is the wall clock, which
//     FastForward does not move: read holds expire in real time.
//   - A lease's local validity deadline (Valid, auto-refresh) runs on the
//     process's monotonic clock, which FastForward does not move either.
//   - There is no sharded pub/sub: the scripts publish with PUBLISH and the
//     drivers subscribe with SUBSCRIBE; waiters are woken all the same.
package miniredistest

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Run starts a miniredis server, connects to it with connect (which
// returns the driver's Scripter and a function that closes its client),
// and runs every operation as a subtest. It fails t if a goroutine of the
// driver or the core outlives the run.
func Run(t *testing.T, connect func(addr string) (s locker.Scripter, close func())) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	mr := miniredis.NewMiniRedis()
	require.NoError(t, mr.Start())
	defer mr.Close()
	s, closeClient := connect(mr.Addr())
	defer closeClient()
	// Polling once a minute, and holders with long TTLs: a waiter that
	// returns within seconds was woken by the release's message.
	locks, err := locker.New(s, &locker.Options{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute})
	require.NoError(t, err)
	defer locks.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	noKeys := func(t *testing.T, after string) {
		t.Helper()
		keys := mr.Keys()
		sort.Strings(keys)
		assert.Empty(t, keys, "keys left after %s", after)
	}
	mutex := func(t *testing.T, name string, ttl time.Duration, opts *locker.MutexOptions) *locker.Mutex {
		t.Helper()
		m, err := locks.NewMutex(name, ttl, opts)
		require.NoError(t, err, "call: NewMutex(%q, %v, %+v)", name, ttl, opts)
		return m
	}
	type result struct {
		l   *locker.Lease
		err error
	}
	lockAsync := func(m *locker.Mutex) <-chan result {
		ch := make(chan result, 1)
		go func() {
			l, err := m.Lock(ctx)
			ch <- result{l, err}
		}()
		return ch
	}
	await := func(t *testing.T, ch <-chan result, what string) *locker.Lease {
		t.Helper()
		select {
		case r := <-ch:
			require.NoError(t, r.err, "call: %s", what)
			return r.l
		case <-time.After(5 * time.Second):
			t.Fatalf("call: %s: still waiting after 5s (polling is once a minute: the wake-up was lost)", what)
			return nil
		}
	}
	pending := func(t *testing.T, ch <-chan result, what string) {
		t.Helper()
		select {
		case r := <-ch:
			t.Fatalf("call: %s: returned (%v, %v) while the lock is held", what, r.l, r.err)
		case <-time.After(100 * time.Millisecond):
		}
	}

	t.Run("Lock/TryLock/TTL/Extend/Unlock", func(t *testing.T) {
		l, err := mutex(t, "invoice:1", 10*time.Second, nil).Lock(ctx)
		require.NoError(t, err, "call: Lock")
		assert.Positive(t, l.Fence(), "call: Lock: fence")

		l2, err := mutex(t, "invoice:1", 10*time.Second, nil).TryLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock of a held lock")
		assert.Nil(t, l2, "call: TryLock of a held lock: lease")

		ttl, err := l.TTL(ctx)
		require.NoError(t, err, "call: TTL")
		assert.Equal(t, 10*time.Second, ttl, "call: TTL: a miniredis TTL stands still until FastForward")
		mr.FastForward(4 * time.Second)
		ttl, err = l.TTL(ctx)
		require.NoError(t, err, "call: TTL after FastForward(4s)")
		assert.Equal(t, 6*time.Second, ttl, "call: TTL after FastForward(4s)")

		require.NoError(t, l.Extend(ctx, 20*time.Second), "call: Extend(20s)")
		ttl, err = l.TTL(ctx)
		require.NoError(t, err, "call: TTL after Extend")
		assert.Equal(t, 20*time.Second, ttl, "call: TTL after Extend(20s)")

		require.NoError(t, l.Unlock(ctx), "call: Unlock")
		assert.NoError(t, l.Unlock(ctx), "call: Unlock twice")
		noKeys(t, "Unlock")
	})

	t.Run("Expiry by FastForward", func(t *testing.T) {
		l1, err := mutex(t, "expiry", 5*time.Second, nil).TryLock(ctx)
		require.NoError(t, err, "call: TryLock")
		mr.FastForward(5 * time.Second)
		noKeys(t, "the TTL ran out")
		assert.True(t, l1.Valid(), "the lease's own deadline runs on the process's clock, which FastForward does not move")
		_, err = l1.TTL(ctx)
		assert.ErrorIs(t, err, locker.ErrExpired, "call: TTL after FastForward past the TTL")
		l2, err := mutex(t, "expiry", 5*time.Second, nil).TryLock(ctx)
		require.NoError(t, err, "call: TryLock after the first holder's TTL ran out")
		assert.Greater(t, l2.Fence(), l1.Fence(), "fences increase across expiries")
		assert.ErrorIs(t, l1.Unlock(ctx), locker.ErrHeldByOther, "call: Unlock of the expired lease")
		require.NoError(t, l2.Unlock(ctx), "call: Unlock")
		noKeys(t, "Unlock")
	})

	t.Run("Lock waits for Unlock", func(t *testing.T) {
		h, err := mutex(t, "wait", time.Minute, nil).TryLock(ctx)
		require.NoError(t, err, "call: holder TryLock")
		got := lockAsync(mutex(t, "wait", time.Minute, nil))
		pending(t, got, "waiter Lock")
		start := time.Now()
		require.NoError(t, h.Unlock(ctx), "call: holder Unlock")
		l := await(t, got, "waiter Lock after the holder's Unlock")
		t.Logf("waiter woken %v after the release (by PUBLISH/SUBSCRIBE)", time.Since(start))
		assert.Greater(t, l.Fence(), h.Fence(), "the waiter's fence")
		require.NoError(t, l.Unlock(ctx), "call: waiter Unlock")
		noKeys(t, "Unlock")
	})

	t.Run("FIFO", func(t *testing.T) {
		fifo := &locker.MutexOptions{FIFO: true}
		h, err := mutex(t, "fifo", time.Minute, fifo).Lock(ctx)
		require.NoError(t, err, "call: holder Lock")
		first := lockAsync(mutex(t, "fifo", time.Minute, fifo))
		pending(t, first, "first waiter Lock")
		second := lockAsync(mutex(t, "fifo", time.Minute, fifo))
		pending(t, second, "second waiter Lock")
		l, err := mutex(t, "fifo", time.Minute, nil).TryLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock while waiters queue")
		assert.Nil(t, l)

		require.NoError(t, h.Unlock(ctx), "call: holder Unlock")
		l1 := await(t, first, "first waiter Lock")
		pending(t, second, "second waiter Lock while the first holds")
		require.NoError(t, l1.Unlock(ctx), "call: first waiter Unlock")
		l2 := await(t, second, "second waiter Lock")
		assert.Greater(t, l2.Fence(), l1.Fence())
		require.NoError(t, l2.Unlock(ctx), "call: second waiter Unlock")
		// The queue's arrival counter lives three queue TTLs (the lock's
		// TTL clamped to 5s) after the last waiter left.
		mr.FastForward(15 * time.Second)
		noKeys(t, "the queue's TTL ran out")
	})

	t.Run("RLock/Downgrade", func(t *testing.T) {
		rw, err := locks.NewRWMutex("doc", 10*time.Second, nil)
		require.NoError(t, err)
		r1, err := rw.RLock(ctx)
		require.NoError(t, err, "call: RLock")
		r2, err := rw.RLock(ctx)
		require.NoError(t, err, "call: second RLock")
		w, err := rw.TryLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock (write) while read-locked")
		assert.Nil(t, w)
		ttl, err := r1.TTL(ctx)
		require.NoError(t, err, "call: read lease TTL")
		assert.InDelta(t, 10*time.Second, ttl, float64(time.Second), "call: read lease TTL")
		require.NoError(t, r1.Unlock(ctx), "call: first reader Unlock")
		require.NoError(t, r2.Unlock(ctx), "call: last reader Unlock")
		noKeys(t, "the last reader's Unlock")

		w, err = rw.Lock(ctx)
		require.NoError(t, err, "call: Lock (write)")
		assert.Positive(t, w.Fence())
		r, err := rw.Downgrade(ctx, w)
		require.NoError(t, err, "call: Downgrade")
		require.NotNil(t, r, "call: Downgrade: read lease")
		assert.Equal(t, w.Fence(), r.Fence(), "the read lease reports the write grant's fence")
		assert.False(t, w.Valid(), "the write lease ends with the Downgrade")
		other, err := rw.TryRLock(ctx)
		require.NoError(t, err, "call: TryRLock after a Downgrade")
		w2, err := rw.TryLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock (write) after a Downgrade")
		assert.Nil(t, w2)
		require.NoError(t, other.Unlock(ctx), "call: Unlock of the other read lease")
		require.NoError(t, r.Unlock(ctx), "call: Unlock of the downgraded lease")
		noKeys(t, "every read lease's Unlock")
	})

	t.Run("Abandoned read holds", func(t *testing.T) {
		// A read hold's expiry is kept in TIME, the wall clock: it frees
		// the lock after its TTL of real time...
		short, err := locks.NewRWMutex("abandoned", 200*time.Millisecond, nil)
		require.NoError(t, err)
		_, err = short.RLock(ctx)
		require.NoError(t, err, "call: RLock, never unlocked")
		time.Sleep(250 * time.Millisecond)
		w, err := short.TryLock(ctx)
		require.NoError(t, err, "call: TryLock (write) once the read hold's TTL passed on the wall clock")
		require.NoError(t, w.Unlock(ctx), "call: Unlock (write)")
		noKeys(t, "the write Unlock")

		// ...or when FastForward expires the read-write lock's hash.
		long, err := locks.NewRWMutex("abandoned", time.Hour, nil)
		require.NoError(t, err)
		_, err = long.RLock(ctx)
		require.NoError(t, err, "call: RLock, never unlocked")
		mr.FastForward(time.Hour)
		noKeys(t, "FastForward past the read hold's TTL")
		w, err = long.TryLock(ctx)
		require.NoError(t, err, "call: TryLock (write) after FastForward")
		require.NoError(t, w.Unlock(ctx), "call: Unlock (write)")
		noKeys(t, "the write Unlock")
	})

	t.Run("Claim", func(t *testing.T) {
		first, err := locks.Claim(ctx, "msg:42", time.Hour)
		require.NoError(t, err, "call: Claim")
		assert.True(t, first, "call: first Claim")
		first, err = locks.Claim(ctx, "msg:42", time.Hour)
		require.NoError(t, err, "call: Claim again")
		assert.False(t, first, "call: second Claim")
		mr.FastForward(time.Hour)
		noKeys(t, "the claim's TTL ran out")
		first, err = locks.Claim(ctx, "msg:42", time.Hour)
		require.NoError(t, err, "call: Claim after the marker expired")
		assert.True(t, first, "call: Claim after the marker expired")
		mr.FastForward(time.Hour)
		noKeys(t, "the claim's TTL ran out")
	})

	t.Run("Semaphore", func(t *testing.T) {
		s, err := locks.NewSemaphore("sem", 2, time.Hour, &locker.SemaphoreOptions{FIFO: true})
		require.NoError(t, err)
		a, err := s.Acquire(ctx, 1)
		require.NoError(t, err, "call: Acquire(1)")
		b, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err, "call: TryAcquire(1)")
		assert.Greater(t, b.Fence(), a.Fence(), "fences increase")
		_, err = s.TryAcquire(ctx, 1)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryAcquire(1) with both permits held")
		ch := make(chan result, 1)
		go func() {
			l, err := s.Acquire(ctx, 2)
			ch <- result{l, err}
		}()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, a.Unlock(ctx), "call: Unlock")
		require.NoError(t, b.Unlock(ctx), "call: Unlock")
		both := await(t, ch, "Acquire(2) after both Unlocks")
		require.NoError(t, both.Unlock(ctx), "call: Unlock of the 2 permits")
		noKeys(t, "every permit's Unlock")
	})

	t.Run("AutoRefresh", func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		l, err := mutex(t, "refresh", ttl, &locker.MutexOptions{AutoRefresh: true}).Lock(ctx)
		require.NoError(t, err, "call: Lock")
		// The refresher runs on the process's clock: every 100 ms it extends
		// the lock back to its full TTL.
		mr.FastForward(200 * time.Millisecond)
		left, err := l.TTL(ctx)
		require.NoError(t, err, "call: TTL after FastForward")
		assert.Equal(t, ttl-200*time.Millisecond, left)
		require.Eventually(t, func() bool {
			left, err := l.TTL(ctx)
			return err == nil && left == ttl
		}, 2*time.Second, 10*time.Millisecond, "the refresher extends the lock back to its full TTL")
		time.Sleep(2 * ttl) // past the lease's first validity deadline
		assert.True(t, l.Valid(), "an auto-refreshed lease stays valid past its TTL")
		select {
		case <-l.Lost():
			t.Fatalf("lease lost: %v", l.Err())
		default:
		}
		require.NoError(t, l.Unlock(ctx), "call: Unlock")
		noKeys(t, "Unlock")
	})
}
