package locker_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

// TestNoClientClock checks that no script argument carries this process's
// clock: no ARGV parses as a number near the current Unix time in seconds,
// milliseconds, microseconds or nanoseconds (± one day).
func TestNoClientClock(t *testing.T) {
	for _, cold := range []bool{false, true} {
		f := newFake()
		if cold { // also cover the SCRIPT LOAD and EVAL paths
			f = newColdFake()
			f.forget = true
		}
		withRW(f) // the read-write lock's scripts, emulated
		c, err := locker.New(f, nil)
		require.NoError(t, err)
		ctx := testCtx(t)
		for _, ttl := range []time.Duration{locker.MinTTL, 1500 * time.Millisecond, time.Hour, 24 * time.Hour, locker.MaxTTL} {
			for _, opts := range []*locker.MutexOptions{nil, {Owner: "o"}, {Owner: "r", Reentrant: true}} {
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
			}
			_, err := c.Claim(ctx, "k", ttl)
			require.NoError(t, err)
			exerciseRW(t, ctx, c, f, ttl) // every rw_*.lua script, see rw_test.go
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
		calls := f.Calls()
		require.NotEmpty(t, calls)
		for _, call := range calls {
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
