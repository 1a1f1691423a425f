package locker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

func newSem(t testing.TB, c *locker.Client, name string, permits int, ttl time.Duration, opts *locker.SemaphoreOptions) *locker.Semaphore {
	t.Helper()
	s, err := c.NewSemaphore(name, permits, ttl, opts)
	require.NoError(t, err)
	return s
}

// TestSemaphoreRedisPermits checks counting, fences, expiry, SetPermits
// and that nothing is left once every hold is gone.
func TestSemaphoreRedisPermits(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	s := newSem(t, c, "s", 3, 10*time.Second, nil)
	a, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err)
	_, err = s.TryAcquire(e.ctx, 2)
	require.ErrorIs(t, err, locker.ErrNotObtained, "2 + 2 > 3")
	b, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	assert.Greater(t, b.Fence(), a.Fence(), "fences increase per name")
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "all 3 held")
	require.NoError(t, a.Unlock(e.ctx))
	c2, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "a's 2 permits are back")
	ttl, err := c2.TTL(e.ctx)
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Second, ttl, float64(time.Second))
	require.NoError(t, c2.Extend(e.ctx, 20*time.Second))
	ttl, err = c2.TTL(e.ctx)
	require.NoError(t, err)
	assert.InDelta(t, 20*time.Second, ttl, float64(time.Second))

	_, err = s.TryAcquire(e.ctx, 4)
	require.ErrorIs(t, err, locker.ErrInvalidOption, "more than the permits")
	_, err = s.TryAcquire(e.ctx, 0)
	require.ErrorIs(t, err, locker.ErrInvalidOption)

	// SetPermits lowers the limit for everyone; holds above it are kept.
	require.NoError(t, s.SetPermits(e.ctx, 1))
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "3 held, limit 1")
	require.NoError(t, b.Unlock(e.ctx))
	require.NoError(t, c2.Unlock(e.ctx))
	one, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "limit 1")
	_, err = s.TryAcquire(e.ctx, 2)
	require.ErrorIs(t, err, locker.ErrInvalidOption, "2 asked, limit 1 now")
	require.NoError(t, s.SetPermits(e.ctx, 0))
	two, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "each client's own limit again")
	require.NoError(t, one.Unlock(e.ctx))
	require.NoError(t, two.Unlock(e.ctx))
	assert.Empty(t, e.keys(), "no key once every hold is gone")

	// A holder that never releases gives its permits back after its TTL.
	short := newSem(t, c, "s", 3, 100*time.Millisecond, nil)
	_, err = short.TryAcquire(e.ctx, 3)
	require.NoError(t, err)
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	time.Sleep(150 * time.Millisecond)
	x, err := s.TryAcquire(e.ctx, 3)
	require.NoError(t, err, "the crashed holder's permits are back")
	require.NoError(t, x.Unlock(e.ctx))
	assert.Empty(t, e.keys())
}

// TestSemaphoreRedisFIFO checks that a large request is not overtaken:
// while it waits at the head, a later request for one free permit is
// refused, and the release of the held permit grants the large one.
func TestSemaphoreRedisFIFO(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	s := newSem(t, c, "f", 2, 10*time.Second, &locker.SemaphoreOptions{FIFO: true})
	held, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	got := make(chan *locker.Lease, 1)
	go func() {
		l, err := s.Acquire(e.ctx, 2)
		assert.NoError(t, err)
		got <- l
	}()
	require.Eventually(t, func() bool {
		l, err := s.TryAcquire(e.ctx, 1)
		if err == nil {
			require.NoError(t, l.Unlock(e.ctx)) // not queued yet
		}
		return err != nil
	}, 5*time.Second, 5*time.Millisecond, "a later TryAcquire(1) is refused while the request for 2 is queued")
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	start := time.Now()
	require.NoError(t, held.Unlock(e.ctx))
	big := <-got
	require.NotNil(t, big)
	assert.Less(t, time.Since(start), 2*time.Second, "woken by the release, not by polling")
	require.NoError(t, big.Unlock(e.ctx))
	// A waiter that gives up leaves the queue.
	h2, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	_, err = s.Acquire(ctx, 1)
	cancel()
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.NoError(t, h2.Unlock(e.ctx))
	require.NoError(t, c.Close(), "wait for the dequeue")
	// The Acquire's context may have ended during a call, whose id is then
	// refused for 30 s (an 'x:' field): no hold and no queue entry is left.
	for k := range e.hash(c.Key("f") + ":sem") {
		assert.False(t, strings.HasPrefix(k, "h:") || strings.HasPrefix(k, "q:"), "field %q left: nothing may be queued or held", k)
	}
	q, err := e.rdb.ZRangeArgs(e.ctx, redis.ZRangeArgs{Key: c.Key("f") + ":semq", Start: "(0", Stop: "+inf", ByScore: true}).Result()
	require.NoError(t, err)
	assert.Empty(t, q, "nobody queued")
}

// TestSemaphoreRedisAutoRefresh checks that an auto-refreshed semaphore
// lease outlives its TTL, and that its renewals keep the permit taken.
func TestSemaphoreRedisAutoRefresh(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	s := newSem(t, c, "r", 1, 200*time.Millisecond, &locker.SemaphoreOptions{AutoRefresh: true})
	l, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	time.Sleep(700 * time.Millisecond)
	assert.True(t, l.Valid(), "renewed past its TTL")
	assert.NoError(t, l.Err())
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "the permit is still taken")
	require.NoError(t, l.Unlock(e.ctx))
	assert.Empty(t, e.keys())
}
