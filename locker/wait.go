package locker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// attempt makes one try to acquire a lock. It returns the lease, or an
// error matching ErrNotObtained together with the holder's remaining TTL
// (0 when unknown), or another error.
type attempt func(ctx context.Context) (*Lease, time.Duration, error)

// wait runs try until it grants a lease or ctx is done: the blocking
// acquire of every lock type. Between attempts it pauses with jittered
// exponential backoff from minDly to maxDly, never longer than the holder's
// remaining TTL. It returns ErrNotObtained joined with ctx.Err() when ctx
// ends first, and any error of try other than ErrNotObtained at once.
func (c *Client) wait(ctx context.Context, name string, try attempt) (*Lease, error) {
	if cerr := ctx.Err(); cerr != nil {
		return nil, notObtained(name, cerr)
	}
	delay := c.minDly
	var timer *time.Timer
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
		pause := delay/2 + rand.N(delay/2+1)
		if pttl > 0 && pause > pttl {
			pause = pttl
		}
		delay = min(2*delay, c.maxDly)
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return nil, notObtained(name, ctx.Err())
		case <-timer.C:
		}
	}
}
