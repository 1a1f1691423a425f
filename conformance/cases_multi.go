package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// multiCases check the multi-lock.
var multiCases = []testCase{
	{
		name:  "Multi/AllOrNone",
		rule:  "A MultiLock over names in several slots is granted all of them or none: while a plain Mutex holds one name, TryLock fails and the other names are free again soon after; once it is released, every name is granted and a plain Mutex of each is refused until Unlock.",
		check: checkMultiAllOrNone,
	},
	{
		name:  "Multi/OppositeOrders",
		rule:  "Four goroutines on two clients take two overlapping MultiLocks, given in opposite orders, in a loop for 2 s (and on until each has more than 2 grants, within 10 s): both MultiLocks are granted again and again (no deadlock), and the history checker finds no overlap on any name.",
		check: checkMultiOppositeOrders,
	},
	{
		name:  "Multi/OneSlot",
		rule:  "Names of one Cluster slot are taken in one script call: an uncontended TryLock of three such names costs one EvalSha, and Unlock frees every one.",
		check: checkMultiOneSlot,
	},
	{
		name:      "Multi/Outcome",
		rule:      "A MultiLock TryLock whose reply is lost (the grant ran) returns an error and its clean-up frees every name; a call that arrives after its caller gave up and after its clean-up is refused and takes nothing; one still running when its context ends returns promptly and every name is free soon after.",
		check:     checkMultiOutcome,
		exclusive: "bounds how soon a call returns after its context ended (300 ms)",
	},
	{
		name:  "Multi/NoLeaseWithError",
		rule:  "TryLock and Lock return a nil MultiLease with every error: a name held by another owner (ErrNotObtained), ctx ended, and the Client closed (ErrClosed); no name is left held.",
		check: checkMultiNoLeaseWithError,
	},
	{
		name:  "Multi/Lost",
		rule:  "An auto-refreshed MultiLease is reported lost (Lost closed, Context cancelled, Err set) when one of its parts is taken away, and its other names are released.",
		check: checkMultiLost,
	},
	{
		name:  "Multi/BadInput",
		rule:  "A MultiLock with no name, a bad name or a bad TTL fails with its typed error without panicking, and nothing is left in Redis.",
		check: checkMultiBadInput,
	},
	{
		name:      "Multi/Chaos",
		needs:     "kills every client connection and empties the script cache of every node (CLIENT KILL, SCRIPT FLUSH)",
		rule:      "8 goroutines taking two overlapping MultiLocks (and a plain Mutex of a shared name) in a loop while every client connection is killed every 200 ms and the script cache flushed every 300 ms: cycles succeed, and the history checker finds no overlap on any name.",
		check:     checkMultiChaos,
		exclusive: "CLIENT KILL and SCRIPT FLUSH on every node",
	},
}

// multi returns a MultiLock on c, failing the case on error.
func (e *env) multi(c *locker.Client, names []string, ttl time.Duration, opts *locker.MultiLockOptions) *locker.MultiLock {
	e.t.Helper()
	m, err := c.NewMultiLock(names, ttl, opts)
	require.NoError(e.t, err, "call: NewMultiLock(%q, %v)", names, ttl)
	return m
}

// mutexFree reports whether a plain Mutex of name can be taken now (and
// releases it). A release not answered in time (a machine running late)
// is the core's to complete in the background, as any Unlock's.
func (e *env) mutexFree(c *locker.Client, name string) bool {
	e.t.Helper()
	l, err := e.mutex(c, name, 10*time.Second, nil).TryLock(e.ctx) // long: about being free, not expiry
	if err != nil {
		return false
	}
	if err := l.Unlock(e.ctx); !errors.Is(err, context.DeadlineExceeded) {
		require.NoError(e.t, err, "call: Unlock of the probe on %q", name)
	}
	return true
}

