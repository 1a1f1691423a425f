package locker

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Unlock, Extend and TTL try up to 4 times, with short pauses, when a call
// fails with a connection failure or a passing server state (as Lock
// retries; see Mutex.Lock), bounded by their ctx: their scripts are
// idempotent.

// leaseOps are the scripts that act on a held lease of one kind of lock.
// Each takes the lease's keys as KEYS and ARGV[1] owner, ARGV[2] hold id;
// extend also ARGV[3] ttl in ms. release and extend reply 1 done, 0 expired
// (nobody holds it, or this hold is gone), -1 another owner holds it; pttl
// replies {status, pttl ms} with the same statuses.
type leaseOps struct {
	release, extend, pttl *script
}

// mutexOps act on mutex leases.
var mutexOps = &leaseOps{release: scriptRelease, extend: scriptExtend, pttl: scriptPTTL}

// Lease is one hold of a lock: what an acquisition returns. Its methods are
// safe for concurrent use. All methods of a nil *Lease are safe: Unlock
// returns nil, the others report an expired lease.
type Lease struct {
	c     *Client
	ops   *leaseOps
	name  string
	keys  []string // KEYS of the lease's scripts
	owner string
	hold  string
	fence int64

	unlockMu sync.Mutex // serializes Unlock calls

	ttlMS   int64 // the TTL auto-refresh renews with
	refresh bool  // renewed by the Client's renewer

	mu         sync.Mutex // guards the fields below
	validUntil time.Time
	released   bool
	life       // loss signalling, see lost.go
}

// Name returns the name of the lock this lease holds.
func (l *Lease) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Token returns the owner token stored in Redis for this lease: 128 random
// bits, or the Owner option (MutexOptions, RWMutexOptions) when set.
func (l *Lease) Token() string {
	if l == nil {
		return ""
	}
	return l.owner
}

// Fence returns the fencing token of the grant: it strictly increases per
// lock name with every new grant, across expiries and across all holders.
// Pass it to the protected resource so it can reject writes from an older
// holder. Holds of the same owner (re-sent acquires, hand-over, reentrant
// holds) share the grant's fence.
func (l *Lease) Fence() int64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// ValidUntil returns the local validity deadline on the monotonic clock:
// the time the acquire (or last Extend) call started, plus the TTL, minus a
// drift margin (Options.DriftFactor of the TTL plus 2 ms). Before it, no
// other owner can hold the lock; after it, the lease must be treated as
// lost. A released lease, and a nil one, return the zero Time.
func (l *Lease) ValidUntil() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return time.Time{}
	}
	return l.validUntil
}

// Valid reports whether the local validity deadline has not passed and the
// lease was not released. It does not contact Redis.
func (l *Lease) Valid() bool {
	d := l.ValidUntil()
	return !d.IsZero() && time.Now().Before(d)
}

// TTL returns the lock's remaining time to live as the server counts it
// (for a read-write lease: this hold's own remaining time). It blocks for
// one round trip. It fails with ErrExpired when nobody holds the
// lock or this lease was released, with ErrHeldByOther when another owner
// holds it, with ErrClosed after Client.Close, or with the Scripter's error.
func (l *Lease) TTL(ctx context.Context) (time.Duration, error) {
	if err := l.usable(ctx); err != nil {
		return 0, err
	}
	r, err := retryTransient(ctx, func() (any, error) { return l.c.run(ctx, l.ops.pttl, l.keys, []string{l.owner, l.hold}) })
	if err != nil {
		return 0, err
	}
	v, err := replyInts(l.ops.pttl, r, 2)
	if err != nil {
		return 0, err
	}
	if err := l.outcome(v[0]); err != nil {
		l.lose(err)
		return 0, err
	}
	return time.Duration(v[1]) * time.Millisecond, nil
}

// Extend sets the lock to expire ttl from now (for a reentrant owner with
// other holds, never earlier than it already would) and moves the validity
// deadline accordingly. It blocks for one round trip. It fails with
// ErrInvalidTTL, with ErrExpired when the lease has expired or was
// released, with ErrHeldByOther when another owner holds the lock now (the
// call changes nothing then), with ErrClosed, or with the Scripter's error
// (the validity deadline is left unchanged).
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.usable(ctx); err != nil {
		return err
	}
	ms, err := validTTL(ttl)
	if err != nil {
		return err
	}
	start := time.Now()
	args := []string{l.owner, l.hold, strconv.FormatInt(ms, 10)}
	r, err := retryTransient(ctx, func() (any, error) { return l.c.run(ctx, l.ops.extend, l.keys, args) })
	if err != nil {
		return err
	}
	n, err := replyInt(l.ops.extend, r)
	if err != nil {
		return err
	}
	if err := l.outcome(n); err != nil {
		l.lose(err)
		return err
	}
	l.mu.Lock()
	if !l.released && l.lostErr == nil {
		l.validUntil = l.c.validity(start, ms)
		l.rearmLocked()
	}
	l.mu.Unlock()
	return nil
}

// Unlock releases this hold; the lock is free once its owner has no hold
// left. It stops auto-refresh and cancels the lease's Context. It blocks for one round trip. It returns nil when released, and
// also for a nil lease or one already released (Unlock twice is harmless).
// Concurrent Unlocks of one lease are serialized: one releases, the others
// return nil. It returns ErrExpired when the lease had already expired (or,
// rarely, when the client re-sent the release of the last hold after a
// network error: the lock is free either way) and ErrHeldByOther
// when another owner holds the lock now; in both cases nothing is changed
// and the lease counts as released. On ErrClosed, ErrNilContext or a
// Scripter error the lease is unchanged and Unlock may be called again.
func (l *Lease) Unlock(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.unlockMu.Lock()
	defer l.unlockMu.Unlock()
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return nil
	}
	if err := l.c.check(ctx); err != nil {
		return err
	}
	r, err := retryTransient(ctx, func() (any, error) { return l.c.run(ctx, l.ops.release, l.keys, []string{l.owner, l.hold}) })
	if err != nil {
		return err
	}
	n, err := replyInt(l.ops.release, r)
	if err != nil {
		return err
	}
	if err := l.outcome(n); err != nil && n != 0 && n != -1 {
		return err
	}
	err = l.outcome(n)
	if err != nil {
		l.lose(err)
	}
	l.end()
	return err
}

// usable checks the client, ctx and the local released state.
func (l *Lease) usable(ctx context.Context) error {
	if l == nil {
		return fmt.Errorf("%w: nil lease", ErrExpired)
	}
	if err := l.c.check(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return fmt.Errorf("%w: %q: lease was released", ErrExpired, l.name)
	}
	return l.lostErr
}

// outcome maps a script status (1 held, 0 expired, -1 other owner) to an error.
func (l *Lease) outcome(n int64) error {
	switch n {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("%w: %q", ErrExpired, l.name)
	case -1:
		return fmt.Errorf("%w: %q", ErrHeldByOther, l.name)
	}
	return fmt.Errorf("%w: status %d", ErrUnexpectedReply, n)
}
