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
	keys      []string
}

// NewMutex returns the mutex called name whose leases last ttl unless
// extended. It does not contact Redis. It fails with ErrClosed,
// ErrInvalidName (empty, or longer than MaxNameLen), ErrInvalidTTL (outside
// [MinTTL, MaxTTL]) or ErrInvalidOption (Reentrant without Owner, Owner
// longer than MaxNameLen).
func (c *Client) NewMutex(name string, ttl time.Duration, opts *MutexOptions) (*Mutex, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	ms, err := validTTL(ttl)
	if err != nil {
		return nil, err
	}
	var o MutexOptions
	if opts != nil {
		o = *opts
	}
	if o.Reentrant && o.Owner == "" {
		return nil, fmt.Errorf("%w: Reentrant requires Owner", ErrInvalidOption)
	}
	if len(o.Owner) > MaxNameLen {
		return nil, fmt.Errorf("%w: Owner longer than MaxNameLen (%d)", ErrInvalidOption, MaxNameLen)
	}
	k := c.Key(name)
	return &Mutex{c: c, name: name, ttlMS: ms, owner: o.Owner, reentrant: o.Reentrant, refresh: o.AutoRefresh, keys: []string{k, k + ":fence"}}, nil
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// TryLock makes one attempt to acquire the lock and does not wait. It
// blocks for one round trip. It returns the lease, or ErrNotObtained when
// another owner holds the lock, or ErrClosed, ErrNilContext or the
// Scripter's error; on any error nothing is held.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx); err != nil {
		return nil, err
	}
	l, _, err := m.try(ctx)
	return l, err
}

// Lock acquires the lock, waiting while another owner holds it. It blocks
// until the lock is acquired or ctx is done; there is no give-up after a
// number of attempts. Between attempts it pauses with jittered exponential
// backoff (Options.MinRetryDelay to MaxRetryDelay), never longer than the
// holder's remaining TTL. When ctx ends first it returns ErrNotObtained
// joined with ctx.Err(), so errors.Is works for both. A Scripter error
// (other than one caused by ctx) is returned at once. On any error nothing
// is held.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx); err != nil {
		return nil, err
	}
	return m.c.wait(ctx, m.name, m.try)
}

func notObtained(name string, cerr error) error {
	return fmt.Errorf("%w: %q: %w", ErrNotObtained, name, cerr)
}

// try runs the acquire script once. When the lock is held by another owner
// it returns ErrNotObtained and the holder's remaining TTL.
func (m *Mutex) try(ctx context.Context) (*Lease, time.Duration, error) {
	owner, hold := m.owner, ""
	switch {
	case owner == "":
		owner = newToken()
		hold = owner
	case m.reentrant:
		hold = newToken()
	default:
		hold = owner
	}
	start := time.Now()
	r, err := m.c.run(ctx, scriptAcquire, m.keys, []string{owner, hold, strconv.FormatInt(m.ttlMS, 10)})
	if err != nil {
		if m.owner == "" || m.reentrant {
			m.abandon(ctx, owner, hold)
		}
		return nil, 0, err
	}
	v, err := replyInts(scriptAcquire, r, 2)
	if err == nil && v[0] != 0 && v[0] != 1 {
		err = fmt.Errorf("%w: acquire status %d", ErrUnexpectedReply, v[0])
	}
	if err != nil {
		if m.owner == "" || m.reentrant {
			m.abandon(ctx, owner, hold)
		}
		return nil, 0, err
	}
	if v[0] == 0 {
		return nil, time.Duration(v[1]) * time.Millisecond, fmt.Errorf("%w: %q", ErrNotObtained, m.name)
	}
	l := &Lease{
		c: m.c, ops: mutexOps, name: m.name, keys: m.keys[:1],
		owner: owner, hold: hold, fence: v[1], validUntil: m.c.validity(start, m.ttlMS),
		ttlMS: m.ttlMS, refresh: m.refresh,
	}
	m.c.startRefresh(l)
	return l, 0, nil
}

// abandon drops a hold whose acquire call failed without a reply: the
// script may have run before the connection or ctx failed. It is best
// effort and bounded, so nothing is left behind until the TTL.
func (m *Mutex) abandon(ctx context.Context, owner, hold string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer cancel()
	_, _ = m.c.run(ctx, scriptRelease, m.keys[:1], []string{owner, hold})
}

// abandonTimeout bounds the clean-up after a failed acquire call.
const abandonTimeout = 500 * time.Millisecond