func checkMultiAllOrNone(t *testing.T, e *env) {
	c := e.client(nil)
	names := []string{"alpha", "bravo", "charlie", "delta"}
	blocker, err := e.mutex(c, "charlie", 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: Mutex TryLock of charlie")
	first := e.client(nil)
	_, err = e.multi(first, names, 10*time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: MultiLock TryLock while charlie is held")
	// The attempt decided on charlie's refusal; its other calls may still
	// be on their way (under load, one can reach the server after the
	// probes below, or even after the second attempt's Unlock), their
	// grants released in the background. Close waits for them.
	require.NoError(t, first.Close(), "call: Close of the refused attempt's Client")
	for _, n := range []string{"alpha", "bravo", "delta"} {
		// Free within 5 s is timing (a grant that reached the server after
		// Close's grace is released by its TTL instead); held past the
		// TTL (10 s) would be a leaked hold.
		if !e.eventually(t, func() bool { return e.mutexFree(c, n) }, 5*time.Second, n+" is free again after the refused MultiLock attempt") {
			assert.True(t, waitFor(func() bool { return e.mutexFree(c, n) }, 10*time.Second),
				"%s is free again within the attempt's TTL (10s) after the refused MultiLock attempt", n)
			_ = blocker.Unlock(e.ctx)
			return
		}
	}
	require.NoError(t, blocker.Unlock(e.ctx))
	l, err := e.multi(e.client(nil), names, 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: MultiLock TryLock with every name free")
	for _, n := range names {
		assert.False(t, e.mutexFree(c, n), "a plain Mutex of %s while the MultiLock holds it", n)
	}
	assert.True(t, l.Valid())
	require.NoError(t, l.Unlock(e.ctx), "call: MultiLease Unlock")
	for _, n := range names {
		assert.True(t, e.mutexFree(c, n), "%s is free after the MultiLease's Unlock", n)
	}
}

func checkMultiOppositeOrders(t *testing.T, e *env) {
	var h history
	sets := [][]string{{"ant", "bee", "cat"}, {"dog", "cat", "bee"}} // overlap: bee, cat; opposite orders
	var (
		wg     sync.WaitGroup
		counts [2]atomic.Int64
	)
	// For 2 s, and then until each set has more than 2 grants (under
	// load 2 s may not be enough), within 10 s: a set starved or
	// deadlocked fails the assertion below.
	start := time.Now()
	more := func() bool {
		switch {
		case time.Since(start) < 2*time.Second:
			return true
		case time.Since(start) > 10*time.Second:
			return false
		}
		return counts[0].Load() <= 2 || counts[1].Load() <= 2
	}
	var late atomic.Pointer[error] // the first Lock that timed out
	for w := range 4 {
		set := w % 2
		m := e.multi(e.client(nil), sets[set], 10*time.Second, nil)
		wg.Go(func() {
			for more() {
				ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
				l, err := m.Lock(ctx)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					// A deadlock or a starved MultiLock, or a machine
					// running late: timing, judged after the run.
					late.CompareAndSwap(nil, &err)
					return
				}
				if !assert.NoError(t, err, "call: Lock of %q", sets[set]) {
					return
				}
				var gs []*grant
				for _, p := range l.Parts() {
					gs = append(gs, h.add(p, "mutex", 0))
				}
				counts[set].Add(1)
				time.Sleep(time.Millisecond)
				end := time.Now()
				if vu := l.ValidUntil(); vu.Before(end) {
					end = vu
				}
				for _, g := range gs {
					h.closeAt(g, end)
				}
				assert.NoError(t, l.Unlock(e.ctx), "call: Unlock of %q", sets[set])
			}
		})
	}
	wg.Wait()
	t.Logf("grants: %q %d, %q %d", sets[0], counts[0].Load(), sets[1], counts[1].Load())
	h.check(t)
	if err := late.Load(); err != nil {
		e.timely(t, false, fmt.Sprintf("call: a Lock not granted within 10s (a deadlock or a starved MultiLock): %v", *err))
		return
	}
	for i := range sets {
		if !e.timely(t, counts[i].Load() > 2, fmt.Sprintf("MultiLock %q made too little progress: %d grants", sets[i], counts[i].Load())) {
			return
		}
	}
}

func checkMultiOneSlot(t *testing.T, e *env) {
	names := sameSlotNames("slot", "slot", "slot")
	cs := &countingScripter{Scripter: e.s}
	c := e.clientOn(cs, nil)
	m := e.multi(c, names, 10*time.Second, nil)
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: warm-up TryLock")
	require.NoError(t, l.Unlock(e.ctx))
	cs.reset()
	l, err = m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock of %q (one slot)", names)
	evalsha, eval, load := cs.counts()
	assert.Equal(t, [3]int64{1, 0, 0}, [3]int64{evalsha, eval, load}, "call: TryLock of three names of one slot: [EvalSha, Eval, ScriptLoad] calls")
	require.NoError(t, l.Unlock(e.ctx))
	for _, n := range names {
		assert.True(t, e.mutexFree(e.client(nil), n), "%s is free after Unlock", n)
	}
}

func checkMultiOutcome(t *testing.T, e *env) {
	f := e.faults()
	c := e.clientOn(f, nil)
	names := sameSlotNames("out", "out")
	m := e.multi(c, names, 30*time.Second, nil)
	probe := e.client(nil)
	acquireFates(t, e, f, c.Key(names[0]), "multi_acquire",
		func(ctx context.Context) error { _, err := m.TryLock(ctx); return err },
		func(string) bool {
			for _, n := range names {
				if !e.mutexFree(probe, n) {
					return false
				}
			}
			return true
		})
}

func checkMultiLost(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.multi(c, []string{"keep", "lose"}, time.Second, &locker.MultiLockOptions{AutoRefresh: true})
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock")
	lost, ctx := l.Lost(), l.Context()
	k := c.Key("lose")
	_, err = e.d.admin.Do(e.ctx, k, "DEL", k)
	require.NoError(t, err, "call: admin DEL of one part")
	arrive(t, e, lost, 5*time.Second, "call: Lost() closed after one part was taken away")
	select { // cancelled just after Lost closes
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	assert.Error(t, context.Cause(ctx), "the MultiLease's Context is cancelled")
	assert.True(t, errors.Is(l.Err(), locker.ErrExpired) || errors.Is(l.Err(), locker.ErrHeldByOther), "Err: got %v", l.Err())
	_ = l.Unlock(e.ctx)
	e.freeSoon(t, func() bool { return e.mutexFree(c, "keep") }, 5*time.Second, 10*time.Second,
		"the other part is released (by the lost lease itself, at once, or by Unlock)")
}

func checkMultiChaos(t *testing.T, e *env) {
	c := e.client(nil)
	var h history
	sets := [][]string{{"m-a", "m-b"}, {"m-b", "m-c"}}
	ctx, cancel := context.WithTimeout(e.ctx, chaosRun)
	defer cancel()
	var (
		ok, bad atomic.Int64
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		every(ctx, 200*time.Millisecond, func() { _ = e.d.admin.ClientKill(e.ctx, "normal") })
	})
	wg.Go(func() {
		every(ctx, 300*time.Millisecond, func() { _ = e.d.admin.ScriptFlush(e.ctx) })
	})
	record := func(parts []*locker.Lease, unlock func() error) {
		var gs []*grant
		for _, p := range parts {
			gs = append(gs, h.add(p, "mutex", 0))
		}
		time.Sleep(time.Millisecond)
		end := time.Now()
		err := unlock()
		for i, g := range gs {
			e := end
			if vu := parts[i].ValidUntil(); vu.Before(e) || (err != nil && parts[i].Valid()) {
				e = vu
			}
			h.closeAt(g, e)
		}
		ok.Add(1)
	}
	for w := range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
				if w == 7 {
					l, err := e.mutex(c, "m-b", time.Second, nil).Lock(lctx)
					lcancel()
					if err == nil {
						record([]*locker.Lease{l}, func() error { return l.Unlock(e.ctx) })
					} else if ctx.Err() == nil && !errors.Is(err, locker.ErrNotObtained) {
						bad.Add(1)
					}
					continue
				}
				l, err := e.multi(c, sets[w%2], time.Second, nil).Lock(lctx)
				lcancel()
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, locker.ErrNotObtained) {
						bad.Add(1)
					}
					continue
				}
				record(l.Parts(), func() error { return l.Unlock(e.ctx) })
			}
		})
	}
	wg.Wait()
	t.Logf("chaos run: %d lock+unlock cycles succeeded, %d locks failed", ok.Load(), bad.Load())
	h.check(t)
	e.timely(t, ok.Load() > 0, "call: chaos run: no cycle succeeded at all")
}

