package locker

import (
	"context"
	"time"
)

// EventKind names what an Event reports.
type EventKind int

// The kinds of Event.
const (
	// EventAcquire: an acquisition ended (TryLock, Lock, TryRLock, RLock,
	// RWMutex.TryLock/Lock, Downgrade), granted (Err nil) or not.
	EventAcquire EventKind = iota + 1
	// EventRelease: an Unlock ended; Held is how long the lease was held.
	EventRelease
	// EventExtend: an Extend ended, including auto-refresh refreshes.
	EventExtend
	// EventLoss: a lease was lost; Err says why (ErrExpired, ErrHeldByOther).
	EventLoss
	// EventWake: a waiting acquisition was woken by a release message.
	EventWake
	// EventReload: a script was missing (NOSCRIPT) and was loaded again.
	EventReload
	// EventRetry: a call failed with a passing error (a broken connection,
	// TRYAGAIN, ...) and is tried again; Err is that error.
	EventRetry
)

// String returns the kind's lower-case name: "acquire", "release", ...
func (k EventKind) String() string {
	switch k {
	case EventAcquire:
		return "acquire"
	case EventRelease:
		return "release"
	case EventExtend:
		return "extend"
	case EventLoss:
		return "loss"
	case EventWake:
		return "wake"
	case EventReload:
		return "reload"
	case EventRetry:
		return "retry"
	}
	return "unknown"
}

// Event is what an Observer sees. Fields that do not apply to a kind are
// zero.
type Event struct {
	Kind EventKind
	// Lock is the lock's name. It can have high
	// cardinality: adapters should not make it a metric label by default.
	Lock string
	// Mode is "mutex", "read", "write", "semaphore", "multi" (Lock is
	// then the names joined with ',') or "election" (a term: its acquire
	// is the candidate elected, its release the leader resigning, its
	// loss the leader deposed).
	Mode string
	// Fence is the lease's fence (acquire, release, extend, loss).
	Fence int64
	// Attempts is the number of acquire calls an acquisition made.
	Attempts int
	// Wait is how long an acquisition took, from its call to its outcome.
	Wait time.Duration
	// HandedOver reports a Mutex acquisition that a release handed the
	// lock to (a FIFO waiter, or a waiter that starved: see
	// MutexOptions.StarvationThreshold) rather than one that took a free
	// lock (acquire).
	HandedOver bool
	// Held is how long a lease was held, from its grant to its Unlock.
	Held time.Duration
	// Script names the script (reload, retry).
	Script string
	// Err is the outcome: nil on success, else the error returned (or the
	// cause of a loss, or the error being retried).
	Err error
}

// Observer receives an Event for every acquisition, release, extend,
// loss, wake-up, script reload and retried call of a Client. It is called
// synchronously on the goroutine doing the work, so it must be fast and
// must not block or call back into the Client; ctx is the operation's
// context (context.Background for losses found by a timer). It must be
// safe for concurrent use. Options.Observer sets it; nil costs nothing.
type Observer func(ctx context.Context, e Event)

// observe reports e when an Observer is set.
func (c *Client) observe(ctx context.Context, e Event) {
	if c.obs != nil {
		c.obs(ctx, e)
	}
}

// The lock kinds, as an Event's Mode names them.
const (
	modeMutex     = "mutex"
	modeElection  = "election"
	modeRead      = "read"
	modeWrite     = "write"
	modeSemaphore = "semaphore"
	modeMulti     = "multi"
	modeQuorum    = "quorum"
)

// mode is the Event mode of a lease.
func (l *Lease) mode() string {
	switch l.ops {
	case rwOps:
		if len(l.hold) > 0 && l.hold[0] == 'w' {
			return modeWrite
		}
		return modeRead
	case semOps:
		return modeSemaphore
	case electOps:
		return modeElection
	}
	return modeMutex
}

// tryOnce is every TryLock's frame: the operation begun (ctx not nil, the
// Client open), bad's error if any (bad may be nil), ctx checked (nothing
// sent when it has ended), one try that starts at start, and the Observer
// told.
func (c *Client) tryOnce(ctx context.Context, name, mode string, bad func() error, try func(ctx context.Context, start time.Time) (*Lease, error)) (*Lease, error) {
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	defer c.end()
	if bad != nil {
		if err := bad(); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, notObtained(name, err) // no call to abandon
	}
	start := time.Now()
	l, err := try(ctx, start)
	c.acquired(ctx, name, mode, start, 1, l, err)
	return l, err
}

// acquired reports the end of an acquisition that started at start.
func (c *Client) acquired(ctx context.Context, name, mode string, start time.Time, attempts int, l *Lease, err error) {
	c.acquiredHow(ctx, name, mode, start, attempts, l, false, err)
}

// acquiredHow is acquired that also says whether a release handed the
// lock over.
func (c *Client) acquiredHow(ctx context.Context, name, mode string, start time.Time, attempts int, l *Lease, handed bool, err error) {
	if c.obs == nil {
		return
	}
	e := Event{Kind: EventAcquire, Lock: name, Mode: mode, Attempts: attempts, Wait: time.Since(start), Err: err}
	if l != nil {
		e.Fence = l.fence
		e.HandedOver = handed
	}
	c.obs(ctx, e)
}
