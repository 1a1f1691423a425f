package locker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Mutex is a distributed mutual-exclusion lock on one name. It holds no
// state in Redis until acquired; each acquisition returns a *Lease. A Mutex
// is safe for concurrent use: goroutines sharing it contend like separate
// processes (unless Owner is set, which makes them one owner).
//
// Waiting. A blocking Lock that is refused subscribes to the lock's wake
// channel (when the Scripter implements Subscriber) and tries again when a
// release is published, or else after a pause never longer than the
// holder's remaining TTL (jittered backoff from Options.MinRetryDelay to
// MaxRetryDelay when polling); see waiter. A connection failure or a
// passing server state (TRYAGAIN, CLUSTERDOWN, LOADING, ...) is retried
// like a refusal; with a ctx without deadline, a server out of reach ends
// the wait after Options.UnreachableTimeout (ErrUnreachable).
//
// Fairness. By default a released lock goes to whoever asks first
// (barging): the releaser that locks again at once usually wins, while a
// woken waiter may lose the race again and again. So the rule is
// sync.Mutex's starvation mode: a blocking Lock that has waited
// MutexOptions.StarvationThreshold (default DefaultStarvationThreshold,
// 5 ms) without the lock becomes a starving waiter. It is kept in the
// lock's own key, and the Unlock of the lock's last hold hands the lock
// straight to the first live starving waiter (in the order they starved),
// in the same script call, and wakes only that waiter: the lock is never
// free in between, so neither the releaser nor a newcomer can take it.
// While waiters starve the lock is in starvation mode: a blocking Lock
// that is refused starves at once and queues behind them (a TryLock is
// refused, as on any held lock); one that starts while another Lock of the
// same Client starves on the name starves from its first attempt, sparing
// the refusal that would teach it so. Once no waiter starves, the lock
// barges again. MutexOptions.FIFO instead queues every blocking Lock from
// its first refusal, and a release hands the lock to the queue's head.
//
// Hand-over. A waiter handed the lock takes it from its wake-up, which
// carries the grant (see handed), without another call, when its last
// attempt was refused before the grant and started within the lease's
// drift margin (the lease counts from that attempt's start); otherwise,
// or with Options.Ack, its next attempt finds the grant.
//
// Unknown outcomes. An attempt whose outcome is unknown (ctx ended, the
// connection broke) is cleaned up in the background: the clean-up drops
// only what that call granted and has Redis refuse it should it arrive
// later. A Lock that gives up leaves the queue in the background too.
type Mutex struct {
	lockBase
	fifo    bool
	queueMS int64    // a queued waiter's entry lifetime
	keys    []string // lock, queue, queue expiries, abandoned calls
	// ops and leaseKeys, when set, are the scripts and keys of the leases
	// it grants (an Election's terms); otherwise mutexOps and keys.
	ops       *leaseOps
	leaseKeys []string
	// campaign, set on the copy of an Election's Mutex that one Campaign
	// locks, makes each attempt a candidate's (elect_acquire.lua).
	campaign *campaign
}

// lockBase is what a Mutex and an RWMutex are made of: a name on a Client
// and the settings of its leases (see newLockBase).
type lockBase struct {
	c         *Client
	name      string
	ttlMS     int64
	ttlArg    string // ttlMS in decimal, as the scripts take it
	owner     string
	reentrant bool
	refresh   bool
	starve    time.Duration // StarvationThreshold; 0: never
	wake      string        // the wake channel
}

// newLockBase checks a lock's settings (validLock) and applies the
// default StarvationThreshold (negative: never).
func (c *Client) newLockBase(name string, ttl time.Duration, owner string, reentrant, refresh bool, starve time.Duration) (lockBase, error) {
	ms, err := c.validLock(name, ttl, owner, reentrant)
	if err != nil {
		return lockBase{}, err
	}
	return lockBase{
		c: c, name: name, ttlMS: ms, ttlArg: strconv.FormatInt(ms, 10), owner: owner, reentrant: reentrant, refresh: refresh,
		starve: max(cmp.Or(starve, DefaultStarvationThreshold), 0), wake: c.Key(name) + ":wake",
	}, nil
}

