package locker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

// TestMultiLockRedis checks all-or-none grants over names in several
// slots, exclusion with plain Mutexes of the same names, clean-up of a
// partial grant, and waiting woken by a release of any name.
func TestMultiLockRedis(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	ml, err := c.NewMultiLock([]string{"c", "a", "b", "a"}, 10*time.Second, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ml.Names())
	l, err := ml.TryLock(e.ctx)
	require.NoError(t, err)
	assert.Len(t, l.Parts(), 3)
	_, err = newMutex(t, c, "b", time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "a Mutex of a name the MultiLock holds")
	ttl, err := l.TTL(e.ctx)
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Second, ttl, float64(time.Second))
	require.NoError(t, l.Extend(e.ctx, 20*time.Second))

	other, err := c.NewMultiLock([]string{"b", "d"}, 10*time.Second, nil)
	require.NoError(t, err)
	_, err = other.TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "b is held")
	require.Eventually(t, func() bool {
		d, err := newMutex(t, c, "d", time.Second, nil).TryLock(e.ctx)
		if err != nil {
			return false
		}
		require.NoError(t, d.Unlock(e.ctx))
		return true
	}, 5*time.Second, 5*time.Millisecond, "d, granted in the refused attempt, is released again")

	got := make(chan *locker.MultiLease, 1)
	go func() {
		l, err := other.Lock(e.ctx)
		assert.NoError(t, err)
		got <- l
	}()
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	require.NoError(t, l.Unlock(e.ctx))
	o := <-got
	require.NotNil(t, o)
	assert.Less(t, time.Since(released), 2*time.Second, "woken by the release of b")
	require.NoError(t, o.Unlock(e.ctx))
	require.NoError(t, c.Close())
	assert.Empty(t, e.keys(), "no key left")
}
