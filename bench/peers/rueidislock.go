package peers

import (
	"context"
	"errors"

	"github.com/redis/rueidis/rueidislock"

	"github.com/scriptlock/scriptlock/bench"
)

// Rueidislock returns a bench.Locker over l. Lock is WithContext and
// TryLock is TryWithContext; the returned Unlocker calls the CancelFunc
// they return, which releases the lock and waits for the release. A
// rueidislock lock lives only as long as the ctx it was taken with: when
// the contended scenario cancels its waiters at the n-th grant, that last
// grant is released early too, which changes none of the figures.
func Rueidislock(l rueidislock.Locker) bench.Locker {
	return rueidislockLocker{l: l}
}

type rueidislockLocker struct{ l rueidislock.Locker }

func (r rueidislockLocker) Lock(ctx context.Context, key string) (bench.Unlocker, error) {
	_, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return cancelUnlocker(cancel), nil
}

func (r rueidislockLocker) TryLock(ctx context.Context, key string) (bench.Unlocker, bool, error) {
	_, cancel, err := r.l.TryWithContext(ctx, key)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return cancelUnlocker(cancel), true, nil
}

// cancelUnlocker releases a rueidislock lock; a func is pointer-shaped, so
// it is no allocation as a bench.Unlocker. rueidislock reports no release
// error.
type cancelUnlocker context.CancelFunc

func (u cancelUnlocker) Unlock(context.Context) error {
	u()
	return nil
}

// RueidislockAutoRefresh is Rueidislock(l) that also implements
// bench.AutoRefresher on refresh, which must be built with KeyValidity
// bench.RefreshTTL and ExtendInterval bench.RefreshInterval (see
// NewRueidislockRefresh): rueidislock extends every lock it holds by
// itself, one goroutine and timer per lock, until the lock's context ends.
// LockAutoRefresh is WithContext; the lease's Err is the cause of the
// lock's context once it ended (a failed extension cancels it).
func RueidislockAutoRefresh(l, refresh rueidislock.Locker) bench.Locker {
	return rueidislockRefresher{rueidislockLocker{l: l}, refresh}
}

type rueidislockRefresher struct {
	rueidislockLocker
	refresh rueidislock.Locker
}

var _ bench.AutoRefresher = rueidislockRefresher{}

func (r rueidislockRefresher) LockAutoRefresh(ctx context.Context, key string) (bench.RefreshedLease, error) {
	lctx, cancel, err := r.refresh.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return &rueidislockLease{ctx: lctx, cancel: cancel}, nil
}

// rueidislockLease is a lock held by rueidislock: Unlock calls its
// CancelFunc (release, and wait for it); Err reports its context's end.
type rueidislockLease struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *rueidislockLease) Unlock(context.Context) error {
	l.cancel()
	return nil
}

func (l *rueidislockLease) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}
