package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// semWakeCases check how a semaphore without FIFO wakes its waiters: one
// wake-up per freed permit, oldest first, handed on when the woken waiter
// does not fit, is gone or crashed, and the starvation rule.
var semWakeCases = []testCase{
	{
		name:      "Semaphore/OneWakePerPermit",
		rule:      "With 5 Acquire(1)s waiting (each on its own Client, listed one after another) while 2 leases of 1 permit hold every permit, each Unlock of one lease wakes exactly one waiter, the oldest: it is granted, and no other waiter makes a call until the next Unlock.",
		check:     checkSemOneWakePerPermit,
		exclusive: "asserts that waiters make no call for 150 ms after a grant, all within 1.6 s of their start (their own re-check)",
	},
	{
		name:      "Semaphore/WakePassesOn",
		rule:      "A wake-up is never lost: a woken waiter whose context ends before its try leaves and hands it on to the next waiter, which is granted at once; a woken waiter that no longer fits (a barging TryAcquire took a permit before its try) hands it on to a waiter that fits; a woken waiter whose granted try's reply is lost frees the permit in its clean-up and the wake-up passes on (it or the next waiter is granted at once); a woken waiter that crashed (its calls never reach Redis) holds its permits only until its entry expires, then the next waiter is granted, and the next release wakes a waiter at once again.",
		check:     checkSemWakePassesOn,
		exclusive: "bounds how soon a handed-on waiter is granted (1.2 s, before its own re-check)",
	},
	{
		name:  "Semaphore/Starvation",
		rule:  "Without FIFO, an Acquire(2) that has waited past its StarvationThreshold (50 ms) is not overtaken: once its permits are freed, a barging TryAcquire(1) of another Client is refused while it would leave the waiter short, one that fits beside it is granted, and the waiter is granted; a waiter that never starves (threshold negative) is overtaken by barging TryAcquires.",
		check: checkSemStarvation,
	},
}

func init() { semaphoreCases = insertBefore(semaphoreCases, "Semaphore/Chaos", semWakeCases...) }

// semWaiter is one Acquire on its own Client and fault wrapper.
type semWaiter struct {
	f      *faultScripter
	s      *locker.Semaphore
	cancel context.CancelFunc
	got    chan lockResult
}

// startSemWaiter starts s.Acquire(n) on a Client of its own and waits
// until its first try was answered (it is listed among the waiters).
func (e *env) startSemWaiter(name string, permits, n int, ttl time.Duration, opts *locker.SemaphoreOptions, what string) *semWaiter {
	e.t.Helper()
	f := e.faults()
	w := &semWaiter{f: f, s: e.sem(e.clientOn(f, nil), name, permits, ttl, opts), got: make(chan lockResult, 1)}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	w.cancel = cancel
	e.t.Cleanup(cancel)
	go func() {
		l, err := w.s.Acquire(ctx, n)
		w.got <- lockResult{l, err}
	}()
	f.awaitAnswered(e.t, 0, what+": the waiter's first try", "sem_acquire")
	return w
}

// granted returns the waiter's lease, failing the case unless it is
// granted within d.
func (w *semWaiter) granted(t *testing.T, d time.Duration, what string) *locker.Lease {
	t.Helper()
	r := arrive(t, w.f.e, w.got, d, what+": Acquire granted")
	require.NoError(t, r.err, "%s: call: Acquire", what)
	return r.l
}

// waiting asserts the waiter has not returned.
func (w *semWaiter) waiting(t *testing.T, what string) {
	t.Helper()
	select {
	case r := <-w.got:
		t.Fatalf("%s: Acquire returned (lease %v, err %v), want it still waiting", what, r.l != nil, r.err)
	default:
	}
}

// settle waits until each waiter's try after subscribing was answered,
// then 100 ms more: a later call of theirs is a wake-up (or their own
// re-check). A miss is timing (see timely), and the rule stops.
func (e *env) settle(t *testing.T, ws ...*semWaiter) {
	t.Helper()
	ok := waitFor(func() bool {
		for _, w := range ws {
			if w.f.answered("sem_acquire") < 2 {
				return false
			}
		}
		return true
	}, 10*time.Second)
	if !e.timely(t, ok, "call: every waiter's try after subscribing answered within 10s") {
		t.SkipNow()
	}
	time.Sleep(100 * time.Millisecond)
}

