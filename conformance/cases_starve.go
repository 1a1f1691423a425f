package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Starve group: a default-mode Mutex (not FIFO) lets a released lock
// be taken by whoever asks first (barging) until a waiter has waited its
// MutexOptions.StarvationThreshold; from then on the release of the lock
// hands it to that waiter directly.
func init() {
	handoverCases = append(handoverCases,
		testCase{
			name: "Starve/HandOver",
			rule: "A default-mode waiter that has waited past its StarvationThreshold is granted before a barging releaser: the holder's Unlock hands it the lock in the same call " +
				"(a TryLock by the holder right after its Unlock is refused, and the lock is held with a new fence while the waiter's process cannot send anything), " +
				"and the waiter's Lock then returns a lease of that very grant.",
			check: checkStarveHandOver,
		},
		testCase{
			name: "Starve/TightLoop",
			rule: "A releaser that Unlocks and Locks again in a tight loop on one Client cannot keep the lock from a default-mode waiter on another Client once the waiter has waited past its StarvationThreshold: " +
				"the waiter is granted while the loop still runs.",
			check: checkStarveTightLoop,
		},
		testCase{
			name:  "Starve/BargeBeforeThreshold",
			rule:  "A default-mode waiter that has not yet waited its StarvationThreshold does not hold the lock back: the holder's Unlock frees it, and a TryLock right after is granted; the waiter is granted after that lease's Unlock.",
			check: checkStarveBargeBefore,
		},
		testCase{
			name:  "Starve/Order",
			rule:  "Default-mode waiters that starved are handed the lock in the order they starved, one per Unlock, and the lock is never free in between; Inspect counts the starving waiters left and names (by fingerprint) the one the next Unlock hands the lock to.",
			check: checkStarveOrder,
		},
		testCase{
			name: "Starve/JoinStarving",
			rule: "A blocking Lock that starts while another Lock of the same Client starves on the name starves from its first acquire call (it subscribes first): " +
				"it is kept behind the earlier waiter, the Unlocks hand the lock to them in that order, and (with wake-ups that carry no grant) its Lock makes two acquire calls in all " +
				"(the one that keeps it as a starving waiter, and the one that learns of its hand-over), not a refused one before them.",
			check: checkStarveJoin,
		},
		testCase{
			name: "Starve/ForceRelease",
			rule: "An operator's ForceRelease of a mutex with a starving default-mode waiter hands the lock to that waiter in the same call, as an Unlock would: " +
				"a TryLock right after is refused and the lock is held with a new fence while the waiter's process cannot send anything, the forced holder's Unlock returns ErrHeldByOther, " +
				"and the waiter's Lock then returns a lease of that very grant.",
			check: checkStarveForceRelease,
		},
		testCase{
			name:  "Starve/Outcome/ReleaseLost",
			rule:  "An Unlock whose release call hands the lock to a starving waiter and whose reply is lost returns nil (its retry finds the lock handed over within the lease's validity): the waiter is granted once, its lease is valid, and a newcomer's TryLock is refused until it is released.",
			check: checkStarveReleaseLost,
		},
		testCase{
			name:  "Starve/Outcome/AcquireLost",
			rule:  "A starving waiter's acquire call whose reply is lost is cleaned up and Lock goes on: the waiter (whose wake-ups carry no grant, so that it learns of its hand-over by a call) is granted the lock that the holder's Unlock hands it, and after its Unlock the lock is free for another client (no starving entry or hold is left).",
			check: checkStarveAcquireLost,
		},
		testCase{
			name:  "Starve/Outcome/GiveUpAfterHandOver",
			rule:  "A starving waiter (whose wake-ups carry no grant) whose context ends while the call that would learn of its hand-over is in flight leaves at once: its clean-up drops the handed-over hold and hands the lock to the next starving waiter, who is granted well before the lock's TTL; the held call, delivered late, is refused ({0, 0}).",
			check: checkStarveGiveUp,
		},
	)
	rwCases = insertBefore(rwCases, "RW/BadInput", testCase{
		name: "RW/StarvingWriter",
		rule: "A writer whose Lock has waited past its StarvationThreshold goes before a barging writer: once its intent starves, the holder's Unlock leaves the lock free, yet the holder's own TryLock and another writer's TryLock are refused, " +
			"and the starving writer's Lock is granted; after its Unlock, a writer's TryLock is granted again.",
		check: checkRWStarvingWriter,
	})
}

