package peers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"github.com/scriptlock/scriptlock/bench"
)

// Redislock returns a bench.Locker over c. Lock is Obtain with bench.TTL
// and retry, a stateless strategy such as redislock.LinearBackoff, shared
// by all calls; when redislock stops retrying while ctx is live (Obtain
// bounds its wait by the TTL when ctx has no deadline) the error wraps
// bench.ErrGaveUp. TryLock is Obtain with the default, NoRetry.
func Redislock(c *redislock.Client, retry redislock.RetryStrategy) bench.Locker {
	return redislockTTL(c, retry, bench.TTL)
}

// redislockTTL is Redislock with locks of ttl.
func redislockTTL(c *redislock.Client, retry redislock.RetryStrategy, ttl time.Duration) bench.Locker {
	return redislockLocker{c: c, ttl: ttl, opts: &redislock.Options{RetryStrategy: retry}}
}

type redislockLocker struct {
	c    *redislock.Client
	ttl  time.Duration
	opts *redislock.Options
}

func (r redislockLocker) Lock(ctx context.Context, key string) (bench.Unlocker, error) {
	l, err := r.c.Obtain(ctx, key, r.ttl, r.opts)
	if err != nil {
		if ctx.Err() == nil && (errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded)) {
			return nil, fmt.Errorf("%w: %w", bench.ErrGaveUp, err)
		}
		return nil, err
	}
	return redislockUnlocker{l}, nil
}

func (r redislockLocker) TryLock(ctx context.Context, key string) (bench.Unlocker, bool, error) {
	l, err := r.c.Obtain(ctx, key, r.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return redislockUnlocker{l}, true, nil
}

// redislockUnlocker is pointer-shaped: no allocation as a bench.Unlocker.
type redislockUnlocker struct{ l *redislock.Lock }

func (u redislockUnlocker) Unlock(ctx context.Context) error {
	return u.l.Release(ctx)
}
