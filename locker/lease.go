package locker

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Unlock, Extend and TTL try up to 4 times, with short pauses, when a call
// fails with a connection failure, and for up to 2 s when it meets a
// passing server state (MOVED or TRYAGAIN while a Cluster changes shape,
// CLUSTERDOWN, LOADING, ...), as Lock retries (see Mutex.Lock), bounded by
// their ctx: their scripts are idempotent.

// leaseOps are the scripts that act on a held lease of one kind of lock.
// Each takes the lock's hash as its only key and ARGV[1] owner, ARGV[2]
// hold id; release also ARGV[3] 1 to drop the owner's earlier holds too
// (single), extend ARGV[3] ttl in ms and ARGV[4] the extend number; the
// wake channel comes last (for the mutex, only to release: its extend and
// pttl never free the lock). release and extend reply 1 done, 0 expired
// (nobody holds it, or this hold is gone), -1 another owner holds it;
// extend also 2, refused as late; pttl replies {status, pttl ms}.
type leaseOps struct {
	release, extend, pttl *script
	keys                  int  // how many of the lease's keys extend and pttl take
	wake                  bool // extend and pttl take the wake channel too
}

// mutexOps act on mutex leases.
var mutexOps = &leaseOps{release: scriptRelease, extend: scriptExtend, pttl: scriptPTTL, keys: 1}

// Lease is one hold of a lock: what an acquisition returns. Its methods are
// safe for concurrent use. All methods of a nil *Lease are safe: Unlock
// returns nil, the others report an expired lease.
//
// Validity. A lease knows its local validity deadline (ValidUntil: the
// call's start plus the TTL minus the drift margin, on the monotonic
// clock). It never claims more validity than the server may have given
// it: after an Extend whose outcome is unknown the deadline becomes the
// earlier of the old one and the one that Extend would set.
//
// Unknown outcomes. A call whose outcome is unknown (ctx ended, the
// connection broke, or a retry answered by a passing state after a try
// whose reply was lost) may or may not have run, now or later. An Unlock
// then ends the lease at once (Valid reports false, Context is
// cancelled, Lost stays open) and the release is retried in the
// background until done or the validity deadline has passed; the lock is
// never kept alive by a lease its owner tried to release; and when a retry
// of that Unlock then finds the lock expired or taken before the validity
// deadline, the earlier try released it (nil). A late call is refused by
// the server: every Extend carries the lease's extend number, every
// release its hold.
type Lease struct {
	c      *Client
	ops    *leaseOps
	name   string
	keys   []string // the lock's keys the lease's scripts take (ops.keys of them for extend and pttl)
	wake   string   // the lock's wake channel
	owner  string
	hold   string // the hold id (mutex) or hold field (read-write lock)
	fence  int64
	single bool      // a release also drops the owner's earlier holds
	start  time.Time // when the granting call started
	// args is the release script's ARGV, made once (see releaseArgs), in
	// its first four; before that, the ARGV of the mutex acquire call that
	// granted the lease (see Mutex.attempt), which so allocates no
	// argument list of its own.
	args [7]string

	unlockMu sync.Mutex   // serializes Unlock and Downgrade
	extends  atomic.Int64 // the last extend number sent

	ttlMS   int64 // the TTL auto-refresh extends to
	refresh bool  // extended by the Client's refresher

	mu         sync.Mutex // guards the fields below
	validUntil time.Time
	applied    int64 // the extend number validUntil was last set by
	released   bool
	releasing  bool // an Unlock or Downgrade is in flight: losses are not reported
	life            // loss signalling, see lost.go

	group partGroup // the MultiLease or QuorumLease this lease is a part of, or nil
}

// grant is what an acquire script granted: the lease's identity.
type grant struct {
	ops  *leaseOps
	name string
	keys []string
	wake string
	// observers is an Election's observers' channel, which its terms'
	// release takes after the wake channel ("" for any other lock)
	observers string
	owner     string
	hold      string
	fence     int64
	single    bool
}

// newLease makes the lease of a grant by a call that started at start and
// starts its auto-refresh. A grant that arrives after Client.Close started
// is released at once (bounded) and ErrClosed returned: nothing is held.
func (c *Client) newLease(g grant, start time.Time, ttlMS int64, refresh bool) (*Lease, error) {
	return c.newLeaseIn(new(Lease), g, start, ttlMS, refresh)
}

// newLeaseIn is newLease into l, a Lease no one else uses (one whose args
// carried the granting call's arguments, which has returned); whatever l
// held is overwritten.
func (c *Client) newLeaseIn(l *Lease, g grant, start time.Time, ttlMS int64, refresh bool) (*Lease, error) {
	c.initPart(l, g, start, ttlMS)
	l.refresh = refresh
	if c.closed.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTry)
		defer cancel()
		_, _ = c.run(ctx, l.ops.release, l.keys, l.releaseArgs())
		return nil, ErrClosed
	}
	c.startRefresh(l)
	return l, nil
}

