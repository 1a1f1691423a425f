package locker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Client creates locks on one Redis deployment through a Scripter. It holds
// no connection of its own: the Scripter's client does. A Client is safe for
// concurrent use; create one per Redis deployment and share it.
type Client struct {
	s      Scripter
	prefix string
	drift  float64
	minDly time.Duration
	maxDly time.Duration
	outage time.Duration
	obs    Observer     // nil: no events
	acker  Acknowledger // set with Options.Ack: s, acknowledging writes
	ack    Ack
	closed atomic.Bool
	done   chan struct{} // closed by Close: blocked Locks return

	opMu    sync.Mutex    // guards ops and opsDone
	ops     int           // operations in flight that may schedule clean-ups
	opsDone chan struct{} // closed when ops drops to 0 during Close

	refresher *refresher // auto-refresh, see refresh.go
	wake      wakeHub    // push wake-ups, see wake.go
	slots     slotPool   // waiters' own channels, see slots.go
	hints     hints      // calls waiting per kind and name, see hint.go
	jan       *janitor   // background clean-ups, see cleanup.go
}

// New returns a Client that runs its scripts through s. It does not contact
// Redis: scripts are loaded on first use. It fails with ErrNilScripter when s
// is nil and with ErrInvalidOption when a field of opts is out of range, or
// when opts.Ack is set and s does not implement Acknowledger.
func New(s Scripter, opts *Options) (*Client, error) {
	if s == nil {
		return nil, ErrNilScripter
	}
	switch v := reflect.ValueOf(s); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		if v.IsNil() {
			return nil, fmt.Errorf("%w: %T is nil", ErrNilScripter, s)
		}
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{s: s, prefix: o.Prefix, drift: o.DriftFactor, minDly: o.MinRetryDelay, maxDly: o.MaxRetryDelay,
		outage: o.UnreachableTimeout, done: make(chan struct{}), jan: newJanitor(), obs: o.Observer}
	if o.Ack != nil {
		a, ok := s.(Acknowledger)
		if !ok {
			return nil, fmt.Errorf("%w: Ack needs a Scripter that implements locker.Acknowledger; %T does not", ErrInvalidOption, s)
		}
		c.acker, c.ack = a, *o.Ack
	}
	c.refresher = newRefresher(c)
	return c, nil
}

// Close marks the Client closed: every later call on it, its locks and its
// leases returns ErrClosed, except Lease.Unlock, which still releases. A
// Lock or RLock waiting meanwhile returns ErrClosed, and a grant that
// arrives after Close started is released, not returned. Close stops
// auto-refresh, waiting for refresh calls in flight to return (they are
// cancelled), and gives background clean-ups (of calls whose outcome was
// unknown) up to one second before cancelling them, so no goroutine of the
// Client outlives Close. Close does not release held locks (they expire
// with their TTL; leases that were auto-refreshed report Lost at their
// validity deadline) and does not close the Scripter's Redis client, which
// the caller owns. Close is idempotent.
func (c *Client) Close() error {
	c.opMu.Lock()
	if c.closed.Swap(true) {
		c.opMu.Unlock()
		return nil
	}
	var drained chan struct{}
	if c.ops > 0 {
		drained = make(chan struct{})
		c.opsDone = drained
	}
	c.opMu.Unlock()
	close(c.done)
	if drained != nil {
		// Blocked Locks return now; let them schedule their clean-ups.
		t := time.NewTimer(closeGrace)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
	}
	c.refresher.close()
	c.jan.close()
	return nil
}

// begin starts an operation that may schedule clean-ups, so that Close
// lets it do so before it stops the janitor: it checks the Client and ctx
// as check does; the caller ends the operation with end.
func (c *Client) begin(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	c.ops++
	return nil
}

// end ends an operation started by begin.
func (c *Client) end() {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.ops--; c.ops == 0 && c.opsDone != nil {
		close(c.opsDone)
		c.opsDone = nil
	}
}

