package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refreshCases check auto-refresh, the lost-lock signal and Do.
var refreshCases = []testCase{
	{
		name:  "Refresh/KeepsHeld",
		rule:  "Auto-refresh keeps a lock held for five times its TTL; no other owner gets it and Lost does not fire.",
		check: checkRefreshKeepsHeld,
	},
	{
		name:  "Refresh/LostOnDelete",
		rule:  "When the key is deleted behind the holder's back, the auto-refreshed lease reports Lost with ErrExpired and cancels its Context.",
		check: checkLostOnDelete,
	},
	{
		name:  "Refresh/LostOnTakeover",
		rule:  "When another owner takes the lock, the auto-refreshed lease reports Lost with ErrHeldByOther.",
		check: checkLostOnTakeover,
	},
	{
		name:      "Refresh/LostByDeadline",
		needs:     "pauses every client of the node (CLIENT PAUSE)",
		rule:      "When Redis is paused past the validity deadline, the auto-refreshed lease reports Lost at its deadline, not earlier and not after the pause.",
		check:     checkLostByDeadline,
		exclusive: "CLIENT PAUSE stops every client of the node",
	},
	{
		name:  "Refresh/RWKeepsHeld",
		rule:  "Auto-refresh keeps a read-write lock's read and write leases held for five times their TTL; Lost does not fire.",
		check: checkRWRefresh,
	},
	{
		name:  "Do/ReturnsFnError",
		rule:  "Do runs fn under the lock, returns fn's error unmasked by the release, and leaves the lock free.",
		check: checkDoReturnsFnError,
	},
	{
		name:  "Do/RWReturnsFnError",
		rule:  "RWMutex.Do and RDo run fn under the write and a read lock, return fn's error, and leave the lock free.",
		check: checkRWDo,
	},
	{
		name:  "Do/CancelOnLoss",
		rule:  "Do cancels fn's context when the lease is lost, with the loss as its cause.",
		check: checkDoCancelOnLoss,
	},
	{
		name:  "Leak/NoGoroutinesLeft",
		rule:  "No goroutine of the Client is left after Unlock, after a waiter's ctx is cancelled, and after Client.Close with auto-refreshed leases held.",
		check: checkNoLeaks,
		quiet: "counts every new goroutine of the process",
	},
}

const refreshTTL = 300 * time.Millisecond

// keepTTL is the TTL of the rules that an auto-refreshed lease never
// lapses: a refresh, a third of the TTL in, may come up to two thirds of
// it late. With the group tests running in parallel, eight exclusive
// cases and eight others at once under -race, refreshes of a 300 ms lease
// came over 200 ms late (once in some runs), although those rules ran
// alone on their deployment: the lag is the process's load, which running
// alone on the deployment does not spare them, so with this TTL they run
// beside the others.
const keepTTL = time.Second

var autoRefresh = &locker.MutexOptions{AutoRefresh: true}

// keptHeld watches l, auto-refreshed, for 5 TTLs while another client
// tries to take its lock (tryOther). The other client must never be
// granted while l claims validity (safety); l lapsing (Lost fires, or the
// other client is granted once l no longer claims validity) means the
// refreshes came late: timing (see within). It reports whether l was kept.
func keptHeld(t *testing.T, e *env, l *locker.Lease, tryOther func(context.Context) (*locker.Lease, error), what string) bool {
	t.Helper()
	for end := time.Now().Add(5 * keepTTL); time.Now().Before(end); {
		o, err := tryOther(e.ctx)
		if err == nil {
			if l.Valid() {
				t.Errorf("call: %s: another client was granted its lock while the lease claims validity (ValidUntil %v)", what, l.ValidUntil().Format("15:04:05.000"))
			}
			_ = o.Unlock(e.ctx)
			return e.timely(t, false, fmt.Sprintf("call: %s lapsed (Err %v): another client was granted its lock", what, l.Err()))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return e.timely(t, false, fmt.Sprintf("call: another client's TryLock while the %s lives: %v", what, err))
		}
		require.ErrorIs(t, err, locker.ErrNotObtained, "call: another client's TryLock while the %s lives", what)
		select {
		case <-l.Lost():
			return e.timely(t, false, fmt.Sprintf("call: %s: Lost() fired while auto-refreshed: %v", what, l.Err()))
		case <-time.After(keepTTL / 5):
		}
	}
	return true
}