// newPart makes the lease of a grant without starting its auto-refresh or
// checking Close: newLease does both, newMultiLease for all parts at once.
func (c *Client) newPart(g grant, start time.Time, ttlMS int64) *Lease {
	l := new(Lease)
	c.initPart(l, g, start, ttlMS)
	return l
}

// initPart makes l the lease of a grant, as newPart does.
func (c *Client) initPart(l *Lease, g grant, start time.Time, ttlMS int64) {
	*l = Lease{
		c: c, ops: g.ops, name: g.name, keys: g.keys, wake: g.wake,
		owner: g.owner, hold: g.hold, fence: g.fence, single: g.single, start: start,
		validUntil: c.validity(start, ttlMS), ttlMS: ttlMS,
	}
	l.args = [7]string{l.owner, l.hold, l.singleArg(), l.wake, g.observers}
}

// Name returns the name of the lock this lease holds.
func (l *Lease) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Token returns the owner token stored in Redis for this lease: 128 random
// bits, base64url (a Mutex waiter that was handed the lock has its waiter
// id: such a token, a '.' and a sequence number), or the Owner option
// (MutexOptions, RWMutexOptions) when set.
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

// Valid reports whether the local validity deadline has not passed, the
// lease was not released, and it is not known lost (Err is nil). It does not
// contact Redis.
func (l *Lease) Valid() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.released && l.lostErr == nil && time.Now().Before(l.validUntil)
}

// TTL returns the lock's remaining time to live as the server counts it
// (for a read-write lease: this hold's own remaining time). It blocks for
// one round trip. It fails with ErrExpired when nobody holds the lock or
// this lease was released, with ErrHeldByOther when another owner holds
// it, with ErrClosed after Client.Close, or with the Scripter's error
// (nothing changes: TTL only reads).
func (l *Lease) TTL(ctx context.Context) (time.Duration, error) {
	if err := l.usable(ctx); err != nil {
		return 0, err
	}
	args := []string{l.owner, l.hold}
	if l.ops.wake {
		args = append(args, l.wake)
	}
	r, _, err := l.c.retryTransient(ctx, l.ops.pttl, func() (any, error) { return l.c.run(ctx, l.ops.pttl, l.keys[:l.ops.keys], args) })
	if err != nil {
		return 0, err
	}
	v, err := replyInts(l.ops.pttl, r)
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
// deadline to the call's start plus ttl minus the drift margin. It blocks
// for one round trip. It fails with ErrInvalidTTL, with ErrExpired when the
// lease has expired or was released, with ErrHeldByOther when another owner
// holds the lock now (the lease is lost), with ErrClosed, or with the
// Scripter's error (see Lease: unknown outcomes).
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) (err error) {
	if err := l.usable(ctx); err != nil {
		return err
	}
	if l.c.obs != nil {
		defer func() {
			l.c.observe(ctx, Event{Kind: EventExtend, Lock: l.name, Mode: l.mode(), Fence: l.fence, Err: err})
		}()
	}
	ms, err := validTTL(ttl)
	if err != nil {
		return err
	}
	n, start, args := l.extendCall(ms)
	r, _, err := l.c.retryTransient(ctx, l.ops.extend, func() (any, error) { return l.c.run(ctx, l.ops.extend, l.keys[:l.ops.keys], args) })
	return l.extended(n, start, ms, r, err)
}

// extendCall prepares an extend to ms: the lease's next extend number, the
// call's start and the script's arguments.
func (l *Lease) extendCall(ms int64) (n int64, start time.Time, args []string) {
	n = l.extends.Add(1)
	start = time.Now()
	args = []string{l.owner, l.hold, strconv.FormatInt(ms, 10), strconv.FormatInt(n, 10)}
	if l.ops.wake {
		args = append(args, l.wake)
	}
	return n, start, args
}

// extended applies the outcome of the extend call extendCall prepared
// (reply r or error err): the validity deadline, or the loss.
func (l *Lease) extended(n int64, start time.Time, ms int64, r any, err error) error {
	var st int64
	if err == nil {
		st, err = replyInt(l.ops.extend, r)
	}
	if err != nil {
		if !answered(err) {
			l.setValidity(0, l.c.validity(start, ms)) // the earliest the server may have applied
		}
		return err
	}
	switch st {
	case 1:
		l.setValidity(n, l.c.validity(start, ms))
		return nil
	case 2:
		return nil // a later Extend of this lease was applied: it sets the deadline
	}
	if err := l.outcome(st); err != nil {
		l.lose(err)
		return err
	}
	return nil
}

