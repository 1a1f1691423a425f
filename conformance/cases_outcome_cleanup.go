package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cleanupTrigger is a call with an unknown outcome that makes the core
// clean up after it; it returns a check that the lock (or key) is free.
type cleanupTrigger struct {
	what string
	run  func(o *outcome, name, what string)
}

var cleanupTriggers = []cleanupTrigger{
	{"TryLock [Mutex], its reply lost (abandon)", lostTry(mMutex)},
	{"TryLock [Mutex Owner+Reentrant], its reply lost (abandon)", lostTry(mReentrant)},
	{"Lock [Mutex FIFO] queued behind a holder, a call's reply lost, then its context ends (abandon, dequeue)", func(o *outcome, name, what string) {
		t := o.t
		m := mFIFO.lock()
		_, hg := o.mustAcquire(o.other, mMutex, name, outcomeTTL)
		a := o.f.lose("acquire", 1).onKey(m.hashKey(o.c, name)).after(1)
		ctx, cancel := context.WithTimeout(o.e.ctx, 400*time.Millisecond)
		l, err := o.acquire(ctx, m, name)
		cancel()
		a.disarm()
		require.Error(t, err, "%s: call: %s behind a holder: got a lease, want ErrNotObtained", what, m.op())
		assert.Nil(t, l)
		o.mustUnlock(what+": the holder", hg)
		o.awaitFree(m, name, what)
	}},
	{"RWMutex.TryLock, its reply lost (rw_cancel)", lostTry(mWrite)},
	{"TryRLock [RWMutex Owner], its reply lost (rw_cancel)", lostTry(mReadOwner)},
	{"RWMutex.Lock waiting with its intent until its context ends (rw_cancel)", func(o *outcome, name, what string) {
		t := o.t
		m := mWrite.lock()
		_, rg := o.mustAcquire(o.other, mRead, name, outcomeTTL)
		ctx, cancel := context.WithTimeout(o.e.ctx, 300*time.Millisecond)
		l, err := o.acquire(ctx, m, name)
		cancel()
		require.ErrorIs(t, err, locker.ErrNotObtained, "%s: call: %s behind a reader: got %v, want ErrNotObtained", what, m.op(), err)
		assert.Nil(t, l)
		o.awaitReadable(name, what)
		o.mustUnlock(what+": the reader", rg)
		o.awaitFree(m, name, what)
	}},
	{"RWMutex.Downgrade, its reply lost (rw_cancel)", func(o *outcome, name, what string) {
		t := o.t
		rw := o.e.rw(o.c, name, outcomeTTL, nil)
		w, g := o.mustAcquire(o.c, mWrite, name, outcomeTTL)
		a := o.f.lose("rw_downgrade", 1).onKey(mWrite.hashKey(o.c, name))
		r, err := rw.Downgrade(o.e.ctx, w)
		o.h.closeAt(g, time.Now())
		a.disarm()
		require.Error(t, err, "%s: call: Downgrade whose reply is lost: got a read lease, want the connection error", what)
		assert.Nil(t, r)
		o.awaitFree(mWrite, name, what)
	}},
	{"Claim, its reply lost (unclaim)", func(o *outcome, name, what string) {
		t := o.t
		a := o.f.lose("claim", -1) // every try of the call
		ok, err := o.c.Claim(o.e.ctx, name, outcomeTTL)
		a.disarm()
		require.Error(t, err, "%s: call: Claim whose reply is lost: got %v, want the connection error", what, ok)
		o.awaitClaim(o.other, name, what)
	}},
}

// lostTry is the trigger of a try of m whose reply is lost.
func lostTry(m mode) func(o *outcome, name, what string) {
	return func(o *outcome, name, what string) {
		t := o.t
		a := o.f.lose(m.script("acquire"), 1).onKey(m.hashKey(o.c, name))
		l, err := o.acquire(o.e.ctx, m, name)
		a.disarm()
		require.Error(t, err, "%s: call: %s whose reply is lost: got a lease, want the connection error", what, m.op())
		assert.Nil(t, l)
		o.awaitFree(m, name, what)
	}
}

