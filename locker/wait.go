package locker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// attempt makes one try to acquire a lock. It returns the lease, or an
// error matching ErrNotObtained together with the longest pause before the
// next try (the holder's remaining TTL; 0 when unknown), or another error.
type attempt func(ctx context.Context) (*Lease, time.Duration, error)

// wakeSlack is added to a holder's remaining TTL before retrying, so the
// retry comes just after the key expired.
const wakeSlack = time.Millisecond

// wait runs try until it grants a lease or ctx is done: the blocking
// acquire of every lock type. After the first refusal it subscribes to the
// lock's wake channel (when the Scripter implements Subscriber) and tries
// again at once; from then on it retries on every wake-up, and otherwise
// when the holder's remaining TTL has passed. Without a subscription it
// polls with jittered exponential backoff from minDly to maxDly, never
// longer than the holder's remaining TTL. It returns ErrNotObtained joined
// with ctx.Err() when ctx ends first, and any error of try other than
// ErrNotObtained at once.
func (c *Client) wait(ctx context.Context, name string, try attempt) (*Lease, error) {
	if cerr := ctx.Err(); cerr != nil {
		return nil, notObtained(name, cerr)
	}
	delay := c.minDly
	var (
		timer  *time.Timer
		wake   <-chan struct{}
		joined bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		l, pttl, err := try(ctx)
		if err == nil {
			return l, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, notObtained(name, cerr)
		}
		if !errors.Is(err, ErrNotObtained) {
			return nil, err
		}
		if !joined {
			joined = true
			var leave func()
			wake, leave = c.joinWake(ctx, c.Key(name)+":wake")
			defer leave()
			if wake != nil {
				continue // a release may have come before the subscription
			}
		}
		var pause time.Duration
		if wake != nil {
			pause = c.maxDly
			if pttl > 0 {
				pause = pttl + wakeSlack
			}
		} else {
			pause = delay/2 + rand.N(delay/2+1)
			if pttl > 0 && pause > pttl {
				pause = pttl
			}
			delay = min(2*delay, c.maxDly)
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return nil, notObtained(name, ctx.Err())
		case <-wake:
		case <-timer.C:
		}
	}
}
