package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MultiLease is one grant of a MultiLock: a mutex lease per name (Parts),
// held, extended, refreshed and released together, and lost when any part
// is. A lost MultiLease gives up its other names at once: they stop being
// refreshed and are released in the background (bounded by their validity,
// tracked by Client.Close), so no name stays held by a lease that is over.
// Its methods are safe for concurrent use; those of a nil *MultiLease are
// safe too (Unlock returns nil, the others report an expired lease).
type MultiLease struct {
	parts []*Lease
	loss  groupLoss // the first part's loss
	armed sync.Once // the parts' deadline timers, made on first use of Lost, Context or Err
}

// newMultiLease makes the lease of parts and starts their auto-refresh. A
// grant that arrives after Client.Close started is released at once
// (bounded) and ErrClosed returned: nothing is held.
func (c *Client) newMultiLease(parts []*Lease, refresh bool) (*MultiLease, error) {
	if c.closed.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTry)
		defer cancel()
		for _, l := range parts {
			_, _ = c.run(ctx, l.ops.release, l.keys, l.releaseArgs())
		}
		return nil, ErrClosed
	}
	m := &MultiLease{parts: parts}
	m.loss.init()
	for _, l := range parts {
		l.group, l.refresh = m, refresh
		c.startRefresh(l)
	}
	return m, nil
}

// partLost loses the lease at the first loss of a part and gives up the
// other parts (see MultiLease).
func (m *MultiLease) partLost(part *Lease, err error) {
	if !m.loss.lose(fmt.Errorf("%q: %w", part.Name(), err)) {
		return
	}
	for _, l := range m.parts {
		if l != part {
			l.drop()
		}
	}
}

// Parts returns the mutex lease of each name, in the MultiLock's name
// order. Use them to read each name's Fence; release the MultiLease, not
// the parts.
func (m *MultiLease) Parts() []*Lease {
	if m == nil {
		return nil
	}
	return slices.Clone(m.parts)
}

// Fence returns the largest fence of the parts (the parts of one Cluster
// slot share one fence; each part's own is Parts()[i].Fence()).
func (m *MultiLease) Fence() int64 {
	if m == nil {
		return 0
	}
	var f int64
	for _, l := range m.parts {
		f = max(f, l.Fence())
	}
	return f
}

// ValidUntil returns the earliest validity deadline of the parts.
func (m *MultiLease) ValidUntil() time.Time {
	if m == nil {
		return time.Time{}
	}
	var t time.Time
	for i, l := range m.parts {
		if v := l.ValidUntil(); i == 0 || v.Before(t) {
			t = v
		}
	}
	return t
}

// Valid reports whether every part is valid (see Lease.Valid).
func (m *MultiLease) Valid() bool {
	if m == nil {
		return false
	}
	for _, l := range m.parts {
		if !l.Valid() {
			return false
		}
	}
	return true
}

// each runs f on every part concurrently and returns their errors joined,
// each prefixed with its part's name: with all set, once every part's call
// has returned; otherwise as soon as the answer is known, when every part
// has succeeded or at the first failure (the calls still running go on in
// the background, tracked by Client.Close).
func (m *MultiLease) each(ctx context.Context, all bool, f func(ctx context.Context, i int, l *Lease) error) error {
	var errs []error
	jans := make([]*janitor, len(m.parts))
	for i, l := range m.parts {
		jans[i] = l.c.jan
	}
	fanOut(ctx, jans, 0, false, func(ctx context.Context, i int) (struct{}, error) {
		return struct{}{}, f(ctx, i, m.parts[i])
	}, func(i int, _ struct{}, err error) bool {
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", m.parts[i].Name(), err))
		}
		return len(errs) > 0 && !all
	}, nil)
	return errors.Join(errs...)
}

// Unlock releases every part, concurrently (one round trip), with each
// part's Lease.Unlock semantics, and cancels the lease's Context once any
// part is released. It blocks until every part's release has returned
// (each bounded by ctx), so that when it returns each part is released,
// ended, or, if the server refused its release, held as before. It
// returns nil when all were released (or for a nil lease), and otherwise
// the parts' errors joined. A part whose release had an unknown outcome
// is ended at once and released in the background, as Lease.Unlock does;
// one whose release was refused (NOPERM, nil ctx) is held as before, and
// Unlock may be called again.
func (m *MultiLease) Unlock(ctx context.Context) error {
	if m == nil {
		return nil
	}
	if ctx == nil {
		return ErrNilContext
	}
	var (
		mu       sync.Mutex
		returned = map[*Lease]bool{}
	)
	err := m.each(ctx, true, func(ctx context.Context, _ int, l *Lease) error {
		err := l.Unlock(ctx)
		mu.Lock()
		returned[l] = true
		mu.Unlock()
		if l.over() {
			m.loss.cancel(context.Canceled)
		}
		return err
	})
	// A release still on its way when ctx ended has an unknown outcome:
	// its part ends now and is released in the background.
	mu.Lock()
	defer mu.Unlock()
	for _, l := range m.parts {
		if !returned[l] {
			l.drop()
			m.loss.cancel(context.Canceled)
		}
	}
	return err
}

// Extend extends every part to ttl, concurrently (one round trip), with
// each part's Lease.Extend semantics; it returns nil when every part was
// extended, or the first failure as soon as it is known.
func (m *MultiLease) Extend(ctx context.Context, ttl time.Duration) error {
	if m == nil {
		return fmt.Errorf("%w: nil lease", ErrExpired)
	}
	if ctx == nil {
		return ErrNilContext
	}
	return m.each(ctx, false, func(ctx context.Context, _ int, l *Lease) error { return l.Extend(ctx, ttl) })
}

// TTL returns the shortest remaining time of the parts as the servers
// count it, asking every part concurrently (one round trip); it fails as
// Lease.TTL does for any part, as soon as one fails.
func (m *MultiLease) TTL(ctx context.Context) (time.Duration, error) {
	if m == nil {
		return 0, fmt.Errorf("%w: nil lease", ErrExpired)
	}
	if ctx == nil {
		return 0, ErrNilContext
	}
	ttls := make([]time.Duration, len(m.parts))
	if err := m.each(ctx, false, func(ctx context.Context, i int, l *Lease) (err error) {
		ttls[i], err = l.TTL(ctx)
		return err
	}); err != nil {
		return 0, err
	}
	return slices.Min(ttls), nil
}

// Lost returns a channel closed when any part is lost (see Lease.Lost).
// Unlock does not close it. For a nil lease it returns a closed channel.
func (m *MultiLease) Lost() <-chan struct{} { return m.signal().lost }

// Context returns a context cancelled when any part is lost (cause: that
// part's loss) or released by Unlock.
func (m *MultiLease) Context() context.Context { return m.signal().ctx }

// Err returns why a part was lost, or nil.
func (m *MultiLease) Err() error { return m.signal().loss() }

// signal returns the lease's loss signal, first making, once, the parts'
// deadline timers (see Lease.Lost), so that a lease that is not
// auto-refreshed is lost at its validity deadline too. A nil lease's
// signal is lost already.
func (m *MultiLease) signal() *groupLoss {
	if m == nil {
		return lostGroup()
	}
	m.armed.Do(func() { armParts(m.parts) })
	return &m.loss
}

// armParts arms the loss signalling of every lease in parts.
func armParts(parts []*Lease) {
	for _, l := range parts {
		l.mu.Lock()
		l.armLocked()
		l.mu.Unlock()
	}
}
