package locker_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exerciseMutex runs every Mutex, Lease and Claim operation, and so every
// script that is not a read-write lock's (abandon, dequeue and unclaim
// through calls that fail or give up), with ttl on c over the fake f.
// Clean-ups run in the background: close c before counting them.
func exerciseMutex(t *testing.T, ctx context.Context, c *locker.Client, f *fakeScripter, ttl time.Duration) {
	t.Helper()
	for _, opts := range []*locker.MutexOptions{nil, {Owner: "o"}, {Owner: "r", Reentrant: true}, {FIFO: true}} {
		m := newMutex(t, c, "n", ttl, opts)
		l, err := m.TryLock(ctx)
		require.NoError(t, err)
		_, err = l.TTL(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Extend(ctx, ttl))
		require.NoError(t, l.Unlock(ctx))
		l, err = m.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))

		// A waiter gives up (a FIFO one leaves the queue).
		holding(f, 1000)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err = m.Lock(wctx)
		cancel()
		require.ErrorIs(t, err, locker.ErrNotObtained)
		// An acquire whose outcome is unknown is abandoned.
		f.fail(errBoom, "acquire")
		_, err = m.TryLock(ctx)
		require.ErrorIs(t, err, errBoom)
		f.handle(nil, "acquire")
	}
	_, err := c.Claim(ctx, "k", ttl)
	require.NoError(t, err)
	_, err = c.ClaimAs(ctx, "k", "tok", ttl)
	require.NoError(t, err)
	f.fail(errBoom, "claim")
	_, err = c.Claim(ctx, "k", ttl)
	require.ErrorIs(t, err, errBoom)
	f.handle(nil, "claim")
}

// TestNoClientClock checks that no script argument carries this process's
// clock: no ARGV parses as a number near the current Unix time in seconds,
// milliseconds, microseconds or nanoseconds (± one day). Every script runs,
// clean-ups included, with TTLs from MinTTL to MaxTTL, on a warm and on a
// cold script cache. (The conformance suite checks the read-write lock's
// calls on real Redis too.)
func TestNoClientClock(t *testing.T) {
	for _, cold := range []bool{false, true} {
		f := newFake()
		if cold { // also cover the SCRIPT LOAD and EVAL paths
			f = newColdFake()
			f.forget = true
		}
		c := clientOn(t, f, &locker.Options{MinRetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond})
		ctx := testCtx(t)
		for _, ttl := range []time.Duration{locker.MinTTL, 1500 * time.Millisecond, time.Hour, 24 * time.Hour, locker.MaxTTL} {
			exerciseMutex(t, ctx, c, f, ttl)
			exerciseRW(t, ctx, c, f, ttl)
		}
		require.NoError(t, c.Close())

		for _, name := range protocolScripts {
			assert.NotEmpty(t, f.runs(name), "%s never ran", name)
		}
		now := time.Now()
		type window struct {
			unit   string
			at, pm float64
		}
		windows := []window{
			{"s", float64(now.Unix()), 86400},
			{"ms", float64(now.UnixMilli()), 86400e3},
			{"µs", float64(now.UnixMicro()), 86400e6},
			{"ns", float64(now.UnixNano()), 86400e9},
		}
		for _, call := range f.Calls() {
			for _, a := range call.args {
				x, err := strconv.ParseFloat(a, 64)
				if err != nil {
					continue
				}
				for _, w := range windows {
					if math.Abs(x-w.at) <= w.pm {
						t.Errorf("%v: ARGV %q looks like the current Unix time in %s", call, a, w.unit)
					}
				}
			}
		}
	}
}