func checkSemOneWakePerPermit(t *testing.T, e *env) {
	const permits, waiters = 2, 5
	holder := e.sem(e.client(nil), "one-wake", permits, 30*time.Second, nil)
	var held []*locker.Lease
	for range permits {
		l, err := holder.TryAcquire(e.ctx, 1)
		require.NoError(t, err, "call: TryAcquire(1)")
		held = append(held, l)
	}
	const recheckAfter = 1600 * time.Millisecond // a waiter's own re-check, without a wake-up
	started := time.Now()
	ws := make([]*semWaiter, waiters)
	for i := range ws {
		ws[i] = e.startSemWaiter("one-wake", permits, 1, 30*time.Second, nil, fmt.Sprintf("waiter %d", i))
	}
	e.settle(t, ws...)
	for r := range permits {
		calls := make([]int, waiters)
		for i, w := range ws {
			calls[i] = w.f.count("sem_acquire")
		}
		require.NoError(t, held[r].Unlock(e.ctx), "call: Unlock of lease %d", r)
		l := ws[r].granted(t, 5*time.Second, fmt.Sprintf("after Unlock %d, waiter %d (the oldest)", r, r))
		time.Sleep(150 * time.Millisecond)
		for i := r + 1; i < waiters; i++ {
			ws[i].waiting(t, fmt.Sprintf("after Unlock %d, waiter %d", r, i))
			n := ws[i].f.count("sem_acquire")
			if n != calls[i] && time.Since(started) >= recheckAfter {
				// The waiters' own re-check came first: the rule ran late.
				e.tooLate(t, fmt.Sprintf("after Unlock %d: waiter %d made %d acquire calls, %v after the waiters started (their own re-check comes after %v)", r, i, n-calls[i], time.Since(started).Round(time.Millisecond), recheckAfter))
			}
			assert.Equal(t, calls[i], n, "after Unlock %d: waiter %d made acquire calls: it was woken too (want one wake-up per freed permit)", r, i)
		}
		defer func() { require.NoError(t, l.Unlock(e.ctx)) }()
	}
	for _, w := range ws[permits:] {
		w.cancel()
		r := <-w.got
		require.ErrorIs(t, r.err, locker.ErrNotObtained, "call: Acquire whose context ended")
	}
}

// twoWaiting takes hold of a semaphore's permits (of permits, as name)
// and queues two waiters behind the lease, a asking askA and b askB, each
// settled and waiting.
func (e *env) twoWaiting(t *testing.T, name string, permits, hold, askA, askB int, opts *locker.SemaphoreOptions) (*locker.Semaphore, *locker.Lease, *semWaiter, *semWaiter) {
	t.Helper()
	holder := e.sem(e.client(nil), name, permits, 30*time.Second, opts)
	h, err := holder.TryAcquire(e.ctx, hold)
	require.NoError(t, err, "call: TryAcquire(%d)", hold)
	a := e.startSemWaiter(name, permits, askA, 30*time.Second, opts, "a")
	b := e.startSemWaiter(name, permits, askB, 30*time.Second, opts, "b")
	e.settle(t, a, b)
	a.waiting(t, "a, before the Unlock")
	b.waiting(t, "b, before the Unlock")
	return holder, h, a, b
}

