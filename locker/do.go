package locker

import (
	"context"
	"time"
)

// unlockTimeout bounds the Unlock that Do runs after fn, which is not
// bounded by the caller's context (it may have ended during fn).
const unlockTimeout = 5 * time.Second

// Do acquires the lock (blocking, as Lock does), runs fn with a context
// that is cancelled when ctx ends or the lease is lost, releases the lock,
// and returns fn's error. It blocks until all three are done. If acquiring
// fails, fn is not run and that error is returned. A release error is
// returned only when fn succeeded: it never masks fn's error. Use
// MutexOptions.AutoRefresh when fn may outlast the TTL; otherwise fn's
// context is cancelled at the lease's validity deadline.
func (m *Mutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := m.c.check(ctx); err != nil {
		return err
	}
	return do(ctx, func(ctx context.Context) (*Lease, error) { return m.Lock(ctx) }, fn)
}

// Do takes the write lock (blocking, as Lock does), runs fn, releases it and
// returns fn's error, exactly as Mutex.Do does.
func (rw *RWMutex) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := rw.c.check(ctx); err != nil {
		return err
	}
	return do(ctx, rw.Lock, fn)
}

// RDo takes a read lock (blocking, as RLock does), runs fn, releases it and
// returns fn's error, as Mutex.Do does for the mutex.
func (rw *RWMutex) RDo(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := rw.c.check(ctx); err != nil {
		return err
	}
	return do(ctx, rw.RLock, fn)
}

// do is Do for any lock type.
func do(ctx context.Context, acquire func(context.Context) (*Lease, error), fn func(context.Context) error) error {
	l, err := acquire(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	lctx := l.Context()
	stop := context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
	ferr := fn(fctx)
	stop()
	cancel(nil)
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer ucancel()
	uerr := l.Unlock(uctx)
	if ferr != nil {
		return ferr
	}
	return uerr
}
