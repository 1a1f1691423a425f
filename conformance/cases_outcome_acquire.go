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

// tryModes are the non-blocking acquire modes; every acquire site is also
// run blocking (mode.lock) where the rule is about Lock.
var tryModes = []mode{mMutex, mOwner, mReentrant, mFIFO, mRead, mWrite, mReadOwner, mWriteOwner, mWriteReentrant}

func checkOutcomeAcquireLost(t *testing.T, e *env) {
	o := newOutcome(t, e)

	// TryLock: the error comes back, the hold the call made is dropped.
	for _, m := range tryModes {
		what := m.String() + ", its reply lost"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "lost")
			a := o.f.lose(m.script("acquire"), 1).onKey(m.hashKey(o.c, name))
			l, err := o.acquire(e.ctx, m, name)
			a.disarm()
			require.Error(t, err, "%s: call: %s: got a lease, want the connection error", what, m.op())
			assert.Nil(t, l, "%s: call: %s: lease", what, m.op())
			assertInjected(t, err, what+": call: "+m.op())
			a.requireOnce(t, "%s: the acquire call ran on Redis and its reply was lost", what)
			// Finding 3 (Owner, not reentrant) and finding 4 (RWMutex with
			// Owner): the lock is free soon, not held for its TTL.
			o.awaitFree(m, name, what)
		})
	}

	// Lock: retried with a new call and granted; the first call's hold is
	// dropped, so Unlock frees the lock.
	for _, m := range []mode{mMutex.lock(), mOwner.lock(), mReentrant.lock(), mFIFO.lock(), mRead.lock(), mWrite.lock(), mReadOwner.lock(), mWriteOwner.lock()} {
		what := m.String() + ", its first call's reply lost"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "lost")
			a := o.f.lose(m.script("acquire"), 1).onKey(m.hashKey(o.c, name))
			calls := o.f.count(m.script("acquire"))
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			l, err := o.acquire(ctx, m, name)
			cancel()
			a.disarm()
			require.NoError(t, err, "%s: call: %s: got %v, want a lease from a later attempt (connection errors are transient)", what, m.op(), err)
			g := o.add(l, m)
			assert.Equal(t, 1, a.applied(), "%s: the first acquire call ran on Redis and its reply was lost", what)
			assert.GreaterOrEqual(t, o.f.count(m.script("acquire"))-calls, 2, "%s: acquire calls made by %s: want the lost one and at least one more", what, m.op())
			if !e.assertLive(t, l, what) {
				return
			}
			o.assertHeld(m, name, what)
			o.mustUnlock(what, g)
			o.awaitFree(m, name, what+", after Unlock")
		})
	}

	// RWMutex.Lock with its intent: a reader holds, the writer's call
	// after its first refusal is lost (it set the intent, or was granted
	// once the reader left).
	m := mWrite.lock()
	what := m.String() + " with its intent, a later call's reply lost"
	o.mode(what, func(t *testing.T) {
		name := o.name(m, "lost-intent")
		_, rg := o.mustAcquire(o.other, mRead, name, outcomeTTL)
		a := o.f.lose("rw_lock", 1).onKey(m.hashKey(o.c, name)).after(1)
		since := o.f.answered("rw_lock")
		res := make(chan lockResult, 1)
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		go func() {
			l, err := o.acquire(ctx, m, name)
			res <- lockResult{l, err}
		}()
		o.f.awaitAnswered(t, since, what+": the first (refused) call", "rw_lock")
		o.mustUnlock(what+": the reader", rg)
		r := <-res
		a.disarm()
		require.NoError(t, r.err, "%s: call: %s: got %v, want a lease once the reader left", what, m.op(), r.err)
		g := o.add(r.l, m)
		if !e.assertLive(t, r.l, what) {
			return
		}
		o.assertHeld(m, name, what)
		o.mustUnlock(what, g)
		o.awaitFree(m, name, what+", after Unlock")
		o.awaitReadable(name, what+", after Unlock")
	})

	// The same Owner already holds L1; a later acquire by that Owner has an
	// unknown outcome: L1 stays fully valid and usable.
	for _, m := range []mode{mOwner, mReentrant, mReadOwner, mWriteOwner, mWriteReentrant} {
		what := m.String() + " while the same Owner holds L1, its reply lost"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "lost-held")
			l1, g1 := o.mustAcquire(o.c, m, name, outcomeTTL)
			since := o.f.answeredOn(m.hashKey(o.c, name), cleanupScripts...)
			a := o.f.lose(m.script("acquire"), 1).onKey(m.hashKey(o.c, name))
			l2, err := o.acquire(e.ctx, m, name)
			a.disarm()
			require.Error(t, err, "%s: call: second %s: got a lease, want the connection error", what, m.op())
			assert.Nil(t, l2, "%s: call: second %s: lease", what, m.op())
			o.f.awaitCleanup(t, m.hashKey(o.c, name), since, what)
			if !e.assertLive(t, l1, what+": L1") {
				return
			}
			o.assertHeld(m, name, what)
			o.assertServerHeld(l1, outcomeTTL/2, what+": L1")
			assert.NoError(t, l1.Extend(e.ctx, outcomeTTL), "%s: call: L1.Extend", what)
			o.mustUnlock(what+": L1", g1)
			o.awaitFree(m, name, what+", after L1's Unlock")
		})
	}
}

// lateMode is an acquire mode for the late fate, with the kind of lease
// another client holds first ("" for none) so that the call would wait or
// queue.
type lateMode struct {
	m      mode
	holder string // "", "mutex", "read" or "write"
}