func checkSemWakePassesOn(t *testing.T, e *env) {
	t.Run("gone", func(t *testing.T) {
		// Permits 1: the holder's Unlock wakes a (the oldest); a's try is
		// held back and its context ends; its clean-up hands the wake-up
		// on to b.
		const name = "pass-gone"
		_, h, a, b := e.twoWaiting(t, name, 1, 1, 1, 1, nil)
		arm := a.f.holdBack("sem_acquire", 1, a.cancel)
		require.NoError(t, h.Unlock(e.ctx), "call: Unlock")
		arm.awaitApplied(t, 1, "a's woken try")
		r := arrive(t, e, a.got, 5*time.Second, "a's Acquire returned after its context's end")
		require.ErrorIs(t, r.err, locker.ErrNotObtained, "call: a's Acquire, its context ended at its woken try")
		l := b.granted(t, 1200*time.Millisecond, "b, handed a's wake-up")
		require.NoError(t, l.Unlock(e.ctx))
	})
	t.Run("does-not-fit", func(t *testing.T) {
		// Permits 2, no starvation: the Unlock of a lease of 2 wakes a
		// (asks 2; b asks 1 and the 2 are promised to a); a barging
		// TryAcquire(1) takes one before a's delayed try, which is
		// refused and hands the wake-up on to b.
		const name = "pass-fit"
		never := &locker.SemaphoreOptions{StarvationThreshold: -1}
		holder, h, a, b := e.twoWaiting(t, name, 2, 2, 2, 1, never)
		calls := b.f.count("sem_acquire")
		const delay = 300 * time.Millisecond
		arm := a.f.delayBy("sem_acquire", 1, delay)
		require.NoError(t, h.Unlock(e.ctx), "call: Unlock of the lease of 2")
		released := time.Now()
		x, err := holder.TryAcquire(e.ctx, 1)
		e.bargedInTime(t, err, released, delay, "call: a barging TryAcquire(1) right after the Unlock")
		arm.awaitApplied(t, 1, "a's woken try")
		l := b.granted(t, 1200*time.Millisecond, "b, handed the wake-up a could not use")
		assert.Equal(t, calls+1, b.f.count("sem_acquire"), "b was woken once, after a's refused try")
		a.waiting(t, "a (asks 2, 1 held by the barger and 1 by b)")
		require.NoError(t, x.Unlock(e.ctx))
		require.NoError(t, l.Unlock(e.ctx))
		la := a.granted(t, 5*time.Second, "a, once both permits are free")
		require.NoError(t, la.Unlock(e.ctx))
	})
	t.Run("lost", func(t *testing.T) {
		// Permits 1: the woken a's try is granted but its reply is lost;
		// its clean-up frees the permit and hands the wake-up on, so a
		// (retrying) or b is granted at once, then the other.
		const name = "pass-lost"
		_, h, a, b := e.twoWaiting(t, name, 1, 1, 1, 1, nil)
		arm := a.f.lose("sem_acquire", 1)
		require.NoError(t, h.Unlock(e.ctx), "call: Unlock")
		arm.awaitApplied(t, 1, "a's woken try, granted, its reply lost")
		var second *semWaiter
		select {
		case r := <-a.got:
			require.NoError(t, r.err, "call: a's Acquire after its lost reply")
			second = b
			require.NoError(t, r.l.Unlock(e.ctx))
		case r := <-b.got:
			require.NoError(t, r.err, "call: b's Acquire")
			second = a
			a.waiting(t, "a, while b holds the only permit")
			require.NoError(t, r.l.Unlock(e.ctx))
		case <-time.After(1200 * time.Millisecond):
			e.timely(t, false, "neither a nor b granted within 1.2s of a's lost grant: the wake-up was lost")
			t.SkipNow()
		}
		l := second.granted(t, 1200*time.Millisecond, "the other waiter, woken by the first one's Unlock")
		require.NoError(t, l.Unlock(e.ctx))
	})
	t.Run("crashed", func(t *testing.T) {
		// Permits 1, a's entry living 600 ms: a is woken, but none of its
		// calls reach Redis any more; once its entry expired, b is granted
		// (at its next re-check).
		const name = "pass-crash"
		const ttl = 600 * time.Millisecond
		holder := e.sem(e.client(nil), name, 1, 30*time.Second, nil)
		h, err := holder.TryAcquire(e.ctx, 1)
		require.NoError(t, err, "call: TryAcquire(1)")
		a := e.startSemWaiter(name, 1, 1, ttl, nil, "a")
		b := e.startSemWaiter(name, 1, 1, 30*time.Second, nil, "b")
		time.Sleep(100 * time.Millisecond)
		crashA := a.f.holdBack("sem_acquire", -1, nil)
		crashC := a.f.holdBack("sem_cancel", -1, nil)
		require.NoError(t, h.Unlock(e.ctx), "call: Unlock")
		l := b.granted(t, 5*time.Second, "b, while the woken a crashed")
		if !e.timely(t, crashA.applied() > 0, "a was woken and tried before b was granted (its tries never reached Redis)") {
			// The scenario did not happen: a's entry lapsed first.
			require.NoError(t, l.Unlock(e.ctx))
			crashA.disarm()
			crashC.disarm()
			a.cancel()
			<-a.got
			return
		}
		a.waiting(t, "a (crashed)")
		// What was promised to a came back with its entry: b's Unlock
		// wakes c at once (c's own re-check comes after 1.6 s).
		c := e.startSemWaiter(name, 1, 1, 30*time.Second, nil, "c")
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, l.Unlock(e.ctx))
		lc := c.granted(t, 1200*time.Millisecond, "c, woken by b's Unlock")
		require.NoError(t, lc.Unlock(e.ctx))
		crashA.disarm()
		crashC.disarm()
		a.cancel()
		<-a.got
	})
}

