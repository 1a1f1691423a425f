package locker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// life is a lease's loss signalling. Its channel, context and deadline
// timer are made on first use (Lost, Context, auto-refresh), so leases that
// never ask cost nothing. All fields are guarded by Lease.mu.
type life struct {
	lostErr error         // why the lease was lost; nil while held or after Unlock
	lostCh  chan struct{} // closed when lost
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer // fires at validUntil
}

// closedCh is returned by Lost of a nil lease.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Lost returns a channel that is closed when the lease is lost: a refresh
// (auto-refresh or Extend) or TTL found the lock expired or held by another
// owner, or the local validity deadline (ValidUntil) passed without a
// successful refresh. The deadline is enforced by a local timer, so a
// process cut off from Redis learns of the loss no later than the deadline.
// Unlock does not close it: a released lease was not lost. Lost never
// blocks; for a nil lease it returns a closed channel.
func (l *Lease) Lost() <-chan struct{} {
	if l == nil {
		return closedCh
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armLocked()
	return l.lostCh
}

// Context returns a context that is cancelled when the lease is lost (its
// cause, from context.Cause, then matches ErrExpired or ErrHeldByOther) or
// released by Unlock (cause context.Canceled). Run work that must stop when
// the lock is gone under it. It does not derive from the acquire's context.
func (l *Lease) Context() context.Context {
	if l == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(fmt.Errorf("%w: nil lease", ErrExpired))
		return ctx
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armLocked()
	return l.ctx
}

// Err returns why the lease was lost (an error matching ErrExpired or
// ErrHeldByOther), or nil while it is held and after a successful Unlock.
// It reports a passed validity deadline only once Lost or Context was
// called or auto-refresh is on; otherwise compare ValidUntil to the clock.
func (l *Lease) Err() error {
	if l == nil {
		return fmt.Errorf("%w: nil lease", ErrExpired)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// armLocked makes the channel, context and deadline timer on first use.
func (l *Lease) armLocked() {
	if l.lostCh != nil {
		return
	}
	l.lostCh = make(chan struct{})
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	switch {
	case l.lostErr != nil:
		close(l.lostCh)
		l.cancel(l.lostErr)
	case l.released:
		l.cancel(context.Canceled)
	default:
		l.timer = time.AfterFunc(time.Until(l.validUntil), l.deadline)
	}
}

// rearmLocked moves the deadline timer to a new validUntil.
func (l *Lease) rearmLocked() {
	if l.timer != nil {
		l.timer.Reset(time.Until(l.validUntil))
	}
}

// deadline runs when the validity deadline timer fires.
func (l *Lease) deadline() {
	l.mu.Lock()
	if l.released || l.releasing || l.lostErr != nil {
		l.mu.Unlock()
		return
	}
	if d := time.Until(l.validUntil); d > 0 { // extended meanwhile
		l.timer.Reset(d)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.lose(l.deadlinePassed())
}

// deadlinePassed is the loss of a lease whose validity deadline passed
// without a refresh.
func (l *Lease) deadlinePassed() error {
	return fmt.Errorf("%w: %q: validity deadline passed without a refresh", ErrExpired, l.name)
}

// lose marks the lease lost with err, unless it already ended or is being
// released (a refresh that finds the hold gone after the release is not a
// loss).
func (l *Lease) lose(err error) {
	l.mu.Lock()
	if l.released || l.releasing || l.lostErr != nil {
		l.mu.Unlock()
		return
	}
	l.lostErr = err
	l.c.observe(context.Background(), Event{Kind: EventLoss, Lock: l.name, Mode: l.mode(), Fence: l.fence, Err: err})
	if l.lostCh != nil {
		// Lost first: a goroutine waiting on Lost and on Context's Done
		// wakes on Lost. Err is set before either.
		close(l.lostCh)
		l.cancel(err)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	if l.refresh {
		l.c.refresher.remove(l)
	}
	if l.group != nil {
		l.group.partLost(l, err)
	}
}

// partGroup is a lease made of parts (MultiLease, QuorumLease): it is told
// when one of its parts is lost, in the goroutine that found the loss, and
// must not block. Parts report to their group this way rather than through
// a goroutine that waits on each part, so a group costs no goroutine.
type partGroup interface {
	partLost(part *Lease, err error)
}

// end marks the lease released: no more refreshes, timer stopped, context
// cancelled.
func (l *Lease) end() {
	l.mu.Lock()
	l.released, l.releasing = true, false
	if l.cancel != nil {
		l.cancel(context.Canceled)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	if l.refresh {
		l.c.refresher.remove(l)
	}
}

// over reports whether the lease has ended: released, or lost.
func (l *Lease) over() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released || l.lostErr != nil
}

// groupLoss is the loss signal of a lease made of parts (MultiLease,
// QuorumLease): the first loss closes lost, cancels ctx with itself as the
// cause and is kept as err; Unlock only cancels ctx.
type groupLoss struct {
	lost   chan struct{}
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	err    error
}

func (g *groupLoss) init() {
	g.lost = make(chan struct{})
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
}

// lose records err as the loss unless there was one, and reports whether
// it did.
func (g *groupLoss) lose(err error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return false
	}
	g.err = err
	close(g.lost) // Lost first, as a Lease does
	g.cancel(err)
	return true
}

// lostGroup returns the loss signal of a nil lease: lost already.
func lostGroup() *groupLoss {
	g := new(groupLoss)
	g.init()
	g.lose(fmt.Errorf("%w: nil lease", ErrExpired))
	return g
}

// loss returns the loss, or nil.
func (g *groupLoss) loss() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
