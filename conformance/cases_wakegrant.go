package conformance

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-over's grant in its wake-up: a release that hands the lock to a
// FIFO or starving waiter publishes the grant's fence on the waiter's own
// channel, and the waiter takes the lock from that message alone.
func init() {
	handoverCases = append(handoverCases,
		testCase{
			name: "FIFO/WakeUpGrant",
			rule: "A queued FIFO waiter learns of the hand-over from its wake-up alone: while its process cannot send anything, the holder's Unlock hands it the lock and its Lock returns the lease of that very grant (the fence Inspect shows), " +
				"whose validity deadline comes no later than the key's expiry; its Unlock then frees the lock.",
			check: func(t *testing.T, e *env) { checkWakeUpGrant(t, e, &locker.MutexOptions{FIFO: true}) },
		},
		testCase{
			name: "Starve/WakeUpGrant",
			rule: "A starving default-mode waiter learns of the hand-over from its wake-up alone: while its process cannot send anything, the holder's Unlock hands it the lock and its Lock returns the lease of that very grant (the fence Inspect shows), " +
				"whose validity deadline comes no later than the key's expiry; its Unlock then frees the lock.",
			check: func(t *testing.T, e *env) {
				checkWakeUpGrant(t, e, &locker.MutexOptions{StarvationThreshold: starveAfter})
			},
		},
		testCase{
			name: "Starve/LateWakeUp",
			rule: "A wake-up on a starving waiter's own channel whose fence is older than the waiter's last refusal (a late message of a grant gone since) is not taken for a grant: " +
				"the waiter's Lock does not return while the lock is held, and returns the lease of the grant the holder's Unlock hands it.",
			needs: "publishes a late wake-up itself (SPUBLISH or PUBLISH)",
			check: func(t *testing.T, e *env) {
				// the holder's own fence, less one: older than any refusal
				checkForgedWakeUp(t, e, "late-wakeup", func(h *locker.Lease, id string) string {
					return strconv.FormatInt(h.Fence()-1, 10) + ":" + id
				})
			},
		},
		testCase{
			name: "Starve/ForeignWakeUp",
			rule: "A wake-up on a starving waiter's own channel that names another waiter id (an earlier waiter of the same slot, which the Client's waiters reuse) is not taken for a grant, however late its fence: " +
				"the waiter's Lock does not return while the lock is held, and returns the lease of the grant the holder's Unlock hands it.",
			needs: "publishes a wake-up itself (SPUBLISH or PUBLISH)",
			check: func(t *testing.T, e *env) {
				// a fence far after every refusal, for the slot's earlier waiter
				checkForgedWakeUp(t, e, "foreign-wakeup", func(h *locker.Lease, id string) string {
					slot, _, _ := strings.Cut(id, ".")
					return strconv.FormatInt(h.Fence()+1_000_000_000_000, 10) + ":" + slot + ".0"
				})
			},
		},
	)
}

// wakeUpTTL is the TTL of the waiters above: long, so that the drift
// margin within which a waiter may take a grant from its wake-up (1% of
// it) outlasts a loaded machine's pauses.
const wakeUpTTL = 2 * time.Minute

// waiterIDs returns the waiter ids of name's FIFO queue, or of its
// starving waiters.
func (e *env) waiterIDs(c *locker.Client, name string, fifo bool) []string {
	e.t.Helper()
	if !fifo {
		return e.starving(c, name)
	}
	k := c.Key(name) + ":q"
	r, err := e.d.admin.Do(e.ctx, k, "ZRANGE", k, "0", "-1")
	require.NoError(e.t, err, "call: admin ZRANGE %s", k)
	var ids []string
	for _, v := range toSlice(r) {
		s, _ := v.(string)
		ids = append(ids, s)
	}
	return ids
}

func toSlice(r any) []any {
	a, _ := r.([]any)
	return a
}