func checkSemStarvation(t *testing.T, e *env) {
	const name = "starve"
	const threshold = 50 * time.Millisecond
	opts := &locker.SemaphoreOptions{StarvationThreshold: threshold}
	holder := e.sem(e.client(nil), name, 4, 30*time.Second, opts)
	h, err := holder.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "call: TryAcquire(2)")
	one, err := holder.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: TryAcquire(1)")
	filler, err := holder.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: TryAcquire(1)")
	// a asks 2 while all 4 are held; it starves after 50 ms.
	a := e.startSemWaiter(name, 4, 2, 30*time.Second, opts, "a")
	time.Sleep(2 * threshold)
	// Delay a's woken try, so the barger comes first.
	arm := a.f.delayBy("sem_acquire", 1, 500*time.Millisecond)
	require.NoError(t, h.Unlock(e.ctx), "call: Unlock of the lease of 2")
	barger := e.sem(e.client(nil), name, 4, 30*time.Second, opts)
	_, err = barger.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: a barging TryAcquire(1) while the starving a waits for the 2 free permits")
	require.NoError(t, filler.Unlock(e.ctx), "call: Unlock of another lease of 1")
	beside, err := barger.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: a TryAcquire(1) that fits beside the starving a (3 free, a asks 2)")
	_, err = barger.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: a second barging TryAcquire(1), which would leave a 1 of its 2")
	arm.awaitApplied(t, 1, "a's woken try")
	la := a.granted(t, 5*time.Second, "a, starving, when its 2 permits are free")
	require.NoError(t, one.Unlock(e.ctx))
	require.NoError(t, beside.Unlock(e.ctx))
	require.NoError(t, la.Unlock(e.ctx))

	// A waiter with a negative threshold never starves: bargers that come
	// before its (delayed) try take the permits.
	const other = "starve-never"
	never := &locker.SemaphoreOptions{StarvationThreshold: -1}
	holder = e.sem(e.client(nil), other, 3, 30*time.Second, never)
	h, err = holder.TryAcquire(e.ctx, 3)
	require.NoError(t, err, "call: TryAcquire(3)")
	w := e.startSemWaiter(other, 3, 1, 30*time.Second, never, "w")
	time.Sleep(2 * threshold)
	const delay = 500 * time.Millisecond
	arm = w.f.delayBy("sem_acquire", 1, delay)
	require.NoError(t, h.Unlock(e.ctx), "call: Unlock of the lease of 3")
	released := time.Now()
	var bs []*locker.Lease
	for i := range 3 {
		l, err := holder.TryAcquire(e.ctx, 1)
		e.bargedInTime(t, err, released, delay, fmt.Sprintf("call: barging TryAcquire(1) #%d past a waiter that never starves", i))
		bs = append(bs, l)
	}
	arm.awaitApplied(t, 1, "w's woken try")
	w.waiting(t, "w (never starves, overtaken)")
	for _, l := range bs {
		require.NoError(t, l.Unlock(e.ctx))
	}
	lw := w.granted(t, 5*time.Second, "w, once the bargers released")
	require.NoError(t, lw.Unlock(e.ctx))
}

// bargedInTime requires err, the error of a barging TryAcquire meant to
// come before a woken waiter's try (delayed by delay from released), to
// be nil. Refused once the delay had passed, the waiter's try may have
// come first (the machine ran too late for the barger): timing, and the
// test stops.
func (e *env) bargedInTime(t *testing.T, err error, released time.Time, delay time.Duration, what string) {
	t.Helper()
	if took := time.Since(released); errors.Is(err, locker.ErrNotObtained) && took >= delay {
		e.tooLate(t, fmt.Sprintf("%s: refused %v after the release, past the waiter's %v delay", what, took, delay))
	}
	require.NoError(t, err, what)
}
