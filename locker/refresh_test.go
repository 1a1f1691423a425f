package locker_test

// Auto-refresh through a Batcher: refreshes that fall due together go out
// in one batch call, and a batch result of NOSCRIPT falls back to a
// refresh of its own (which loads the script).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batchingFake is a fake Scripter that implements locker.Batcher by
// running each call through the fake, recording each batch's size.
type batchingFake struct {
	*fakeScripter
	noScript atomic.Bool // answer every batched call with NOSCRIPT
	mu       sync.Mutex
	sizes    []int
}

func (b *batchingFake) EvalShaBatch(ctx context.Context, calls []locker.ScriptCall) []locker.ScriptResult {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(calls))
	b.mu.Unlock()
	out := make([]locker.ScriptResult, len(calls))
	for i, c := range calls {
		if b.noScript.Load() {
			out[i].Err = fmt.Errorf("%w: NOSCRIPT (batch)", locker.ErrNoScript)
			continue
		}
		out[i].Reply, out[i].Err = b.EvalSha(ctx, c.SHA1, c.Keys, c.Args)
	}
	return out
}

func (b *batchingFake) batched() (sizes []int, calls int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range b.sizes {
		calls += n
	}
	return append([]int(nil), b.sizes...), calls
}

func holdRefreshed(t *testing.T, c *locker.Client, n int) []*locker.Lease {
	t.Helper()
	var ls []*locker.Lease
	for i := range n {
		l, err := newMutex(t, c, fmt.Sprint("r", i), 300*time.Millisecond, &locker.MutexOptions{AutoRefresh: true}).TryLock(testCtx(t))
		require.NoError(t, err)
		ls = append(ls, l)
	}
	return ls
}

func TestRefreshesBatched(t *testing.T) {
	b := &batchingFake{fakeScripter: newFake()}
	c := clientOn(t, b, nil)
	const n = 50
	ls := holdRefreshed(t, c, n)
	require.Eventually(t, func() bool { _, calls := b.batched(); return calls >= n }, 2*time.Second, time.Millisecond,
		"every lease refreshed through the Batcher")
	sizes, _ := b.batched()
	assert.Less(t, len(sizes), n/2, "leases due together are refreshed together (batches of %v)", sizes) // one call each would be n
	for _, l := range ls {
		assert.True(t, l.Valid(), "the lease is still valid")
		require.NoError(t, l.Unlock(testCtx(t)))
	}
}

func TestRefreshesBatchNoScript(t *testing.T) {
	b := &batchingFake{fakeScripter: newFake()}
	b.noScript.Store(true)
	c := clientOn(t, b, nil)
	const n = 5
	ls := holdRefreshed(t, c, n)
	require.Eventually(t, func() bool { return len(b.runs("extend")) >= n }, 2*time.Second, time.Millisecond,
		"a NOSCRIPT batch result is refreshed on its own")
	for _, l := range ls {
		assert.True(t, l.Valid(), "the lease is still valid")
		require.NoError(t, l.Unlock(testCtx(t)))
	}
}