func checkMultiBadInput(t *testing.T, e *env) {
	c := e.client(nil)
	_, err := c.NewMultiLock(nil, time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidOption, "call: NewMultiLock with no name")
	_, err = c.NewMultiLock([]string{"ok", ""}, time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidName, "call: NewMultiLock with an empty name")
	_, err = c.NewMultiLock([]string{"ok"}, 0, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidTTL, "call: NewMultiLock with TTL 0")
	m := e.multi(c, []string{"ok"}, time.Second, nil)
	_, err = m.TryLock(nilCtx)
	assert.ErrorIs(t, err, locker.ErrNilContext, "call: TryLock(nil)")
	_, err = m.Lock(nilCtx)
	assert.ErrorIs(t, err, locker.ErrNilContext, "call: Lock(nil)")
	assert.Empty(t, e.lockKeysLeft(), "nothing is left in Redis after the bad inputs")
}

func checkMultiNoLeaseWithError(t *testing.T, e *env) {
	names := []string{"nl-a", "nl-b", "nl-c"}
	c := e.client(nil)
	h, err := e.mutex(e.client(nil), "nl-b", outcomeTTL, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: plain TryLock of \"nl-b\" (setup)")
	m := e.multi(c, names, outcomeTTL, nil)
	l, err := m.TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: MultiLock.TryLock with a name held")
	assert.Nil(t, l, "call: MultiLock.TryLock with a name held: the lease")
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	l, err = m.Lock(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "call: MultiLock.Lock until ctx ends")
	assert.Nil(t, l, "call: MultiLock.Lock until ctx ends: the lease")
	require.NoError(t, h.Unlock(e.ctx), "call: Unlock of the plain lease")
	require.NoError(t, c.Close(), "call: Close")
	l, err = m.TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrClosed, "call: MultiLock.TryLock after Close")
	assert.Nil(t, l, "call: MultiLock.TryLock after Close: the lease")
	l, err = m.Lock(e.ctx)
	require.ErrorIs(t, err, locker.ErrClosed, "call: MultiLock.Lock after Close")
	assert.Nil(t, l, "call: MultiLock.Lock after Close: the lease")
	prober := e.client(nil)
	for _, n := range names {
		if !e.freeSoon(t, func() bool { return e.mutexFree(prober, n) }, freeWithin, 10*time.Second, fmt.Sprintf("%q is free soon after", n)) {
			return
		}
	}
}
