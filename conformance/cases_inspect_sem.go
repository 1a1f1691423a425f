package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Inspect rules for semaphores and multi-locks.
func init() {
	inspectCases = insertBefore(inspectCases, "Inspect/BadInput",
		testCase{
			name:  "Inspect/Semaphore",
			rule:  "Inspect of a held semaphore reports its permit limit (and whether SetPermits stored it), the permits held, each holder (the Fingerprint of its lease's Token, its permits, its lease's fence and a TTL in (0, ttl]), oldest grant first, and the waiting Acquire calls with the oldest one's Fingerprint; the mutex and read-write lock of the name stay free, and once every permit is returned the name is Free.",
			check: checkInspectSemaphore,
		},
		testCase{
			name:  "Inspect/SemaphoreForceRelease",
			rule:  "ForceRelease with the time of an Inspect drops the semaphore holds seen (Forced.SemaphoreHolds), their leases' TTL reports ErrExpired, the permits wake a waiting Acquire, and calling it again with the same time drops nothing granted after that time.",
			check: checkInspectSemForce,
		},
		testCase{
			name:  "Inspect/MultiLockParts",
			rule:  "Inspect of each name of a held MultiLock reports a held mutex whose owner is the same Fingerprint on every name (that of each part's Token) with its part's fence, so an operator can tell the parts of one multi-lease.",
			check: checkInspectMultiParts,
		},
	)
}

func checkInspectSemaphore(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "inspect-sem", 30 * time.Second
	s := e.sem(c, name, 3, ttl, nil)
	one, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: TryAcquire(1)")
	two, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "call: TryAcquire(2)")
	w := e.startSemWaiter(name, 3, 1, ttl, nil, "Inspect/Semaphore")

	st := e.inspect(c, name)
	sem := st.Semaphore
	assert.Equal(t, 3, sem.Limit, "call: Inspect().Semaphore.Limit")
	assert.False(t, sem.LimitSet, "call: Inspect().Semaphore.LimitSet without SetPermits")
	assert.Equal(t, 3, sem.Held, "call: Inspect().Semaphore.Held")
	assert.Equal(t, 2, sem.Holds, "call: Inspect().Semaphore.Holds")
	require.Len(t, sem.Holders, 2, "call: Inspect().Semaphore.Holders")
	for i, l := range []*locker.Lease{one, two} {
		h := sem.Holders[i]
		assert.Equal(t, locker.Fingerprint(l.Token()), h.Owner, "call: holder %d's Owner, want the Fingerprint of its lease's Token", i)
		assert.NotContains(t, fmt.Sprintf("%+v", st), l.Token(), "call: Inspect's state shows no token")
		assert.Equal(t, i+1, h.Permits, "call: holder %d's Permits", i)
		assert.Equal(t, l.Fence(), h.Fence, "call: holder %d's Fence", i)
		assertTTL(t, h.TTL, ttl, fmt.Sprintf("holder %d's TTL", i))
	}
	assert.Equal(t, 1, sem.Waiting, "call: Inspect().Semaphore.Waiting with one Acquire waiting")
	assert.Len(t, sem.WaitingHead, locker.FingerprintLen, "call: Inspect().Semaphore.WaitingHead")
	assert.False(t, st.Mutex.Held, "call: Inspect().Mutex.Held: the mutex of the name is another lock")
	assert.Zero(t, st.RW.Readers, "call: Inspect().RW.Readers")
	assert.False(t, st.Free(), "call: Inspect().Free() while the semaphore is held")

	require.NoError(t, s.SetPermits(e.ctx, 5), "call: SetPermits(5)")
	third := w.granted(t, 5*time.Second, "after SetPermits(5)")
	st = e.inspect(c, name)
	assert.Equal(t, 5, st.Semaphore.Limit, "call: Inspect().Semaphore.Limit after SetPermits(5)")
	assert.True(t, st.Semaphore.LimitSet, "call: Inspect().Semaphore.LimitSet after SetPermits(5)")
	assert.Equal(t, 4, st.Semaphore.Held, "call: Inspect().Semaphore.Held after the waiter's grant")
	assert.Zero(t, st.Semaphore.Waiting, "call: Inspect().Semaphore.Waiting after the waiter's grant")
	require.NoError(t, s.SetPermits(e.ctx, 0), "call: SetPermits(0)")
	for _, l := range []*locker.Lease{one, two, third} {
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	}
	st = e.inspect(c, name)
	assert.True(t, st.Free(), "call: Inspect().Free() after every Unlock: %+v", st.Semaphore)
	assert.Zero(t, st.Semaphore.Holds, "call: Inspect().Semaphore.Holds after every Unlock")
}

func checkInspectSemForce(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "force-sem", 30 * time.Second
	s := e.sem(c, name, 1, ttl, nil)
	held, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: TryAcquire(1)")
	w := e.startSemWaiter(name, 1, 1, ttl, nil, "Inspect/SemaphoreForceRelease")

	st := e.inspect(c, name)
	require.Equal(t, 1, st.Semaphore.Holds, "call: Inspect().Semaphore.Holds before ForceRelease")
	f, err := c.ForceRelease(e.ctx, name, st.ServerTime)
	require.NoError(t, err, "call: ForceRelease(%q, Inspect().ServerTime)", name)
	assert.Equal(t, locker.Forced{SemaphoreHolds: 1}, f, "call: ForceRelease(%q)", name)
	_, err = held.TTL(e.ctx)
	assert.True(t, errors.Is(err, locker.ErrExpired), "call: TTL of the force-released semaphore lease: got %v, want ErrExpired", err)

	next := w.granted(t, 5*time.Second, "after ForceRelease")
	assert.Greater(t, next.Fence(), held.Fence(), "call: the next holder's Fence, want above the force-released one")
	f, err = c.ForceRelease(e.ctx, name, st.ServerTime)
	require.NoError(t, err, "call: ForceRelease again with the same time")
	assert.Equal(t, locker.Forced{}, f, "call: ForceRelease again with the same time")
	_, err = next.TTL(e.ctx)
	assert.NoError(t, err, "call: TTL of the semaphore lease granted after the ForceRelease's time")
	require.NoError(t, next.Unlock(e.ctx), "call: Unlock of the next holder")
	_ = held.Unlock(e.ctx)
}

func checkInspectMultiParts(t *testing.T, e *env) {
	c := e.client(nil)
	names := []string{"parts-a", "parts-b", "parts-c", "parts-d"}
	ml, err := e.multi(c, names, 30*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: MultiLock.TryLock(%v)", names)
	parts := ml.Parts()
	require.Len(t, parts, len(names), "call: MultiLease.Parts()")
	want := locker.Fingerprint(parts[0].Token())
	for i, n := range names {
		st := e.inspect(c, n)
		assert.True(t, st.Mutex.Held, "call: Inspect(%q).Mutex.Held", n)
		assert.Equal(t, locker.Fingerprint(parts[i].Token()), st.Mutex.Owner, "call: Inspect(%q).Mutex.Owner, want its part's Fingerprint", n)
		assert.Equal(t, want, st.Mutex.Owner, "call: Inspect(%q).Mutex.Owner, want the same owner on every name", n)
		assert.Equal(t, parts[i].Fence(), st.Mutex.Fence, "call: Inspect(%q).Mutex.Fence, want its part's fence", n)
	}
	require.NoError(t, ml.Unlock(e.ctx), "call: MultiLease.Unlock")
}