// NewMutex returns the mutex called name whose leases last ttl unless
// extended. It does not contact Redis. It fails with ErrClosed,
// ErrInvalidName (empty, or longer than MaxNameLen), ErrInvalidTTL (outside
// [MinTTL, MaxTTL]) or ErrInvalidOption (Reentrant without Owner, Owner
// longer than MaxNameLen).
func (c *Client) NewMutex(name string, ttl time.Duration, opts *MutexOptions) (*Mutex, error) {
	o := orZero(opts)
	b, err := c.newLockBase(name, ttl, o.Owner, o.Reentrant, o.AutoRefresh, o.StarvationThreshold)
	if err != nil {
		return nil, err
	}
	if o.FIFO {
		b.starve = 0
	}
	k := c.Key(name)
	return &Mutex{lockBase: b, fifo: o.FIFO, queueMS: queueTTL(b.ttlMS), keys: []string{k, k + ":q", k + ":qx", k + ":x"}}, nil
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// mode is the Mode of the mutex's events: an Election's terms are told
// apart.
func (m *Mutex) mode() string {
	if m.ops == electOps {
		return modeElection
	}
	return modeMutex
}

// TryLock makes one attempt to acquire the lock and does not wait (nor
// queue: in FIFO mode it is refused while waiters are queued). It blocks
// for one round trip. It returns the lease, or ErrNotObtained when another
// owner holds the lock, or ErrClosed, ErrNilContext or the Scripter's
// error. On any error nothing is held (see Mutex: unknown outcomes).
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.c.tryOnce(ctx, m.name, m.mode(), nil, func(ctx context.Context, start time.Time) (*Lease, error) {
		l, _, _, err := m.attempt(ctx, nil, start, "", 0, false, false)
		return l, err
	})
}

// Lock acquires the lock, waiting while another owner holds it (see
// Mutex). It blocks until the lock is acquired or ctx is done. When ctx
// ends first it returns ErrNotObtained joined with ctx.Err() (and the last
// connection error, if attempts were failing); it returns ErrUnreachable
// when the server is out of reach for Options.UnreachableTimeout and ctx
// has no deadline, ErrClosed when Client.Close runs meanwhile, and any
// Scripter error no retry can cure (NOPERM, NOAUTH, WRONGTYPE, ...) at
// once. On any error nothing is held.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	err := m.c.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer m.c.end()
	start := time.Now()
	// A default-mode Lock that expects no wait (no other Lock of this
	// Client starves on the name) makes its first try before anything a
	// wait needs is set up, so that a grant costs no more than TryLock's.
	if m.fifo || m.starve > 0 && m.c.hints.waiting(modeMutex, m.name) || ctx.Err() != nil || m.c.closed.Load() {
		return m.wait(ctx, start, nil)
	}
	var spare *Lease
	l, pttl, _, err := m.attempt(ctx, &spare, start, "", 0, false, false)
	if err != nil {
		return m.wait(ctx, start, &firstTry{spare, pttl, err})
	}
	m.c.acquiredHow(ctx, m.name, m.mode(), start, 1, l, false, nil)
	return l, nil
}

// firstTry is the outcome of a Lock's first try, made before its wait.
type firstTry struct {
	spare *Lease // for the next try's arguments (see attempt)
	pttl  time.Duration
	err   error
}

// wait is Lock from its first try on, or, with first set, after it.
func (m *Mutex) wait(ctx context.Context, start time.Time, first *firstTry) (*Lease, error) {
	lw := m.newLockWait(ctx, start, first)
	defer lw.end()
	l, err := lw.run(ctx)
	// A hand-over's hold is named by the waiter id (see attempt).
	m.c.acquiredHow(ctx, m.name, m.mode(), start, lw.tries, l, l != nil && lw.id != "" && l.hold == lw.id, err)
	if err != nil && (m.fifo || lw.starved) && lw.tries > 0 {
		keys, args := []string{m.keys[1], m.keys[2], m.keys[0]}, []string{lw.id, m.wake}
		m.c.later(m.keys[0], time.Time{}, func(ctx context.Context) error {
			_, err := m.c.run(ctx, scriptDequeue, keys, args)
			return err
		})
	}
	return l, err
}

