package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// autoTTL is the TTL of auto-refreshed leases in the Refresh rules: a
// refresh every 300 ms, a retry 90 ms after a failed one.
const autoTTL = 900 * time.Millisecond

var autoModes = []mode{mAuto, mReadAuto, mWriteAuto}

func autoWhat(m mode, how string) string {
	return "auto-refreshed " + m.kind + " lease [" + m.label + "], " + how
}

func checkOutcomeRefreshLost(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range autoModes {
		what := autoWhat(m, "two refreshes in a row whose replies are lost")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "refresh-lost")
			l, g := o.mustAcquire(o.c, m, name, autoTTL)
			a := o.f.lose(m.script("extend"), 2).onKey(m.hashKey(o.c, name))
			if !a.appliedTimely(t, e, 2, what) {
				return
			}
			// Watch past the deadline that the lost refreshes would have kept.
			for end := time.Now().Add(autoTTL); time.Now().Before(end); time.Sleep(autoTTL / 6) {
				if !e.assertLive(t, l, what) {
					return
				}
				o.assertHeld(m, name, what)
				if t.Failed() {
					break
				}
			}
			err := o.unlock(e.ctx, g)
			if errors.Is(err, locker.ErrExpired) || errors.Is(l.Err(), locker.ErrExpired) {
				// The lease lapsed between the last check and Unlock: a
				// refresh after the lost ones did not land in time.
				e.timely(t, false, fmt.Sprintf("%s: call: Unlock: %v; Err() after it: %v", what, err, l.Err()))
				return
			}
			require.NoError(t, err, "%s: call: Unlock", what)
			assertEnded(t, l, what)
			o.awaitFree(m, name, what)
		})
	}
}

func checkOutcomeRefreshLate(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range autoModes {
		what := autoWhat(m, "a refresh held back until after Unlock")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "refresh-late")
			l, g := o.mustAcquire(o.c, m, name, autoTTL)
			a := o.f.holdBack(m.script("extend"), 1, nil).onKey(m.hashKey(o.c, name))
			hc, ok := a.nextTimely(t, e, what)
			a.disarm()
			if !ok {
				return
			}
			time.Sleep(autoTTL / 2) // the refresher retries and goes on
			if !e.assertLive(t, l, what) {
				return
			}
			err := o.unlock(e.ctx, g)
			if errors.Is(err, locker.ErrExpired) {
				// The lease lapsed between the check and Unlock.
				e.timely(t, false, fmt.Sprintf("%s: call: Unlock: %v", what, err))
				return
			}
			require.NoError(t, err, "%s: call: Unlock", what)
			r := hc.deliver(t)
			require.NoError(t, r.err, "%s: the held call %s, delivered late", what, hc.call)
			t.Logf("%s: the late refresh replied %v", what, r.r)
			// The late refresh must not bring the released lock back.
			o.awaitFree(m, name, what)
			assertEnded(t, l, what)
		})
	}
}

func checkOutcomeRefreshDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range autoModes {
		for _, slowRelease := range []bool{false, true} {
			how := "Unlock while a refresh is in flight (delayed " + slowButAnswered.String() + ")"
			if slowRelease {
				how = "Unlock whose release ran at once but whose reply took " + slowCall.String() + ", while a refresh delayed " + slowButAnswered.String() + " ran after the release"
			}
			what := autoWhat(m, how)
			o.mode(what, func(t *testing.T) {
				name := o.name(m, "refresh-slow")
				if slowRelease {
					name += "-release"
				}
				l, g := o.mustAcquire(o.c, m, name, autoTTL)
				a := o.f.delayBy(m.script("extend"), 1, slowButAnswered).onKey(m.hashKey(o.c, name))
				since := o.f.answered(m.script("extend"))
				if slowRelease {
					// The refresh finds the lock released, and its
					// reply arrives while Unlock still waits for its own.
					r := o.f.delayReply(m.script("release"), 1, slowCall).onKey(m.hashKey(o.c, name))
					defer r.disarm()
				}
				if !a.appliedTimely(t, e, 1, what) {
					a.disarm()
					_ = o.unlock(e.ctx, g) // the lease may have expired meanwhile
					return
				}
				if !e.assertLive(t, l, what+": before Unlock") {
					a.disarm()
					return
				}
				err := o.unlock(e.ctx, g)
				a.disarm()
				if errors.Is(err, locker.ErrExpired) {
					// The lease lapsed while its release's reply was on
					// its way: refreshes came late (timing).
					e.timely(t, false, fmt.Sprintf("%s: call: Unlock: %v", what, err))
					return
				}
				assert.NoError(t, err, "%s: call: Unlock: got %v, want nil (finding 7)", what, err) // finding 7
				assertEnded(t, l, what)                                                             // finding 7: Err nil, Lost open
				o.f.awaitAnswered(t, since, what+": the delayed refresh", m.script("extend"))
				time.Sleep(50 * time.Millisecond)                     // the refresher has its reply
				assertEnded(t, l, what+", after the refresh's reply") // finding 7
				o.awaitFree(m, name, what)
			})
		}
	}
}