func checkRefreshKeepsHeld(t *testing.T, e *env) {
	c := e.client(nil)
	l, err := e.mutex(c, "refresh", keepTTL, autoRefresh).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock with AutoRefresh")
	other := e.mutex(e.client(nil), "refresh", keepTTL, nil)
	if !keptHeld(t, e, l, other.TryLock, "auto-refreshed mutex lease") {
		return
	}
	valid := l.Valid()
	e.unlockShort(t, l, "call: Unlock after 5xTTL")
	if !e.timely(t, valid, "call: Valid() after 5xTTL: the last refresh came late") {
		return
	}
	assert.ErrorIs(t, context.Cause(l.Context()), context.Canceled, "call: Context() after Unlock")
	assert.NoError(t, l.Err(), "call: Err() after Unlock: a released lease was not lost")
}

// awaitLost waits for l's Lost channel and returns when it fired.
func awaitLost(t *testing.T, l *locker.Lease, what string) time.Time {
	t.Helper()
	select {
	case <-l.Lost():
		return time.Now()
	case <-time.After(10 * time.Second):
		t.Fatalf("call: Lost() after %s: not fired within 10s", what)
	}
	return time.Time{}
}

func checkLostOnDelete(t *testing.T, e *env) {
	c := e.client(nil)
	l, err := e.mutex(c, "lost-del", refreshTTL, autoRefresh).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock with AutoRefresh")
	key := c.Key("lost-del")
	_, err = e.d.admin.Do(e.ctx, key, "DEL", key)
	require.NoError(t, err, "call: admin DEL %s", key)
	awaitLost(t, l, "DEL of the key")
	assert.ErrorIs(t, l.Err(), locker.ErrExpired, "call: Err() after the key was deleted")
	assert.ErrorIs(t, context.Cause(l.Context()), locker.ErrExpired, "call: context.Cause(Context()) after the key was deleted")
	assert.ErrorIs(t, l.Unlock(e.ctx), locker.ErrExpired, "call: Unlock of the lost lease")
}

func checkLostOnTakeover(t *testing.T, e *env) {
	c := e.client(nil)
	// A TTL ten times refreshTTL: the refresh that finds the intruder
	// (a third of the TTL in) must run before the validity deadline, or
	// the lease reports ErrExpired; this rule is not exclusive, so under
	// the load of the cases beside it a refresh may lag by a few hundred
	// milliseconds.
	l, err := e.mutex(c, "lost-take", 10*refreshTTL, autoRefresh).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock with AutoRefresh")
	key := c.Key("lost-take")
	_, err = e.d.admin.Do(e.ctx, key, "HSET", key, "owner", "intruder")
	require.NoError(t, err, "call: admin HSET %s owner intruder", key)
	awaitLost(t, l, "another owner took the lock")
	if errors.Is(l.Err(), locker.ErrExpired) {
		// No refresh ran before the validity deadline: the one that would
		// have met the intruder came too late.
		e.timely(t, false, fmt.Sprintf("call: Err() after a takeover: %v: no refresh met the intruder before the lease's validity deadline", l.Err()))
	} else {
		assert.ErrorIs(t, l.Err(), locker.ErrHeldByOther, "call: Err() after a takeover")
	}
	assert.ErrorIs(t, l.Unlock(e.ctx), locker.ErrHeldByOther, "call: Unlock after a takeover")
}

func checkLostByDeadline(t *testing.T, e *env) {
	c := e.client(nil)
	l, err := e.mutex(c, "lost-pause", refreshTTL, autoRefresh).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock with AutoRefresh")
	key := c.Key("lost-pause")
	pause := 6 * refreshTTL
	_, err = e.d.admin.Do(e.ctx, key, "CLIENT", "PAUSE", durationMS(pause), "WRITE")
	require.NoError(t, err, "call: admin CLIENT PAUSE %v WRITE", pause)
	paused := time.Now()
	defer func() {
		_, err := e.d.admin.Do(e.ctx, key, "CLIENT", "UNPAUSE")
		assert.NoError(t, err, "call: admin CLIENT UNPAUSE")
	}()
	lost := awaitLost(t, l, "CLIENT PAUSE")
	deadline := l.ValidUntil()
	assert.False(t, lost.Before(deadline), "call: Lost() fired at %v, before the validity deadline %v", lost, deadline)
	if !e.within(t, "call: Lost() must fire by the deadline, within the pause, not after it", lost.Sub(paused), pause) {
		return
	}
	assert.ErrorIs(t, l.Err(), locker.ErrExpired, "call: Err() after the deadline passed")
}

func durationMS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

var errFn = errors.New("conformance: fn failed")

func checkDoReturnsFnError(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "do", 10*time.Second, nil)
	ran := false
	err := m.Do(e.ctx, func(ctx context.Context) error {
		ran = true
		_, err := m.TryLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock inside Do")
		return errFn
	})
	assert.True(t, ran, "call: Do ran fn")
	assert.ErrorIs(t, err, errFn, "call: Do's error")
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after Do: the lock must be free")
	require.NoError(t, l.Unlock(e.ctx))
}

