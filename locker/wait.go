package locker

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
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
// ErrNotObtained at once, unless it is transient (a broken or refused
// connection), which it retries with backoff like a refusal.
func (c *Client) wait(ctx context.Context, name string, try attempt) (*Lease, error) {
	if cerr := ctx.Err(); cerr != nil {
		return nil, notObtained(name, cerr)
	}
	delay := c.minDly
	var (
		timer   *time.Timer
		wake    <-chan struct{}
		joined  bool
		lastErr error // the last transient error, reported if ctx ends
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
			return nil, notObtained(name, errors.Join(cerr, lastErr))
		}
		broken := !errors.Is(err, ErrNotObtained)
		if broken {
			if !transient(err) {
				return nil, err
			}
			lastErr = err // the connection failed: back off and try again
			pttl = 0
		} else {
			lastErr = nil
		}
		if !joined && !broken {
			joined = true
			var leave func()
			wake, leave = c.joinWake(ctx, c.Key(name)+":wake")
			defer leave()
			if wake != nil {
				continue // a release may have come before the subscription
			}
		}
		var pause time.Duration
		if wake != nil && !broken {
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
			return nil, notObtained(name, errors.Join(ctx.Err(), lastErr))
		case <-wake:
		case <-timer.C:
		}
	}
}

// transient reports whether err is a connection failure that a retry on a
// fresh connection may cure: a network error, EOF, a reset, refused or
// broken connection. Server error replies (NOPERM, WRONGTYPE, ...) are not.
func transient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
