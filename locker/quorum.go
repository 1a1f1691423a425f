package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxQuorumClients bounds the deployments of one Quorum.
const MaxQuorumClients = 15

// QuorumOptions configures one Quorum. A nil *QuorumOptions, and every zero
// field, means the default written at the end of the field's doc.
type QuorumOptions struct {
	// AutoRefresh keeps every part of each lease alive until Unlock, as
	// MutexOptions.AutoRefresh does, each by its own Client's refresher; the
	// lease is lost when fewer than a majority of parts are left. Default
	// false.
	AutoRefresh bool

	// PartTimeout bounds how long one deployment may hold up any call of
	// the Quorum and its leases (an attempt of Lock or TryLock, Extend,
	// Unlock, TTL, subscribing to wake-ups): a deployment that has not
	// answered by then counts as failed for that call. It matters only
	// when the answer needs that deployment: a call decides as soon as a
	// majority answered the same way, so a silent minority (a partition, a
	// paused VM) costs nothing while the others agree. A late answer is
	// still used: a grant is added to the lease, or released. Must be
	// within [1ms, TTL]. Default a tenth of the TTL, at most 1s: a silent
	// deployment can then cost a grant at most a tenth of its validity,
	// and 1s is far above a healthy round trip.
	PartTimeout time.Duration
}

// partTimeout returns o's PartTimeout, or the default for a TTL of ttl,
// or an error when it is out of range.
func (o *QuorumOptions) partTimeout(ttl time.Duration) (time.Duration, error) {
	if o.PartTimeout == 0 {
		return max(min(ttl/10, time.Second), time.Millisecond), nil
	}
	if o.PartTimeout < time.Millisecond || o.PartTimeout > ttl {
		return 0, fmt.Errorf("%w: PartTimeout %v not within [1ms, TTL %v]", ErrInvalidOption, o.PartTimeout, ttl)
	}
	return o.PartTimeout, nil
}

// Quorum is one lock name across N independent deployments (the Redlock
// scheme): each Client talks to its own deployment (a single server or a
// Cluster), and a grant is a plain Mutex grant on at least a majority of
// them (N/2 + 1), obtained within the lease's validity. A failover, a
// restart or a partition of a minority of deployments cannot give the lock
// to two holders at once, provided a deployment that restarts either
// keeps its data (appendonly with appendfsync always) or stays down for at
// least the TTL before it serves again (a "delayed restart"): a deployment
// that comes back empty at once may hand the lock to a second majority.
//
// Each part is exactly a Mutex grant, so Inspect, ForceRelease and the CLI
// see it on its deployment, and a plain Mutex of the same name on one
// deployment sees it held. Two Clients on one deployment are counted as two
// deployments: give each deployment one Client.
type Quorum struct {
	parts   []*Mutex   // one per deployment, AutoRefresh off until a grant
	jans    []*janitor // the deployments' Clients' janitors, in order
	name    string
	ttlMS   int64
	need    int
	refresh bool
	budget  time.Duration // QuorumOptions.PartTimeout
}

// NewQuorum returns the quorum lock called name over the deployments of
// clients, whose leases last ttl unless extended. It does not contact
// Redis. It fails with ErrInvalidOption (no client, more than
// MaxQuorumClients, a nil or repeated Client, PartTimeout out of range),
// ErrClosed, ErrInvalidName or ErrInvalidTTL. One or two clients are
// allowed but tolerate no failure; use an odd number, three or five.
func NewQuorum(clients []*Client, name string, ttl time.Duration, opts *QuorumOptions) (*Quorum, error) {
	o := orZero(opts)
	if len(clients) == 0 || len(clients) > MaxQuorumClients {
		return nil, fmt.Errorf("%w: %d clients, want 1 to %d", ErrInvalidOption, len(clients), MaxQuorumClients)
	}
	q := &Quorum{name: name, need: len(clients)/2 + 1, refresh: o.AutoRefresh}
	for i, c := range clients {
		if c == nil || slices.Index(clients, c) != i {
			return nil, fmt.Errorf("%w: client %d is nil or repeated", ErrInvalidOption, i)
		}
		m, err := c.NewMutex(name, ttl, nil)
		if err != nil {
			return nil, err
		}
		q.parts, q.jans, q.ttlMS = append(q.parts, m), append(q.jans, c.jan), m.ttlMS
	}
	var err error
	if q.budget, err = o.partTimeout(ttl); err != nil {
		return nil, err
	}
	return q, nil
}

// Name returns the lock's name.
func (q *Quorum) Name() string { return q.name }

// Need returns how many deployments must grant the lock: a majority.
func (q *Quorum) Need() int { return q.need }