func checkDoCancelOnLoss(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "do-loss", refreshTTL, autoRefresh)
	key := c.Key("do-loss")
	err := m.Do(e.ctx, func(ctx context.Context) error {
		_, err := e.d.admin.Do(e.ctx, key, "DEL", key)
		require.NoError(t, err, "call: admin DEL inside fn")
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return errors.New("fn's context was not cancelled within 10s of the loss")
		}
	})
	assert.ErrorIs(t, err, locker.ErrExpired, "call: Do's error: fn returned its context's cause")
}

func checkNoLeaks(t *testing.T, e *env) {
	// The rule is about goroutines, not expiry: its auto-refreshed leases
	// live long enough not to lapse on a slow machine (refreshed every
	// second), and short enough that the keys of those left held at
	// Close are gone well before the key-leak check ends.
	const leakTTL = 3 * time.Second
	// The driver's client first does what the rule does, on the same
	// names: its own goroutines (a connection's background loop) come
	// with its first calls, and are its to manage.
	warm := e.client(nil)
	wl, err := e.mutex(warm, "leak", leakTTL, autoRefresh).TryLock(e.ctx)
	require.NoError(t, err, "call: warm-up TryLock")
	wctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	_, err = e.mutex(warm, "leak", leakTTL, nil).Lock(wctx)
	cancel()
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: warm-up waiter Lock until its ctx ends")
	require.NoError(t, wl.Unlock(e.ctx), "call: warm-up Unlock")
	for _, name := range []string{"leak-a", "leak-b"} {
		l, err := e.mutex(warm, name, leakTTL, autoRefresh).TryLock(e.ctx)
		require.NoError(t, err, "call: warm-up TryLock %s", name)
		require.NoError(t, l.Unlock(e.ctx), "call: warm-up Unlock %s", name)
	}
	require.NoError(t, warm.Close(), "call: warm-up Close")
	e.warmUp(e.s)
	e.awaitCoreIdle()

	before := goroutineIDs()
	c := e.client(nil)

	// Unlock of an auto-refreshed lease after a waiter came and went.
	l, err := e.mutex(c, "leak", leakTTL, autoRefresh).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock")
	wctx, cancel = context.WithTimeout(e.ctx, 100*time.Millisecond)
	_, err = e.mutex(c, "leak", leakTTL, nil).Lock(wctx)
	cancel()
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: waiter Lock until its ctx ends")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	assertNoNewCoreGoroutines(t, before)

	// Close with auto-refreshed leases still held.
	c2 := e.client(nil)
	for _, name := range []string{"leak-a", "leak-b"} {
		_, err := e.mutex(c2, name, leakTTL, autoRefresh).TryLock(e.ctx)
		require.NoError(t, err, "call: TryLock %s", name)
	}
	require.NoError(t, c2.Close(), "call: Close")
	assertNoNewCoreGoroutines(t, before)
}

func checkRWRefresh(t *testing.T, e *env) {
	c := e.client(nil)
	opts := &locker.RWMutexOptions{AutoRefresh: true}
	rw, err := c.NewRWMutex("rw-refresh", keepTTL, opts)
	require.NoError(t, err, "call: NewRWMutex")
	other, err := e.client(nil).NewRWMutex("rw-refresh", keepTTL, nil)
	require.NoError(t, err, "call: NewRWMutex")
	for _, write := range []bool{false, true} {
		var l *locker.Lease
		if write {
			l, err = rw.TryLock(e.ctx)
		} else {
			l, err = rw.TryRLock(e.ctx)
		}
		require.NoError(t, err, "call: acquire (write %v) with AutoRefresh", write)
		if !keptHeld(t, e, l, other.TryLock, fmt.Sprintf("auto-refreshed lease (write %v)", write)) {
			return
		}
		e.unlockShort(t, l, fmt.Sprintf("call: Unlock (write %v)", write))
	}
}

func checkRWDo(t *testing.T, e *env) {
	c := e.client(nil)
	rw, err := c.NewRWMutex("rw-do", 10*time.Second, nil)
	require.NoError(t, err, "call: NewRWMutex")
	err = rw.Do(e.ctx, func(ctx context.Context) error {
		_, err := rw.TryRLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryRLock inside Do")
		return errFn
	})
	assert.ErrorIs(t, err, errFn, "call: Do's error")
	err = rw.RDo(e.ctx, func(ctx context.Context) error {
		_, err := rw.TryLock(ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock inside RDo")
		return errFn
	})
	assert.ErrorIs(t, err, errFn, "call: RDo's error")
	l, err := rw.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after Do and RDo: the lock must be free")
	require.NoError(t, l.Unlock(e.ctx))
}
