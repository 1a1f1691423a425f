package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Silence: a server that keeps its connections and answers nothing (a
// partition, a paused VM, a stuck proxy). A call over several servers
// decides on what it needs and never waits for the silent one.

func init() {
	quorumCases = insertBefore(quorumCases, "Quorum/Chaos",
		testCase{
			name:  "Quorum/SilentMinority/Freeze",
			needs: "starts, stops or freezes two redis-server processes of its own beside the deployment",
			rule:  "With one of three deployments frozen (SIGSTOP) and put first in the Quorum (the one Lock subscribes on), Lock (TTL 3 s) is granted within 1 s with at least half its TTL of validity left, Extend and Unlock return within 1 s and Extend never returns nil for a lease that is not valid; 8 workers locking in a loop meanwhile, and after the server is thawed (SIGCONT: the commands it had queued run), the history checker finds no overlap, the thawed deployment's stale calls leave the name held by nobody, and grants take all three deployments again.",
			check: func(t *testing.T, e *env) { checkQuorumSilent(t, e, "freeze") },
			timed: "bounds how long each call takes with a silent deployment (1 s), and 8 workers must get grants meanwhile",
		},
		testCase{
			name:  "Quorum/SilentMinority/Proxy",
			needs: "starts, stops or freezes two redis-server processes of its own beside the deployment",
			rule:  "The same as Quorum/SilentMinority/Freeze with the silent deployment behind a proxy that accepts connections and forwards nothing until it speaks again.",
			check: func(t *testing.T, e *env) { checkQuorumSilent(t, e, "proxy") },
			timed: "bounds how long each call takes with a silent deployment (1 s), and 8 workers must get grants meanwhile",
		},
	)
	multiCases = insertBefore(multiCases, "Multi/Chaos", testCase{
		name:      "Multi/SilentSlot",
		rule:      "A MultiLock attempt whose call for one slot gets no answer decides without it: refused as soon as another slot refuses (well before the silent call could answer), or at its context's deadline when the silent slot's answer is the one it needs; afterwards every name is free again.",
		check:     checkMultiSilentSlot,
		exclusive: "bounds how soon TryLock returns with a silent slot",
	})
}

// silentBound is what the users were promised for a call with one
// silent deployment: the per-deployment budget (a tenth of the 3 s TTL)
// plus a round trip, with room for a loaded machine under -race.
const silentBound = time.Second

func checkQuorumSilent(t *testing.T, e *env, how string) {
	qs := newQuorumSet(t, e, nil)
	var (
		silent  *locker.Client
		silence func()
		speak   func()
	)
	switch how {
	case "freeze":
		srv := qs.servers[2]
		silent = qs.clients[2]
		silence = func() { require.NoError(t, srv.Freeze(), "call: SIGSTOP deployment 2") }
		speak = func() { require.NoError(t, srv.Thaw(), "call: SIGCONT deployment 2") }
	case "proxy":
		p := redisserver.StartProxy(t, qs.servers[2].Addr)
		silent = e.clientOn(e.d.driver.connect(t, Conn{Addrs: []string{p.Addr}}), nil)
		silence = func() { p.Mute(true) }
		speak = func() { p.Mute(false) }
	}
	// The silent deployment first: Lock subscribes to wake-ups on it.
	clients := []*locker.Client{silent, qs.clients[0], qs.clients[1]}
	const ttl = 3 * time.Second
	newQuorum := func() *locker.Quorum {
		q, err := locker.NewQuorum(clients, "silent", ttl, nil)
		require.NoError(t, err, "call: NewQuorum")
		return q
	}
	// Every connection made and every script loaded while all answer.
	q := newQuorum()
	l, err := q.TryLock(e.ctx)
	e.setupDone(t, err, "call: TryLock while every deployment answers")
	allParts := waitFor(func() bool { return len(l.Parts()) == 3 }, 5*time.Second)
	if !e.done(t, l.Unlock(e.ctx), "call: Unlock while every deployment answers") {
		return
	}
	if !e.timely(t, allParts, fmt.Sprintf("call: Parts() while every deployment answers: %d of 3 within 5s", len(l.Parts()))) {
		return
	}

	silence()
	spoke := false
	defer func() {
		if !spoke {
			speak()
		}
	}()
	var slowest atomic.Int64 // the slowest timed call's duration, ns
	slow := func(took time.Duration) {
		for {
			was := slowest.Load()
			if int64(took) <= was || slowest.CompareAndSwap(was, int64(took)) {
				return
			}
		}
	}
	timed := func(what string, f func() error) error {
		t.Helper()
		start := time.Now()
		err := f()
		took := time.Since(start)
		slow(took)
		if !e.within(t, fmt.Sprintf("call: %s with deployment 0 silent", what), took, silentBound) {
			return errSlow
		}
		return err
	}
	// Calls that do not return in time (errSlow), or fail with a
	// deadline, are timing: judged, not a safety failure.
	judge := func(err error, what string) bool {
		t.Helper()
		if errors.Is(err, errSlow) {
			return false
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return e.timely(t, false, fmt.Sprintf("call: %s with deployment 0 silent: %v", what, err))
		}
		return assert.NoError(t, err, "call: %s with deployment 0 silent", what)
	}
	for i := range 3 {
		var l *locker.QuorumLease
		if !judge(timed("Lock", func() (err error) { l, err = q.Lock(e.ctx); return err }), fmt.Sprint("Lock ", i)) {
			return
		}
		left := time.Until(l.ValidUntil())
		if !e.timely(t, left > ttl/2, fmt.Sprintf("call: validity left after Lock %d: %v, want more than %v", i, left, ttl/2)) {
			return
		}
		err := timed("Extend", func() error { return l.Extend(e.ctx, ttl) })
		if err == nil {
			assert.True(t, l.Valid(), "call: Valid() after an Extend that returned nil")
		}
		if !judge(err, fmt.Sprint("Extend ", i)) || !judge(timed("Unlock", func() error { return l.Unlock(e.ctx) }), fmt.Sprint("Unlock ", i)) {
			return
		}
	}

	// 8 workers in a loop, the waiters subscribing on the silent one.
	var (
		h        history
		ok, fail atomic.Int64
		mu       sync.Mutex
		sample   []error
		short    atomic.Int64 // grants with less than half the TTL left
		late     atomic.Int64 // calls that failed with a deadline or took too long
	)
	note := func(err error) {
		if errors.Is(err, errSlow) || errors.Is(err, context.DeadlineExceeded) {
			late.Add(1) // timing
		} else {
			fail.Add(1)
		}
		mu.Lock()
		if len(sample) < 3 {
			sample = append(sample, err)
		}
		mu.Unlock()
	}
	work := func(d time.Duration) {
		ctx, cancel := context.WithTimeout(e.ctx, d)
		defer cancel()
		var wg sync.WaitGroup
		for range 8 {
			q := newQuorum()
			wg.Go(func() {
				for ctx.Err() == nil {
					l, err := q.Lock(ctx)
					if err != nil {
						if ctx.Err() == nil {
							note(err)
						}
						continue
					}
					if time.Until(l.ValidUntil()) < ttl/2 {
						short.Add(1)
					}
					g := h.addQuorum(l, "silent", 0)
					time.Sleep(time.Millisecond)
					start := time.Now()
					if err := l.Extend(e.ctx, ttl); err != nil && l.Valid() {
						note(fmt.Errorf("extend of a valid lease: %w", err))
					}
					if took := time.Since(start); took >= silentBound {
						note(fmt.Errorf("extend took %v: %w", took, errSlow))
					} else {
						slow(took)
					}
					start = time.Now()
					if err := h.unlock(e.ctx, g); err != nil {
						note(fmt.Errorf("unlock: %w", err))
					}
					if took := time.Since(start); took >= silentBound {
						note(fmt.Errorf("unlock took %v: %w", took, errSlow))
					} else {
						slow(took)
					}
					ok.Add(1)
				}
			})
		}
		wg.Wait()
	}
	work(2 * time.Second)
	// Two contenders that split the two live deployments both wait for
	// the silent one (PartTimeout) and retry: under load 8 workers can
	// split again and again for a while. The rule asks for grants, not
	// for a rate: give them up to 8 s more.
	for extra := 0; ok.Load() == 0 && extra < 8; extra++ {
		work(time.Second)
	}
	silentOK := ok.Load()
	speak()
	spoke = true
	work(time.Second)
	t.Logf("quorum with a silent deployment (%s): %d cycles while silent, %d after it spoke again, %d failures and %d late calls (sample: %v); the slowest timed call took %v (bound %v)", how, silentOK, ok.Load()-silentOK, fail.Load(), late.Load(), sample, time.Duration(slowest.Load()), silentBound)
	assert.Zero(t, fail.Load(), "call: failed Lock, Extend or Unlock calls (sample: %v)", sample)
	rep := h.check(t)
	assert.Zero(t, rep.overlaps, "overlaps in the history (%s)", rep.first)

	// The calls the silent deployment queued run once it speaks again: a
	// stale one is refused, or its hold is dropped by its clean-up or
	// lapses (nothing refreshes it), so the name is free there soon, and
	// within a TTL of the last of them at the latest.
	var lastErr error
	free := func() bool {
		l, err := e.mutex(silent, "silent", 10*time.Second, nil).TryLock(e.ctx)
		if lastErr = err; err != nil {
			return false
		}
		e.done(t, l.Unlock(e.ctx), "call: Unlock of the plain lease on the deployment that was silent")
		return true
	}
	freed := waitFor(free, ttl+2*time.Second)
	if !freed && errors.Is(lastErr, locker.ErrNotObtained) && !waitFor(free, ttl+10*time.Second) && errors.Is(lastErr, locker.ErrNotObtained) {
		t.Errorf("call: plain TryLock on the deployment that was silent: the name is still held %v after it spoke again; want it free once its queued calls ran and their TTL (%v) passed (a stale hold is never refreshed)", 2*ttl+12*time.Second, ttl)
	}
	allThree := waitFor(func() bool {
		l, err := q.TryLock(e.ctx)
		if err != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond) // the last part joins when its reply comes
		n := len(l.Parts())
		return e.done(t, l.Unlock(e.ctx), "call: Unlock of a quorum lease after the silent deployment spoke again") && n == 3
	}, 5*time.Second)
	// Timing and liveness last, after every safety check.
	_ = e.timely(t, freed, fmt.Sprintf("call: plain TryLock on the deployment that was silent: not granted within %v after it spoke again (last: %v)", ttl+2*time.Second, lastErr)) &&
		e.timely(t, silentOK > 0, "call: no grant while deployment 0 was silent") &&
		e.timely(t, late.Load() == 0, fmt.Sprintf("call: %d Lock, Extend or Unlock calls failed with a deadline or took %v or more (sample: %v)", late.Load(), silentBound, sample)) &&
		e.timely(t, short.Load() == 0, fmt.Sprintf("call: %d grants with less than half the TTL of validity left", short.Load())) &&
		e.timely(t, allThree, "call: a grant on all three deployments within 5s once the silent one answers again")
}

