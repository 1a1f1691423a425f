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
// ErrNotObtained at once, unless it is transient (a broken or refused
// connection), which it retries with backoff like a refusal. When ctx has
// no deadline, connection failures (transient errors that are not server
// answers) end the call with ErrUnreachable once the first of them since
// the server last answered is c.outage old.
//
// With alone set (a Mutex that is not FIFO: one waiter can take a released
// lock), a message wakes one waiter of this Client rather than all of them;
// a waiter that was woken and could not try (its context ended) hands the
// wake-up on.
//
// With own set, it also listens on those channels: a FIFO waiter's own
// channel (a release that hands the lock, or permits, to this waiter wakes
// only it), or a MultiLock's other names.
func (c *Client) wait(ctx context.Context, name string, alone bool, own []string, try attempt) (*Lease, error) {
	return c.waitJoin(ctx, name, alone, own, 0, try)
}

// waitJoin is wait with subscribing to the wake channels bounded by
// joinFor (0: by ctx alone), for a lock over several deployments, where
// the one wait subscribes on may be the one that is silent.
func (c *Client) waitJoin(ctx context.Context, name string, alone bool, own []string, joinFor time.Duration, try attempt) (*Lease, error) {
	return c.waitStarve(ctx, name, alone, own, joinFor, starving{}, try)
}

// starving makes a waiter switch, once it has waited after (from the
// start of the wait), from barging to being handed the lock: before the
// first try past that point the wait loop calls join, which returns the
// waiter's own channel (a release that hands it the lock wakes it there;
// "" for none), subscribes to it, and from then on listens there too. The
// tries after it see the switch through what join set. A waiter asleep at
// the threshold wakes for it; early, when set, switches it before the
// threshold once it reports true (checked after each refusal). With now
// set, the waiter subscribes (to the lock's wake channel and own's) before
// its first try, so that a refusal needs no second try to cover a wake-up
// sent before the subscription; with early reporting true as well, it
// also starves before its first try: it joins its own channel first, and
// that try is already a starving waiter's, saving the refused try that
// would only learn it must starve. handed, when set, gets the payload of every
// message with one on the waiter's own channels (own's and join's): the
// grant of a release that handed the lock to this waiter (see
// Subscriber); the try after the wake-up may take it. The zero starving
// never switches.
type starving struct {
	after  time.Duration
	from   time.Time   // the start of the wait, when the caller has it (zero: now)
	now    bool        // subscribe before the first try, and starve from it with early (see above)
	early  func() bool // when set and true, starve now (after the next refusal's subscription)
	join   func() string
	handed func(payload string)
}

