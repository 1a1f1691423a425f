package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fifoCases check FIFO mode.
var fifoCases = []testCase{
	{
		name:  "FIFO/ArrivalOrder",
		rule:  "Eight FIFO waiters that queued in a known order acquire the lock in that order.",
		check: checkFIFOOrder,
	},
	{
		name:      "FIFO/CancelLeaves",
		rule:      "A FIFO waiter whose context ends returns at once and leaves the queue promptly (in the background), and the waiters behind it acquire without waiting for its entry to expire.",
		check:     checkFIFOCancel,
		exclusive: "bounds how soon the queue shrinks (1 s) and the waiters are granted (3 s)",
	},
	{
		name: "FIFO/JoinSubscribed",
		rule: "A FIFO Lock that starts while another Lock of the same Client waits on the name listens on its own channel before its first acquire call: " +
			"it queues behind the earlier waiter, the Unlocks hand the lock to them in that order, and (with wake-ups that carry no grant) its Lock makes two acquire calls in all " +
			"(the one that queues it, and the one that learns of its hand-over), not a second refused one to cover a wake-up sent before it listened.",
		check: checkFIFOJoin,
	},
	{
		name:  "FIFO/CrashedWaiterSkipped",
		rule:  "A FIFO waiter that crashed while first in line is skipped once its queue entry expires, and the next waiter acquires.",
		check: checkFIFOCrash,
	},
}

// queueLen returns the number of waiters queued on the mutex name.
func (e *env) queueLen(c *locker.Client, name string) int64 {
	e.t.Helper()
	q := c.Key(name) + ":q"
	r, err := e.d.admin.Do(e.ctx, q, "ZCARD", q)
	require.NoError(e.t, err, "call: admin ZCARD %s", q)
	n, _ := r.(int64)
	return n
}

// awaitQueue waits until n waiters are queued on name.
func (e *env) awaitQueue(c *locker.Client, name string, n int64) {
	e.t.Helper()
	require.True(e.t, e.queued(c, name, n, 10*time.Second), "call: queue length of %q: got %d, want %d", name, e.queueLen(c, name), n)
}

// queued reports whether n waiters are queued on name within within.
func (e *env) queued(c *locker.Client, name string, n int64, within time.Duration) bool {
	return waitFor(func() bool { return e.queueLen(c, name) == n }, within)
}

func checkFIFOOrder(t *testing.T, e *env) {
	c := e.client(nil)
	fifo := &locker.MutexOptions{FIFO: true}
	h, err := e.mutex(c, "fifo", 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
		errs  = make(chan error, 8)
	)
	for i := range 8 {
		m := e.mutex(c, "fifo", 30*time.Second, fifo)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.Lock(e.ctx)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			errs <- l.Unlock(e.ctx)
		}()
		e.awaitQueue(c, "fifo", int64(i+1))
	}
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "call: FIFO waiter Lock/Unlock")
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order, "call: order in which the 8 queued waiters acquired")
	assert.Zero(t, e.queueLen(c, "fifo"), "call: queue length after all waiters acquired")
}

func checkFIFOCancel(t *testing.T, e *env) {
	c := e.client(nil)
	// A 30 s TTL gives queue entries a 5 s life: far longer than the case
	// waits for the waiters behind the cancelled one.
	fifo := &locker.MutexOptions{FIFO: true}
	h, err := e.mutex(c, "fifo-cancel", 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	first := lockAsync(e.ctx, e.mutex(c, "fifo-cancel", 30*time.Second, fifo))
	e.awaitQueue(c, "fifo-cancel", 1)
	cctx, cancel := context.WithCancel(e.ctx)
	cancelled := lockAsync(cctx, e.mutex(c, "fifo-cancel", 30*time.Second, fifo))
	e.awaitQueue(c, "fifo-cancel", 2)
	third := lockAsync(e.ctx, e.mutex(c, "fifo-cancel", 30*time.Second, fifo))
	e.awaitQueue(c, "fifo-cancel", 3)

	cancel()
	r := <-cancelled
	assert.ErrorIs(t, r.err, locker.ErrNotObtained, "call: Lock of the cancelled waiter")
	assert.ErrorIs(t, r.err, context.Canceled, "call: Lock of the cancelled waiter")
	if !e.freeSoon(t, func() bool { return e.queueLen(c, "fifo-cancel") == 2 }, time.Second, 10*time.Second, "call: queue length 2 after the cancelled Lock returned") {
		return
	}

	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	ctx, stop := context.WithTimeout(e.ctx, 3*time.Second)
	defer stop()
	for i, ch := range []<-chan lockResult{first, third} {
		select {
		case r := <-ch:
			require.NoError(t, r.err, "call: Lock of waiter %d", i)
			require.NoError(t, r.l.Unlock(e.ctx), "call: Unlock of waiter %d", i)
		case <-ctx.Done():
			t.Fatalf("call: waiter %d still blocked 3s after the holder's Unlock; the cancelled waiter's entry (5s life) must not delay it", i)
		}
	}
}

func checkFIFOCrash(t *testing.T, e *env) {
	c := e.client(nil)
	// Waiters' TTL 300ms: their queue entries live 300ms without refresh.
	// The holder's is long, so the lock cannot expire (and go to the first
	// waiter) before that waiter's process is cut off below.
	fifo := &locker.MutexOptions{FIFO: true}
	h, err := e.mutex(c, "fifo-crash", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	cs := &countingScripter{Scripter: e.s}
	crashing := lockAsync(e.ctx, e.mutex(e.clientOn(cs, nil), "fifo-crash", 300*time.Millisecond, fifo))
	e.awaitQueue(c, "fifo-crash", 1)
	next := lockAsync(e.ctx, e.mutex(c, "fifo-crash", 300*time.Millisecond, fifo))
	e.awaitQueue(c, "fifo-crash", 2)

	cs.crash() // the first waiter's process loses Redis: no refresh, no clean-up
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	r := <-crashing
	require.ErrorIs(t, r.err, errCrashed, "call: Lock of the crashed waiter")
	r = <-next
	require.NoError(t, r.err, "call: Lock of the waiter behind the crashed one")
	e.unlockShort(t, r.l, "call: Unlock")
}

func checkFIFOJoin(t *testing.T, e *env) {
	fifo := &locker.MutexOptions{FIFO: true}
	checkJoinFirst(t, e, "fifo-join", fifo, fifo, func(c *locker.Client, name string, n int) { e.awaitQueue(c, name, int64(n)) },
		"one that queues it")
}