// A lockWait is one Lock's wait (see Mutex): its waiter, and its place in
// line once it has one — a FIFO waiter from the start, a default-mode
// waiter once it starves: a waiter id and own channel (a slot, see
// slots.go), the queue entry's TTL, and the grant a release handed it.
type lockWait struct {
	m        *Mutex
	w        *waiter
	start    time.Time
	first    *firstTry // Lock's plain first try, made before the wait; nil once used
	spare    *Lease    // a refused attempt's, for the next one's arguments
	tries    int
	id       string // the waiter id ("": none yet)
	qttl     int64  // the queue entry's TTL in ms (0: not queued)
	hand     handed // a hand-over's wake-up carries its grant
	giveBack func() // gives the slot back
	unhint   func() // leaves the starving hint
	starveAt time.Time
	starved  bool // a starving waiter (see Mutex)
	hurry    bool // starve now: the lock is in starvation mode, or other Locks of the Client starve on it
}

// newLockWait sets up a Lock's wait. A FIFO waiter takes its slot at once;
// a default-mode waiter starves after m.starve (at once when other Locks
// of this Client starve on the name).
func (m *Mutex) newLockWait(ctx context.Context, start time.Time, first *firstTry) *lockWait {
	lw := &lockWait{m: m, start: start, first: first, giveBack: func() {}, unhint: func() {}}
	if first != nil {
		lw.spare = first.spare
	}
	var own []string
	subscribed := false // a FIFO waiter whose slot is subscribed listens before its first try
	if m.fifo {
		var ch string
		lw.id, ch, subscribed, lw.giveBack = m.c.takeSlot(ctx, m.wake)
		lw.qttl, own, lw.hand.id = m.queueMS, []string{ch}, lw.id
	}
	lw.w = m.c.newWaiter(ctx, m.name, !m.fifo, own...)
	if m.c.acker == nil { // with Options.Ack, a grant is acknowledged by the call that learns it
		lw.w.handed = lw.hand.note
	}
	if m.starve > 0 {
		lw.hurry = m.c.hints.waiting(modeMutex, m.name)
		lw.starveAt = start.Add(m.starve)
		// With Lock's plain first try made already, the hint (which may
		// have come since) switches the waiter after that refusal: it
		// would otherwise join before the loop hands back that stale
		// refusal, and sleep the holder's TTL unregistered.
		subscribed = lw.hurry && first == nil
	}
	if subscribed {
		// A refusal then needs no second try to cover a wake-up sent
		// before the waiter listened (and a hurried one starves at once).
		lw.w.join(ctx)
	}
	return lw
}

// run tries until granted or the waiter ends the wait.
func (lw *lockWait) run(ctx context.Context) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, notObtained(lw.m.name, err)
	}
	for {
		if lw.m.c.closed.Load() {
			return nil, ErrClosed
		}
		if lw.w.joined && !lw.starveAt.IsZero() && (lw.hurry || !time.Now().Before(lw.starveAt)) {
			lw.starve(ctx)
		}
		l, pttl, err := lw.try(ctx)
		if err == nil || errors.Is(err, ErrClosed) {
			lw.w.granted()
			return l, err
		}
		until := lw.starveAt
		if lw.hurry && !until.IsZero() {
			until = time.Now() // starve at once
		}
		if err := lw.w.refused(ctx, err, pttl, until); err != nil {
			return nil, err
		}
	}
}

// starve makes the waiter a starving one: it takes a slot and listens on
// it before the try that queues it, so the hand-over's wake-up cannot come
// first.
func (lw *lockWait) starve(ctx context.Context) {
	var ch string
	lw.starveAt = time.Time{}
	lw.id, ch, _, lw.giveBack = lw.m.c.takeSlot(ctx, lw.m.wake)
	lw.qttl, lw.starved, lw.hand.id = lw.m.queueMS, true, lw.id
	lw.unhint = lw.m.c.hints.join(modeMutex, lw.m.name)
	lw.w.listen(ctx, ch)
}

