package peers

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-redsync/redsync/v4"

	"github.com/scriptlock/scriptlock/bench"
)

// Redsync returns a bench.Locker over rs: every acquisition makes a new
// redsync Mutex with opts (a redsync Mutex holds the state of one
// acquisition, so it cannot be shared). Lock is LockContext; when redsync
// runs out of tries while ctx is live the error wraps bench.ErrGaveUp.
// TryLock is TryLockContext.
func Redsync(rs *redsync.Redsync, opts ...redsync.Option) bench.Locker {
	return redsyncLocker{rs: rs, opts: opts}
}

type redsyncLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
}

func (r redsyncLocker) Lock(ctx context.Context, key string) (bench.Unlocker, error) {
	m := r.rs.NewMutex(key, r.opts...)
	if err := m.LockContext(ctx); err != nil {
		if ctx.Err() == nil && redsyncTaken(err) {
			return nil, fmt.Errorf("%w: %w", bench.ErrGaveUp, err)
		}
		return nil, err
	}
	return redsyncUnlocker{m}, nil
}

func (r redsyncLocker) TryLock(ctx context.Context, key string) (bench.Unlocker, bool, error) {
	m := r.rs.NewMutex(key, r.opts...)
	if err := m.TryLockContext(ctx); err != nil {
		if redsyncTaken(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return redsyncUnlocker{m}, true, nil
}

// redsyncTaken reports whether err says the lock is held by someone else.
func redsyncTaken(err error) bool {
	var taken *redsync.ErrTaken
	return errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken)
}

// redsyncUnlocker is pointer-shaped: no allocation as a bench.Unlocker.
type redsyncUnlocker struct{ m *redsync.Mutex }

func (u redsyncUnlocker) Unlock(ctx context.Context) error {
	ok, err := u.m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("redsync: %q: lock not held", u.m.Name())
	}
	return nil
}
