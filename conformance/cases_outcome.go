package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Outcome group: every script call site of the core (acquire in each
// mode, release, extend, downgrade, claim, every clean-up, auto-refresh
// refreshes) under each fate of a call whose outcome its caller cannot know
// (see faults.go): its reply lost after it ran, run late after its caller
// gave up, or delayed. One rule per site and fate, table-driven over the
// modes; each mode is named in every failure. Findings of the protocol
// review are cited as "finding N" next to the assertion that covers them.
func init() {
	outcomeCases = append(outcomeCases,
		// First: the restart empties the node, and must not hide keys
		// left by earlier rules from the leak check at the end.
		testCase{
			name:      "Outcome/Fence/ReadAfterRestart",
			needs:     "restarts the node without persistence",
			rule:      "After the lock's node restarts without persistence, a read lease's Fence is above 0 and at least the last write (and mutex) fence granted before the restart, and the next write grant's fence is larger than both.",
			check:     checkOutcomeFenceRestart,
			exclusive: "restarts the node without persistence: every key and script is lost",
		},
		testCase{
			name:  "Outcome/Acquire/Lost",
			rule:  "An acquire call that runs on Redis but whose reply is lost makes TryLock return that error while Lock retries and is granted, and the hold the call made is cleaned up so that another client gets the lock soon after (well before its 30 s TTL), in every mode; a lease the same Owner already held stays valid.",
			check: checkOutcomeAcquireLost,
		},
		testCase{
			name:  "Outcome/Acquire/Late",
			rule:  "An acquire call held back until its caller gave up (context cancelled) and its clean-up ran is refused when it reaches Redis: reply {0, 0}, no hold, no queue entry, no writer intent, and another client gets the lock, in every mode.",
			check: checkOutcomeAcquireLate,
		},
		testCase{
			name:      "Outcome/Acquire/Delayed",
			rule:      "A slow acquire call answered within the caller's context grants a lease whose validity counts from the call's start; one still running when the context ends makes the call return promptly with the context's error, and another client gets the lock soon after the slow call ran.",
			check:     checkOutcomeAcquireDelayed,
			exclusive: "bounds how soon a call returns after its context ended (300 ms)",
		},
		testCase{
			name:  "Outcome/Cleanup/Lost",
			rule:  "A clean-up call (abandon, dequeue, rw_cancel, unclaim) whose reply is lost twice in a row leaves the lock, the queue, the writer intent and the claim key free for another client soon after.",
			check: checkOutcomeCleanupLost,
		},
		testCase{
			name:  "Outcome/Cleanup/Late",
			rule:  "A clean-up call held back until a later attempt of the same Lock was granted drops only the hold of the call it cleans up when it reaches Redis: the later lease stays valid and another client's TryLock fails, for Mutex (default, Owner, Owner+Reentrant, FIFO) and RWMutex (RLock, Lock, with and without Owner); a late clean-up of a Downgrade or a Claim leaves the writer or claimant that came next in place.",
			check: checkOutcomeCleanupLate,
		},
		testCase{
			name:      "Outcome/Cleanup/Delayed",
			rule:      "Lock, RLock and RWMutex.Lock return promptly when their context ends during a call, without waiting for the slow clean-up of that call, and the lock, queue and intent are free once the holder releases.",
			check:     checkOutcomeCleanupDelayed,
			exclusive: "bounds how soon a call returns after its context ended (300 ms)",
		},
		testCase{
			name:  "Outcome/Claim/Lost",
			rule:  "A Claim whose call runs on Redis but whose reply is lost returns an error; a retried Claim of the same key by the same Client returns true, ClaimAs with the same token returns true again, another client's Claim returns false, and a lost Claim that is not retried leaves the key free to claim soon after.",
			check: checkOutcomeClaimLost,
		},
		testCase{
			name:  "Outcome/Claim/Late",
			rule:  "A Claim held back until after its clean-up is refused when it reaches Redis, so another client's Claim of the key returns true; a late ClaimAs changes nothing for the token that holds the claim.",
			check: checkOutcomeClaimLate,
		},
		testCase{
			name:      "Outcome/Claim/Delayed",
			rule:      "A slow Claim answered within its context returns true; one still running when its context ends returns promptly with the context's error, and a retried Claim of the same key by the same Client returns true while another client's returns false.",
			check:     checkOutcomeClaimDelayed,
			exclusive: "bounds how soon a call returns after its context ended (300 ms)",
		},
		testCase{
			name:  "Outcome/Downgrade/Lost",
			rule:  "A Downgrade whose call runs on Redis but whose reply is lost returns an error and ends the write lease at once (Valid false, ValidUntil zero, Context cancelled, Err nil, Lost open); its clean-up frees the lock for another writer soon after, and no writer is granted while a lease of the downgrading owner reports Valid.",
			check: checkOutcomeDowngradeLost,
		},
		testCase{
			name:  "Outcome/Downgrade/Late",
			rule:  "A Downgrade held back until after its clean-up changes nothing when it reaches Redis: no read hold appears and the writer granted meanwhile keeps the lock.",
			check: checkOutcomeDowngradeLate,
		},
		testCase{
			name:      "Outcome/Downgrade/Delayed",
			rule:      "A slow Downgrade answered within its context returns the read lease and the write lease counts as released; one still running when its context ends returns promptly, ends the write lease at once, and the lock is free for a writer soon after.",
			check:     checkOutcomeDowngradeDelayed,
			exclusive: "bounds how soon a call returns after its context ended (300 ms)",
		},
		testCase{
			name:      "Outcome/Close/BlockedLock",
			rule:      "Client.Close while Lock, FIFO Lock, RLock or RWMutex.Lock waits makes it return ErrClosed promptly, and the lock is not held afterwards, also when a grant was in flight as Close started: another client gets it soon after the holder releases.",
			check:     checkOutcomeCloseBlocked,
			exclusive: "bounds how soon a blocked Lock returns after Close (1 s)",
		},
		testCase{
			name:  "Outcome/Release/Lost",
			rule:  "An Unlock whose release runs on Redis but whose reply is lost (three times in a row) returns nil or that error, never ErrExpired or ErrHeldByOther, ends the lease at once (Valid false, ValidUntil zero, Context cancelled with context.Canceled, Err nil, Lost open), a second Unlock returns nil, and another client gets the lock soon after.",
			check: checkOutcomeReleaseLost,
		},
		testCase{
			name:  "Outcome/Release/Late",
			rule:  "A release held back until after the lock was granted again (to the same Owner, or to another client) drops only its own hold when it reaches Redis: the new lease stays valid and a third client's TryLock fails, for Mutex (default, Owner, Owner+Reentrant) and RWMutex read and write (default and Owner).",
			check: checkOutcomeReleaseLate,
		},
		testCase{
			name:      "Outcome/Release/Delayed",
			rule:      "A slow release answered within Unlock's context returns nil; one still running when the context ends makes Unlock return promptly, ends the lease at once, a second Unlock returns nil, and another client gets the lock soon after.",
			check:     checkOutcomeReleaseDelayed,
			exclusive: "bounds how soon a call returns after its context ended (300 ms)",
		},
		testCase{
			name:  "Outcome/Release/CancelledCtx",
			rule:  "Unlock with a context already cancelled returns the context's error, ends the lease at once and still releases the lock in the background: another client gets it soon after, also for auto-refreshed leases (auto-refresh does not keep it alive).",
			check: checkOutcomeReleaseCancelled,
		},
		testCase{
			name:  "Outcome/Extend/Lost",
			rule:  "An Extend whose call runs on Redis but whose reply is lost returns an error and leaves ValidUntil no later than the call's start plus the new TTL and never later than before; a following Extend that succeeds sets it from its own start.",
			check: checkOutcomeExtendLost,
		},
		testCase{
			name:  "Outcome/Extend/Late",
			rule:  "An Extend to a shorter TTL held back until after a later Extend to a long TTL succeeded changes nothing when it reaches Redis (the lock's remaining time stays long), and the timed-out Extend left ValidUntil no later than its start plus the short TTL.",
			check: checkOutcomeExtendLate,
		},
		testCase{
			name:      "Outcome/Extend/Delayed",
			rule:      "A slow Extend answered within its context sets ValidUntil from the call's start; one still running when its context ends returns promptly with the context's error and leaves ValidUntil no later than the earlier of the old deadline and its start plus the TTL.",
			check:     checkOutcomeExtendDelayed,
			exclusive: "bounds how soon a call returns after its context ended (300 ms)",
		},
		testCase{
			name:      "Outcome/Refresh/Lost",
			rule:      "Auto-refresh refreshes that run on Redis but whose replies are lost (twice in a row) do not lose the lease: it stays valid, Lost stays open and no other client gets the lock.",
			check:     checkOutcomeRefreshLost,
			exclusive: "an auto-refreshed 900 ms lease must outlive two lost refreshes: refreshes must not lag behind other cases' load",
		},
		testCase{
			name:      "Outcome/Refresh/Late",
			rule:      "An auto-refresh refresh held back until after the lease's Unlock changes nothing when it reaches Redis: the released lock stays free, and the lease reports neither Err nor Lost.",
			check:     checkOutcomeRefreshLate,
			exclusive: "an auto-refreshed 900 ms lease must stay live while a refresh is held back: refreshes must not lag behind other cases' load",
		},
		testCase{
			name:  "Outcome/Refresh/Delayed",
			rule:  "Unlock racing an auto-refresh refresh still in flight returns nil, leaves Err nil and Lost open, and the lock is free for another client soon after.",
			check: checkOutcomeRefreshDelayed,
		},
	)
}

const (
	// outcomeTTL is the TTL of the locks under test: long enough that a
	// lock found free within freeWithin was freed, not expired.
	outcomeTTL = 30 * time.Second
	// freeWithin bounds "soon after": how long another client polls.
	freeWithin = 3 * time.Second
	// prompt loosely bounds "promptly": a call whose context ended returns
	// within this of the end. An outcome (it does not wait for slow
	// calls), not a speed figure.
	prompt = 300 * time.Millisecond
	// shortCtx and slowCall make a call outlive its caller's context.
	shortCtx = 150 * time.Millisecond
	slowCall = 400 * time.Millisecond
	// slowButAnswered is a delay the caller waits out.
	slowButAnswered = 200 * time.Millisecond
	// testOwner is the Owner of the Owner modes.
	testOwner = "outcome-owner"
)

// mode is one way of acquiring a lock: the lock kind, its options, and
// whether the call blocks (Lock, RLock) or tries once (TryLock, TryRLock).
type mode struct {
	label string // options, printed
	kind  string // "mutex", "read" or "write"
	mo    *locker.MutexOptions
	ro    *locker.RWMutexOptions
	block bool
}

var (
	mMutex          = mode{label: "Mutex", kind: "mutex"}
	mOwner          = mode{label: "Mutex Owner", kind: "mutex", mo: &locker.MutexOptions{Owner: testOwner}}
	mReentrant      = mode{label: "Mutex Owner+Reentrant", kind: "mutex", mo: &locker.MutexOptions{Owner: testOwner, Reentrant: true}}
	mFIFO           = mode{label: "Mutex FIFO", kind: "mutex", mo: &locker.MutexOptions{FIFO: true}}
	mAuto           = mode{label: "Mutex AutoRefresh", kind: "mutex", mo: &locker.MutexOptions{AutoRefresh: true}}
	mRead           = mode{label: "RWMutex", kind: "read"}
	mWrite          = mode{label: "RWMutex", kind: "write"}
	mReadOwner      = mode{label: "RWMutex Owner", kind: "read", ro: &locker.RWMutexOptions{Owner: testOwner}}
	mWriteOwner     = mode{label: "RWMutex Owner", kind: "write", ro: &locker.RWMutexOptions{Owner: testOwner}}
	mWriteReentrant = mode{label: "RWMutex Owner+Reentrant", kind: "write", ro: &locker.RWMutexOptions{Owner: testOwner, Reentrant: true}}
	mReadAuto       = mode{label: "RWMutex AutoRefresh", kind: "read", ro: &locker.RWMutexOptions{AutoRefresh: true}}
	mWriteAuto      = mode{label: "RWMutex AutoRefresh", kind: "write", ro: &locker.RWMutexOptions{AutoRefresh: true}}
)

// lock returns m blocking (Lock, RLock) instead of trying once.
func (m mode) lock() mode { m.block = true; return m }

// owner is m's Owner option, or "".
func (m mode) owner() string {
	switch {
	case m.mo != nil:
		return m.mo.Owner
	case m.ro != nil:
		return m.ro.Owner
	}
	return ""
}

func (m mode) fifo() bool { return m.mo != nil && m.mo.FIFO }

func (m mode) op() string {
	switch {
	case m.kind == "mutex" && m.block:
		return "Lock"
	case m.kind == "mutex":
		return "TryLock"
	case m.kind == "read" && m.block:
		return "RLock"
	case m.kind == "read":
		return "TryRLock"
	case m.block:
		return "RWMutex.Lock"
	}
	return "RWMutex.TryLock"
}

func (m mode) String() string { return m.op() + " [" + m.label + "]" }

// script names m's script for op: "acquire", "release" or "extend".
func (m mode) script(op string) string {
	if m.kind == "mutex" {
		return op
	}
	switch op {
	case "acquire":
		if m.kind == "read" {
			return "rw_rlock"
		}
		return "rw_lock"
	case "release":
		return "rw_release"
	}
	return "rw_extend"
}

// hashKey is the key m's scripts pass first for the lock name.
func (m mode) hashKey(c *locker.Client, name string) string {
	if m.kind == "mutex" {
		return c.Key(name)
	}
	return c.Key(name) + ":rw"
}

// probe is the exclusive acquire another client tries to see whether m's
// lock is free: a Mutex TryLock for mutex modes (refused while FIFO
// waiters are queued), an RWMutex TryLock otherwise (refused while any
// read or write hold lives).
func (m mode) probe() mode {
	if m.kind == "mutex" {
		return mMutex
	}
	return mWrite
}

// outcome is one Outcome rule's world: a client whose calls go through a
// faultScripter, a client for holders and one that probes, and a history
// of every grant, checked when the rule ends.
type outcome struct {
	t      *testing.T
	e      *env
	f      *faultScripter
	c      *locker.Client // under test, through f
	other  *locker.Client // another holder
	prober *locker.Client // probes whether a lock is free
	h      history
}

func newOutcome(t *testing.T, e *env) *outcome {
	o := &outcome{t: t, e: e, f: e.faults()}
	o.c = e.clientOn(o.f, nil)
	o.other = e.client(nil)
	o.prober = e.client(nil)
	t.Cleanup(func() {
		if r := o.h.check(t); r.overlaps != 0 {
			t.Errorf("history: %d overlapping grants; want 0", r.overlaps)
		}
	})
	return o
}

// mode runs fn as a subtest named what (one mode of the rule), so that a
// failing mode does not hide the others; the helpers of o and e report to
// the subtest meanwhile.
func (o *outcome) mode(what string, fn func(t *testing.T)) {
	parent, eparent := o.t, o.e.t
	parent.Run(what, func(t *testing.T) {
		o.t, o.e.t = t, t
		defer func() { o.t, o.e.t = parent, eparent }()
		fn(t)
	})
}

// name returns a lock name for m, unique within the rule per tag.
func (o *outcome) name(m mode, tag string) string {
	return strings.NewReplacer(" ", "-", "[", "", "]", "").Replace(tag + "-" + m.String())
}

// acquireOn acquires name on c in mode m.
func acquireOn(ctx context.Context, c *locker.Client, m mode, name string, ttl time.Duration) (*locker.Lease, error) {
	if m.kind == "mutex" {
		mu, err := c.NewMutex(name, ttl, m.mo)
		if err != nil {
			return nil, err
		}
		if m.block {
			return mu.Lock(ctx)
		}
		return mu.TryLock(ctx)
	}
	rw, err := c.NewRWMutex(name, ttl, m.ro)
	if err != nil {
		return nil, err
	}
	switch {
	case m.kind == "read" && m.block:
		return rw.RLock(ctx)
	case m.kind == "read":
		return rw.TryRLock(ctx)
	case m.block:
		return rw.Lock(ctx)
	}
	return rw.TryLock(ctx)
}

// acquire acquires name in mode m on the client under test (TTL 30 s).
func (o *outcome) acquire(ctx context.Context, m mode, name string) (*locker.Lease, error) {
	return acquireOn(ctx, o.c, m, name, outcomeTTL)
}

// mustAcquire acquires name in mode m on c and records the grant.
func (o *outcome) mustAcquire(c *locker.Client, m mode, name string, ttl time.Duration) (*locker.Lease, *grant) {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(o.e.ctx, 10*time.Second)
	defer cancel()
	l, err := acquireOn(ctx, c, m, name, ttl)
	require.NoError(o.t, err, "%s: call: %s on %q (setup, no fault): got %v, want a lease", m, m.op(), name, err)
	return l, o.add(l, m)
}

func (o *outcome) add(l *locker.Lease, m mode) *grant { return o.h.add(l, m.kind, 0) }

// unlock unlocks g's lease with ctx, recording the end in the history.
func (o *outcome) unlock(ctx context.Context, g *grant) error { return o.h.unlock(ctx, g) }

// mustUnlock unlocks g's lease and requires nil.
func (o *outcome) mustUnlock(what string, g *grant) {
	o.t.Helper()
	err := o.unlock(o.e.ctx, g)
	require.NoError(o.t, err, "%s: call: Unlock of %s: got %v, want nil", what, g, err)
}

// mustUnlockShort is mustUnlock for a lease left with a short TTL: one
// found gone after its validity deadline is timing (see env.unlockShort).
func (o *outcome) mustUnlockShort(what string, g *grant) {
	o.t.Helper()
	o.e.unlockShort(o.t, recorded{o, g}, fmt.Sprintf("%s: call: Unlock of %s", what, g))
}

// recorded is g's lease, whose Unlock the history records.
type recorded struct {
	o *outcome
	g *grant
}

func (r recorded) ValidUntil() time.Time            { return r.g.l.ValidUntil() }
func (r recorded) Unlock(ctx context.Context) error { return r.o.unlock(ctx, r.g) }

// tryProbe makes one exclusive TryLock (see mode.probe) on name by the
// prober client, recording a grant.
func (o *outcome) tryProbe(m mode, name string) (*grant, error) {
	p := m.probe()
	l, err := acquireOn(o.e.ctx, o.prober, p, name, outcomeTTL)
	if err != nil {
		return nil, err
	}
	return o.add(l, p), nil
}

// awaitGrant polls c's TryLock in mode p (non-blocking) on name until it
// is granted, for up to freeWithin; the lock's TTL is 30 s, so a grant
// within that time means the lock was freed, not expired.
func (o *outcome) awaitGrant(c *locker.Client, p mode, name, what string) (*locker.Lease, *grant) {
	o.t.Helper()
	start := time.Now()
	for {
		l, err := acquireOn(o.e.ctx, c, p, name, outcomeTTL)
		if err == nil {
			return l, o.add(l, p)
		}
		if !errors.Is(err, locker.ErrNotObtained) {
			o.t.Fatalf("%s: call: another client's %s on %q: got %v, want a lease or ErrNotObtained", what, p.op(), name, err)
		}
		if time.Since(start) > freeWithin {
			o.e.tooLate(o.t, fmt.Sprintf("%s: call: another client's %s on %q: still refused %v later (last: %v); want the lock free soon after, well before its %v TTL",
				what, p.op(), name, freeWithin, err, outcomeTTL))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitFree requires that another client gets name's lock (exclusively)
// soon, and releases it.
func (o *outcome) awaitFree(m mode, name, what string) {
	o.t.Helper()
	_, g := o.awaitGrant(o.prober, m.probe(), name, what)
	o.mustUnlock(what+": the probe", g)
}

// awaitReadable requires that another client's TryRLock on name succeeds
// soon (no writer intent is left), and releases it.
func (o *outcome) awaitReadable(name, what string) {
	o.t.Helper()
	_, g := o.awaitGrant(o.prober, mRead, name, what+" (readers admitted: no writer intent left)")
	o.mustUnlock(what+": the probe", g)
}

// assertHeld asserts that another client's exclusive TryLock on name is
// refused now.
func (o *outcome) assertHeld(m mode, name, what string) {
	o.t.Helper()
	g, err := o.tryProbe(m, name)
	if g != nil {
		o.t.Errorf("%s: call: another client's %s on %q: got a lease, want ErrNotObtained (the lock must still be held)", what, m.probe().op(), name)
		_ = o.unlock(o.e.ctx, g)
		return
	}
	assert.ErrorIs(o.t, err, locker.ErrNotObtained, "%s: call: another client's %s on %q: got %v, want ErrNotObtained (the lock must still be held)", what, m.probe().op(), name, err)
}

// assertServerHeld asserts that the server still holds l's hold with more
// than minTTL left.
func (o *outcome) assertServerHeld(l *locker.Lease, minTTL time.Duration, what string) {
	o.t.Helper()
	ttl, err := l.TTL(o.e.ctx)
	if assert.NoError(o.t, err, "%s: call: TTL of the lease: got %v, want its hold's remaining time", what, err) {
		assert.Greater(o.t, ttl, minTTL, "%s: call: TTL of the lease: got %v, want more than %v", what, ttl, minTTL)
	}
}

// assertLive checks that l is held as far as its holder can tell: a
// liveness expectation (see within). It reports whether it held.
func (e *env) assertLive(t *testing.T, l *locker.Lease, what string) bool {
	t.Helper()
	lost := false
	select {
	case <-l.Lost():
		lost = true
	default:
	}
	return e.timely(t, l.Valid() && l.Err() == nil && !lost, fmt.Sprintf("%s: call: Valid() %v, Err() %v, Lost() closed %v; want true, nil, false (ValidUntil %v, now %v)",
		what, l.Valid(), l.Err(), lost, l.ValidUntil().Format("15:04:05.000"), time.Now().Format("15:04:05.000")))
}

// assertEnded asserts that l was ended by its holder: released, or ended
// at once by an Unlock (or Downgrade) whose outcome is unknown.
func assertEnded(t *testing.T, l *locker.Lease, what string) {
	t.Helper()
	assert.False(t, l.Valid(), "%s: call: Valid(): got true, want false: the lease must be ended at once", what)
	assert.True(t, l.ValidUntil().IsZero(), "%s: call: ValidUntil(): got %v, want the zero Time", what, l.ValidUntil())
	assert.Error(t, l.Context().Err(), "%s: call: Context().Err(): got nil, want the lease's Context cancelled", what)
	assert.ErrorIs(t, context.Cause(l.Context()), context.Canceled, "%s: call: context.Cause(Context()): got %v, want context.Canceled", what, context.Cause(l.Context()))
	assert.NoError(t, l.Err(), "%s: call: Err(): got %v, want nil: a lease its holder ended was not lost", what, l.Err())
	select {
	case <-l.Lost():
		t.Errorf("%s: call: Lost(): closed, want open: a lease its holder ended was not lost (Err %v)", what, l.Err())
	default:
	}
}

// assertInjected asserts that err is the faultScripter's error, passed on.
func assertInjected(t *testing.T, err error, what string) {
	t.Helper()
	assert.True(t, isInjected(err), "%s: got %v, want the injected connection error (the call's outcome is unknown)", what, err)
}

// assertPrompt checks that a call whose context ended at end returned by
// returned, within prompt (a time bound, see within). It reports whether
// it did.
func (e *env) assertPrompt(t *testing.T, end, returned time.Time, what string) bool {
	t.Helper()
	return e.within(t, what+": returned after its context ended (it must not wait for the slow call or its clean-up)", returned.Sub(end), prompt)
}

// notAfter asserts that got is not later than limit.
func notAfter(t *testing.T, got, limit time.Time, what string) {
	t.Helper()
	assert.False(t, got.After(limit), "%s: got %v, want no later than %v (%v too late)", what, got.Format("15:04:05.000000"), limit.Format("15:04:05.000000"), got.Sub(limit))
}

// sumApplied is the number of calls the arms' fates were applied to.
func sumApplied(arms []*faultArm) int {
	n := 0
	for _, a := range arms {
		n += a.applied()
	}
	return n
}

// armCleanups arms every clean-up script with fate ft for n calls each.
func (o *outcome) armCleanups(ft fate, n int, delay time.Duration) []*faultArm {
	var arms []*faultArm
	for _, s := range cleanupScripts {
		a := o.f.arm(s, ft, n)
		if ft == fateDelayed {
			o.f.mu.Lock()
			a.delay = delay
			o.f.mu.Unlock()
		}
		arms = append(arms, a)
	}
	return arms
}

func disarmAll(arms []*faultArm) {
	for _, a := range arms {
		a.disarm()
	}
}

// checkOutcomeFenceRestart: finding 14.
func checkOutcomeFenceRestart(t *testing.T, e *env) {
	e.needsOwnedServer("restarts the lock's node without persistence")
	o := newOutcome(t, e)
	const name = "fence-restart"
	rw := e.rw(o.c, name, outcomeTTL, nil)
	mu := e.mutex(o.c, name, outcomeTTL, nil)

	w, g := o.mustAcquire(o.c, mWrite, name, outcomeTTL)
	o.mustUnlock("write before the restart", g)
	m, g := o.mustAcquire(o.c, mMutex, name, outcomeTTL)
	o.mustUnlock("mutex before the restart", g)
	assert.Greater(t, m.Fence(), w.Fence(), "call: Mutex TryLock after RWMutex TryLock of one name: fence %d, want above the write fence %d", m.Fence(), w.Fence())
	w2, g := o.mustAcquire(o.c, mWrite, name, outcomeTTL)
	o.mustUnlock("second write before the restart", g)
	last := max(w.Fence(), m.Fence(), w2.Fence())

	require.NoError(t, e.d.admin.Restart(e.ctx, o.c.Key(name)), "call: admin restart of %q's node without persistence", name)

	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	r, err := rw.RLock(ctx)
	require.NoError(t, err, "call: RLock after the restart: got %v, want a read lease", err)
	g = o.add(r, mRead)
	assert.Positive(t, r.Fence(), "call: Fence() of a read lease after the restart: got %d, want above 0", r.Fence())                                                 // finding 14
	assert.GreaterOrEqual(t, r.Fence(), last, "call: Fence() of a read lease after the restart: got %d, want at least the last fence before it, %d", r.Fence(), last) // finding 14
	o.mustUnlock("read after the restart", g)

	w3, err := rw.Lock(ctx)
	require.NoError(t, err, "call: RWMutex.Lock after the restart: got %v, want a lease", err)
	g = o.add(w3, mWrite)
	assert.Greater(t, w3.Fence(), r.Fence(), "call: write fence after the restart: got %d, want above the read lease's %d", w3.Fence(), r.Fence())
	assert.Greater(t, w3.Fence(), last, "call: write fence after the restart: got %d, want above the last fence before it, %d", w3.Fence(), last)
	o.mustUnlock("write after the restart", g)
	m2, err := mu.Lock(ctx)
	require.NoError(t, err, "call: Mutex.Lock after the restart: got %v, want a lease", err)
	g = o.add(m2, mMutex)
	assert.Greater(t, m2.Fence(), w3.Fence(), "call: mutex fence after the restart: got %d, want above the last write fence %d", m2.Fence(), w3.Fence())
	o.mustUnlock("mutex after the restart", g)
}