// starvingIntents returns the starving writers' intents of the read-write
// lock name: 'i:' fields whose record's extend number is 1 (see
// rw_lock.lua).
func (e *env) starvingIntents(c *locker.Client, name string) int {
	e.t.Helper()
	k := c.Key(name) + ":rw"
	r, err := e.d.admin.Do(e.ctx, k, "HGETALL", k)
	require.NoError(e.t, err, "call: admin HGETALL %s", k)
	all, _ := r.([]any)
	n := 0
	for i := 0; i+1 < len(all); i += 2 {
		f, _ := all[i].(string)
		v, _ := all[i+1].(string)
		if rec := strings.SplitN(v, ":", 4); strings.HasPrefix(f, "i:") && len(rec) == 4 && rec[2] == "1" {
			n++
		}
	}
	return n
}

// starveAfter is the threshold of the cases' waiters: short, so that a
// waiter starves soon; the cases wait for its entry, never for a time.
const starveAfter = 20 * time.Millisecond

// starving returns the waiter ids kept as starving waiters in the mutex
// name's 'w' mark (see mutex_prelude.lua), in order.
func (e *env) starving(c *locker.Client, name string) []string {
	e.t.Helper()
	k := c.Key(name)
	r, err := e.d.admin.Do(e.ctx, k, "HGET", k, "w")
	require.NoError(e.t, err, "call: admin HGET %s w", k)
	w, _ := r.(string)
	var ids []string
	for i := 1; i < len(w); {
		// "<expiry ms>:<ttl ms>:<id length>:<owner length>:<id><owner>"
		f := strings.SplitN(w[i:], ":", 5)
		if len(f) < 5 {
			break
		}
		a, err1 := strconv.Atoi(f[2])
		b, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || len(f[4]) < a+b {
			e.t.Fatalf("call: admin HGET %s w: bad mark %q", k, w)
		}
		ids = append(ids, f[4][:a])
		i = len(w) - len(f[4]) + a + b
	}
	return ids
}

// awaitStarving waits until n waiters are starving on name.
func (e *env) awaitStarving(c *locker.Client, name string, n int) {
	e.t.Helper()
	e.until(e.t, func() bool { return len(e.starving(c, name)) == n }, 10*time.Second,
		fmt.Sprintf("call: %d starving waiters of %q", n, name))
}

// recv returns the result of a Lock started by lockAsync, failing the
// case after 10 s.
func recv(t *testing.T, ch <-chan lockResult, what string) lockResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("call: %s: not granted within 10s", what)
	}
	return lockResult{}
}

// starveHandOver takes name with a plain lease, lets a default-mode
// waiter on a gated Client starve behind it, then, with the waiter's
// process unable to send anything, calls free (what should hand the lock
// over: the holder's Unlock, an operator's ForceRelease) and checks that
// the lock went to the waiter in that call: a TryLock by the holder's
// Mutex right after is refused, the lock is held with a new fence and the
// waiter has left the starving mark; then that the waiter's Lock returns a
// lease of that very grant, and that the name is free after its Unlock.
// after, when set, runs once the waiter may send again, before its Lock is
// awaited, with the holder's lease.
func starveHandOver(t *testing.T, e *env, name, what string, free func(c *locker.Client, h *locker.Lease) error, after func(h *locker.Lease)) {
	c := e.client(nil)
	holder := e.mutex(c, name, 30*time.Second, nil)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	g := &gatedScripter{countingScripter: &countingScripter{Scripter: e.s}}
	wc := e.clientOn(g, slowPolling)
	got := lockAsync(e.ctx, e.mutex(wc, name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: starveAfter}))
	e.awaitStarving(c, name, 1)

	g.gate.Lock() // the waiter's process can send nothing now
	if err := free(c, h); err != nil {
		g.gate.Unlock()
		t.Fatalf("call: %s: %v", what, err)
	}
	again, err := holder.TryLock(e.ctx)
	if err == nil {
		g.gate.Unlock()
		_ = again.Unlock(e.ctx)
		t.Fatalf("call: TryLock right after %s: granted, want ErrNotObtained (the lock was handed to the starving waiter)", what)
	}
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock right after %s", what)
	st, err := c.Inspect(e.ctx, name)
	require.NoError(t, err, "call: Inspect after %s", what)
	assert.True(t, st.Mutex.Held, "call: Inspect after %s: held (handed over), not free", what)
	assert.NotEqual(t, h.Fence(), st.Mutex.Fence, "call: Inspect after %s: a new grant's fence", what)
	assert.Empty(t, e.starving(c, name), "call: starving waiters after the hand-over: the waiter left the mark")
	g.gate.Unlock()
	if after != nil {
		after(h)
	}

	r := recv(t, got, "waiter Lock after "+what)
	require.NoError(t, r.err, "call: waiter Lock")
	assert.Equal(t, st.Mutex.Fence, r.l.Fence(), "call: waiter Lock: the lease of the handed-over grant")
	assert.True(t, r.l.Valid(), "call: waiter lease Valid()")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
	l, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after the waiter's Unlock: free again")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
}

