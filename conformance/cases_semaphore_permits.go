package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The unknown outcomes of SetPermits: a call whose caller could not learn
// what became of it must never override a later SetPermits, nor leave a
// stored limit (and a key without expiry) behind.
func init() {
	semaphoreCases = insertBefore(semaphoreCases, "Semaphore/Chaos",
		testCase{
			name:  "Semaphore/Outcome/SetPermitsLate",
			rule:  "A SetPermits whose call reaches Redis only after its caller gave up (held back until after a later SetPermits of the same Client, or delayed past its context) is refused by Redis and changes nothing: after SetPermits(5) held back and SetPermits(2) done, at most 2 permits are granted at once; after SetPermits(3) held back and SetPermits(0) done, each client's own limit is in force and no key of the semaphore is left without expiry.",
			check: checkSemSetPermitsLate,
		},
		testCase{
			name:  "Semaphore/Outcome/SetPermitsLost",
			rule:  "A SetPermits whose call ran but whose reply was lost (on every try) returns an error, and its background clean-up undoes it: after SetPermits(2) done and SetPermits(5) lost, at most 2 permits are granted at once again; a SetPermits(3) lost on a semaphore with no limit and nothing held leaves each client's own limit in force and no key without expiry.",
			check: checkSemSetPermitsLost,
		},
	)
}

// permitsGranted takes 1 permit at a time from s until refused (at most
// s.Permits()), releases them all, and returns how many it got: the limit
// in force, as s's caller sees it.
func (e *env) permitsGranted(s *locker.Semaphore) int {
	e.t.Helper()
	var got []*locker.Lease
	for range s.Permits() {
		l, err := s.TryAcquire(e.ctx, 1)
		if err != nil {
			require.ErrorIs(e.t, err, locker.ErrNotObtained, "call: probe TryAcquire(1) of %q", s.Name())
			break
		}
		got = append(got, l)
	}
	for _, l := range got {
		require.NoError(e.t, l.Unlock(e.ctx), "call: probe Unlock of %q", s.Name())
	}
	return len(got)
}

// semKeysWithoutExpiry lists the keys of the semaphore name (its hash and
// its expiries and waiters) that exist without an expiry, or with one beyond the
// abandoned-call window, each with its PTTL.
func (e *env) semKeysWithoutExpiry(c *locker.Client, name string) []string {
	e.t.Helper()
	var bad []string
	k := c.Key(name)
	for _, key := range []string{k + ":sem", k + ":semz"} {
		line, pttl := describeKey(e.ctx, e.d.admin, key)
		if pttl == -1 || pttl > 31_000 {
			bad = append(bad, line)
		}
	}
	return bad
}