// try makes one try: the grant a release handed the waiter, Lock's first
// try's outcome, or an attempt.
func (lw *lockWait) try(ctx context.Context) (*Lease, time.Duration, error) {
	m := lw.m
	if f, from := lw.hand.take(m.c.margin(m.ttlMS)); f > 0 { // only set when handed is listened to
		l, err := m.handedLease(&lw.spare, from, lw.id, f)
		return l, 0, err
	}
	lw.tries++
	if r := lw.first; r != nil {
		lw.first = nil
		lw.hurry = lw.hurry || errors.Is(r.err, errStarvation)
		return nil, r.pttl, r.err
	}
	from := lw.start // the first try starts with the call
	if lw.tries > 1 {
		from = time.Now()
	}
	l, pttl, us, err := m.attempt(ctx, &lw.spare, from, lw.id, lw.qttl, lw.tries > 1, lw.starved)
	lw.hand.after(from, us, err)
	lw.hurry = lw.hurry || errors.Is(err, errStarvation)
	if (m.fifo || lw.starved) && err != nil {
		// Refresh the queue entry well before it expires.
		refresh := time.Duration(lw.qttl) * time.Millisecond / 3
		if pttl <= 0 || pttl > refresh {
			pttl = refresh
		}
	}
	return l, pttl, err
}

// end leaves the subscriptions, the slot and the hint.
func (lw *lockWait) end() {
	lw.w.done()
	lw.unhint()
	lw.giveBack()
}

// errStarvation is ErrNotObtained from a lock in starvation mode: its
// release hands it to the waiters that starved (see Mutex), so a waiter
// does best to starve at once.
var errStarvation = fmt.Errorf("%w (starving waiters go first)", ErrNotObtained)

func notObtained(name string, cerr error) error {
	return fmt.Errorf("%w: %q: %w", ErrNotObtained, name, cerr)
}

// attempt runs the acquire script once, as a call with a fresh id that
// names the hold it grants; the owner is the caller's Owner or, without
// one, the call id. waiter and qttl > 0 queue the caller (FIFO) when it is
// not granted. When the lock is held by another owner it returns
// ErrNotObtained and the holder's remaining TTL (0 when the lock is free
// but queued waiters go first). waited tells the script that the caller
// waited already, so others may too: the lock's release then wakes them.
// When the call's outcome is unknown it abandons the call in the background
// (see abandon.lua). A waiter's refusal also returns the server µs of the
// refusal (0 when the reply has none; see handed).
//
// The call's arguments live in the lease it may grant (Lease.args), so a
// grant allocates no argument list: *spare, when set, is a Lease a
// refused attempt left for that (nil leaves none, and takes none).
// start is when the call starts (the lease's validity counts from it; an
// earlier time only shortens it), or zero for now.
func (m *Mutex) attempt(ctx context.Context, spare **Lease, start time.Time, waiter string, qttl int64, waited, starved bool) (*Lease, time.Duration, int64, error) {
	nl := takeSpare(spare)
	id := newToken()
	owner := m.owner
	if owner == "" {
		owner = id
	}
	if start.IsZero() {
		start = time.Now()
	}
	// Empty arguments are the defaults (owner: the call id, no queue, a
	// first try): the drivers box them without allocating.
	var w, q string
	if starved {
		w = "2" // and, when refused, kept as a starving waiter
	} else if waited {
		w = "1"
	}
	if qttl > 0 {
		q = strconv.FormatInt(qttl, 10)
	}
	nl.args = [7]string{m.owner, id, m.ttlArg, q, waiter, m.wake, w}
	var r any
	var err error
	if cp := m.campaign; cp != nil {
		r, err = m.c.run(ctx, scriptElectAcquire, cp.keys, append(nl.args[:7:7], cp.value, cp.channel))
	} else {
		r, err = m.c.run(ctx, scriptAcquire, m.keys, nl.args[:7:7])
	}
	var v [3]int64
	if err == nil {
		v, err = replyAcquire(r)
	}
	if err == nil && (v[0] < 0 || v[0] > 3 || v[0] == 2 && waiter == "") {
		err = fmt.Errorf("%w: acquire status %d", ErrUnexpectedReply, v[0])
	}
	if err != nil {
		if !answered(err) {
			keys, args := []string{m.keys[0], m.keys[3]}, []string{owner, id, abandonedMS, m.wake, waiter}
			if waiter != "" && !starved {
				keys = append(keys, m.keys[1], m.keys[2])
			} else {
				// A starving waiter's entry stays: its next try refreshes
				// it, or the dequeue at the end of Lock removes it.
				args[4] = ""
			}
			m.c.later(m.keys[0], time.Time{}, func(ctx context.Context) error {
				_, err := m.c.run(ctx, scriptAbandon, keys, args)
				return err
			})
		}
		return nil, 0, 0, err
	}
	if v[0] == 0 || v[0] == 3 {
		if spare != nil { // answered: no driver holds on to the arguments
			nl.args = [7]string{}
			*spare = nl
		}
		if v[0] == 3 { // waiters starve already: a blocking Lock starves at once
			return nil, time.Duration(v[1]) * time.Millisecond, v[2], fmt.Errorf("%w: %q", errStarvation, m.name)
		}
		return nil, time.Duration(v[1]) * time.Millisecond, v[2], fmt.Errorf("%w: %q", ErrNotObtained, m.name)
	}
	hold := id
	if v[0] == 2 { // handed over by a release: the hold is the waiter's
		hold, owner = waiter, cmp.Or(m.owner, waiter)
	}
	l, err := m.lease(nl, start, owner, hold, v[1])
	return l, 0, 0, err
}

