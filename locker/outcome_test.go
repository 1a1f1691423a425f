package locker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errLoading is a passing state: the call did not run.
var errLoading = locker.NewServerError("LOADING Redis is loading the dataset in memory", nil)

// unknownThenPassing answers the first run with a lost reply (errConn)
// and every later run with errLoading, counting the runs in n.
func unknownThenPassing(n *atomic.Int32) handler {
	return func(context.Context, call) (any, error) {
		if n.Add(1) == 1 {
			return nil, errConn
		}
		return nil, errLoading
	}
}

// TestRetryKeepsUnknown checks that a retried call whose first try got no
// answer stays unknown when every later try is answered with a passing
// state: each caller takes its unknown-outcome path.
func TestRetryKeepsUnknown(t *testing.T) {
	t.Run("Extend", func(t *testing.T) {
		t.Parallel()
		_, f, ctx, l := heldMutex(t)
		var n atomic.Int32
		f.handle(unknownThenPassing(&n), "extend")
		start := time.Now()
		err := l.Extend(ctx, time.Second)
		require.ErrorIs(t, err, errLoading)
		require.ErrorIs(t, err, errConn, "the error names the try whose outcome is unknown")
		assert.Greater(t, n.Load(), int32(2), "tries of the extend")
		assert.False(t, l.ValidUntil().After(start.Add(time.Second)),
			"validity %v after the call's start, want at most 1s: the first try may have set 1s", l.ValidUntil().Sub(start))
	})
	t.Run("Unlock", func(t *testing.T) {
		t.Parallel()
		c, f, ctx, l := heldMutex(t)
		var n atomic.Int32
		f.handle(unknownThenPassing(&n), "release")
		err := l.Unlock(ctx)
		require.ErrorIs(t, err, errLoading)
		assert.False(t, l.Valid(), "a lease whose release may have run is ended")
		tries := n.Load()
		f.handle(nil, "release")
		require.NoError(t, c.Close(), "Close waits for the background release")
		assert.Greater(t, int32(len(f.runs("release"))), tries, "the release is retried in the background")
	})
	t.Run("Claim", func(t *testing.T) {
		t.Parallel()
		c, f := newClient(t, nil)
		var n atomic.Int32
		f.handle(unknownThenPassing(&n), "claim")
		_, err := c.Claim(testCtx(t), "k", 30*time.Second)
		require.ErrorIs(t, err, errLoading)
		require.NoError(t, c.Close(), "Close waits for the clean-up")
		un := f.runs("unclaim")
		require.Len(t, un, 1, "the claim that may have run is cleaned up")
		assert.Equal(t, f.runs("claim")[0].args[0], un[0].args[0], "the clean-up names the call's token")
	})
}

// TestUnlockAnsweredThenTruth checks that tries answered with a passing
// state do not make a later "expired" or "held by another owner" reply
// count as released: only a try whose outcome is unknown may have
// released the lock.
func TestUnlockAnsweredThenTruth(t *testing.T) {
	for _, tc := range []struct {
		status int64
		want   error
	}{{-1, locker.ErrHeldByOther}, {0, locker.ErrExpired}} {
		t.Run(tc.want.Error(), func(t *testing.T) {
			_, f, ctx, l := heldMutex(t)
			var n atomic.Int32
			f.handle(func(context.Context, call) (any, error) {
				if n.Add(1) == 1 {
					return nil, errLoading
				}
				return tc.status, nil
			}, "release")
			require.ErrorIs(t, l.Unlock(ctx), tc.want)
			assert.Equal(t, int32(2), n.Load(), "tries of the release")
		})
	}
}

// TestServerErrorCode checks the code a ServerError takes from its reply
// and that only NOSCRIPT matches ErrNoScript.
func TestServerErrorCode(t *testing.T) {
	e := locker.NewServerError("NOSCRIPT No matching script.", nil)
	assert.Equal(t, "NOSCRIPT", e.Code)
	require.ErrorIs(t, e, locker.ErrNoScript)
	w := locker.NewServerError("WRONGTYPE Operation against a key", errConn)
	assert.Equal(t, "WRONGTYPE", w.Code)
	assert.NotErrorIs(t, w, locker.ErrNoScript)
	require.ErrorIs(t, w, errConn, "it wraps the client's error")
	assert.Equal(t, "ERR", locker.NewServerError("ERR", nil).Code)
}