// check returns ErrClosed after Close and an error for a nil ctx.
func (c *Client) check(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if ctx == nil {
		return ErrNilContext
	}
	return nil
}

// validity returns the local validity deadline of a lease granted for ttl
// by a call that started at start: TTL minus the drift margin, on the
// monotonic clock.
func (c *Client) validity(start time.Time, ttlMS int64) time.Time {
	return start.Add(time.Duration(ttlMS)*time.Millisecond - c.margin(ttlMS))
}

// margin is the drift margin a lease of ttlMS subtracts from its validity:
// DriftFactor of the TTL plus 2 ms.
func (c *Client) margin(ttlMS int64) time.Duration {
	return time.Duration(float64(time.Duration(ttlMS)*time.Millisecond)*c.drift) + 2*time.Millisecond
}

// Claim marks key as claimed for ttl if nobody has claimed it yet, and
// reports whether this call was the first: among any number of concurrent
// callers exactly one gets true until the marker expires. It is the
// idempotent "first one wins" check for deduplicating messages. A re-sent
// call (a client's network retry) of the winner still reports true. The
// marker is never released early; it expires after ttl. Claim blocks for one
// round trip (and, first, until a clean-up of an earlier Claim of key on this
// Client has finished). It fails with ErrInvalidName, ErrInvalidTTL,
// ErrClosed, ErrNilContext or the Scripter's error, and then claims nothing:
// when the call's outcome is unknown (ctx ended, connection broke), a
// background clean-up drops the marker if this call set it and has Redis
// refuse the call should it arrive later, so that a retried Claim can win.
func (c *Client) Claim(ctx context.Context, key string, ttl time.Duration) (first bool, err error) {
	return c.claim(ctx, key, newToken(), ttl, true)
}

// ClaimAs is Claim with a token the caller chooses (at most MaxNameLen
// bytes, not empty): the same token reports true again for as long as it
// holds the claim, so a caller that lost a reply can call ClaimAs again with
// the same token and learn that it won. Nothing is cleaned up after a
// failed call: the outcome is the caller's to learn by calling again. It
// fails as Claim does, and with ErrInvalidOption for a bad token.
func (c *Client) ClaimAs(ctx context.Context, key, token string, ttl time.Duration) (first bool, err error) {
	if token == "" || len(token) > MaxNameLen {
		return false, fmt.Errorf("%w: claim token must have 1 to MaxNameLen (%d) bytes", ErrInvalidOption, MaxNameLen)
	}
	return c.claim(ctx, key, token, ttl, false)
}

// claim runs claim.lua with token; abandon cleans up after an unknown outcome.
func (c *Client) claim(ctx context.Context, key, token string, ttl time.Duration, abandon bool) (bool, error) {
	err := c.begin(ctx)
	if err != nil {
		return false, err
	}
	defer c.end()
	if err := validName(key); err != nil {
		return false, err
	}
	ms, err := validTTL(ttl)
	if err != nil {
		return false, err
	}
	keys := []string{c.claimKey(key)}
	if err := c.awaitCleanup(ctx, keys[0]); err != nil {
		return false, fmt.Errorf("locker: claim %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("locker: claim %q: %w", key, err) // nothing sent: nothing to clean up
	}
	r, _, err := c.retryTransient(ctx, scriptClaim, func() (any, error) {
		return c.run(ctx, scriptClaim, keys, []string{token, strconv.FormatInt(ms, 10)})
	})
	var n int64
	if err == nil {
		n, err = replyInt(scriptClaim, r)
		if err == nil && n != 0 && n != 1 {
			err = fmt.Errorf("%w: claim status %d", ErrUnexpectedReply, n)
		}
	}
	if err != nil {
		if abandon && !answered(err) {
			c.later(keys[0], time.Time{}, func(ctx context.Context) error {
				_, err := c.run(ctx, scriptUnclaim, keys, []string{token, abandonedMS})
				return err
			})
		}
		return false, err
	}
	return n == 1, nil
}

// newToken returns 128 random bits from crypto/rand, base64url-encoded.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