// awaitClaim requires that c's Claim of key returns true soon (within
// freeWithin; the marker's TTL is 30 s).
func (o *outcome) awaitClaim(c *locker.Client, key, what string) {
	o.t.Helper()
	start := time.Now()
	for {
		ok, err := c.Claim(o.e.ctx, key, outcomeTTL)
		require.NoError(o.t, err, "%s: call: another client's Claim(%q): got %v, want true or false", what, key, err)
		if ok {
			return
		}
		if time.Since(start) > freeWithin {
			o.e.tooLate(o.t, fmt.Sprintf("%s: call: another client's Claim(%q): still false %v later; want the key free to claim soon after, well before its %v TTL", what, key, freeWithin, outcomeTTL))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkOutcomeCleanupLost(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for i, tr := range cleanupTriggers {
		what := tr.what + ", every clean-up call's reply lost twice"
		o.mode(what, func(t *testing.T) {
			arms := o.armCleanups(fateLost, 2, 0)
			defer disarmAll(arms)
			name := "cleanup-lost-" + string(rune('a'+i))
			tr.run(o, name, what)
			// The wrapper counts a lost call just after Redis ran it, so the
			// lock may be seen free a moment before the count moves.
			e.eventually(t, func() bool { return sumApplied(arms) >= 1 }, 5*time.Second,
				fmt.Sprintf("%s: the fault: a clean-up call (of %v) whose reply was lost", what, cleanupScripts))
		})
	}
}

// cleanupLateMode is a blocking acquire whose first call has an unknown
// outcome: its reply lost after it ran, or held back (never run until
// the test delivers it).
type cleanupLateMode struct {
	m         mode
	heldFirst bool
}

func (c cleanupLateMode) String() string {
	if c.heldFirst {
		return c.m.String() + ", its first call held back"
	}
	return c.m.String() + ", its first call's reply lost"
}

func checkOutcomeCleanupLate(t *testing.T, e *env) {
	o := newOutcome(t, e)
	modes := []cleanupLateMode{
		{mMutex.lock(), false}, {mMutex.lock(), true},
		{mOwner.lock(), false},
		{mReentrant.lock(), false}, {mReentrant.lock(), true},
		{mFIFO.lock(), false},
		{mRead.lock(), false}, {mReadOwner.lock(), false},
		{mWrite.lock(), false}, {mWriteOwner.lock(), true}, {mWriteReentrant.lock(), false},
	}
	for _, cm := range modes {
		m := cm.m
		what := cm.String() + ", its clean-up held back until a later attempt was granted"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "cleanup-late")
			if cm.heldFirst {
				name += "-held"
			}
			var acq *faultArm
			if cm.heldFirst {
				acq = o.f.holdBack(m.script("acquire"), 1, nil).onKey(m.hashKey(o.c, name))
			} else {
				acq = o.f.lose(m.script("acquire"), 1).onKey(m.hashKey(o.c, name))
			}
			arms := o.armCleanups(fateLate, 1, 0)
			defer disarmAll(arms)
			since := o.f.answered(cleanupScripts...)
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			l, err := o.acquire(ctx, m, name)
			cancel()
			acq.disarm()
			if !o.e.done(t, err, fmt.Sprintf("%s: call: %s: want a lease from a later attempt", what, m.op())) {
				return
			}
			g := o.add(l, m)
			require.Equal(t, 1, acq.applied(), "%s: the first acquire call had an unknown outcome", what)
			o.e.until(t, func() bool { return sumApplied(arms) >= 1 }, 10*time.Second,
				fmt.Sprintf("%s: a clean-up call (%v) made for the first call", what, cleanupScripts))
			// Give the clean-up's retry a moment (not required here: the
			// lease's later checks catch a hold it failed to drop).
			retried := false
			for end := time.Now().Add(2 * time.Second); !retried && time.Now().Before(end); time.Sleep(time.Millisecond) {
				retried = o.f.answered(cleanupScripts...) > since
			}
			disarmAll(arms)
			for _, a := range arms {
				for _, hc := range a.heldCalls() {
					r := hc.deliver(t)
					require.NoError(t, r.err, "%s: the held clean-up %s, delivered late", what, hc.call)
					t.Logf("%s: late clean-up %s replied %v", what, hc.call.name, r.r)
				}
			}
			// Finding 1 (also with Reentrant): the late clean-up must not
			// drop the later attempt's hold.
			if !e.assertLive(t, l, what) {
				return
			}
			o.assertHeld(m, name, what)
			o.assertServerHeld(l, outcomeTTL/2, what)
			if cm.heldFirst {
				if !retried && !waitFor(func() bool { return o.f.answered(cleanupScripts...) > since }, 10*time.Second) {
					t.Errorf("%s: no retry of the held-back clean-up was answered within 12s; want it retried in the background (it lists the call, so that it is refused)", what)
				} else if !e.timely(t, retried, what+": a retry of the held-back clean-up answered within 2s") {
					return
				}
				r := acq.next(t, what).deliver(t)
				require.NoError(t, r.err, "%s: the held first acquire call, delivered late", what)
				assert.Equal(t, []any{int64(0), int64(0)}, r.r, "%s: reply of the late first acquire call: want {0, 0} (refused: it was abandoned)", what)
				o.assertHeld(m, name, what+", after the late acquire")
				o.assertServerHeld(l, outcomeTTL/2, what+", after the late acquire")
			}
			o.mustUnlock(what, g)
			o.awaitFree(m, name, what+", after Unlock")
		})
	}
	checkDowngradeCleanupLate(o)
	checkClaimCleanupLate(o)
}

