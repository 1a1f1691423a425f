package locker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// A waiter is one blocking acquisition's waiting, owned in one place, as
// etcd's waitDeletes is for its Mutex and Election: a lock kind's Lock is
// a plain loop that tries, and on a refusal asks its waiter to wait
// (refused), then decides.
//
// After the first refusal the waiter subscribes to the lock's wake channel
// (when the Scripter implements Subscriber) and its own channels, and the
// caller tries again at once (a release may have come before the
// subscription); from then on it wakes on every wake-up, and otherwise
// when the holder's remaining TTL has passed. Without a subscription it
// polls with jittered exponential backoff from minDly to maxDly, never
// longer than the holder's remaining TTL. A refusal's deadline (until: a
// starving waiter's threshold) bounds the pause too.
//
// Errors: ctx ending returns ErrNotObtained joined with ctx.Err() (and
// the last connection failure); an error of the try other than
// ErrNotObtained ends the wait, unless it is transient, which is retried
// with backoff like a refusal. When ctx has no deadline, connection
// failures (transient errors that are not server answers) end the wait
// with ErrUnreachable once the first of them since the server last
// answered is Options.UnreachableTimeout old.
//
// With alone set (a Mutex that is not FIFO: one waiter can take a released
// lock), a message wakes one waiter of this Client rather than all of
// them; a waiter that was woken and could not try (its context ended)
// hands the wake-up on when it is done. Own channels (a FIFO or starving
// waiter's slot, a Semaphore waiter's channel, a MultiLock's other names)
// wake only it; handed gets the payload of each of their messages (a
// hand-over's grant, see handed).
type waiter struct {
	c       *Client
	name    string
	alone   bool
	own     []string             // own channels joined with the lock's
	joinFor time.Duration        // bounds subscribing (0: ctx alone), for a lock over several deployments
	handed  func(payload string) // gets the own channels' payloads (nil: none)

	joined bool            // subscribed (or tried to: without a Subscriber wake stays nil)
	wake   <-chan struct{} // the lock's wake-ups
	leave  func(handOn bool)
	mine   chan struct{} // the own channels' wake-ups (nil: none)
	leaves []func(handOn bool)
	woken  bool // the next try follows a wake-up on wake: handed on if it never runs

	delay   time.Duration // the polling backoff
	limit   time.Duration // connection failures end the wait after it (0: ctx bounds it)
	down    time.Time     // the first connection failure since the server last answered
	lastErr error         // the last transient error, reported if ctx ends
	timer   *time.Timer
}

// wakeSlack is added to a holder's remaining TTL before retrying, so the
// retry comes just after the key expired.
const wakeSlack = time.Millisecond

// newWaiter returns the waiter of one acquisition of name; the caller
// ends it with done.
func (c *Client) newWaiter(ctx context.Context, name string, alone bool, own ...string) *waiter {
	w := &waiter{c: c, name: name, alone: alone, own: own, delay: c.minDly, limit: c.outage}
	if _, ok := ctx.Deadline(); ok {
		w.limit = 0 // a ctx deadline bounds the call instead
	}
	return w
}

// done leaves the subscriptions, handing on a wake-up the waiter did not
// use.
func (w *waiter) done() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.leave != nil {
		w.leave(w.woken)
	}
	for _, l := range w.leaves {
		l(false)
	}
}

// granted records that the try after the last wake-up took the lock (or
// ended the wait): there is no wake-up to hand on.
func (w *waiter) granted() { w.woken = false }

// join subscribes to the lock's wake channel and the own channels, once.
func (w *waiter) join(ctx context.Context) {
	if w.joined {
		return
	}
	w.joined = true
	jctx, cancel := ctx, context.CancelFunc(func() {})
	if w.joinFor > 0 {
		jctx, cancel = context.WithTimeout(ctx, w.joinFor)
	}
	w.wake, w.leave = w.c.joinWake(jctx, w.c.Key(w.name)+":wake", w.alone)
	cancel()
	for _, o := range w.own {
		w.listen(ctx, o)
	}
}

// listen joins the own channel ch (a starving waiter's slot, from its
// switch on), when the lock's channel could be joined.
func (w *waiter) listen(ctx context.Context, ch string) {
	if w.wake == nil || ch == "" {
		return
	}
	me := w.mine
	if me == nil {
		me = make(chan struct{}, 1)
	}
	if wk, l := w.c.joinWakeInto(ctx, ch, waker{handed: w.handed}, me); wk != nil {
		w.mine, w.leaves = me, append(w.leaves, l)
	}
}

// refused takes a try's failure err (with the holder's remaining TTL
// pttl) and waits for the next try, which may be at once; until, when not
// zero, bounds the pause once subscribed. It returns the error that ends
// the wait, or nil to try again.
func (w *waiter) refused(ctx context.Context, err error, pttl time.Duration, until time.Time) error {
	if cerr := ctx.Err(); cerr != nil {
		return notObtained(w.name, errors.Join(cerr, w.lastErr)) // a wake-up, if any, is handed on
	}
	w.woken = false
	broken := !errors.Is(err, ErrNotObtained)
	if broken {
		if err := w.broken(ctx, err); err != nil {
			return err
		}
		pttl = 0
	} else {
		w.lastErr, w.down = nil, time.Time{}
	}
	if !w.joined && !broken {
		w.join(ctx)
		if w.wake != nil {
			return nil // a release may have come before the subscription
		}
	}
	return w.sleep(ctx, w.pause(broken, pttl, until))
}

