package locker

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Mutex is a distributed mutual-exclusion lock on one name. It holds no
// state in Redis until acquired; each acquisition returns a *Lease. A Mutex
// is safe for concurrent use: goroutines sharing it contend like separate
// processes (unless Owner is set, which makes them one owner).
type Mutex struct {
	c         *Client
	name      string
	ttlMS     int64
	owner     string
	reentrant bool
	refresh   bool
	fifo      bool
	queueMS   int64    // a queued waiter's entry lifetime
	keys      []string // lock, fence, queue, queue expiries, wake channel, abandoned calls
	leaseKeys []string // lock, wake channel
}

// NewMutex returns the mutex called name whose leases last ttl unless
// extended. It does not contact Redis. It fails with ErrClosed,
// ErrInvalidName (empty, or longer than MaxNameLen), ErrInvalidTTL (outside
// [MinTTL, MaxTTL]) or ErrInvalidOption (Reentrant without Owner, Owner
// longer than MaxNameLen).
func (c *Client) NewMutex(name string, ttl time.Duration, opts *MutexOptions) (*Mutex, error) {
	var o MutexOptions
	if opts != nil {
		o = *opts
	}
	ms, err := c.validLock(name, ttl, o.Owner, o.Reentrant)
	if err != nil {
		return nil, err
	}
	k := c.Key(name)
	return &Mutex{
		c: c, name: name, ttlMS: ms, owner: o.Owner, reentrant: o.Reentrant,
		refresh: o.AutoRefresh, fifo: o.FIFO, queueMS: queueTTL(ms),
		keys:      []string{k, k + ":fence", k + ":q", k + ":qx", k + ":wake", k + ":x"},
		leaseKeys: []string{k, k + ":wake"},
	}, nil
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// TryLock makes one attempt to acquire the lock and does not wait (nor
// queue, in FIFO mode: while FIFO waiters are queued it is refused). It
// blocks for one round trip. It returns the lease, or ErrNotObtained when
// another owner holds the lock (joined with ctx.Err() when ctx is done
// already: then it sends nothing), or ErrClosed, ErrNilContext or the
// Scripter's error; on any error nothing is held.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, notObtained(m.name, err) // no call to abandon
	}
	owner, hold := m.identity()
	l, _, err := m.attempt(ctx, owner, hold, m.callID(hold, 1), 0)
	return l, err
}

// Lock acquires the lock, waiting while another owner holds it. It blocks
// until the lock is acquired or ctx is done; there is no give-up after a
// number of attempts. A waiter retries when the holder's release is
// published (if the Scripter implements Subscriber) and otherwise after a
// pause never longer than the holder's remaining TTL: jittered exponential
// backoff from Options.MinRetryDelay to MaxRetryDelay when polling. In FIFO
// mode it joins the lock's queue and is granted the lock in arrival order.
// When ctx ends first it returns ErrNotObtained joined with ctx.Err(), so
// errors.Is works for both (and with the last connection error, if the
// attempts were failing), and leaves the queue at once. A connection
// failure (a network error, EOF, a reset or refused connection) or a
// passing server state (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN,
// READONLY) is retried with backoff like a refusal; any other Scripter
// error, such as NOPERM or WRONGTYPE, is returned at once. On any error
// nothing is held.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx); err != nil {
		return nil, err
	}
	owner, hold := m.identity()
	var qttl int64
	if m.fifo {
		qttl = m.queueMS
	}
	calls := 0
	l, err := m.c.wait(ctx, m.name, func(ctx context.Context) (*Lease, time.Duration, error) {
		calls++
		l, pttl, err := m.attempt(ctx, owner, hold, m.callID(hold, calls), qttl)
		if m.fifo && err != nil {
			// Refresh the queue entry well before it expires.
			refresh := time.Duration(qttl) * time.Millisecond / 3
			if pttl <= 0 || pttl > refresh {
				pttl = refresh
			}
		}
		return l, pttl, err
	})
	if err != nil && m.fifo {
		m.cleanup(ctx, scriptDequeue, []string{m.keys[0], m.keys[2], m.keys[3], m.keys[4]}, []string{hold})
	}
	return l, err
}