// checkClaimCleanupLate is Cleanup/Late for Claim: the unclaim of a lost
// Claim, held back until another client won the key, drops nothing of the
// winner's.
func checkClaimCleanupLate(o *outcome) {
	what := "Claim whose replies are lost, its clean-up (unclaim) held back until another client claimed the key"
	o.mode(what, func(t *testing.T) {
		arms := o.armCleanups(fateLate, 1, 0)
		defer disarmAll(arms)
		a := o.f.lose("claim", -1)
		ok, err := o.c.Claim(o.e.ctx, "cleanup-late-claim", outcomeTTL)
		a.disarm()
		require.Error(t, err, "%s: call: Claim: got %v, want the connection error", what, ok)
		require.Eventually(t, func() bool { return sumApplied(arms) >= 1 }, 10*time.Second, time.Millisecond,
			"%s: no clean-up call (%v) was made for the Claim", what, cleanupScripts)
		o.awaitClaim(o.other, "cleanup-late-claim", what)
		disarmAll(arms)
		for _, a := range arms {
			for _, hc := range a.heldCalls() {
				r := hc.deliver(t)
				require.NoError(t, r.err, "%s: the held clean-up %s, delivered late", what, hc.call)
				t.Logf("%s: late clean-up %s replied %v", what, hc.call.name, r.r)
			}
		}
		ok, err = o.prober.Claim(o.e.ctx, "cleanup-late-claim", outcomeTTL)
		require.NoError(t, err, "%s: call: a third client's Claim", what)
		assert.False(t, ok, "%s: call: a third client's Claim after the late clean-up: got true, want false (the winner's claim must survive)", what)
	})
}

// checkDowngradeCleanupLate is Cleanup/Late for Downgrade: the clean-up of
// a lost Downgrade, held back until another writer was granted, drops
// nothing of that writer's.
func checkDowngradeCleanupLate(o *outcome) {
	what := "RWMutex.Downgrade whose replies are lost, its clean-up (rw_cancel) held back until another writer was granted"
	o.mode(what, func(t *testing.T) {
		const name = "cleanup-late-downgrade"
		rw := o.e.rw(o.c, name, outcomeTTL, nil)
		w, g := o.mustAcquire(o.c, mWrite, name, outcomeTTL)
		arms := o.armCleanups(fateLate, 1, 0)
		defer disarmAll(arms)
		a := o.f.lose("rw_downgrade", -1)
		r, err := rw.Downgrade(o.e.ctx, w)
		o.h.closeAt(g, time.Now())
		a.disarm()
		require.Error(t, err, "%s: call: Downgrade: got a read lease, want the connection error", what)
		assert.Nil(t, r)
		require.Eventually(t, func() bool { return sumApplied(arms) >= 1 }, 10*time.Second, time.Millisecond,
			"%s: no clean-up call (%v) was made for the Downgrade", what, cleanupScripts)
		w2, g2 := o.awaitGrant(o.other, mWrite, name, what)
		disarmAll(arms)
		for _, a := range arms {
			for _, hc := range a.heldCalls() {
				r := hc.deliver(t)
				require.NoError(t, r.err, "%s: the held clean-up %s, delivered late", what, hc.call)
				t.Logf("%s: late clean-up %s replied %v", what, hc.call.name, r.r)
			}
		}
		if !o.e.assertLive(t, w2, what+": the other writer") {
			return
		}
		o.assertHeld(mWrite, name, what+": the other writer")
		o.assertServerHeld(w2, outcomeTTL/2, what+": the other writer")
		o.mustUnlock(what+": the other writer", g2)
		o.awaitFree(mWrite, name, what)
	})
}

func checkOutcomeCleanupDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)
	modes := []lateMode{
		{m: mMutex.lock(), holder: "mutex"}, {m: mFIFO.lock(), holder: "mutex"},
		{m: mRead.lock(), holder: "write"}, {m: mWrite.lock(), holder: "read"},
	}
	for _, lm := range modes {
		m := lm.m
		what := lm.String() + ", its call outliving its context and its clean-up slow (" + slowCleanup.String() + ")"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "cleanup-slow")
			_, hg := o.mustAcquire(o.other, holderMode(lm.holder), name, outcomeTTL)
			arms := o.armCleanups(fateDelayed, -1, slowCleanup)
			defer disarmAll(arms)
			since := o.f.answeredOn(m.hashKey(o.c, name), cleanupScripts...)
			sinceAcq, ok := e.cutShort(t, o.f, m.script("acquire"), m.hashKey(o.c, name), what+": call: "+m.op(), func(ctx context.Context) error {
				l, err := o.acquire(ctx, m, name)
				if err != nil {
					assert.Nil(t, l)
					assert.ErrorIs(t, err, locker.ErrNotObtained, "%s: call: %s: got %v, want ErrNotObtained joined with the context's error", what, m.op(), err)
				}
				return err
			})
			if !ok { // finding 15
				return
			}
			o.f.awaitCleanup(t, m.hashKey(o.c, name), since, what)
			o.f.awaitAnswered(t, sinceAcq, what+": the delayed acquire call", m.script("acquire"))
			disarmAll(arms)
			assert.GreaterOrEqual(t, sumApplied(arms), 1, "%s: delayed clean-up calls: got 0, want at least 1", what)
			if m.kind == "write" {
				o.awaitReadable(name, what)
			}
			o.mustUnlock(what+": the holder", hg)
			o.awaitFree(m, name, what)
		})
	}
}

// slowCleanup is the delay of every clean-up call in Cleanup/Delayed: well
// beyond prompt, so a Lock that waited for it is caught.
const slowCleanup = 700 * time.Millisecond
