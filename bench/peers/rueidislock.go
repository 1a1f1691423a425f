package peers

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis/rueidislock"

	"github.com/scriptlock/scriptlock/bench"
)

// Rueidislock returns a bench.Locker over l. Lock is WithContext and
// TryLock is TryWithContext; the returned Unlocker calls the CancelFunc
// they return, which releases the lock and waits for the release. A
// rueidislock lock lives only as long as the ctx it was taken with: when
// the contended scenario cancels its waiters at the n-th grant, that last
// grant is released early too, which changes none of the figures.
//
// Lock bounds each wait at RueidislockRewait: rueidislock v1.0.79 can miss
// the wake-up it waits for (see RueidislockRewait), and would then wait
// until its context ends although the name is free. When the bound passes
// without a grant, Lock ends that wait and calls WithContext again, and
// counts it (bench.Rewaiter: the rows report rewaits).
func Rueidislock(l rueidislock.Locker) bench.Locker {
	return &rueidislockLocker{l: l}
}

// RueidislockRewait bounds one WithContext wait of the rueidislock rows.
//
// rueidislock's WithContext tries the lock's key and, when the try fails,
// waits for a client-side-cache invalidation of that key (or for its
// context); nothing else ends the wait. A try that fails with an error
// other than "held by others" (its script call timed out: rueidislock
// gives each try TryNextAfter, 20 ms, which a busy server or a loaded
// machine exceeds) deletes its own key again, if its late call set it,
// from its own connection. With NoLoopTracking the server sends no
// invalidation for a client's own writes, so when no other client touches
// the name the wait never ends; with the default tracking it ends unless
// the late call never ran. bench/RESULTS.md has a reproduction.
const RueidislockRewait = time.Second

type rueidislockLocker struct {
	l       rueidislock.Locker
	rewaits atomic.Int64
}

var _ bench.Rewaiter = (*rueidislockLocker)(nil)

func (r *rueidislockLocker) Rewaits() int64 { return r.rewaits.Load() }

func (r *rueidislockLocker) Lock(ctx context.Context, key string) (bench.Unlocker, error) {
	lctx, unlock, err := r.withContext(ctx, r.l, key)
	if err != nil {
		return nil, err
	}
	return &rueidislockLease{ctx: lctx, cancel: unlock}, nil
}

// withContext calls l.WithContext(ctx, key), ending a wait that lasts
// RueidislockRewait and calling it again, until the lock is granted or
// ctx is done. The lock lives on a context of its own, derived from ctx,
// which the returned CancelFunc ends after releasing the lock.
func (r *rueidislockLocker) withContext(ctx context.Context, l rueidislock.Locker, key string) (context.Context, context.CancelFunc, error) {
	for {
		wctx, end := context.WithCancel(ctx)
		bound := time.AfterFunc(RueidislockRewait, end)
		lctx, unlock, err := l.WithContext(wctx, key)
		if bound.Stop() {
			if err != nil {
				end()
				return nil, nil, err
			}
			return lctx, func() { unlock(); end() }, nil
		}
		// The bound passed: the wait was ended (or the grant came just
		// then, and its context is ending with the wait's).
		if err == nil {
			unlock()
		}
		end()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		r.rewaits.Add(1)
	}
}

func (r *rueidislockLocker) TryLock(ctx context.Context, key string) (bench.Unlocker, bool, error) {
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
	return &rueidislockRefresher{rueidislockLocker: rueidislockLocker{l: l}, refresh: refresh}
}

type rueidislockRefresher struct {
	rueidislockLocker
	refresh rueidislock.Locker
}

var _ bench.AutoRefresher = (*rueidislockRefresher)(nil)

// LockAutoRefresh bounds each wait as Lock does.
func (r *rueidislockRefresher) LockAutoRefresh(ctx context.Context, key string) (bench.RefreshedLease, error) {
	lctx, unlock, err := r.withContext(ctx, r.refresh, key)
	if err != nil {
		return nil, err
	}
	return &rueidislockLease{ctx: lctx, cancel: unlock}, nil
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
