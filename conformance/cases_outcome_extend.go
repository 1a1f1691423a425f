package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extendModes are the leases every Extend rule extends.
var extendModes = []mode{mMutex, mReentrant, mWrite, mWriteOwner, mRead}

// shortExtend is the shorter TTL an Extend asks for.
const shortExtend = 2 * time.Second

func extendWhat(m mode, how string) string {
	return "Extend of a " + m.kind + " lease [" + m.label + "], " + how
}

// assertExtendedFrom asserts that l's deadline was set by an Extend(ttl)
// that started at start: no later than start+ttl, and not more than the
// drift margin (1% + 2 ms, with slack) before it.
func assertExtendedFrom(t *testing.T, got, start time.Time, ttl time.Duration, what string) {
	t.Helper()
	notAfter(t, got, start.Add(ttl), what+": call: ValidUntil() after Extend (counted from the call's start)")
	assert.True(t, got.After(start.Add(ttl-ttl/20-50*time.Millisecond)), "%s: call: ValidUntil() after Extend(%v): got %v after the call's start, want about %v",
		what, ttl, got.Sub(start), ttl)
}

func checkOutcomeExtendLost(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range extendModes {
		what := extendWhat(m, "to a shorter TTL ("+shortExtend.String()+"), its reply lost")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "extend-lost")
			l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			key := m.hashKey(o.c, name)

			a := o.f.lose(m.script("extend"), -1).onKey(key) // every try of the call
			start := time.Now()
			err := l.Extend(e.ctx, shortExtend)
			a.disarm()
			require.Error(t, err, "%s: call: Extend: got nil, want the connection error", what)
			assertInjected(t, err, what+": call: Extend")
			require.GreaterOrEqual(t, a.applied(), 1, "%s: the extend call ran on Redis and its reply was lost", what)
			// Finding 6: the deadline is no later than the short TTL
			// counted from the earliest the call can have run on Redis.
			notAfter(t, l.ValidUntil(), o.f.firstEntered(m.script("extend"), key, start).Add(shortExtend), what+": call: ValidUntil() (finding 6)")
			if !e.assertLive(t, l, what) {
				return
			}
			ttl, err := l.TTL(e.ctx)
			if assert.NoError(t, err, "%s: call: TTL", what) {
				assert.LessOrEqual(t, ttl, shortExtend, "%s: call: TTL: got %v, want at most %v (the lost Extend ran)", what, ttl, shortExtend)
			}

			what = extendWhat(m, "to the long TTL after the lost one")
			start = time.Now()
			require.NoError(t, l.Extend(e.ctx, outcomeTTL), "%s: call: Extend", what)
			assertExtendedFrom(t, l.ValidUntil(), start, outcomeTTL, what)
			o.assertServerHeld(l, outcomeTTL/2, what)

			what = extendWhat(m, "to a longer TTL (1m), its reply lost")
			before := l.ValidUntil()
			a = o.f.lose(m.script("extend"), -1).onKey(key)
			err = l.Extend(e.ctx, time.Minute)
			a.disarm()
			require.Error(t, err, "%s: call: Extend: got nil, want the connection error", what)
			notAfter(t, l.ValidUntil(), before, what+": call: ValidUntil() (never later than before the unknown Extend)")
			if !e.assertLive(t, l, what) {
				return
			}

			o.mustUnlock(what, g)
			o.awaitFree(m, name, what)
		})
	}
}

func checkOutcomeExtendLate(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range extendModes {
		what := extendWhat(m, "to a shorter TTL ("+shortExtend.String()+") held back past an Extend to "+outcomeTTL.String())
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "extend-late")
			l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			ctx, cancel := context.WithCancel(e.ctx)
			a := o.f.holdBack(m.script("extend"), 1, cancel).onKey(m.hashKey(o.c, name))
			start := time.Now()
			err := l.Extend(ctx, shortExtend)
			cancel()
			a.disarm()
			require.Error(t, err, "%s: call: Extend(short): got nil, want the context's error", what)
			assert.ErrorIs(t, err, context.Canceled, "%s: call: Extend(short): got %v, want context.Canceled", what, err)
			sent := o.f.firstEntered(m.script("extend"), m.hashKey(o.c, name), start) // the earliest it can run on Redis
			notAfter(t, l.ValidUntil(), sent.Add(shortExtend), what+": call: ValidUntil() after the timed-out Extend(short) (finding 6)")
			hc := a.next(t, what)

			start = time.Now()
			require.NoError(t, l.Extend(e.ctx, outcomeTTL), "%s: call: Extend(long)", what)
			assertExtendedFrom(t, l.ValidUntil(), start, outcomeTTL, what)
			r := hc.deliver(t)
			require.NoError(t, r.err, "%s: the held call %s, delivered late", what, hc.call)
			t.Logf("%s: the late extend replied %v", what, r.r)
			// Finding 6: the late Extend(short) changes nothing.
			o.assertServerHeld(l, outcomeTTL-5*time.Second, what+": after the late Extend(short) (finding 6)")
			if !e.assertLive(t, l, what) {
				return
			}
			o.assertHeld(m, name, what)
			o.mustUnlock(what, g)
			o.awaitFree(m, name, what)
		})
	}
}

func checkOutcomeExtendDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mMutex, mWrite, mRead} {
		const ttl = 20 * time.Second
		what := extendWhat(m, "its call delayed "+slowButAnswered.String()+", then one delayed "+slowCall.String()+" past its "+shortCtx.String()+" context")
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "extend-slow")
			l, g := o.mustAcquire(o.c, m, name, outcomeTTL)
			a := o.f.delayBy(m.script("extend"), 1, slowButAnswered).onKey(m.hashKey(o.c, name))
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			start := time.Now()
			err := l.Extend(ctx, ttl)
			cancel()
			a.disarm()
			require.NoError(t, err, "%s: call: Extend(%v)", what, ttl)
			a.requireOnce(t, "%s: the extend call was delayed", what)
			assertExtendedFrom(t, l.ValidUntil(), start, ttl, what)

			before := l.ValidUntil()
			since, ok := e.cutShort(t, o.f, m.script("extend"), m.hashKey(o.c, name), fmt.Sprintf("%s: call: Extend(%v)", what, shortExtend), func(ctx context.Context) error {
				start = time.Now()
				return l.Extend(ctx, shortExtend)
			})
			if !ok {
				return
			}
			notAfter(t, l.ValidUntil(), before, what+": call: ValidUntil() (never later than before)")
			sent := o.f.firstEntered(m.script("extend"), m.hashKey(o.c, name), start) // the earliest it can run on Redis
			notAfter(t, l.ValidUntil(), sent.Add(shortExtend), what+": call: ValidUntil() (no later than the TTL counted from when the call was sent)")
			o.f.awaitAnswered(t, since, what+": the delayed call", m.script("extend"))
			o.mustUnlockShort(what, g)
			o.awaitFree(m, name, what)
		})
	}
}