func checkStarveHandOver(t *testing.T, e *env) {
	starveHandOver(t, e, "starve", "the holder's Unlock", func(_ *locker.Client, h *locker.Lease) error { return h.Unlock(e.ctx) }, nil)
}

func checkStarveForceRelease(t *testing.T, e *env) {
	starveHandOver(t, e, "starve-force", "ForceRelease", func(c *locker.Client, _ *locker.Lease) error {
		seen, err := c.Inspect(e.ctx, "starve-force")
		if err != nil {
			return err
		}
		forced, err := c.ForceRelease(e.ctx, "starve-force", seen.ServerTime)
		if err == nil && forced.MutexHolds != 1 {
			err = fmt.Errorf("ForceRelease dropped %d mutex holds, want the holder's 1", forced.MutexHolds)
		}
		return err
	}, func(h *locker.Lease) {
		assert.ErrorIs(t, h.Unlock(e.ctx), locker.ErrHeldByOther, "call: Unlock of the forced holder's lease, the waiter holding the lock")
	})
}

func checkStarveTightLoop(t *testing.T, e *env) {
	const name = "starve-loop"
	c := e.client(nil)
	barger := e.mutex(c, name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: -1})
	h, err := barger.TryLock(e.ctx)
	require.NoError(t, err, "call: barger TryLock")

	wc := e.client(slowPolling)
	got := lockAsync(e.ctx, e.mutex(wc, name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: starveAfter}))
	loopCtx, stop := context.WithCancel(e.ctx)
	defer stop()
	cycles, done := 0, make(chan error, 1)
	go func() {
		defer close(done)
		for {
			if err := h.Unlock(e.ctx); err != nil {
				done <- err
				return
			}
			cycles++
			h, err = barger.Lock(loopCtx)
			if err != nil {
				if loopCtx.Err() != nil {
					return
				}
				done <- err
				return
			}
		}
	}()
	r := recv(t, got, "waiter Lock while the barger loops")
	require.NoError(t, r.err, "call: waiter Lock")
	select {
	case err := <-done:
		t.Fatalf("call: barger loop ended before the waiter was granted: %v", err)
	default:
	}
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
	stop()
	require.NoError(t, <-done, "call: barger loop")
	t.Logf("barger cycles before the waiter was granted: %d", cycles)
}

func checkStarveBargeBefore(t *testing.T, e *env) {
	const name = "starve-not-yet"
	c := e.client(nil)
	holder := e.mutex(c, name, 30*time.Second, nil)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	g := &gatedScripter{countingScripter: &countingScripter{Scripter: e.s}}
	wc := e.clientOn(g, slowPolling)
	got := lockAsync(e.ctx, e.mutex(wc, name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: time.Hour}))
	e.awaitCalls(t, g.countingScripter, 2, "waiter Lock before the release (refused, refused after subscribing)")
	g.gate.Lock()
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	again, err := holder.TryLock(e.ctx)
	g.gate.Unlock()
	require.NoError(t, err, "call: holder TryLock right after its Unlock: a waiter short of its threshold does not hold the lock back")
	assert.Empty(t, e.starving(c, name), "call: starving waiters: none before the threshold")
	require.NoError(t, again.Unlock(e.ctx), "call: holder Unlock")
	r := recv(t, got, "waiter Lock after the second Unlock")
	require.NoError(t, r.err, "call: waiter Lock")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
}