// waitStarve is waitJoin with a switch to starvation (see starving).
func (c *Client) waitStarve(ctx context.Context, name string, alone bool, own []string, joinFor time.Duration, sv starving, try attempt) (*Lease, error) {
	if cerr := ctx.Err(); cerr != nil {
		return nil, notObtained(name, cerr)
	}
	delay := c.minDly
	var (
		timer   *time.Timer
		wake    <-chan struct{}
		joined  bool
		lastErr error // the last transient error, reported if ctx ends
		woken   bool  // the try about to run follows a wake-up
		leave   = func(handOn bool) {}
		mine    chan struct{} // own's wake-ups (nil: none)
		leaveMe = func(bool) {}
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	defer func() { leave(woken); leaveMe(false) }()
	// Connection failures end the call once down is limit old; a ctx
	// deadline bounds the call instead.
	var down time.Time // the first connection failure since the server last answered
	limit := c.outage
	if _, ok := ctx.Deadline(); ok {
		limit = 0
	}
	var starveAt time.Time // when the waiter starves; zero: never, or it does already
	if sv.after > 0 {
		if sv.from.IsZero() {
			sv.from = time.Now()
		}
		starveAt = sv.from.Add(sv.after)
	}
	// subscribe joins the lock's wake channel (and own's), once.
	subscribe := func() {
		joined = true
		jctx, cancel := ctx, context.CancelFunc(func() {})
		if joinFor > 0 {
			jctx, cancel = context.WithTimeout(ctx, joinFor)
		}
		wake, leave = c.joinWake(jctx, c.Key(name)+":wake", alone)
		cancel()
		if wake != nil && len(own) > 0 {
			ch := make(chan struct{}, 1)
			var leaves []func(bool)
			for _, o := range own {
				if w, l := c.joinWakeInto(ctx, o, waker{handed: sv.handed}, ch); w != nil {
					mine, leaves = ch, append(leaves, l)
				}
			}
			leaveMe = func(h bool) {
				for _, l := range leaves {
					l(h)
				}
			}
		}
	}
	if sv.now {
		subscribe() // before the first try (see starving)
	}
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		if joined && !starveAt.IsZero() && (!time.Now().Before(starveAt) || sv.early != nil && sv.early()) {
			// Listen on the waiter's own channel before the try that
			// makes it a starving waiter, so the hand-over's wake-up
			// cannot come first.
			starveAt = time.Time{}
			ch := sv.join()
			if wake != nil && ch != "" {
				me := mine
				if me == nil {
					me = make(chan struct{}, 1)
				}
				if w, l := c.joinWakeInto(ctx, ch, waker{handed: sv.handed}, me); w != nil {
					mine = me
					prev := leaveMe
					leaveMe = func(h bool) { prev(h); l(h) }
				}
			}
		}
		l, pttl, err := try(ctx)
		if err == nil || errors.Is(err, ErrClosed) {
			woken = false
			return l, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, notObtained(name, errors.Join(cerr, lastErr)) // a wake-up, if any, is handed on
		}
		woken = false
		broken := !errors.Is(err, ErrNotObtained)
		if broken {
			if !transient(err) {
				return nil, err
			}
			lastErr = err // the connection failed: back off and try again
			if answered(err) {
				down = time.Time{} // a passing state (TRYAGAIN, LOADING, ...): the server answered
			} else if down.IsZero() {
				down = time.Now()
			}
			if limit > 0 && !down.IsZero() && time.Since(down) >= limit {
				return nil, unreachable(name, time.Since(down), err)
			}
			c.observe(ctx, Event{Kind: EventRetry, Lock: name, Err: err})
			pttl = 0
		} else {
			lastErr = nil
			down = time.Time{}
		}
		if !joined && !broken {
			subscribe()
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
		if broken && limit > 0 && !down.IsZero() {
			pause = max(0, min(pause, limit-time.Since(down))) // one more try as the bound passes
		}
		if !starveAt.IsZero() && joined {
			pause = max(0, min(pause, time.Until(starveAt))) // starve on time, even unwoken
			if sv.early != nil && sv.early() {
				pause = 0
			}
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return nil, notObtained(name, errors.Join(ctx.Err(), lastErr))
		case <-c.done:
			return nil, ErrClosed
		case <-wake:
			woken = true
			c.observe(ctx, Event{Kind: EventWake, Lock: name})
		case <-mine:
			c.observe(ctx, Event{Kind: EventWake, Lock: name})
		case <-timer.C:
		}
	}
}

// waitFor is wait for a lock kind whose grant is more than one Lease (a
// MultiLease, a QuorumLease): try makes one attempt (waited: not the
// first) and returns the grant and one of its parts, which wait needs;
// joinFor bounds subscribing (see waitJoin); waitFor returns the grant
// and the number of attempts.
func waitFor[G any](c *Client, ctx context.Context, name string, own []string, joinFor time.Duration, try func(ctx context.Context, waited bool) (G, *Lease, time.Duration, error)) (G, int, error) {
	var (
		out   G
		tries int
	)
	_, err := c.waitJoin(ctx, name, false, own, joinFor, func(ctx context.Context) (*Lease, time.Duration, error) {
		tries++
		g, part, pttl, err := try(ctx, tries > 1)
		if err != nil {
			return nil, pttl, err
		}
		out = g
		return part, 0, nil
	})
	if err != nil {
		var none G
		return none, tries, err
	}
	return out, tries, nil
}