// setValidity moves the validity deadline to d after the server applied
// extend number n; n == 0 only shortens it (the server may have applied a
// shorter TTL). An older extend's reply never moves it.
func (l *Lease) setValidity(n int64, d time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.lostErr != nil {
		return
	}
	switch {
	case n == 0:
		if !d.Before(l.validUntil) {
			return
		}
	case n <= l.applied:
		return
	default:
		l.applied = n
	}
	l.validUntil = d
	l.rearmLocked()
}

// Unlock releases this hold (for a caller-chosen Owner that is not
// reentrant, its earlier holds too); it stops auto-refresh and cancels the
// lease's Context first. It blocks for one round trip, and works after
// Client.Close; concurrent Unlocks are serialized. It returns nil when
// released, also for a nil or released lease; ErrExpired or ErrHeldByOther
// when the lease had expired (it counts as released); an error the server
// answered (NOPERM, ...) with the lease unchanged; or any other Scripter
// error, after which the lease is ended and released in the background
// (see Lease: unknown outcomes).
func (l *Lease) Unlock(ctx context.Context) (err error) {
	if l == nil {
		return nil
	}
	if ctx == nil {
		return ErrNilContext
	}
	l.unlockMu.Lock()
	defer l.unlockMu.Unlock()
	if !l.startRelease() {
		return nil
	}
	if l.c.obs != nil {
		defer func() {
			l.c.observe(ctx, Event{Kind: EventRelease, Lock: l.name, Mode: l.mode(), Fence: l.fence, Held: time.Since(l.start), Err: err})
		}()
	}
	vu := l.ValidUntil()
	args := l.releaseArgs()
	r, unsure, err := l.c.retryTransient(ctx, l.ops.release, func() (any, error) {
		return l.c.run(ctx, l.ops.release, l.keys, args)
	})
	var st int64
	if err == nil {
		st, err = replyInt(l.ops.release, r)
	}
	if err != nil {
		if answered(err) {
			l.abortRelease()
			return err
		}
		l.end()
		l.releaseLater(vu, args)
		return err
	}
	if (st == 0 || st == -1) && unsure && time.Now().Before(vu) {
		st = 1 // an earlier try released it: the lease could not have expired yet
	}
	err = l.outcome(st)
	if err != nil && st != 0 && st != -1 {
		l.abortRelease()
		return err
	}
	if err != nil {
		l.mu.Lock()
		l.releasing = false // found expired or taken: that is a loss
		l.mu.Unlock()
		l.lose(err)
	}
	l.end()
	return err
}

// releaseLater retries the release (args) of an ended lease in the
// background until it is done or the lease's validity deadline vu (plus
// the drift margin: the server's TTL may run that much longer) has passed.
func (l *Lease) releaseLater(vu time.Time, args []string) {
	l.c.later("", vu.Add(l.c.margin(l.ttlMS)), func(ctx context.Context) error {
		_, err := l.c.run(ctx, l.ops.release, l.keys, args)
		return err
	})
}

// drop ends a lease that is still held, at once, and releases it in the
// background: what a MultiLease or QuorumLease does with its surviving
// parts once it is lost. A lease already released or being released is
// left alone.
func (l *Lease) drop() {
	if !l.startRelease() {
		return
	}
	vu := l.ValidUntil()
	l.end()
	if time.Now().Before(vu) {
		l.releaseLater(vu, l.releaseArgs())
	}
}

// releaseArgs are the release script's ARGV: owner, hold, singleArg,
// wake (and an Election's observers' channel). They are made once, with
// the lease (an Unlock then allocates no argument list), and never
// modified: every release call shares them.
func (l *Lease) releaseArgs() []string {
	if l.args[4] != "" {
		return l.args[:5:5]
	}
	return l.args[:4:4]
}

// singleArg is the scripts' flag for single: "1" drops the owner's earlier
// holds too (release, downgrade), "" only this one (an empty argument is
// boxed for the driver without an allocation).
func (l *Lease) singleArg() string {
	if l.single {
		return "1"
	}
	return ""
}

// startRelease stops refresh and loss reports before a release or
// downgrade call; it reports false when the lease was released already.
func (l *Lease) startRelease() bool {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return false
	}
	l.releasing = true
	l.mu.Unlock()
	if l.refresh {
		l.c.refresher.remove(l)
	}
	return true
}

// abortRelease undoes startRelease after the server refused the call: the
// lease is as before (refreshed again; lost if its deadline passed meanwhile).
func (l *Lease) abortRelease() {
	l.mu.Lock()
	l.releasing = false
	passed := l.lostCh != nil && !time.Now().Before(l.validUntil)
	lost := l.lostErr != nil
	l.mu.Unlock()
	if passed {
		l.lose(l.deadlinePassed())
		return
	}
	if l.refresh && !lost {
		l.c.refresher.add(l)
	}
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