func checkWakeUpGrant(t *testing.T, e *env, opts *locker.MutexOptions) {
	name := "wakeup-grant"
	c := e.client(nil)
	var hopts *locker.MutexOptions
	if opts.FIFO {
		hopts = opts // a FIFO lease's Unlock hands the lock to the queue's head
	}
	holder := e.mutex(c, name, 30*time.Second, hopts)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	g := &gatedScripter{countingScripter: &countingScripter{Scripter: e.s}}
	got := lockAsync(e.ctx, e.mutex(e.clientOn(g, slowPolling), name, wakeUpTTL, opts))
	e.until(t, func() bool { return len(e.waiterIDs(c, name, opts.FIFO)) == 1 }, 10*time.Second,
		"call: the waiter is queued (or starving)")
	// The waiter has settled once its calls up to the wait returned: a
	// FIFO waiter's first (queued) and the one after it subscribed; a
	// default-mode one's first, the one after it subscribed and the
	// starving one. Its next is due in a third of its entry's life (5 s).
	settled := int64(3)
	if opts.FIFO {
		settled = 2
	}
	e.awaitCalls(t, g.countingScripter, settled, "the waiter's calls before it waits")
	calls := g.evalsha.Load() + g.eval.Load()

	g.gate.Lock() // the waiter's process can send nothing now
	defer func() {
		if g.gate.TryLock() {
			g.gate.Unlock()
		}
	}()
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock (hands the lock over)")
	var r lockResult
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		g.gate.Unlock()
		// Not safety: the lock is not held twice; its wake-up (or the
		// subscription that carries it) was lost or slow.
		e.tooLate(t, "call: waiter Lock: not returned within 10s while its process could send nothing (it did not take the grant from its wake-up)")
	}
	g.gate.Unlock()
	require.NoError(t, r.err, "call: waiter Lock")
	assert.Equal(t, calls, g.evalsha.Load()+g.eval.Load(), "call: script calls of the waiter's process after it was queued: none (the grant came with the wake-up)")
	valid := r.l.ValidUntil()
	k := c.Key(name)
	p, err := e.d.admin.Do(e.ctx, k, "PTTL", k)
	require.NoError(t, err, "call: admin PTTL %s", k)
	pttl, _ := p.(int64)
	assert.False(t, valid.After(time.Now().Add(time.Duration(pttl+1)*time.Millisecond)),
		"call: the lease's validity deadline (in %v) comes no later than the key's expiry (PTTL %d ms)", time.Until(valid), pttl)
	assert.Greater(t, pttl, int64(wakeUpTTL/time.Millisecond)-10_000, "call: PTTL: the lock lives the waiter's TTL (%v)", wakeUpTTL)
	assert.True(t, r.l.Valid(), "call: waiter lease Valid()")
	st, err := c.Inspect(e.ctx, name)
	require.NoError(t, err, "call: Inspect")
	assert.Equal(t, st.Mutex.Fence, r.l.Fence(), "call: waiter Lock: the lease of the handed-over grant")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
	l, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after the waiter's Unlock: free again")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
}

// checkForgedWakeUp publishes, on the own channel of a default-mode waiter
// that starves behind a holder, the wake-up payload returns (given the
// holder's lease and the waiter's id), and checks that the waiter does not
// take it for a grant, and is granted by the holder's Unlock.
func checkForgedWakeUp(t *testing.T, e *env, name string, payload func(h *locker.Lease, id string) string) {
	c := e.client(nil)
	holder := e.mutex(c, name, 30*time.Second, nil)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	got := lockAsync(e.ctx, e.mutex(e.client(slowPolling), name, wakeUpTTL, &locker.MutexOptions{StarvationThreshold: starveAfter}))
	e.awaitStarving(c, name, 1)
	// The waiter's own channel is its id's slot (the part before '.'),
	// and a hand-over's payload "<fence>:<waiter id>".
	id := e.starving(c, name)[0]
	slot, _, _ := strings.Cut(id, ".")
	ch := c.Key(name) + ":wake:" + slot
	late := payload(h, id)
	if _, err := e.d.admin.Do(e.ctx, ch, "SPUBLISH", ch, late); err != nil {
		if !strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			t.Fatalf("call: admin SPUBLISH %s: %v", ch, err)
		}
		_, err = e.d.admin.Do(e.ctx, ch, "PUBLISH", ch, late)
		require.NoError(t, err, "call: admin PUBLISH %s", ch)
	}
	select {
	case r := <-got:
		t.Fatalf("call: waiter Lock returned (err %v) on the wake-up %q while the lock is held", r.err, late)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock (hands the lock over)")
	r := recv(t, got, "waiter Lock after the hand-over")
	require.NoError(t, r.err, "call: waiter Lock")
	st, err := c.Inspect(e.ctx, name)
	require.NoError(t, err, "call: Inspect")
	assert.Equal(t, st.Mutex.Fence, r.l.Fence(), "call: waiter Lock: the lease of the handed-over grant")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
}
