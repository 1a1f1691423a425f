package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimCases check Claim, the "first one wins" marker.
var claimCases = []testCase{
	{
		name:  "Claim/OneWinner",
		rule:  "Among 50 concurrent Claim calls on one key exactly one reports first; after the TTL a new Claim is first again.",
		check: checkClaimOneWinner,
	},
}

func checkClaimOneWinner(t *testing.T, e *env) {
	c := e.client(nil)
	const n = 50
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		firsts atomic.Int32
		errs   = make(chan error, n)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// The marker outlives the slowest of the 50 calls on a loaded
			// machine: a call that ran after it expired would rightly be first.
			first, err := c.Claim(e.ctx, "msg-42", 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			if first {
				firsts.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "call: Claim")
	}
	assert.Equal(t, int32(1), firsts.Load(), "call: 50 x Claim(msg-42): callers told first")

	// Expiry, on a key of its own with a short marker.
	first, err := c.Claim(e.ctx, "msg-43", 300*time.Millisecond)
	require.NoError(t, err, "call: Claim(msg-43)")
	require.True(t, first, "call: Claim(msg-43) on a fresh key: want first")
	e.until(t, func() bool {
		first, err := c.Claim(e.ctx, "msg-43", time.Second)
		return err == nil && first
	}, 5*time.Second, "call: Claim after the 300ms marker expired: want first")
}