// handedLease is the lease of the grant a release handed to waiter, with
// fence, learned from the waiter's wake-up (see handed): its validity
// counts from start. It takes *spare, if set, as attempt does.
func (m *Mutex) handedLease(spare **Lease, start time.Time, waiter string, fence int64) (*Lease, error) {
	return m.lease(takeSpare(spare), start, cmp.Or(m.owner, waiter), waiter, fence)
}

// takeSpare returns *spare, which it clears, or a new Lease when there is
// none (spare nil, or *spare nil).
func takeSpare(spare **Lease) *Lease {
	var nl *Lease
	if spare != nil {
		nl, *spare = *spare, nil
	}
	if nl == nil {
		nl = new(Lease)
	}
	return nl
}

// lease makes nl the lease of a grant of this mutex to owner, its hold
// named hold, valid from start.
func (m *Mutex) lease(nl *Lease, start time.Time, owner, hold string, fence int64) (*Lease, error) {
	ops, keys, observers := mutexOps, m.keys[:1], ""
	switch {
	case m.ops != nil:
		ops, keys, observers = m.ops, m.leaseKeys, m.leaseKeys[3] // the record; the channel is named alike
	case m.fifo:
		keys = m.keys[:3] // the release hands the lock to the queue's head
	}
	return m.c.newLeaseIn(nl, grant{
		ops: ops, name: m.name, keys: keys, wake: m.wake, observers: observers,
		owner: owner, hold: hold, fence: fence, single: m.owner != "" && !m.reentrant,
	}, start, m.ttlMS, m.refresh)
}

// replyAcquire decodes acquire.lua's reply as {status, value, µs}: its
// fast path's bare fence (an integer above 0) is {1, fence, 0}; any other
// reply must be an array of two integers, or three (a waiter's refusal,
// with the server µs of the refusal).
func replyAcquire(r any) ([3]int64, error) {
	var out [3]int64
	if f, ok := r.(int64); ok {
		if f <= 0 {
			return out, fmt.Errorf("%w: acquire: got fence %d, want one above 0", ErrUnexpectedReply, f)
		}
		return [3]int64{1, f, 0}, nil
	}
	err := replyIntArray(scriptAcquire, r, out[:], 2)
	return out, err
}

// validLock checks what every lock type is made of and returns the TTL in
// milliseconds: the Client is open, the name and TTL are valid, and an
// owner, if any, is not too long and is set when reentrancy is asked for.
func (c *Client) validLock(name string, ttl time.Duration, owner string, reentrant bool) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if err := validName(name); err != nil {
		return 0, err
	}
	ms, err := validTTL(ttl)
	if err != nil {
		return 0, err
	}
	if reentrant && owner == "" {
		return 0, fmt.Errorf("%w: Reentrant requires Owner", ErrInvalidOption)
	}
	if len(owner) > MaxNameLen {
		return 0, fmt.Errorf("%w: Owner longer than MaxNameLen (%d)", ErrInvalidOption, MaxNameLen)
	}
	return ms, nil
}

// queueTTL is how long a FIFO waiter's queue entry lives without refresh:
// the lock's TTL, within [200ms, 5s]. A waiter refreshes it every third of
// that; a crashed waiter is skipped after it.
func queueTTL(ttlMS int64) int64 {
	return min(max(ttlMS, 200), 5000)
}
