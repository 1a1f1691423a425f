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

// closePrompt loosely bounds how soon a blocked Lock returns after Close
// started: Close itself may wait up to about a second for clean-ups.
const closePrompt = time.Second

func checkOutcomeCloseBlocked(t *testing.T, e *env) {
	o := newOutcome(t, e)
	type closeMode struct {
		lateMode
		inFlight bool // a grant is on its way as Close starts
	}
	modes := []closeMode{
		{lateMode{m: mMutex.lock(), holder: "mutex"}, false},
		{lateMode{m: mFIFO.lock(), holder: "mutex"}, false},
		{lateMode{m: mRead.lock(), holder: "write"}, false},
		{lateMode{m: mWrite.lock(), holder: "read"}, false},
		{lateMode{m: mMutex.lock(), holder: "mutex"}, true},
		{lateMode{m: mWrite.lock(), holder: "read"}, true},
	}
	for _, cm := range modes {
		m := cm.m
		what := cm.String() + ", Client.Close while it waits"
		tag := "close"
		if cm.inFlight {
			what = cm.String() + ", Client.Close while a granting call is in flight"
			tag = "close-inflight"
		}
		o.mode(what, func(t *testing.T) {
			name := o.name(m, tag)
			// A client of its own: Close ends it.
			f := e.faults()
			if cm.inFlight {
				f.withoutGrants() // a hand-over is learned by the granting call
			}
			c := e.clientOn(f, nil)
			_, hg := o.mustAcquire(o.other, holderMode(cm.holder), name, outcomeTTL)
			since := f.answered(m.script("acquire"))
			ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
			res := make(chan lockResult, 1)
			go func() {
				l, err := acquireOn(ctx, c, m, name, outcomeTTL)
				res <- lockResult{l, err}
			}()
			f.awaitAnswered(t, since, what+": the first (refused) call", m.script("acquire"))
			if cm.inFlight {
				// Once the waiter has settled (refused, subscribed, refused
				// again), its next call, woken by the release, grants.
				time.Sleep(100 * time.Millisecond)
				a := f.delayBy(m.script("acquire"), 1, slowCall).onKey(m.hashKey(c, name))
				o.mustUnlock(what+": the holder", hg)
				a.awaitApplied(t, 1, what)
				time.Sleep(100 * time.Millisecond) // the granting call is half-way
			}
			closing := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			var r lockResult
			select {
			case r = <-res:
			case <-time.After(10 * time.Second):
				cancel()
				r = <-res
				t.Errorf("%s: call: %s still blocked 10s after Close started; want ErrClosed promptly", what, m.op())
			}
			returned := time.Now()
			cancel()
			if r.l != nil {
				g := o.add(r.l, m)
				t.Errorf("%s: call: %s: got a lease (fence %d) after Close started; want ErrClosed, and a grant that arrives after Close started released", what, m.op(), r.l.Fence())
				_ = o.unlock(e.ctx, g)
			}
			assert.ErrorIs(t, r.err, locker.ErrClosed, "%s: call: %s: got %v, want ErrClosed", what, m.op(), r.err) // finding 8
			if !e.within(t, fmt.Sprintf("%s: call: %s returned after Close started", what, m.op()), returned.Sub(closing), closePrompt) {
				return
			}
			require.NoError(t, <-closed, "%s: call: Close", what)
			if !cm.inFlight {
				o.mustUnlock(what+": the holder", hg)
			}
			if m.kind == "write" {
				o.awaitReadable(name, what) // its intent is gone
			}
			o.awaitFree(m, name, what) // finding 8: not held afterwards
		})
	}
}
