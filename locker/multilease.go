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
// is. Its methods are safe for concurrent use.
type MultiLease struct {
	parts []*Lease

	once   sync.Once
	lost   chan struct{}
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	err    error // the first part's loss
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
	for _, l := range parts {
		l.refresh = refresh
		c.startRefresh(l)
	}
	return &MultiLease{parts: parts}, nil
}

// Parts returns the mutex lease of each name, in the MultiLock's name
// order. Use them to read each name's Fence; release the MultiLease, not
// the parts.
func (m *MultiLease) Parts() []*Lease { return append([]*Lease(nil), m.parts...) }

// Fence returns the largest fence of the parts (the parts of one Cluster
// slot share one fence; each part's own is Parts()[i].Fence()).
func (m *MultiLease) Fence() int64 {
	var f int64
	for _, l := range m.parts {
		f = max(f, l.Fence())
	}
	return f
}

// ValidUntil returns the earliest validity deadline of the parts.
func (m *MultiLease) ValidUntil() time.Time {
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
	for _, l := range m.parts {
		if !l.Valid() {
			return false
		}
	}
	return true
}

// each runs f on every part (with its index) concurrently and joins the
// errors, each prefixed with its part's name.
func (m *MultiLease) each(f func(i int, l *Lease) error) error {
	errs := make([]error, len(m.parts))
	var wg sync.WaitGroup
	for i, l := range m.parts {
		wg.Go(func() {
			if err := f(i, l); err != nil {
				errs[i] = fmt.Errorf("%q: %w", l.Name(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Unlock releases every part, concurrently (one round trip), with each
// part's Lease.Unlock semantics; it returns their errors joined (nil when
// all were released). A part whose release had an unknown outcome is
// ended at once and released in the background, as Lease.Unlock does.
func (m *MultiLease) Unlock(ctx context.Context) error {
	return m.each(func(_ int, l *Lease) error { return l.Unlock(ctx) })
}

// Extend extends every part to ttl, concurrently (one round trip), with
// each part's Lease.Extend semantics; it returns their errors joined.
func (m *MultiLease) Extend(ctx context.Context, ttl time.Duration) error {
	return m.each(func(_ int, l *Lease) error { return l.Extend(ctx, ttl) })
}

// TTL returns the shortest remaining time of the parts as the servers
// count it, asking every part concurrently (one round trip); it fails as
// Lease.TTL does for any part.
func (m *MultiLease) TTL(ctx context.Context) (time.Duration, error) {
	ttls := make([]time.Duration, len(m.parts))
	if err := m.each(func(i int, l *Lease) (err error) {
		ttls[i], err = l.TTL(ctx)
		return err
	}); err != nil {
		return 0, err
	}
	return slices.Min(ttls), nil
}

// Lost returns a channel closed when any part is lost (see Lease.Lost).
// Unlock does not close it.
func (m *MultiLease) Lost() <-chan struct{} {
	m.arm()
	return m.lost
}

// Context returns a context cancelled when any part is lost (cause: that
// part's loss) or released.
func (m *MultiLease) Context() context.Context {
	m.arm()
	return m.ctx
}

// Err returns why a part was lost, or nil.
func (m *MultiLease) Err() error {
	for _, l := range m.parts {
		if err := l.Err(); err != nil {
			return fmt.Errorf("%q: %w", l.Name(), err)
		}
	}
	return nil
}

// arm starts, once, a goroutine per part that ends with the part (lost or
// released) and reports the first loss.
func (m *MultiLease) arm() {
	m.once.Do(func() {
		m.lost = make(chan struct{})
		m.ctx, m.cancel = context.WithCancelCause(context.Background())
		for _, l := range m.parts {
			done := l.Context().Done() // ends when the part is lost or released
			go func() {
				<-done
				err := l.Err() // set before the part's context is cancelled
				if err == nil {
					m.cancel(context.Cause(l.Context())) // released
					return
				}
				m.mu.Lock()
				if m.err == nil {
					m.err = fmt.Errorf("%q: %w", l.Name(), err)
					close(m.lost) // Lost first, as a Lease does
					m.cancel(err)
				}
				m.mu.Unlock()
			}()
		}
	})
}
