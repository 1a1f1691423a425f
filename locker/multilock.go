package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxMultiNames bounds the names of one MultiLock.
const MaxMultiNames = 1024

// MultiLockOptions configures one MultiLock. A nil *MultiLockOptions, and
// every zero field, means the default written at the end of the field's
// doc.
type MultiLockOptions struct {
	// AutoRefresh keeps every part of each lease alive until Unlock, as
	// MutexOptions.AutoRefresh does; the lease is lost when any part is.
	// Default false.
	AutoRefresh bool
}

// MultiLock takes several mutexes as one: all of them or none. Each name is
// the Mutex of that name (a plain Mutex on one of them excludes the
// MultiLock and is excluded by it), and each part of a grant is exactly
// what a Mutex grant is, so Inspect, the CLI and ForceRelease see it.
//
// The names are taken by Cluster slot: the names of one slot in one script,
// atomically; the slots' scripts all at once, and if any slot is refused,
// the slots granted are released again and the attempt counts as refused
// (no caller ever holds some names while waiting for others, so two
// MultiLocks over overlapping names in any order cannot deadlock). Across
// slots a grant is not atomic: for the moment between the slots' scripts, a
// plain Mutex may see some names taken by an attempt that is then undone
// (released at once; on a crash or an unknown outcome, by the background
// clean-up within seconds, or at the latest after the TTL). On a standalone
// server every name is also grouped by its would-be slot.
type MultiLock struct {
	c       *Client
	names   []string // sorted, distinct
	ttlMS   int64
	ttlArg  string // ttlMS in decimal, as the script takes it
	refresh bool
	groups  [][]int    // indexes into names, one group per slot, in name order
	keys    [][]string // each group's script keys (lock, :q, :qx, :x per name)
}