// TryLock makes one attempt on every deployment at once and does not wait.
// It blocks until a majority granted it or refused it (about one round
// trip of the majority's slower deployment), never longer than PartTimeout
// or ctx; the deployments that had not answered then go on in the
// background (a part they grant is added to the lease, or released when
// the attempt failed). It returns the lease, or ErrNotObtained when too
// few deployments granted it (joined with the deployments' errors, if
// any), or ErrClosed, ErrNilContext, or the deployments' errors joined when
// none refused it as held; on any error nothing is held.
func (q *Quorum) TryLock(ctx context.Context) (*QuorumLease, error) {
	if err := q.begin(ctx); err != nil {
		return nil, err
	}
	defer q.end()
	if err := ctx.Err(); err != nil {
		return nil, notObtained(q.name, err)
	}
	start := time.Now()
	l, _, err := q.try(ctx, false)
	q.acquired(ctx, start, 1, l, err)
	return l, err
}

// Lock acquires the lock on a majority, waiting while it is held. It blocks
// until granted or ctx is done, retrying when the first deployment
// publishes a release and otherwise after a jittered pause never longer
// than the holders' remaining TTL (as Mutex.Lock polls); deployments that
// fail (down, unreachable, or silent for PartTimeout) count as refusing,
// so a silent minority does not hold up a grant. When ctx ends first it
// returns ErrNotObtained joined with ctx.Err(); an error that no retry can
// cure (NOPERM, ...) on every deployment is returned at once. On any error
// nothing is held.
func (q *Quorum) Lock(ctx context.Context) (*QuorumLease, error) {
	if err := q.begin(ctx); err != nil {
		return nil, err
	}
	defer q.end()
	start := time.Now()
	w := q.parts[0].c.newWaiter(ctx, q.name, false)
	w.joinFor = q.budget // the deployment Lock subscribes on may be the silent one
	out, tries, err := waitFor(q.parts[0].c, ctx, w, func(ctx context.Context, waited bool) (*QuorumLease, *Lease, time.Duration, error) {
		l, pttl, err := q.try(ctx, waited)
		if err != nil {
			return nil, nil, pttl, err
		}
		return l, l.held()[0], 0, nil
	})
	q.acquired(ctx, start, tries, out, err)
	return out, err
}

// begin starts an operation on every Client (see Client.begin).
func (q *Quorum) begin(ctx context.Context) error {
	for i, m := range q.parts {
		if err := m.c.begin(ctx); err != nil {
			for _, p := range q.parts[:i] {
				p.c.end()
			}
			return err
		}
	}
	return nil
}

// end ends an operation started by begin.
func (q *Quorum) end() {
	for _, m := range q.parts {
		m.c.end()
	}
}

// acquired reports an acquisition to the first Client's Observer (mode
// "quorum", the first part's fence).
func (q *Quorum) acquired(ctx context.Context, start time.Time, tries int, l *QuorumLease, err error) {
	var first *Lease
	if l != nil {
		first = l.held()[0]
	}
	q.parts[0].c.acquired(ctx, q.name, modeQuorum, start, tries, first, err)
}

// try runs one attempt on every deployment at once and decides as soon as
// a majority granted it (it returns the lease, when still valid) or can no
// longer grant it (it returns ErrNotObtained with the longest remaining
// time of the refusing holders, or the deployments' errors when none
// refused it as held); each deployment's call is bounded by PartTimeout.
// Calls that answer after the decision go on in the background: a grant
// is added to the lease, or released when the attempt failed. A
// deployment whose outcome is unknown is cleaned up by Mutex's own
// attempt.
func (q *Quorum) try(ctx context.Context, waited bool) (*QuorumLease, time.Duration, error) {
	type result struct {
		l    *Lease
		pttl time.Duration
	}
	var (
		lease   = newQuorumLease(len(q.parts), q.need, q.budget, q.refresh)
		granted int
		failed  int
		errs    []error
		pttl    time.Duration
		refused bool
	)
	fanOut(ctx, q.jans, q.budget, true, func(ctx context.Context, i int) (result, error) {
		l, pttl, _, err := q.parts[i].attempt(ctx, nil, time.Time{}, "", 0, waited, false)
		return result{l, pttl}, err
	}, func(i int, r result, err error) bool {
		switch {
		case err == nil:
			lease.add(i, r.l)
			granted++
		case errors.Is(err, ErrNotObtained):
			refused, failed = true, failed+1
			pttl = max(pttl, r.pttl)
		default:
			failed++
			errs = append(errs, fmt.Errorf("deployment %d: %w", i, err))
		}
		return granted >= q.need || len(q.parts)-failed < q.need
	}, func(i int, r result, err error) {
		if err == nil {
			lease.add(i, r.l) // released if the attempt failed
		}
	})
	if granted >= q.need {
		if lease.Valid() {
			if err := lease.start(); err != nil {
				return nil, 0, err // a Client closed: the grant is ended and released
			}
			return lease, 0, nil
		}
		refused = true // too slow this time: a later try may be quicker
		errs = append(errs, fmt.Errorf("the grants took longer than their validity (%v)", time.Since(lease.held()[0].start).Round(time.Millisecond)))
	}
	lease.end()
	if refused || len(errs) == 0 {
		err := fmt.Errorf("%w: %q: %d of %d deployments granted it, %d needed", ErrNotObtained, q.name, granted, len(q.parts), q.need)
		return nil, pttl, errors.Join(append([]error{err}, errs...)...)
	}
	return nil, 0, errors.Join(errs...)
}
