package locker

import (
	"context"
	"sync"
	"time"
)

// The unknown-outcome protocol, in one place. A script call ends one of
// three ways: done (the reply arrived), refused (the server answered with
// an error: nothing changed), or unknown (the context ended or the
// connection broke after the command may have been read: Redis may have
// run it, may run it later, or may get it later from the client). For an
// unknown outcome:
//
//   - every acquire call has its own call id, which names the hold it
//     grants; its clean-up (abandon.lua, rw_cancel.lua) drops exactly that
//     hold, if the call granted it, and lists the id so that the call is
//     refused if it reaches Redis later (for abandonedMS);
//   - a release, downgrade or claim whose outcome is unknown ends the lease
//     (or claim) locally at once, and is completed or undone in the
//     background;
//   - an extend carries the lease's extend number, so a late one is refused;
//     the lease's deadline becomes the earliest the server may have applied.
//   - a Semaphore's SetPermits has its own call id; its clean-up
//     (sem_cancel.lua) restores the limit the call replaced, if no later
//     SetPermits replaced it in turn, and refuses the call (for
//     abandonedMS); a later SetPermits of the Client awaits that clean-up.
//
// Clean-ups run in the background, so a caller whose context ended is not
// held back; the Client tracks them and Close waits for them (bounded).

const (
	// cleanupTry bounds a clean-up's first call; each try after a timeout
	// may take twice as long as the one before, up to cleanupTryMax, so a
	// server whose round trips take longer is still reached.
	cleanupTry    = 500 * time.Millisecond
	cleanupTryMax = 4 * time.Second
	// cleanupFor bounds the retries of one clean-up: well within
	// abandonedMS, so a call is refused for as long as it may be retried.
	cleanupFor = 10 * time.Second
	// closeGrace is how long Close lets clean-ups in flight finish before it
	// cancels them.
	closeGrace = time.Second
)

// abandonedMS is how long an abandoned acquire (or claim) call stays
// refused, in milliseconds: far longer than a client holds a command before
// sending it.
const abandonedMS = "30000"

// janitor runs the background clean-ups of one Client.
type janitor struct {
	mu      sync.Mutex
	closed  bool
	busy    int // calls and clean-ups running; wg counts them too
	wg      sync.WaitGroup
	ctx     context.Context // cancelled by Close after closeGrace
	cancel  context.CancelFunc
	pending map[string]*inFlight // by Redis key: clean-ups in flight
}

// inFlight counts the clean-ups of one key; done closes when none is left.
type inFlight struct {
	n    int
	done chan struct{}
}

func newJanitor() *janitor {
	ctx, cancel := context.WithCancel(context.Background())
	return &janitor{ctx: ctx, cancel: cancel, pending: map[string]*inFlight{}}
}

// later runs op in the background until it succeeds, fails with an answer
// from the server other than a passing state (TRYAGAIN, ...), or until
// (when later than now + cleanupTry; the zero Time means cleanupFor from
// now). Each try is bounded by cleanupTry, doubled after each try that
// timed out (up to cleanupTryMax); a connection failure or an unknown
// outcome is tried again with backoff, since every clean-up script is
// idempotent. key names the Redis key the clean-up is for (see
// awaitCleanup); "" for none.
// Once Close started, it still takes the clean-ups that calls and
// clean-ups in flight schedule (a grant arriving late is released), until
// closeGrace has passed; otherwise it does nothing.
func (c *Client) later(key string, until time.Time, op func(ctx context.Context) error) {
	j := c.jan
	j.mu.Lock()
	if j.closed && (j.busy == 0 || j.ctx.Err() != nil) {
		j.mu.Unlock()
		return
	}
	if key != "" {
		f := j.pending[key]
		if f == nil {
			f = &inFlight{done: make(chan struct{})}
			j.pending[key] = f
		}
		f.n++
	}
	j.enter()
	j.mu.Unlock()
	go func() {
		defer j.leave()
		if key != "" {
			defer func() {
				j.mu.Lock()
				if f := j.pending[key]; f != nil {
					if f.n--; f.n == 0 {
						delete(j.pending, key)
						close(f.done)
					}
				}
				j.mu.Unlock()
			}()
		}
		if until.IsZero() {
			until = time.Now().Add(cleanupFor)
		}
		until = latest(until, time.Now().Add(cleanupTry))
		pause, try := 10*time.Millisecond, cleanupTry
		for {
			ctx, cancel := context.WithTimeout(j.ctx, try)
			err := op(ctx)
			if ctx.Err() != nil {
				try = min(2*try, cleanupTryMax)
			}
			cancel()
			if err == nil || (answered(err) && !transient(err)) || j.ctx.Err() != nil || !time.Now().Add(pause).Before(until) {
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-j.ctx.Done():
				t.Stop()
				return
			}
			pause = min(2*pause, 500*time.Millisecond)
		}
	}()
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// awaitCleanup blocks until the clean-ups in flight for key have ended, or
// ctx is done (then it returns ctx's error).
func (c *Client) awaitCleanup(ctx context.Context, key string) error {
	j := c.jan
	j.mu.Lock()
	f := j.pending[key]
	j.mu.Unlock()
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enter counts one call or clean-up starting; j.mu is held.
func (j *janitor) enter() {
	j.busy++
	j.wg.Add(1)
}

// leave counts one call or clean-up ending. busy drops before the
// WaitGroup, so that while later sees busy > 0 the WaitGroup's count is
// above zero and its Add may run beside close's Wait.
func (j *janitor) leave() {
	j.mu.Lock()
	j.busy--
	j.mu.Unlock()
	j.wg.Done()
}

// close refuses new calls and new clean-ups but those that the ones in
// flight schedule, lets those in flight run for closeGrace,
// then cancels them and waits for them to return.
func (j *janitor) close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	idle := make(chan struct{})
	go func() { j.wg.Wait(); close(idle) }()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	j.cancel()
	<-idle
}

// track counts a background call of the Client, so that close waits for
// it; close's cancellation runs cancel. The call reports its end with the
// returned function. After close, the call is cancelled at once.
func (j *janitor) track(cancel context.CancelFunc) (done func()) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		cancel()
		return func() {}
	}
	j.enter()
	stop := context.AfterFunc(j.ctx, cancel)
	return func() {
		stop()
		j.leave()
	}
}