// broken records a try's failure other than a refusal: it returns the
// error that ends the wait (not transient, or the server unreachable for
// too long), or nil to retry.
func (w *waiter) broken(ctx context.Context, err error) error {
	if !transient(err) {
		return err
	}
	w.lastErr = err
	if answered(err) {
		w.down = time.Time{} // a passing state (TRYAGAIN, LOADING, ...): the server answered
	} else if w.down.IsZero() {
		w.down = time.Now()
	}
	if w.limit > 0 && !w.down.IsZero() && time.Since(w.down) >= w.limit {
		return unreachable(w.name, time.Since(w.down), err)
	}
	w.c.observe(ctx, Event{Kind: EventRetry, Lock: w.name, Err: err})
	return nil
}

// pause is how long to sleep before the next try (see waiter).
func (w *waiter) pause(broken bool, pttl time.Duration, until time.Time) time.Duration {
	var pause time.Duration
	if w.wake != nil && !broken {
		pause = w.c.maxDly
		if pttl > 0 {
			pause = pttl + wakeSlack
		}
	} else {
		pause = w.delay/2 + rand.N(w.delay/2+1)
		if pttl > 0 && pause > pttl {
			pause = pttl
		}
		w.delay = min(2*w.delay, w.c.maxDly)
	}
	if broken && w.limit > 0 && !w.down.IsZero() {
		pause = max(0, min(pause, w.limit-time.Since(w.down))) // one more try as the bound passes
	}
	if !until.IsZero() && w.joined {
		pause = max(0, min(pause, time.Until(until)))
	}
	return pause
}

// sleep waits for pause, a wake-up, ctx or Close.
func (w *waiter) sleep(ctx context.Context, pause time.Duration) error {
	if w.timer == nil {
		w.timer = time.NewTimer(pause)
	} else {
		w.timer.Reset(pause)
	}
	select {
	case <-ctx.Done():
		return notObtained(w.name, errors.Join(ctx.Err(), w.lastErr))
	case <-w.c.done:
		return ErrClosed
	case <-w.wake:
		w.woken = true
		w.c.observe(ctx, Event{Kind: EventWake, Lock: w.name})
	case <-w.mine:
		w.c.observe(ctx, Event{Kind: EventWake, Lock: w.name})
	case <-w.timer.C:
	}
	return nil
}

// wait runs try until it grants a lease or the waiter ends the wait: the
// blocking acquire of the lock kinds without a hand-over (RWMutex,
// Semaphore, MultiLock, Quorum). A try returns the lease, or an error
// matching ErrNotObtained with the longest pause before the next try (the
// holder's remaining TTL; 0 when unknown), or another error. When starveAfter > 0, the tries from that
// long after the start on (once subscribed) are a starving waiter's: try
// is told so.
func (c *Client) wait(ctx context.Context, w *waiter, starveAfter time.Duration, try func(ctx context.Context, starved bool) (*Lease, time.Duration, error)) (*Lease, error) {
	defer w.done()
	if err := ctx.Err(); err != nil {
		return nil, notObtained(w.name, err)
	}
	var starveAt time.Time // zero: never, or starving already
	if starveAfter > 0 {
		starveAt = time.Now().Add(starveAfter)
	}
	starved := false
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		if w.joined && !starveAt.IsZero() && !time.Now().Before(starveAt) {
			starved, starveAt = true, time.Time{}
		}
		l, pttl, err := try(ctx, starved)
		if err == nil || errors.Is(err, ErrClosed) {
			w.granted()
			return l, err
		}
		if err := w.refused(ctx, err, pttl, starveAt); err != nil {
			return nil, err
		}
	}
}

// waitLock is the frame of a blocking acquisition of name in mode by one
// Lease: the operation begun, wait over try with a waiter of name, the
// Observer told. failed, when not nil, runs (within the operation) after a
// wait that failed once a try had been made.
func (c *Client) waitLock(ctx context.Context, name, mode string, starveAfter time.Duration, try func(ctx context.Context, starved bool) (*Lease, time.Duration, error), failed func()) (*Lease, error) {
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	defer c.end()
	start, tries := time.Now(), 0
	l, err := c.wait(ctx, c.newWaiter(ctx, name, false), starveAfter, func(ctx context.Context, starved bool) (*Lease, time.Duration, error) {
		tries++
		return try(ctx, starved)
	})
	c.acquired(ctx, name, mode, start, tries, l, err)
	if err != nil && tries > 0 && failed != nil {
		failed()
	}
	return l, err
}

// waitFor is wait for a lock kind whose grant is more than one Lease (a
// MultiLease, a QuorumLease): try makes one attempt (waited: not the
// first) and returns the grant and one of its parts; waitFor returns the
// grant and the number of attempts.
func waitFor[G any](c *Client, ctx context.Context, w *waiter, try func(ctx context.Context, waited bool) (G, *Lease, time.Duration, error)) (G, int, error) {
	var (
		out   G
		tries int
	)
	_, err := c.wait(ctx, w, 0, func(ctx context.Context, _ bool) (*Lease, time.Duration, error) {
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
