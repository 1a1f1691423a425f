package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// QuorumLease is one grant of a Quorum: a mutex lease (a part) on each
// deployment that granted it, at least a majority. It is held while a
// majority of parts are. A deployment that grants the attempt after the
// majority was reached (it was slower) adds its part to the lease a moment
// later, unless the lease is over by then (its part is released instead).
// A lease that loses its majority gives up its other parts at once: they
// stop being refreshed and are released in the background (bounded by their
// validity, tracked by Client.Close). Its methods are safe for concurrent
// use; those of a nil *QuorumLease are safe too (Unlock returns nil, the
// others report an expired lease).
//
// Fences. Every part has its deployment's fence for the name, and each
// deployment's fences of the name strictly increase (see Lease.Fence).
// Any two quorum grants share a deployment (two majorities intersect), and
// on it the later grant's fence is the larger. Fences() returns the parts'
// fences by deployment, which is all a resource needs to refuse a stale
// holder without trusting any clock: keep the largest fence seen per
// deployment and refuse a request when any of its non-zero fences is not
// larger than the one kept for that deployment. Fence() (the largest of
// the parts) is a single number that grows from one grant to the next only
// while the deployments' clocks differ by less than the time between the
// grants (a fence is the larger of the last one + 1 and the server's clock
// in µs): it does not carry the single-primary guarantee.
type QuorumLease struct {
	need    int
	budget  time.Duration // bounds each part's call (QuorumOptions.PartTimeout)
	refresh bool
	loss    groupLoss // the loss that left fewer than need parts

	mu    sync.Mutex // guards the fields below
	parts []*Lease   // per deployment: its part, nil where none was granted
	nLost int
	ended bool // over: released, lost, or the attempt was refused
	live  bool // granted: parts added now start their auto-refresh
	armed bool // the parts' deadline timers are made (Lost, Context or Err was used)
}

// newQuorumLease returns the lease of an attempt over n deployments, with
// no part yet: parts are added by add as the deployments grant them.
func newQuorumLease(n, need int, budget time.Duration, refresh bool) *QuorumLease {
	q := &QuorumLease{need: need, budget: budget, refresh: refresh, parts: make([]*Lease, n)}
	q.loss.init()
	return q
}

// add makes l the part of deployment i. Once the lease has started (a
// grant that came after the attempt was decided) it also starts the
// part's auto-refresh; when the lease is over or the Client closed, it
// releases the part in the background instead.
func (q *QuorumLease) add(i int, l *Lease) {
	q.mu.Lock()
	if q.ended || l.c.closed.Load() {
		q.mu.Unlock()
		l.drop()
		return
	}
	l.group, l.refresh = q, q.refresh
	q.parts[i] = l
	live, armed := q.live, q.armed
	q.mu.Unlock()
	if live {
		l.c.startRefresh(l)
		if armed {
			armParts([]*Lease{l})
		}
	}
}

// start begins the life of a granted lease: the auto-refresh of its parts
// (a part added later starts its own). A grant that arrives after
// Client.Close started is released at once (bounded) and ErrClosed
// returned: nothing is held.
func (q *QuorumLease) start() error {
	q.mu.Lock()
	q.live = true
	parts := q.heldLocked() // a part added from now on starts itself
	q.mu.Unlock()
	for _, p := range parts {
		if p.c.closed.Load() {
			q.end()
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTry)
			defer cancel()
			for _, p := range parts {
				_, _ = p.c.run(ctx, p.ops.release, p.keys, p.releaseArgs())
			}
			return ErrClosed
		}
	}
	for _, p := range parts {
		p.c.startRefresh(p)
	}
	return nil
}

// end marks the lease over and releases its parts in the background; a
// part granted later is released too.
func (q *QuorumLease) end() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
	for _, p := range q.held() {
		p.drop()
	}
	q.loss.cancel(context.Canceled)
}

// partLost counts a lost part; the loss that leaves fewer than need parts
// loses the lease and gives up the other parts.
func (q *QuorumLease) partLost(part *Lease, err error) {
	q.mu.Lock()
	q.nLost++
	if q.ended || q.count()-q.nLost >= q.need {
		q.mu.Unlock()
		return
	}
	q.ended = true
	lost := fmt.Errorf("locker: quorum lost: %d of %d parts lost, the last %q: %w", q.nLost, q.count(), part.Name(), err)
	parts := slices.Clone(q.parts)
	q.mu.Unlock()
	q.loss.lose(lost)
	for _, p := range parts {
		if p != nil && p != part {
			p.drop()
		}
	}
}