// errSlow marks a call that took longer than its rule's bound.
var errSlow = errors.New("slower than the rule's bound")

func checkMultiSilentSlot(t *testing.T, e *env) {
	const silentName, heldName = "alpha", "bravo"
	require.NotEqual(t, keySlot(silentName), keySlot(heldName), "the rule needs names in two slots")
	f := e.faults()
	c := e.clientOn(f, nil)
	m := e.multi(c, []string{silentName, heldName}, 10*time.Second, nil)
	// Load the scripts while every call answers.
	l, err := m.TryLock(e.ctx)
	e.setupDone(t, err, "call: TryLock while every slot answers")
	e.setupDone(t, l.Unlock(e.ctx), "call: Unlock while every slot answers")

	// One slot silent, the other refused: the refusal decides.
	holder, err := e.mutex(e.client(nil), heldName, 10*time.Second, nil).TryLock(e.ctx)
	e.setupDone(t, err, fmt.Sprintf("call: plain TryLock of %s", heldName))
	const silence = 3 * time.Second
	a := f.delayBy("multi_acquire", 1, silence).onKey(c.Key(silentName))
	start := time.Now()
	_, err = m.TryLock(e.ctx)
	took := time.Since(start)
	// The attempt may have decided on the refusal before the silent slot's
	// call reached the fault: wait for it, or it would go through
	// undelayed once disarmed (or meet the next attempt's fault).
	applied := waitFor(func() bool { return a.applied() == 1 }, 5*time.Second)
	a.disarm()
	if !e.timely(t, applied, fmt.Sprintf("the fault: %s's slot call of the first attempt silenced (not within 5s)", silentName)) {
		return
	}
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock with %s held and %s's slot silent", heldName, silentName)
	if !e.within(t, fmt.Sprintf("call: TryLock with %s's slot silent returned after it started (the refusal was known at once; the silent slot's answer would take %v)", silentName, silence), took, silence/2) {
		return
	}
	require.NoError(t, holder.Unlock(e.ctx), "call: Unlock of the plain lease")

	// Only the silent slot's answer is missing: the context decides.
	a = f.delayBy("multi_acquire", 1, silence).onKey(c.Key(silentName))
	ctx, cancel := context.WithTimeout(e.ctx, shortCtx)
	_, err = m.TryLock(ctx)
	returned := time.Now()
	deadline, _ := ctx.Deadline()
	cancel()
	// Under load the attempt's call for the silent slot may reach the fault
	// only after the attempt gave up: wait for it before disarming (or it
	// would go through undelayed). An attempt that never made the call
	// within its context tested nothing: timing, judged as such.
	applied = waitFor(func() bool { return a.applied() == 1 }, 5*time.Second)
	a.disarm()
	if !e.timely(t, applied, fmt.Sprintf("the fault: %s's slot call of the attempt silenced (want the call made within the attempt's %v context; it was not made within 5s)", silentName, shortCtx)) {
		return
	}
	require.Error(t, err, "call: TryLock with %s's slot silent past the context", silentName)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "call: TryLock's error %v: want the context's", err)
	if !e.assertPrompt(t, deadline, returned, "call: TryLock with a silent slot") {
		return
	}

	for _, n := range []string{silentName, heldName} {
		e.freeSoon(t, func() bool { return e.mutexFree(c, n) }, silence+5*time.Second, 10*time.Second, n+" is free again after the attempts with a silent slot")
	}
}
