package conformance

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releaseModes are the leases whose release every Release rule tries.
var releaseModes = []mode{mMutex, mOwner, mReentrant, mFIFO, mAuto, mRead, mWrite, mReadOwner, mWriteOwner, mReadAuto, mWriteAuto}

func releaseWhat(m mode, how string) string {
	return "Unlock of a " + m.kind + " lease [" + m.label + "], " + how
}

func checkOutcomeReleaseLost(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range releaseModes {
		for _, n := range []int{3, -1} {
			how := "its release's reply lost three times in a row"
			if n < 0 {
				how = "the reply of every try of its release lost"
			}
			what := releaseWhat(m, how)
			o.mode(what, func(t *testing.T) {
				name := o.name(m, "release-lost"+strconv.Itoa(n))
				l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
				a := o.f.lose(m.script("release"), n).onKey(m.hashKey(o.c, name))
				err := o.unlock(e.ctx, g)
				if n < 0 {
					a.disarm() // the background retries get through
					assertInjected(t, err, what+": call: Unlock")
				}
				// Finding 15: a retried release whose first try ran reports
				// nil, not ErrExpired or ErrHeldByOther, while the deadline
				// holds.
				assert.NotErrorIs(t, err, locker.ErrExpired, "%s: call: Unlock: got %v, want nil or the connection error (finding 15)", what, err)
				assert.NotErrorIs(t, err, locker.ErrHeldByOther, "%s: call: Unlock: got %v, want nil or the connection error (finding 15)", what, err)
				if err != nil {
					assertInjected(t, err, what+": call: Unlock")
				}
				require.GreaterOrEqual(t, a.applied(), 1, "%s: the release call ran on Redis and its reply was lost", what)
				assertEnded(t, l, what)
				assert.NoError(t, l.Unlock(e.ctx), "%s: call: second Unlock: want nil (finding 15)", what) // finding 15
				o.awaitFree(m, name, what)
				a.disarm()
			})
		}
	}
}

func checkOutcomeReleaseLate(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mMutex, mOwner, mReentrant, mRead, mWrite, mReadOwner, mWriteOwner} {
		again := "another client"
		if m.owner() != "" {
			again = "the same Owner"
		}
		what := releaseWhat(m, "its release held back until "+again+" was granted the lock again")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "release-late")
			l1, g1 := o.mustAcquire(o.c, m, name, outcomeTTL)
			ctx, cancel := context.WithCancel(e.ctx)
			a := o.f.holdBack(m.script("release"), 1, cancel).onKey(m.hashKey(o.c, name))
			err := o.unlock(ctx, g1)
			cancel()
			a.disarm()
			require.Error(t, err, "%s: call: Unlock: got nil, want the context's error", what)
			assert.ErrorIs(t, err, context.Canceled, "%s: call: Unlock: got %v, want context.Canceled", what, err)
			assertEnded(t, l1, what+": L1")
			hc := a.next(t, what)

			var l2 *locker.Lease
			var g2 *grant
			if m.owner() != "" {
				// The owner locks again at once.
				lctx, lcancel := context.WithTimeout(e.ctx, 10*time.Second)
				l2, err = o.acquire(lctx, m.lock(), name)
				lcancel()
				require.NoError(t, err, "%s: call: %s by the same Owner right after: got %v, want a lease", what, m.lock().op(), err)
				g2 = o.add(l2, m)
			} else {
				l2, g2 = o.awaitGrant(o.other, m.probe(), name, what)
			}
			r := hc.deliver(t)
			require.NoError(t, r.err, "%s: the held call %s, delivered late", what, hc.call)
			t.Logf("%s: the late release replied %v", what, r.r)
			// Finding 12: the late release must not drop the new hold.
			if !e.assertLive(t, l2, what+": L2") {
				return
			}
			o.assertHeld(m, name, what+": L2 after the late release")
			o.assertServerHeld(l2, outcomeTTL/2, what+": L2 after the late release")
			o.mustUnlock(what+": L2", g2)
			o.awaitFree(m, name, what+", after L2's Unlock")
		})
	}
}

func checkOutcomeReleaseDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mMutex, mReentrant, mAuto, mRead, mWrite, mWriteAuto} {
		what := releaseWhat(m, "its release delayed "+slowButAnswered.String())
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "release-slow")
			l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			a := o.f.delayBy(m.script("release"), 1, slowButAnswered).onKey(m.hashKey(o.c, name))
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			err := o.unlock(ctx, g)
			cancel()
			a.disarm()
			require.NoError(t, err, "%s: call: Unlock: got %v, want nil", what, err)
			a.requireOnce(t, "%s: the release call was delayed", what)
			assertEnded(t, l, what)
			o.awaitFree(m, name, what)
		})

		what = releaseWhat(m, "its release delayed "+slowCall.String()+" past its "+shortCtx.String()+" context")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "release-slow-ctx")
			l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			since, ok := e.cutShort(t, o.f, m.script("release"), m.hashKey(o.c, name), what+": call: Unlock", func(ctx context.Context) error {
				return o.unlock(ctx, g)
			})
			if !ok { // finding 15
				return
			}
			assertEnded(t, l, what)
			assert.NoError(t, l.Unlock(e.ctx), "%s: call: second Unlock: want nil", what)
			o.f.awaitAnswered(t, since, what+": the delayed call", m.script("release"))
			o.awaitFree(m, name, what)
		})
	}
}

func checkOutcomeReleaseCancelled(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mAuto, mReadAuto, mWriteAuto, mMutex, mWrite} {
		what := releaseWhat(m, "with a context already cancelled")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "release-cancelled")
			l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			err := o.unlock(ctx, g)
			require.Error(t, err, "%s: call: Unlock: got nil, want the context's error", what)
			assert.ErrorIs(t, err, context.Canceled, "%s: call: Unlock: got %v, want context.Canceled", what, err)
			assertEnded(t, l, what)
			// Finding 13: free soon after, not kept alive by auto-refresh (nor
			// held until its TTL).
			o.awaitFree(m, name, what)
			assert.NoError(t, l.Unlock(e.ctx), "%s: call: second Unlock: want nil", what)
		})
	}
}