// count returns the number of parts. The caller holds q.mu.
func (q *QuorumLease) count() int {
	n := 0
	for _, p := range q.parts {
		if p != nil {
			n++
		}
	}
	return n
}

// held returns the parts, in deployment order.
func (q *QuorumLease) held() []*Lease {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heldLocked()
}

// heldLocked is held for a caller that holds q.mu.
func (q *QuorumLease) heldLocked() []*Lease {
	var ps []*Lease
	for _, p := range q.parts {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// Parts returns the mutex lease of each deployment that granted the lock,
// in the order of the Quorum's clients. Use them to read each part's
// Fence or validity; release the QuorumLease, not the parts.
func (q *QuorumLease) Parts() []*Lease {
	if q == nil {
		return nil
	}
	return q.held()
}

// Fences returns the fence of each deployment, in the order of the
// Quorum's clients: 0 for a deployment that did not grant this lease. See
// QuorumLease for how a resource checks them.
func (q *QuorumLease) Fences() []int64 {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	fs := make([]int64, len(q.parts))
	for i, p := range q.parts {
		fs[i] = p.Fence() // 0 for a nil part
	}
	return fs
}

// Fence returns the largest fence of the parts. Unlike a Mutex fence it is
// ordered across grants only as far as the deployments' clocks agree; see
// QuorumLease.
func (q *QuorumLease) Fence() int64 {
	if q == nil {
		return 0
	}
	return slices.Max(q.Fences())
}

// ValidUntil returns the time until which a majority of parts are valid:
// the need-th latest validity deadline of the parts not lost (the zero
// Time when fewer are left). Each part's deadline counts from before its
// call was sent and subtracts the drift margin (Options.DriftFactor), so
// the time spent acquiring and the servers' clock drift are both
// accounted for.
func (q *QuorumLease) ValidUntil() time.Time {
	if q == nil {
		return time.Time{}
	}
	var ds []time.Time
	for _, p := range q.held() {
		if p.Err() == nil {
			if d := p.ValidUntil(); !d.IsZero() {
				ds = append(ds, d)
			}
		}
	}
	if len(ds) < q.need {
		return time.Time{}
	}
	slices.SortFunc(ds, func(a, b time.Time) int { return b.Compare(a) })
	return ds[q.need-1]
}

// Valid reports whether a majority of parts are valid (see Lease.Valid).
func (q *QuorumLease) Valid() bool {
	if q == nil {
		return false
	}
	n := 0
	for _, p := range q.held() {
		if p.Valid() {
			n++
		}
	}
	return n >= q.need
}

// majority runs f on every part at once, each call bounded by the part
// budget, and returns as soon as the answer is known: need parts
// succeeded (ok true), or so many failed that need cannot be reached. The
// calls still running go on in the background (tracked by Client.Close).
// It also returns how many parts there were and the failures so far, each
// prefixed with its deployment.
func (q *QuorumLease) majority(ctx context.Context, f func(ctx context.Context, l *Lease) error) (ok bool, n int, errs []error) {
	parts := q.held()
	jans := make([]*janitor, len(parts))
	for i, p := range parts {
		jans[i] = p.c.jan
	}
	good := 0
	fanOut(ctx, jans, q.budget, true, func(ctx context.Context, i int) (struct{}, error) {
		return struct{}{}, f(ctx, parts[i])
	}, func(i int, _ struct{}, err error) bool {
		if err != nil {
			errs = append(errs, fmt.Errorf("deployment of part %d (fence %d): %w", i, parts[i].Fence(), err))
		} else {
			good++
		}
		return good >= q.need || len(parts)-len(errs) < q.need
	}, nil)
	return good >= q.need, len(parts), errs
}

// Unlock releases the parts, all at once, with each part's Lease.Unlock
// semantics, and returns as soon as a majority was released (or had
// already expired, on a deployment that restarted without its data): nil,
// and the lease's Context is cancelled. The other parts' releases go on in
// the background, tracked by Client.Close: a part whose release has not
// returned when Unlock does is ended at once (its outcome is unknown) and
// released in the background, as Lease.Unlock does after an unknown
// outcome. When a majority could not be released it returns the parts' errors
// joined; the lease is over (Context cancelled) only if fewer than a
// majority are still held (a release refused by the server, NOPERM or a
// nil ctx, leaves its part held: call Unlock again).
func (q *QuorumLease) Unlock(ctx context.Context) error {
	if q == nil {
		return nil
	}
	if ctx == nil {
		return ErrNilContext
	}
	var (
		mu       sync.Mutex
		returned = map[*Lease]bool{}
	)
	ok, n, errs := q.majority(ctx, func(ctx context.Context, l *Lease) error {
		err := l.Unlock(ctx)
		mu.Lock()
		returned[l] = true
		mu.Unlock()
		if err != nil && !errors.Is(err, ErrExpired) {
			return err
		}
		return nil
	})
	// A release still on its way has an unknown outcome: its part ends now
	// and is released in the background, as Lease.Unlock does.
	mu.Lock()
	for _, p := range q.held() {
		if !returned[p] {
			p.drop()
		}
	}
	mu.Unlock()
	left := 0
	for _, p := range q.held() {
		if !p.over() {
			left++
		}
	}
	if ok || left < q.need {
		q.mu.Lock()
		q.ended = true // a part granted late is released
		q.mu.Unlock()
		q.loss.cancel(context.Canceled)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("locker: quorum unlock: a majority (%d of %d parts) was not released: %w", q.need, n, errors.Join(errs...))
}

// Extend extends the parts to ttl, all at once, with each part's
// Lease.Extend semantics, and returns as soon as a majority answered: nil
// only when a majority was extended and the lease is still valid after
// the call (ValidUntil, which counts only the parts' confirmed deadlines,
// has not passed); an error matching ErrExpired when the extensions were
// granted but came back after the lease's validity ended (the lease is
// not valid: Valid reports false); otherwise the parts' errors joined.
// The other parts' calls go on in the background, each bounded by
// QuorumOptions.PartTimeout (a part that could not be extended keeps its
// old deadline, or is lost).
func (q *QuorumLease) Extend(ctx context.Context, ttl time.Duration) error {
	if q == nil {
		return fmt.Errorf("%w: nil lease", ErrExpired)
	}
	if ctx == nil {
		return ErrNilContext
	}
	if _, err := validTTL(ttl); err != nil {
		return err
	}
	ok, n, errs := q.majority(ctx, func(ctx context.Context, l *Lease) error { return l.Extend(ctx, ttl) })
	if !ok {
		return fmt.Errorf("locker: quorum extend: fewer than %d of %d parts extended: %w", q.need, n, errors.Join(errs...))
	}
	if !q.Valid() {
		return fmt.Errorf("%w: quorum extend: a majority was extended, but the lease's validity ended before the replies came back", ErrExpired)
	}
	return nil
}

// TTL returns the time a majority of parts have left as their servers
// count it, asking every part at once and returning as soon as a majority
// answered: the need-th longest of the answers it has then, which is
// never more than a majority really has (a part whose Extend is still on
// its way may answer with its old time). It fails, with the parts' errors
// joined, when fewer than a majority answered that they hold the lock.
func (q *QuorumLease) TTL(ctx context.Context) (time.Duration, error) {
	if q == nil {
		return 0, fmt.Errorf("%w: nil lease", ErrExpired)
	}
	if ctx == nil {
		return 0, ErrNilContext
	}
	var (
		mu   sync.Mutex
		ttls []time.Duration
	)
	ok, n, errs := q.majority(ctx, func(ctx context.Context, l *Lease) error {
		d, err := l.TTL(ctx)
		if err == nil {
			mu.Lock()
			ttls = append(ttls, d)
			mu.Unlock()
		}
		return err
	})
	if !ok {
		return 0, fmt.Errorf("locker: quorum ttl: fewer than %d of %d parts hold it: %w", q.need, n, errors.Join(errs...))
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(ttls, func(a, b time.Duration) int { return int(b - a) })
	return ttls[q.need-1], nil
}

// Lost returns a channel closed when so many parts are lost (see
// Lease.Lost) that fewer than a majority are left. Unlock does not close
// it. For a nil lease it returns a closed channel.
func (q *QuorumLease) Lost() <-chan struct{} { return q.signal().lost }

// Context returns a context cancelled when the lease is lost (cause: the
// loss that left too few parts) or released by Unlock.
func (q *QuorumLease) Context() context.Context { return q.signal().ctx }

// Err returns the loss that left fewer than a majority of parts, or nil.
func (q *QuorumLease) Err() error { return q.signal().loss() }

// signal returns the lease's loss signal, first making, once, the parts'
// deadline timers (see Lease.Lost), so that a lease that is not
// auto-refreshed is lost at its validity deadline too (a part added later
// is armed by add). A nil lease's signal is lost already.
func (q *QuorumLease) signal() *groupLoss {
	if q == nil {
		return lostGroup()
	}
	q.mu.Lock()
	armed := q.armed
	q.armed = true
	q.mu.Unlock()
	if !armed {
		armParts(q.held())
	}
	return &q.loss
}
