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
