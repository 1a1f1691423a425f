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
// majority of parts are; its methods are safe for concurrent use.
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
	parts  []*Lease // the parts granted, in deployment order
	fences []int64  // per deployment: the part's fence, 0 where none was granted
	need   int

	once   sync.Once
	lost   chan struct{}
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	nLost  int
	err    error // the loss that left fewer than need parts
}

// startQuorum starts the auto-refresh of l's parts. A grant that arrives
// after Client.Close started is released at once (bounded) and ErrClosed
// returned: nothing is held.
func (c *Client) startQuorum(l *QuorumLease, refresh bool) error {
	for _, p := range l.parts {
		if p.c.closed.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTry)
			defer cancel()
			for _, p := range l.parts {
				_, _ = p.c.run(ctx, p.ops.release, p.keys, p.releaseArgs())
			}
			return ErrClosed
		}
	}
	for _, p := range l.parts {
		p.refresh = refresh
		p.c.startRefresh(p)
	}
	return nil
}

// Parts returns the mutex lease of each deployment that granted the lock,
// in the order of the Quorum's clients. Use them to read each part's
// Fence or validity; release the QuorumLease, not the parts.
func (q *QuorumLease) Parts() []*Lease { return slices.Clone(q.parts) }

// Fences returns the fence of each deployment, in the order of the
// Quorum's clients: 0 for a deployment that did not grant this lease. See
// QuorumLease for how a resource checks them.
func (q *QuorumLease) Fences() []int64 { return slices.Clone(q.fences) }

// Fence returns the largest fence of the parts. Unlike a Mutex fence it is
// ordered across grants only as far as the deployments' clocks agree; see
// QuorumLease.
func (q *QuorumLease) Fence() int64 { return slices.Max(q.fences) }

// ValidUntil returns the time until which a majority of parts are valid:
// the need-th latest validity deadline of the parts not lost. Each part's
// deadline counts from before its call was sent and subtracts the drift
// margin (Options.DriftFactor), so the time spent acquiring and the
// servers' clock drift are both accounted for.
func (q *QuorumLease) ValidUntil() time.Time {
	var ds []time.Time
	for _, p := range q.parts {
		if p.Err() == nil {
			ds = append(ds, p.ValidUntil())
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
	n := 0
	for _, p := range q.parts {
		if p.Valid() {
			n++
		}
	}
	return n >= q.need
}

// each runs f on every part concurrently and returns how many succeeded
// and the failures, each prefixed with its deployment.
func (q *QuorumLease) each(f func(i int, l *Lease) error) (ok int, errs []error) {
	res := make([]error, len(q.parts))
	var wg sync.WaitGroup
	for i, l := range q.parts {
		wg.Go(func() { res[i] = f(i, l) })
	}
	wg.Wait()
	for i, err := range res {
		if err == nil {
			ok++
			continue
		}
		errs = append(errs, fmt.Errorf("deployment of part %d (fence %d): %w", i, q.parts[i].Fence(), err))
	}
	return ok, errs
}

// Unlock releases every part, concurrently (one round trip), with each
// part's Lease.Unlock semantics. It returns nil when every part was
// released or had already expired on its deployment (a deployment that
// restarted without its data); otherwise the parts' errors joined. A part
// whose release had an unknown outcome is retried in the background, as
// Lease.Unlock does.
func (q *QuorumLease) Unlock(ctx context.Context) error {
	if q == nil {
		return nil
	}
	_, errs := q.each(func(_ int, l *Lease) error {
		if err := l.Unlock(ctx); err != nil && !errors.Is(err, ErrExpired) {
			return err
		}
		return nil
	})
	q.arm()
	q.cancel(context.Canceled)
	return errors.Join(errs...)
}

// Extend extends every part to ttl, concurrently (one round trip), with
// each part's Lease.Extend semantics. It returns nil when a majority of
// parts were extended (a part that could not be is lost or keeps its old
// deadline, and ValidUntil counts only the majority), and otherwise the
// parts' errors joined.
func (q *QuorumLease) Extend(ctx context.Context, ttl time.Duration) error {
	if q == nil {
		return fmt.Errorf("%w: nil lease", ErrExpired)
	}
	ok, errs := q.each(func(_ int, l *Lease) error { return l.Extend(ctx, ttl) })
	if ok >= q.need {
		return nil
	}
	return fmt.Errorf("locker: quorum extend: %d of %d parts extended, %d needed: %w", ok, len(q.parts), q.need, errors.Join(errs...))
}

// TTL returns the time a majority of parts have left as their servers
// count it (the need-th longest), asking every part concurrently (one round
// trip). It fails, with the parts' errors joined, when fewer than a
// majority answered that they hold the lock.
func (q *QuorumLease) TTL(ctx context.Context) (time.Duration, error) {
	if q == nil {
		return 0, fmt.Errorf("%w: nil lease", ErrExpired)
	}
	ttls := make([]time.Duration, len(q.parts))
	ok, errs := q.each(func(i int, l *Lease) (err error) {
		ttls[i], err = l.TTL(ctx)
		return err
	})
	if ok < q.need {
		return 0, fmt.Errorf("locker: quorum ttl: %d of %d parts hold it, %d needed: %w", ok, len(q.parts), q.need, errors.Join(errs...))
	}
	slices.SortFunc(ttls, func(a, b time.Duration) int { return int(b - a) })
	return ttls[q.need-1], nil
}

// Lost returns a channel closed when so many parts are lost (see
// Lease.Lost) that fewer than a majority are left. Unlock does not close
// it.
func (q *QuorumLease) Lost() <-chan struct{} {
	q.arm()
	return q.lost
}

// Context returns a context cancelled when the lease is lost (cause: the
// loss that left too few parts) or released.
func (q *QuorumLease) Context() context.Context {
	q.arm()
	return q.ctx
}

// Err returns the loss that left fewer than a majority of parts, or nil.
func (q *QuorumLease) Err() error {
	q.arm()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// arm starts, once, a goroutine per part that ends with the part (lost or
// released): a loss is counted, and the loss that leaves fewer than need
// parts loses the lease; a release (Unlock) cancels its context.
func (q *QuorumLease) arm() {
	q.once.Do(func() {
		q.lost = make(chan struct{})
		q.ctx, q.cancel = context.WithCancelCause(context.Background())
		spare := len(q.parts) - q.need
		for _, l := range q.parts {
			done := l.Context().Done()
			go func() {
				<-done
				err := l.Err()
				if err == nil {
					q.cancel(context.Canceled) // released
					return
				}
				q.mu.Lock()
				q.nLost++
				if q.nLost > spare && q.err == nil {
					q.err = fmt.Errorf("locker: quorum lost: %d of %d parts lost, the last %q: %w", q.nLost, len(q.parts), l.Name(), err)
					close(q.lost) // Lost first, as a Lease does
					q.cancel(q.err)
				}
				q.mu.Unlock()
			}()
		}
	})
}
