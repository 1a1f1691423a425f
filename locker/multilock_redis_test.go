package locker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestMultiLockRedisFIFOExpiredHead checks that a MultiLock sees a name's
// FIFO queue as a Mutex does: a head whose entry expired (a crashed
// waiter) is skipped, and the live waiter behind it goes first; with no
// live waiter left, the MultiLock is granted.
func TestMultiLockRedisFIFOExpiredHead(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	k := c.Key("q")
	nowMS := e.micros() / 1000
	entry := func(exp int64) string { return strconv.FormatInt(exp, 10) + ":10000:" }
	e.do("ZADD", k+":q", 1, "dead", 2, "live")
	e.do("HSET", k+":qx", "#", 2, "dead", entry(nowMS-1000), "live", entry(nowMS+60000))
	e.do("PEXPIRE", k+":q", time.Minute.Milliseconds())
	e.do("PEXPIRE", k+":qx", time.Minute.Milliseconds())

	ml, err := c.NewMultiLock([]string{"q", "r"}, 10*time.Second, nil)
	require.NoError(t, err)
	_, err = ml.TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "MultiLock.TryLock with a live waiter behind an expired head")
	assert.Equal(t, []string{"dead", "live"}, e.strs(e.do("ZRANGE", k+":q", 0, -1)), "the MultiLock leaves the queue as it is")
	_, err = newMutex(t, c, "q", time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "Mutex.TryLock in the same state")
	assert.Equal(t, []string{"live"}, e.strs(e.do("ZRANGE", k+":q", 0, -1)), "the Mutex drops the expired head")

	// The live waiter's entry expires too: nobody goes first. The first
	// attempt may have been granted "r" (its own slot) and is releasing it
	// in the background: wait for that, as a refused attempt promises.
	e.do("HSET", k+":qx", "live", entry(nowMS-1))
	require.Eventually(t, func() bool { return e.do("EXISTS", c.Key("r")) == int64(0) }, 5*time.Second, time.Millisecond,
		"the first attempt's grant of r, if any, is released in the background")
	l, err := ml.TryLock(e.ctx)
	require.NoError(t, err, "MultiLock.TryLock with only expired waiters queued")
	require.NoError(t, l.Unlock(e.ctx))
}
