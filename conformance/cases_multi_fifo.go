package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A MultiLock sees each name's FIFO queue as that name's Mutex does.
func init() {
	multiCases = insertBefore(multiCases, "Multi/Chaos", testCase{
		name:      "Multi/FIFOExpiredHead",
		rule:      "When a name's lock is free and its FIFO queue's head is a crashed waiter (its entry expired) with a live waiter queued behind it, a MultiLock TryLock over that name is refused, as a plain Mutex TryLock is; the live waiter is then granted the name.",
		check:     checkMultiFIFOExpiredHead,
		exclusive: "times a queue entry's expiry (1.1 s) against a waiter's calls held up 3 s",
	})
}

// insertBefore returns cases with add inserted before the case called
// name (at the end when there is none): a case that counts on its first
// calls succeeding runs before the chaos case, whose killed connections a
// driver's pool may still hold (drivers do not retry).
func insertBefore(cases []testCase, name string, add ...testCase) []testCase {
	i := slices.IndexFunc(cases, func(c testCase) bool { return c.name == name })
	if i < 0 {
		return append(cases, add...)
	}
	return slices.Insert(cases, i, add...)
}

func checkMultiFIFOExpiredHead(t *testing.T, e *env) {
	const name = "fifo-head"
	c := e.client(nil)
	fifo := &locker.MutexOptions{FIFO: true}
	// The holder never releases: its lock expires after 1 s, so no release
	// hands it over to a waiter.
	holder := e.mutex(c, name, time.Second, nil)
	granted := time.Now()
	_, err := holder.TryLock(e.ctx)
	for try := 0; err != nil && try < 3; try++ {
		// A connection killed by an earlier case may fail one call:
		// drivers do not retry.
		time.Sleep(50 * time.Millisecond)
		granted = time.Now()
		_, err = holder.TryLock(e.ctx)
	}
	require.NoError(t, err, "call: holder TryLock (1 s TTL, never released)")

	// The first waiter's entry lives 1 s without refresh; it crashes. (Its
	// refreshes set the queue keys to live 3 s: the case is over by then.)
	cs := &countingScripter{Scripter: e.s}
	crashing := lockAsync(e.ctx, e.mutex(e.clientOn(cs, nil), name, time.Second, fifo))
	awaitQueue := func(n int64) {
		t.Helper()
		if e.queued(c, name, n, 10*time.Second) {
			return
		}
		// The scenario is arranged by time: once the holder's 1 s has
		// run out, the crashing waiter may hold the name already.
		took := time.Since(granted).Round(time.Millisecond)
		if took >= time.Second {
			e.tooLate(t, fmt.Sprintf("call: queue length of %q: %d, want %d: the set-up took %v, past the holder's 1 s TTL", name, e.queueLen(c, name), n, took))
		}
		t.Fatalf("call: queue length of %q: %d, want %d (%v after the holder's grant)", name, e.queueLen(c, name), n, took)
	}
	awaitQueue(1)
	// The live waiter's entry lives 5 s; once it is queued, each of its
	// calls is held up for 3 s on its way to Redis, so the name is free,
	// with the crashed head queued before it, meanwhile.
	f := e.faults()
	live := lockAsync(e.ctx, e.mutex(e.clientOn(f, nil), name, 30*time.Second, fifo))
	awaitQueue(2)
	a := f.delayBy("acquire", -1, 3*time.Second).onKey(c.Key(name))
	defer a.disarm()
	cs.crash()
	crashed := time.Now()
	a.awaitApplied(t, 1, "the live waiter's retry")
	e.until(t, func() bool {
		r, err := e.d.admin.Do(e.ctx, c.Key(name), "EXISTS", c.Key(name))
		return err == nil && r == int64(0)
	}, 10*time.Second, "call: admin EXISTS: the holder's lock expires")
	time.Sleep(time.Until(crashed.Add(1100 * time.Millisecond))) // the crashed waiter's entry has expired
	// The scenario is arranged by time (entries of 1 s, calls held 3 s):
	// on a machine running late it may not have happened.
	if n := e.queueLen(c, name); !e.timely(t, n == 2, fmt.Sprintf("call: queue length %d, want 2: the crashed head and the live waiter (%d acquire calls of the live waiter so far)", n, f.count("acquire"))) {
		return
	}

	ml := e.multi(c, []string{name, name + "-b"}, 10*time.Second, nil)
	l, err := ml.TryLock(e.ctx)
	if err == nil {
		t.Errorf("call: MultiLock TryLock over %q with a live FIFO waiter queued behind an expired head: granted, want ErrNotObtained (a plain Mutex is refused)", name)
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock of the MultiLease granted in error")
	} else {
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: MultiLock TryLock over %q with a live FIFO waiter queued behind an expired head", name)
	}
	_, err = e.mutex(c, name, time.Second, nil).TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: Mutex TryLock of %q in the same state", name)
	a.disarm()

	select {
	case r := <-live:
		require.NoError(t, r.err, "call: Lock of the live waiter")
		require.NoError(t, r.l.Unlock(e.ctx), "call: Unlock of the live waiter")
	case <-time.After(15 * time.Second):
		t.Fatal("call: Lock of the live waiter: not granted within 15 s")
	}
	r := <-crashing
	require.ErrorIs(t, r.err, errCrashed, "call: Lock of the crashed waiter")
}
