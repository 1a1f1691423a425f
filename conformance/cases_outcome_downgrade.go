package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func downgradeWhat(m mode, how string) string {
	return "Downgrade of a write lease [" + m.label + "], " + how
}

func checkOutcomeDowngradeLost(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mWrite, mWriteOwner, mWriteReentrant, mWriteAuto} {
		what := downgradeWhat(m, "its reply lost")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "downgrade-lost")
			rw := e.rw(o.c, name, outcomeTTL, m.ro)
			w, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			a := o.f.lose("rw_downgrade", -1).onKey(m.hashKey(o.c, name))
			r, err := rw.Downgrade(e.ctx, w)
			o.h.closeAt(g, time.Now())
			a.disarm()
			require.Error(t, err, "%s: call: Downgrade: got a read lease, want the connection error", what)
			assert.Nil(t, r, "%s: call: Downgrade: read lease", what)
			assertInjected(t, err, what+": call: Downgrade")
			a.requireOnce(t, "%s: the downgrade call ran on Redis and its reply was lost", what)
			assertEnded(t, w, what+": the write lease") // finding 2: the old write lease must not stay Valid
			_, g2 := o.awaitGrant(o.prober, mWrite, name, what)
			// Finding 2: no other writer while a lease of the downgrading owner
			// reports Valid (the history checker sees every grant, too).
			assert.False(t, w.Valid(), "%s: call: Valid() of the write lease when another writer was granted: got true, want false", what)
			o.mustUnlock(what+": the other writer", g2)
		})
	}
}

func checkOutcomeDowngradeLate(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mWrite, mWriteOwner} {
		what := downgradeWhat(m, "its call held back past its clean-up")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "downgrade-late")
			rw := e.rw(o.c, name, outcomeTTL, m.ro)
			w, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			ctx, cancel := context.WithCancel(e.ctx)
			a := o.f.holdBack("rw_downgrade", 1, cancel).onKey(m.hashKey(o.c, name))
			since := o.f.answeredOn(m.hashKey(o.c, name), cleanupScripts...)
			r, err := rw.Downgrade(ctx, w)
			o.h.closeAt(g, time.Now())
			cancel()
			a.disarm()
			require.Error(t, err, "%s: call: Downgrade: got a read lease, want the context's error", what)
			assert.Nil(t, r, "%s: call: Downgrade: read lease", what)
			assert.ErrorIs(t, err, context.Canceled, "%s: call: Downgrade: got %v, want context.Canceled", what, err)
			assertEnded(t, w, what+": the write lease")
			hc := a.next(t, what)
			o.f.awaitCleanup(t, m.hashKey(o.c, name), since, what)
			w2, g2 := o.awaitGrant(o.other, mWrite, name, what)
			rep := hc.deliver(t)
			require.NoError(t, rep.err, "%s: the held call %s, delivered late", what, hc.call)
			t.Logf("%s: the late downgrade replied %v", what, rep.r)
			for _, f := range e.rwHashFields(o.c, name) {
				if strings.HasPrefix(f, "r:") {
					t.Errorf("%s: field %q in the lock's hash after the late downgrade: want no read hold", what, f)
				}
			}
			if !e.assertLive(t, w2, what+": the writer granted meanwhile") {
				return
			}
			o.assertServerHeld(w2, outcomeTTL/2, what+": the writer granted meanwhile")
			_, err = acquireOn(e.ctx, o.prober, mRead, name, outcomeTTL)
			assert.ErrorIs(t, err, locker.ErrNotObtained, "%s: call: TryRLock by a third client while the other writer holds: got %v, want ErrNotObtained", what, err)
			o.mustUnlock(what+": the other writer", g2)
			o.awaitFree(m, name, what)
		})
	}
}

func checkOutcomeDowngradeDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mWrite, mWriteOwner} {
		what := downgradeWhat(m, "its call delayed "+slowButAnswered.String())
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "downgrade-slow")
			rw := e.rw(o.c, name, outcomeTTL, m.ro)
			w, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			a := o.f.delayBy("rw_downgrade", 1, slowButAnswered).onKey(m.hashKey(o.c, name))
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			r, err := rw.Downgrade(ctx, w)
			cancel()
			a.disarm()
			require.NoError(t, err, "%s: call: Downgrade: got %v, want a read lease", what, err)
			o.h.closeAt(g, time.Now())
			gr := o.add(r, mRead)
			a.requireOnce(t, "%s: the downgrade call was delayed", what)
			if !e.assertLive(t, r, what+": the read lease") {
				return
			}
			assert.False(t, w.Valid(), "%s: call: Valid() of the write lease after Downgrade: got true, want false", what)
			assert.NoError(t, w.Unlock(e.ctx), "%s: call: Unlock of the write lease after Downgrade: want nil (it counts as released)", what)
			o.assertHeld(mRead, name, what+": the read lease")
			o.mustUnlock(what+": the read lease", gr)
			o.awaitFree(m, name, what)
		})

		what = downgradeWhat(m, "its call delayed "+slowCall.String()+" past its "+shortCtx.String()+" context")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "downgrade-slow-ctx")
			rw := e.rw(o.c, name, outcomeTTL, m.ro)
			// Setup: a Downgrade without fault on the same key, so that
			// rw_downgrade is cached on the node that serves it. Were it
			// not (the node restarted, as Outcome/Fence/ReadAfterRestart
			// does, since the script was last loaded), the fault wrapper
			// would answer NOSCRIPT instead of delaying the call, and the
			// core's reload and retry would have to fit in shortCtx: cut
			// short, the call is never sent, and there is no delayed call
			// to await.
			w0, g0 := o.mustAcquire(o.c, m, name, outcomeTTL)
			r0, err := rw.Downgrade(e.ctx, w0)
			o.h.closeAt(g0, time.Now())
			require.NoError(t, err, "%s: call: Downgrade (setup, no fault): got %v, want a read lease", what, err)
			o.mustUnlock(what+": the setup's read lease", o.add(r0, mRead))
			w, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			since, ok := e.cutShort(t, o.f, "rw_downgrade", m.hashKey(o.c, name), what+": call: Downgrade", func(ctx context.Context) error {
				r, err := rw.Downgrade(ctx, w)
				o.h.closeAt(g, time.Now())
				if err == nil {
					o.add(r, mRead)
				}
				return err
			})
			if !ok {
				return
			}
			assertEnded(t, w, what+": the write lease")
			o.f.awaitAnswered(t, since, what+": the delayed call", "rw_downgrade")
			o.awaitFree(m, name, what)
		})
	}
}