func checkStarveOrder(t *testing.T, e *env) {
	const (
		name    = "starve-order"
		waiters = 3
	)
	c := e.client(nil)
	h, err := e.mutex(c, name, 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	opts := &locker.MutexOptions{StarvationThreshold: starveAfter}
	results := make([]<-chan lockResult, waiters)
	for i := range waiters {
		results[i] = lockAsync(e.ctx, e.mutex(e.client(slowPolling), name, 30*time.Second, opts))
		e.awaitStarving(c, name, i+1) // starving order is the order started
	}
	// inspectStarving checks what Inspect reports of the starving waiters
	// against the lock's mark.
	inspectStarving := func(st locker.LockState, want int) {
		t.Helper()
		ids := e.starving(c, name)
		require.Len(t, ids, want, "call: starving waiters in the lock's mark")
		assert.Equal(t, want, st.Mutex.Starving, "call: Inspect().Mutex.Starving")
		head := ""
		if want > 0 {
			head = locker.Fingerprint(ids[0])
		}
		assert.Equal(t, head, st.Mutex.StarvingHead, "call: Inspect().Mutex.StarvingHead: the first starving waiter's id")
	}
	st, err := c.Inspect(e.ctx, name)
	require.NoError(t, err, "call: Inspect with every waiter starving")
	inspectStarving(st, waiters)
	prev := h
	for i := range waiters {
		require.NoError(t, prev.Unlock(e.ctx), "call: Unlock before waiter %d", i)
		st, err := c.Inspect(e.ctx, name)
		require.NoError(t, err, "call: Inspect after Unlock")
		assert.True(t, st.Mutex.Held, "call: Inspect after Unlock before waiter %d: held (handed over), never free", i)
		inspectStarving(st, waiters-i-1)
		r := recv(t, results[i], "Lock of waiter "+strconv.Itoa(i))
		require.NoError(t, r.err, "call: Lock of waiter %d", i)
		assert.Equal(t, st.Mutex.Fence, r.l.Fence(), "call: Lock of waiter %d: the lease of the handed-over grant", i)
		for j := i + 1; j < waiters; j++ {
			select {
			case r := <-results[j]:
				t.Fatalf("call: Lock of waiter %d returned (err %v) before waiter %d's turn", j, r.err, i)
			default:
			}
		}
		prev = r.l
	}
	require.NoError(t, prev.Unlock(e.ctx), "call: last Unlock")
}

func checkStarveJoin(t *testing.T, e *env) {
	starve := &locker.MutexOptions{StarvationThreshold: starveAfter}
	checkJoinFirst(t, e, "starve-join", nil, starve, func(c *locker.Client, name string, n int) { e.awaitStarving(c, name, n) },
		"one that keeps it as a starving waiter")
}

// checkJoinFirst checks that the second blocking Lock of one Client, which
// starts once the first waits on name behind a holder (holder's options
// hopts, the waiters' wopts; waiting(c, name, n) returns once n wait), is
// handed the lock after the first and makes two acquire calls in all, with
// wake-ups that carry no grant: the one that lists it (listed says how),
// and the one that learns of its hand-over.
func checkJoinFirst(t *testing.T, e *env, name string, hopts, wopts *locker.MutexOptions, waiting func(c *locker.Client, name string, n int), listed string) {
	c := e.client(nil)
	h, err := e.mutex(c, name, 30*time.Second, hopts).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	var (
		mu       sync.Mutex
		attempts = map[int64]int{} // by the grant's fence
	)
	opts := *slowPolling
	opts.Observer = func(_ context.Context, ev locker.Event) {
		if ev.Kind == locker.EventAcquire && ev.Err == nil {
			mu.Lock()
			attempts[ev.Fence] = ev.Attempts
			mu.Unlock()
		}
	}
	// Both waiters on one Client: the second learns from the first. Their
	// wake-ups carry no grant, so each learns of its hand-over by a call.
	wc := e.clientOn(e.faults().withoutGrants(), &opts)
	first := lockAsync(e.ctx, e.mutex(wc, name, 30*time.Second, wopts))
	waiting(c, name, 1)
	began := time.Now()
	second := lockAsync(e.ctx, e.mutex(wc, name, 30*time.Second, wopts))
	waiting(c, name, 2)

	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	r1 := recv(t, first, "Lock of the first waiter")
	require.NoError(t, r1.err, "call: Lock of the first waiter")
	select {
	case r := <-second:
		t.Fatalf("call: Lock of the second waiter returned (err %v) before the first waiter's Unlock", r.err)
	default:
	}
	require.NoError(t, r1.l.Unlock(e.ctx), "call: first waiter Unlock")
	r2 := recv(t, second, "Lock of the second waiter")
	require.NoError(t, r2.err, "call: Lock of the second waiter")
	st, err := c.Inspect(e.ctx, name)
	require.NoError(t, err, "call: Inspect")
	assert.Equal(t, st.Mutex.Fence, r2.l.Fence(), "call: Lock of the second waiter: the lease of the handed-over grant")
	mu.Lock()
	n := attempts[r2.l.Fence()]
	mu.Unlock()
	if took := time.Since(began); n > 2 && took >= entryRefresh {
		e.tooLate(t, fmt.Sprintf("call: acquire calls of the second waiter's Lock: %d, want 2; it waited %v, past its entry's refresh (%v)", n, took.Round(time.Millisecond), entryRefresh))
	}
	assert.Equal(t, 2, n, "call: acquire calls of the second waiter's Lock (%s, one that learns of its hand-over)", listed)
	require.NoError(t, r2.l.Unlock(e.ctx), "call: second waiter Unlock")
}

func checkStarveReleaseLost(t *testing.T, e *env) {
	const name = "starve-release-lost"
	c := e.client(nil)
	f := e.faults()
	fc := e.clientOn(f, nil)
	h, err := e.mutex(fc, name, 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	got := lockAsync(e.ctx, e.mutex(e.client(slowPolling), name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: starveAfter}))
	e.awaitStarving(c, name, 1)

	a := f.lose("release", 1).onKey(c.Key(name))
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock whose first release reply is lost")
	a.awaitApplied(t, 1, "the lost release")
	r := recv(t, got, "waiter Lock after the hand-over")
	require.NoError(t, r.err, "call: waiter Lock")
	assert.True(t, r.l.Valid(), "call: waiter lease Valid()")
	_, err = e.mutex(c, name, 30*time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: newcomer TryLock while the waiter holds the lock")
	ttl, err := r.l.TTL(e.ctx)
	require.NoError(t, err, "call: waiter lease TTL")
	assert.Greater(t, ttl, time.Duration(0), "call: waiter lease TTL: held")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
}

func checkStarveAcquireLost(t *testing.T, e *env) {
	const name = "starve-acquire-lost"
	c := e.client(nil)
	h, err := e.mutex(c, name, 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	f := e.faults().withoutGrants() // the waiter learns of its hand-over by a call
	wc := e.clientOn(f, nil)        // a lost reply is retried after MinRetryDelay
	got := lockAsync(e.ctx, e.mutex(wc, name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: starveAfter}))
	e.awaitStarving(c, name, 1)
	since := f.answeredOn(c.Key(name), cleanupScripts...)
	a := f.lose("acquire", 1).onKey(c.Key(name))
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock (hands the lock over; the waiter's next acquire reply is lost)")
	a.awaitApplied(t, 1, "the lost acquire")
	f.awaitCleanup(t, c.Key(name), since, "the lost acquire")
	r := recv(t, got, "waiter Lock after a lost reply")
	require.NoError(t, r.err, "call: waiter Lock")
	assert.True(t, r.l.Valid(), "call: waiter lease Valid()")
	_, err = e.mutex(c, name, 30*time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: newcomer TryLock while the waiter holds the lock")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
	e.until(t, func() bool {
		l, err := e.mutex(c, name, 30*time.Second, nil).TryLock(e.ctx)
		if err != nil {
			return false
		}
		return l.Unlock(e.ctx) == nil
	}, 10*time.Second, "call: TryLock after the waiter's Unlock: free (well before the 30s TTL)")
	assert.Empty(t, e.starving(c, name), "call: starving waiters left")
}

func checkStarveGiveUp(t *testing.T, e *env) {
	const name = "starve-give-up"
	c := e.client(nil)
	h, err := e.mutex(c, name, 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	opts := &locker.MutexOptions{StarvationThreshold: starveAfter}

	f := e.faults().withoutGrants() // the first waiter learns of its hand-over by a call
	first, cancel := context.WithCancel(e.ctx)
	defer cancel()
	gone := lockAsync(first, e.mutex(e.clientOn(f, slowPolling), name, 30*time.Second, opts))
	e.awaitStarving(c, name, 1)
	next := lockAsync(e.ctx, e.mutex(e.client(slowPolling), name, 30*time.Second, opts))
	e.awaitStarving(c, name, 2)

	since := f.answeredOn(c.Key(name), cleanupScripts...)
	a := f.holdBack("acquire", 1, cancel).onKey(c.Key(name))
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock (hands the lock to the first starving waiter)")
	held := a.next(t, "the first waiter's acquire after the hand-over")
	r := recv(t, gone, "first waiter Lock after its context ended")
	require.Error(t, r.err, "call: first waiter Lock whose context ended")
	require.True(t, errors.Is(r.err, locker.ErrNotObtained), "call: first waiter Lock: got %v, want ErrNotObtained", r.err)
	f.awaitCleanup(t, c.Key(name), since, "the first waiter's clean-up")

	n := recv(t, next, "second waiter Lock after the first gave up (granted well before the lock's 30s TTL)")
	require.NoError(t, n.err, "call: second waiter Lock")
	late := held.deliver(t)
	require.NoError(t, late.err, "call: the held acquire, delivered after the clean-up")
	assert.Equal(t, []any{int64(0), int64(0)}, late.r, "call: the held acquire is refused ({0, 0}): it was abandoned")
	st, err := c.Inspect(e.ctx, name)
	require.NoError(t, err, "call: Inspect")
	assert.Equal(t, n.l.Fence(), st.Mutex.Fence, "call: Inspect: the second waiter's grant holds the lock")
	require.NoError(t, n.l.Unlock(e.ctx), "call: second waiter Unlock")
}

func checkRWStarvingWriter(t *testing.T, e *env) {
	const name = "starve-rw"
	c := e.client(nil)
	holder := e.rw(c, name, 30*time.Second, nil)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock (write)")

	g := &gatedScripter{countingScripter: &countingScripter{Scripter: e.s}}
	got := rwLockAsync(e.ctx, e.rw(e.clientOn(g, slowPolling), name, 30*time.Second, &locker.RWMutexOptions{StarvationThreshold: starveAfter}), nil)
	e.until(t, func() bool { return e.starvingIntents(c, name) == 1 }, 10*time.Second,
		"call: the waiting writer's intent starves (admin HGETALL of the lock's hash)")

	g.gate.Lock() // the starving writer's process can send nothing now
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	again, err := holder.TryLock(e.ctx)
	if err == nil {
		g.gate.Unlock()
		_ = again.Unlock(e.ctx)
		t.Fatal("call: holder TryLock right after its Unlock: granted, want ErrNotObtained (a starving writer goes first)")
	}
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: holder TryLock right after its Unlock")
	_, err = e.rw(e.client(nil), name, 30*time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: another writer's TryLock while the starving writer's intent lives")
	g.gate.Unlock()

	r := recv(t, got, "starving writer Lock")
	require.NoError(t, r.err, "call: starving writer Lock")
	assert.Greater(t, r.l.Fence(), h.Fence(), "call: starving writer's Fence()")
	require.NoError(t, r.l.Unlock(e.ctx), "call: starving writer Unlock")
	assert.Zero(t, e.starvingIntents(c, name), "call: starving intents after the writer's grant")
	l, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after the starving writer's Unlock")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
}
