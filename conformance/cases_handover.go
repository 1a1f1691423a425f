package conformance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handoverCases check the direct FIFO hand-over.
var handoverCases = []testCase{
	{
		name: "FIFO/DirectHandover",
		rule: "A FIFO lease's Unlock hands the lock to the first queued waiter in the same call: the lock is held again when Unlock returns, " +
			"although the waiters' process cannot send anything; that waiter's Lock then returns a lease of that very grant (its fence), " +
			"and the other waiters are not woken by it: their process makes fewer acquire calls than there are waiters.",
		check: checkDirectHandover,
	},
}

// gatedScripter holds every script call back while closed (calls already
// on their way finish first); Subscribe passes through, so its waiters
// still hear their wake-ups.
type gatedScripter struct {
	*countingScripter
	gate sync.RWMutex
}

func (g *gatedScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	g.gate.RLock()
	defer g.gate.RUnlock()
	return g.countingScripter.EvalSha(ctx, sha, keys, args)
}

func (g *gatedScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	g.gate.RLock()
	defer g.gate.RUnlock()
	return g.countingScripter.Eval(ctx, src, keys, args)
}

// entryRefresh is how often a FIFO waiter refreshes its queue entry (5 s)
// with a call of its own, a third of it: a rule that counts a waiter's
// calls and took that long may count that call too.
const entryRefresh = 1600 * time.Millisecond

func checkDirectHandover(t *testing.T, e *env) {
	const waiters = 6
	c := e.client(nil)
	fifo := &locker.MutexOptions{FIFO: true}
	h, err := e.mutex(c, "handover", 30*time.Second, fifo).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	g := &gatedScripter{countingScripter: &countingScripter{Scripter: e.s}}
	wc := e.clientOn(g, nil)
	results := make([]<-chan lockResult, waiters)
	queued := time.Now()
	for i := range waiters {
		results[i] = lockAsync(e.ctx, e.mutex(wc, "handover", 30*time.Second, fifo))
		e.awaitQueue(c, "handover", int64(i+1)) // arrival order is the order started
		// A waiter subscribes to its wake-up after its first refusal and
		// then tries once more: after its second call it listens (on a
		// slow link, a hand-over published before that is not heard, and
		// the waiter finds it only when it refreshes its entry).
		e.awaitCalls(t, g.countingScripter, int64(2*(i+1)), fmt.Sprintf("waiter %d's second try, once subscribed", i))
	}

	g.gate.Lock() // the waiters' process can send nothing now
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	st, err := c.Inspect(e.ctx, "handover")
	require.NoError(t, err, "call: Inspect after Unlock")
	assert.True(t, st.Mutex.Held, "call: Inspect after Unlock: the lock must be held already (handed over), not free")
	assert.NotEqual(t, h.Fence(), st.Mutex.Fence, "call: Inspect after Unlock: a new grant's fence")
	assert.Equal(t, waiters-1, st.Mutex.Queue, "call: Inspect after Unlock: the head left the queue")
	before := g.calls()
	g.gate.Unlock()

	var first lockResult
	select {
	case first = <-results[0]:
	case <-time.After(10 * time.Second):
		t.Fatal("call: Lock of the first waiter: not granted 10s after the hand-over")
	}
	require.NoError(t, first.err, "call: Lock of the first waiter")
	calls := g.calls() - before
	assert.Equal(t, st.Mutex.Fence, first.l.Fence(), "call: Lock of the first waiter: the lease of the handed-over grant")
	if took := time.Since(queued); calls >= waiters && took >= entryRefresh {
		e.tooLate(t, fmt.Sprintf("script calls of the waiters' process from the hand-over to the grant: %d; the waiters queued %v before, past their entries' refresh (%v)", calls, took.Round(time.Millisecond), entryRefresh))
	}
	assert.Less(t, calls, int64(waiters), "script calls of the waiters' process from the hand-over to the grant: only the head is woken")

	// The rest follow in order, each by a hand-over.
	for i := 1; i < waiters; i++ {
		require.NoError(t, first.l.Unlock(e.ctx), "call: Unlock")
		select {
		case first = <-results[i]:
		case <-time.After(10 * time.Second):
			t.Fatalf("call: Lock of waiter %d: not granted 10s after the previous Unlock", i)
		}
		require.NoError(t, first.err, "call: Lock of waiter %d", i)
	}
	require.NoError(t, first.l.Unlock(e.ctx), "call: Unlock")
}