func checkSemSetPermitsLate(t *testing.T, e *env) {
	const name = "permits-late"
	f := e.faults()
	c := e.clientOn(f, nil)
	s := e.sem(c, name, 5, 30*time.Second, nil)
	key := c.Key(name) + ":sem"
	probe := e.sem(e.client(nil), name, 5, 30*time.Second, nil)

	// Held back until after a later SetPermits(2).
	ctx, cancel := context.WithCancel(e.ctx)
	since := f.answeredOn(key, cleanupScripts...)
	a := f.holdBack("sem_permits", 1, cancel).onKey(key)
	require.Error(t, s.SetPermits(ctx, 5), "held back: call: SetPermits(5) given up on")
	cancel()
	held := a.next(t, "held back")
	require.NoError(t, s.SetPermits(e.ctx, 2), "held back: call: SetPermits(2) after the unknown SetPermits(5)")
	// The clean-up refuses the held call; one that could not reach Redis
	// in its time (every try timed out on a starved machine) leaves
	// nothing to judge.
	f.awaitCleanup(t, key, since, "held back")
	r := held.deliver(t)
	assert.NoError(t, r.err, "held back: the SetPermits(5), delivered after SetPermits(2)")
	assert.Equal(t, int64(-1), r.r, "held back: the SetPermits(5) delivered after SetPermits(2): want it refused (-1: abandoned)")
	assert.Equal(t, 2, e.permitsGranted(probe), "held back: permits granted at once (one by one) after SetPermits(2) and the late SetPermits(5): the limit must stay 2")

	// Delayed past its context: Redis runs it after the caller gave up.
	since, ok := e.cutShort(t, f, "sem_permits", key, "delayed: call: SetPermits(4) delayed past its context", func(ctx context.Context) error {
		return s.SetPermits(ctx, 4)
	})
	if !ok {
		return
	}
	require.NoError(t, s.SetPermits(e.ctx, 2), "delayed: call: SetPermits(2) after the unknown SetPermits(4)")
	f.awaitAnswered(t, since+1, "delayed: the delayed SetPermits(4)", "sem_permits")
	assert.Equal(t, 2, e.permitsGranted(probe), "delayed: permits granted at once after SetPermits(2) and the delayed SetPermits(4): the limit must stay 2")

	// Held back until after a SetPermits(0): no limit, no key kept.
	require.NoError(t, s.SetPermits(e.ctx, 0), "call: SetPermits(0)")
	ctx, cancel = context.WithCancel(e.ctx)
	a = f.holdBack("sem_permits", 1, cancel).onKey(key)
	require.Error(t, s.SetPermits(ctx, 3), "cleared: call: SetPermits(3) given up on")
	cancel()
	held = a.next(t, "cleared")
	require.NoError(t, s.SetPermits(e.ctx, 0), "cleared: call: SetPermits(0) after the unknown SetPermits(3)")
	r = held.deliver(t)
	assert.NoError(t, r.err, "cleared: the SetPermits(3), delivered after SetPermits(0)")
	assert.Equal(t, int64(-1), r.r, "cleared: the SetPermits(3) delivered after SetPermits(0): want it refused (-1: abandoned)")
	assert.Equal(t, 5, e.permitsGranted(probe), "cleared: permits granted at once after SetPermits(0) and the late SetPermits(3): want the probe's own limit, 5")
	assert.Empty(t, e.semKeysWithoutExpiry(c, name), "cleared: keys of the semaphore without an expiry (or beyond the 30 s window) with no limit stored and nothing held")
}

func checkSemSetPermitsLost(t *testing.T, e *env) {
	const name = "permits-lost"
	f := e.faults()
	c := e.clientOn(f, nil)
	s := e.sem(c, name, 5, 30*time.Second, nil)
	key := c.Key(name) + ":sem"
	probe := e.sem(e.client(nil), name, 5, 30*time.Second, nil)

	require.NoError(t, s.SetPermits(e.ctx, 2), "call: SetPermits(2)")
	a := f.lose("sem_permits", -1).onKey(key)
	err := s.SetPermits(e.ctx, 5)
	a.disarm()
	require.Error(t, err, "lost: call: SetPermits(5) whose reply is lost on every try")
	require.True(t, isInjected(err), "lost: call: SetPermits(5): got %v, want the injected connection error", err)
	granted := e.await(func() bool { return e.permitsGranted(probe) == 2 }, func() int { return e.permitsGranted(probe) })
	assert.Equal(t, 2, granted, "lost: permits granted at once (one by one) after SetPermits(2) and the lost SetPermits(5), within 10 s: want 2 once its clean-up ran")

	require.NoError(t, s.SetPermits(e.ctx, 0), "call: SetPermits(0)")
	a = f.lose("sem_permits", -1).onKey(key)
	err = s.SetPermits(e.ctx, 3)
	a.disarm()
	require.Error(t, err, "lost on an idle semaphore: call: SetPermits(3) whose reply is lost on every try")
	var bad []string
	granted = e.await(func() bool {
		bad = e.semKeysWithoutExpiry(c, name)
		return len(bad) == 0 && e.permitsGranted(probe) == 5
	}, func() int { return e.permitsGranted(probe) })
	assert.Equal(t, 5, granted, "lost on an idle semaphore: permits granted at once after the lost SetPermits(3), within 10 s: want the probe's own limit, 5, once its clean-up ran")
	assert.Empty(t, bad, "lost on an idle semaphore: keys of the semaphore without an expiry (or beyond the 30 s window) within 10 s, with no limit stored and nothing held")
}

// await polls ok every 5 ms for up to 10 s, then returns got(). (No
// Eventually: the probes fail the case with require, which must run on
// the test's goroutine.)
func (e *env) await(ok func() bool, got func() int) int {
	e.t.Helper()
	for end := time.Now().Add(10 * time.Second); !ok() && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	return got()
}
