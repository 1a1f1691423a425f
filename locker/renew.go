package locker

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Auto-refresh timing: a lease is renewed every RefreshFraction of its TTL;
// after a failed renewal (a network error; the lease is not known lost) it
// is retried after RetryFraction of its TTL, until its validity deadline.
const (
	RefreshFraction = 1.0 / 3
	RetryFraction   = 1.0 / 10
)

// maxRenewals bounds concurrent renewal calls of one Client.
const maxRenewals = 32

// renewer keeps the auto-refreshed leases of one Client alive. Its loop
// goroutine runs only while it has leases (or renewals in flight) and exits
// when the last one goes, or at Client.Close.
type renewer struct {
	c *Client

	mu      sync.Mutex
	leases  map[*Lease]time.Time // next renewal time
	running bool
	closed  bool
	kick    chan struct{}
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the loop and renewal calls
	sem     chan struct{}
}

func newRenewer(c *Client) *renewer {
	ctx, cancel := context.WithCancel(context.Background())
	return &renewer{c: c, leases: map[*Lease]time.Time{}, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel, sem: make(chan struct{}, maxRenewals)}
}

// add starts renewing l; it reports false after Close.
func (r *renewer) add(l *Lease) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.leases[l] = time.Now().Add(fraction(l.ttlMS, RefreshFraction))
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.loop()
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return true
}

// remove stops renewing l. It does not block; when l was the last lease
// the loop goroutine exits promptly.
func (r *renewer) remove(l *Lease) {
	r.mu.Lock()
	delete(r.leases, l)
	empty := len(r.leases) == 0
	r.mu.Unlock()
	if empty {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// close stops the loop and waits for renewal calls in flight to end.
func (r *renewer) close() {
	r.mu.Lock()
	r.closed = true
	r.leases = map[*Lease]time.Time{}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

func fraction(ttlMS int64, f float64) time.Duration {
	return time.Duration(float64(time.Duration(ttlMS)*time.Millisecond) * f)
}

func (r *renewer) loop() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if len(r.leases) == 0 || r.closed {
			r.running = false
			r.mu.Unlock()
			return
		}
		now := time.Now()
		var due []*Lease
		next := now.Add(time.Hour)
		for l, at := range r.leases {
			if !at.After(now) {
				due = append(due, l)
				// Not due again until this renewal reschedules it.
				at = now.Add(fraction(l.ttlMS, RefreshFraction))
				r.leases[l] = at
			}
			if at.Before(next) {
				next = at
			}
		}
		r.mu.Unlock()
		for _, l := range due {
			select {
			case r.sem <- struct{}{}:
			case <-r.ctx.Done():
				return
			}
			r.wg.Add(1)
			go r.renew(l)
		}
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-r.kick:
		case <-r.ctx.Done():
			return
		}
	}
}

// renew extends l once, bounded by its validity deadline. Extend marks the
// lease lost when the lock expired or has another owner; after a network
// error the renewal is retried sooner, until the deadline timer declares
// the lease lost.
func (r *renewer) renew(l *Lease) {
	defer func() { <-r.sem; r.wg.Done() }()
	deadline := l.ValidUntil()
	if deadline.IsZero() {
		r.remove(l)
		return
	}
	ctx, cancel := context.WithDeadline(r.ctx, deadline)
	defer cancel()
	err := l.Extend(ctx, time.Duration(l.ttlMS)*time.Millisecond)
	if err == nil || errors.Is(err, ErrExpired) || errors.Is(err, ErrHeldByOther) || errors.Is(err, ErrClosed) {
		return
	}
	r.mu.Lock()
	if _, ok := r.leases[l]; ok {
		r.leases[l] = time.Now().Add(fraction(l.ttlMS, RetryFraction))
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// startRefresh arms a new lease's loss signalling and hands it to the
// renewer when it is auto-refreshed; other leases are left untouched.
func (c *Client) startRefresh(l *Lease) {
	if !l.refresh {
		return
	}
	l.mu.Lock()
	l.armLocked()
	l.mu.Unlock()
	if !c.renewer.add(l) {
		l.refresh = false // the Client closed meanwhile: the deadline timer still fires
	}
}