// NewMultiLock returns the multi-lock over names (order and repeats do not
// matter) whose leases last ttl unless extended. It does not contact Redis.
// It fails with ErrClosed, ErrInvalidName (a name empty or longer than
// MaxNameLen), ErrInvalidTTL (outside [MinTTL, MaxTTL]) or ErrInvalidOption
// (no name, or more than MaxMultiNames).
func (c *Client) NewMultiLock(names []string, ttl time.Duration, opts *MultiLockOptions) (*MultiLock, error) {
	o := orZero(opts)
	if len(names) == 0 || len(names) > MaxMultiNames {
		return nil, fmt.Errorf("%w: %d names, want 1 to %d", ErrInvalidOption, len(names), MaxMultiNames)
	}
	var ms int64
	for _, n := range names {
		var err error
		if ms, err = c.validLock(n, ttl, "", false); err != nil {
			return nil, err
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	m := &MultiLock{c: c, names: sorted, ttlMS: ms, ttlArg: strconv.FormatInt(ms, 10), refresh: o.AutoRefresh}
	slot := map[uint16]int{}
	for i, n := range sorted {
		s := keySlot(c.Key(n))
		g, ok := slot[s]
		if !ok {
			g = len(m.groups)
			slot[s] = g
			m.groups = append(m.groups, nil)
		}
		m.groups[g] = append(m.groups[g], i)
	}
	for _, idx := range m.groups {
		keys := make([]string, 0, 4*len(idx))
		for _, i := range idx {
			k := c.Key(m.names[i])
			keys = append(keys, k, k+":q", k+":qx", k+":x")
		}
		m.keys = append(m.keys, keys)
	}
	return m, nil
}

// Names returns the lock's names, sorted, without repeats.
func (m *MultiLock) Names() []string { return slices.Clone(m.names) }

// TryLock makes one attempt to take every name and does not wait. It blocks
// for one round trip (the slots' scripts run concurrently), plus one in
// the background when a slot was refused after others were granted. It
// returns the lease, or ErrNotObtained when any name is held by another
// owner (or has a FIFO waiter queued), or ErrClosed, ErrNilContext or the
// Scripter's error; on any error nothing is held.
func (m *MultiLock) TryLock(ctx context.Context) (*MultiLease, error) {
	if err := m.c.begin(ctx); err != nil {
		return nil, err
	}
	defer m.c.end()
	if err := ctx.Err(); err != nil {
		return nil, notObtained(m.label(), err)
	}
	start := time.Now()
	l, _, err := m.try(ctx, false)
	m.acquired(ctx, start, 1, l, err)
	return l, err
}

// acquired reports an acquisition to the Client's Observer (mode "multi",
// the lock named by its names joined with ',', the first part's fence).
func (m *MultiLock) acquired(ctx context.Context, start time.Time, tries int, l *MultiLease, err error) {
	var first *Lease
	if l != nil {
		first = l.parts[0]
	}
	m.c.acquired(ctx, m.label(), modeMulti, start, tries, first, err)
}

// Lock takes every name, waiting while any is held by another owner. It
// blocks until all are granted or ctx is done, retrying when the name that
// refused it is released (push wake-ups, as Mutex.Lock) and otherwise when
// its holder's TTL has passed. When ctx ends first it returns
// ErrNotObtained joined with ctx.Err(). Connection failures are retried as
// Mutex.Lock retries them (with a ctx without deadline, for at most
// Options.UnreachableTimeout, then ErrUnreachable); another Scripter error
// is returned at once. On any error nothing is held.
func (m *MultiLock) Lock(ctx context.Context) (*MultiLease, error) {
	if err := m.c.begin(ctx); err != nil {
		return nil, err
	}
	defer m.c.end()
	start := time.Now()
	// A release of any of the names wakes the waiter.
	var own []string
	for _, n := range m.names[1:] {
		own = append(own, m.c.Key(n)+":wake")
	}
	out, tries, err := waitFor(m.c, ctx, m.c.newWaiter(ctx, m.names[0], false, own...), func(ctx context.Context, waited bool) (*MultiLease, *Lease, time.Duration, error) {
		l, pttl, err := m.try(ctx, waited)
		if err != nil {
			return nil, nil, pttl, err
		}
		return l, l.parts[0], 0, nil
	})
	m.acquired(ctx, start, tries, out, err)
	return out, err
}

// label names the lock in errors.
func (m *MultiLock) label() string { return strings.Join(m.names, ",") }

// try runs one attempt: every slot's script at once. It decides as soon as
// the answer is known: every slot granted (the lease), or one slot refused
// or failed; the slots' calls still running then finish in the background
// (within ctx, tracked by Client.Close). The slots
// granted of a failed attempt are released in the background, and the
// attempt returns ErrNotObtained with the longest remaining time of the
// refusing holders, or the first slot's error; a slot whose outcome is
// unknown (its call failed or was cancelled) is abandoned, name by name.
func (m *MultiLock) try(ctx context.Context, waited bool) (*MultiLease, time.Duration, error) {
	a := &multiAttempt{m: m, id: newToken(), start: time.Now(), parts: make([]*Lease, len(m.names))}
	if waited {
		a.waited = "1"
	}
	jans := make([]*janitor, len(m.groups))
	for g := range jans {
		jans[g] = m.c.jan
	}
	fail := false
	fanOut(ctx, jans, 0, false, a.call, func(g int, v [2]int64, err error) bool {
		fail = !a.settle(g, v, err, false)
		return fail
	}, func(g int, v [2]int64, err error) {
		a.settle(g, v, err, true)
	})
	if fail {
		// The other slots' calls finish in the background (bounded by
		// ctx): a grant among them is released, an unknown outcome
		// abandoned.
		for _, p := range a.parts {
			if p != nil {
				p.drop()
			}
		}
		if len(a.errs) > 0 {
			return nil, 0, errors.Join(a.errs...)
		}
		return nil, a.pttl, fmt.Errorf("%w: %q", ErrNotObtained, m.label())
	}
	l, err := m.c.newMultiLease(a.parts, m.refresh)
	return l, 0, err
}

// multiAttempt is one attempt of a MultiLock: one call id for every slot,
// and what the slots answered before the decision.
type multiAttempt struct {
	m      *MultiLock
	id     string
	waited string // "1": not the first attempt
	start  time.Time
	parts  []*Lease // the granted names' leases, by name
	errs   []error
	pttl   time.Duration // the longest remaining time of a refusing holder
}

// call runs slot g's script.
func (a *multiAttempt) call(ctx context.Context, g int) ([2]int64, error) {
	r, err := a.m.c.run(ctx, scriptMultiAcquire, a.m.keys[g], []string{a.id, a.m.ttlArg, a.waited})
	var v [2]int64
	if err == nil {
		v, err = replyInts(scriptMultiAcquire, r)
		if err == nil && v[0] != 0 && v[0] != 1 {
			err = fmt.Errorf("%w: multi_acquire status %d", ErrUnexpectedReply, v[0])
		}
	}
	return v, err
}

// settle handles slot g's reply; before the decision (decided false) it
// records it and reports whether the slot granted its names; after it, a
// grant is released and an unknown outcome abandoned.
func (a *multiAttempt) settle(g int, v [2]int64, err error, decided bool) bool {
	m := a.m
	idx := m.groups[g]
	switch {
	case err != nil:
		if !decided {
			a.errs = append(a.errs, err)
		}
		if !answered(err) {
			for _, i := range idx {
				m.abandon(a.id, m.names[i])
			}
		}
	case v[0] == 0:
		if !decided {
			a.pttl = max(a.pttl, time.Duration(v[1])*time.Millisecond)
		}
	default:
		for _, i := range idx {
			k := m.c.Key(m.names[i])
			p := m.c.newPart(grant{
				ops: mutexOps, name: m.names[i], keys: []string{k}, wake: k + ":wake",
				owner: a.id, hold: a.id, fence: v[1],
			}, a.start, m.ttlMS)
			if decided { // the attempt failed meanwhile
				p.drop()
				continue
			}
			a.parts[i] = p
		}
		return true
	}
	return false
}

// abandon runs abandon.lua on name for call id in the background.
func (m *MultiLock) abandon(id, name string) {
	k := m.c.Key(name)
	keys, args := []string{k, k + ":x"}, []string{id, id, abandonedMS, k + ":wake", ""}
	m.c.later(k, time.Time{}, func(ctx context.Context) error {
		_, err := m.c.run(ctx, scriptAbandon, keys, args)
		return err
	})
}

// keySlot returns the Redis Cluster slot of key: CRC-16/XMODEM of its hash
// tag (the part between the first '{' and the next '}', when not empty),
// modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