func notObtained(name string, cerr error) error {
	return fmt.Errorf("%w: %q: %w", ErrNotObtained, name, cerr)
}

// identity returns the owner token and hold id for one acquisition: random
// (the same for every attempt of one Lock call), or the caller's Owner.
func (m *Mutex) identity() (owner, hold string) {
	switch {
	case m.owner == "":
		t := newToken()
		return t, t
	case m.reentrant:
		return m.owner, newToken()
	default:
		return m.owner, m.owner
	}
}

// callID returns the id of the n-th acquire call of one Lock or TryLock
// call, unique among all calls: hold itself for the first call when hold is
// random, else derived from it (and from a fresh token when the hold id is
// a caller-chosen owner, which repeats across Lock calls).
func (m *Mutex) callID(hold string, n int) string {
	if m.owner != "" && !m.reentrant {
		hold = newToken()
	}
	if n == 1 {
		return hold
	}
	return hold + ":" + strconv.Itoa(n)
}

// attempt runs the acquire script once as call id; qttl > 0 queues the
// caller (FIFO) when it is not granted. When the lock is held by another
// owner it returns ErrNotObtained and the holder's remaining TTL (0 when the
// lock is free but queued waiters go first). When the call fails it
// abandons it (see abandon.lua), so that the call cannot leave a grant or
// take effect later.
func (m *Mutex) attempt(ctx context.Context, owner, hold, id string, qttl int64) (*Lease, time.Duration, error) {
	start := time.Now()
	r, err := m.c.run(ctx, scriptAcquire, m.keys, []string{owner, hold, strconv.FormatInt(m.ttlMS, 10), strconv.FormatInt(qttl, 10), id})
	var v []int64
	if err == nil {
		v, err = replyInts(scriptAcquire, r, 2)
	}
	if err == nil && v[0] != 0 && v[0] != 1 {
		err = fmt.Errorf("%w: acquire status %d", ErrUnexpectedReply, v[0])
	}
	if err != nil {
		// The script may have run before the call failed, or may yet run:
		// refuse it, and drop a hold it granted, unless that belongs to a
		// caller-chosen single-hold owner, whose earlier grant it would end.
		drop := "0"
		if m.owner == "" || m.reentrant {
			drop = "1"
		}
		refuse := abandonedMS
		if answered(err) {
			refuse = "0" // the server replied: the call cannot arrive later
		}
		m.cleanup(ctx, scriptAbandon, []string{m.keys[0], m.keys[4], m.keys[5]},
			[]string{owner, hold, id, drop, refuse})
		return nil, 0, err
	}
	if v[0] == 0 {
		return nil, time.Duration(v[1]) * time.Millisecond, fmt.Errorf("%w: %q", ErrNotObtained, m.name)
	}
	l := &Lease{
		c: m.c, ops: mutexOps, name: m.name, keys: m.leaseKeys,
		owner: owner, hold: hold, fence: v[1], validUntil: m.c.validity(start, m.ttlMS),
		ttlMS: m.ttlMS, refresh: m.refresh,
	}
	m.c.startRefresh(l)
	return l, 0, nil
}

// cleanup runs a clean-up script after a failed or abandoned acquire. It is
// best effort and bounded by cleanupTimeout, even when ctx is done, so
// nothing is left behind until a TTL runs out.
func (m *Mutex) cleanup(ctx context.Context, s *script, keys, args []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = m.c.run(ctx, s, keys, args)
}

// cleanupTimeout bounds the clean-up after a failed acquire call.
const cleanupTimeout = 500 * time.Millisecond

// abandonedMS is how long an abandoned acquire call stays refused, in
// milliseconds: far longer than a client holds a command before sending it.
// A call the server answered (with an error) is not listed.
const abandonedMS = "30000"

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