func (lm lateMode) String() string {
	if lm.holder == "" {
		return lm.m.String()
	}
	return lm.m.String() + " while another client holds a " + lm.holder + " lease"
}

func holderMode(kind string) mode {
	switch kind {
	case "mutex":
		return mMutex
	case "read":
		return mRead
	}
	return mWrite
}

func checkOutcomeAcquireLate(t *testing.T, e *env) {
	o := newOutcome(t, e)
	modes := []lateMode{
		{m: mMutex}, {m: mOwner}, {m: mReentrant}, {m: mFIFO},
		{m: mMutex.lock(), holder: "mutex"}, {m: mFIFO.lock(), holder: "mutex"},
		{m: mRead}, {m: mWrite}, {m: mReadOwner}, {m: mWriteOwner}, // finding 4
		{m: mRead.lock(), holder: "write"}, {m: mWrite.lock(), holder: "read"}, {m: mWriteOwner.lock(), holder: "read"},
	}
	for _, lm := range modes {
		m := lm.m
		what := lm.String() + ", its call held back past its clean-up"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "late")
			var holder *grant
			if lm.holder != "" {
				_, holder = o.mustAcquire(o.other, holderMode(lm.holder), name, outcomeTTL)
			}
			ctx, cancel := context.WithCancel(e.ctx)
			a := o.f.holdBack(m.script("acquire"), 1, cancel).onKey(m.hashKey(o.c, name))
			since := o.f.answeredOn(m.hashKey(o.c, name), cleanupScripts...)
			l, err := o.acquire(ctx, m, name)
			cancel()
			a.disarm()
			require.Error(t, err, "%s: call: %s: got a lease, want the context's error", what, m.op())
			assert.Nil(t, l, "%s: call: %s: lease", what, m.op())
			assert.ErrorIs(t, err, context.Canceled, "%s: call: %s: got %v, want context.Canceled", what, m.op(), err)
			if m.block {
				assert.ErrorIs(t, err, locker.ErrNotObtained, "%s: call: %s: got %v, want ErrNotObtained joined with the context's error", what, m.op(), err)
			}
			hc := a.next(t, what)
			// args[1]: the call's id (acquire) or hold (rw_lock, rw_rlock),
			// which the clean-up that refuses it names.
			o.f.awaitCleanupNaming(t, m.hashKey(o.c, name), since, hc.call.args[1], what)
			r := hc.deliver(t)
			require.NoError(t, r.err, "%s: the held call %s, delivered late", what, hc.call)
			// Finding 4 (RWMutex with Owner): a late acquire is refused.
			assert.Equal(t, []any{int64(0), int64(0)}, r.r, "%s: reply of the late %s call: want {0, 0} (refused: it was abandoned)", what, hc.call.name)
			if m.fifo() {
				q := o.c.Key(name) + ":q"
				n, err := e.d.admin.Do(e.ctx, q, "ZCARD", q)
				require.NoError(t, err, "call: admin ZCARD %s", q)
				assert.Equal(t, int64(0), n, "%s: FIFO waiters queued after the late call (ZCARD %s)", what, q)
			}
			if m.kind != "mutex" {
				for _, f := range e.rwHashFields(o.c, name) {
					if strings.HasPrefix(f, "i:") || strings.HasPrefix(f, m.kind[:1]+":") {
						t.Errorf("%s: field %q in the lock's hash after the late call: want no intent and no hold of the late call", what, f)
					}
				}
			}
			if holder != nil {
				if m.kind == "write" {
					// The held call set no intent: readers are still admitted.
					o.awaitReadable(name, what)
				}
				o.mustUnlock(what+": the holder", holder)
			}
			o.awaitFree(m, name, what)
		})
	}
}

func checkOutcomeAcquireDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, m := range []mode{mMutex, mOwner, mFIFO.lock(), mRead, mWrite, mWriteOwner, mWrite.lock()} {
		// Answered within the context.
		what := m.String() + ", its call delayed " + slowButAnswered.String()
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "slow")
			a := o.f.delayBy(m.script("acquire"), 1, slowButAnswered).onKey(m.hashKey(o.c, name))
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			start := time.Now()
			l, err := o.acquire(ctx, m, name)
			cancel()
			a.disarm()
			require.NoError(t, err, "%s: call: %s: got %v, want a lease", what, m.op(), err)
			g := o.add(l, m)
			a.requireOnce(t, "%s: the call was delayed", what)
			assert.GreaterOrEqual(t, time.Since(start), slowButAnswered, "%s: %s returned before the delayed call ran", what, m.op())
			notAfter(t, l.ValidUntil(), start.Add(outcomeTTL), what+": call: ValidUntil() (counted from the call's start)")
			if !e.assertLive(t, l, what) {
				return
			}
			o.mustUnlock(what, g)
			o.awaitFree(m, name, what)
		})

		// Still running when the context ends.
		what = m.String() + ", its call delayed " + slowCall.String() + " past its " + shortCtx.String() + " context"
		o.mode(what, func(t *testing.T) {
			name := o.name(m, "slow-ctx")
			if e.pastContext(t, o.f, m.script("acquire"), m.hashKey(o.c, name), what+": call: "+m.op(), func(ctx context.Context) error {
				l, err := o.acquire(ctx, m, name)
				assert.Nil(t, l, "%s: call: %s: lease", what, m.op())
				return err
			}) {
				o.awaitFree(m, name, what)
			}
		})
	}
}
