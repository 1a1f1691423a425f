package locker

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

var (
	scriptForce    = mustScript("force")
	scriptSemForce = mustScript("sem_force")
)

// Forced is what ForceRelease dropped.
type Forced struct {
	// MutexHolds counts the holds of the Mutex's owner that were dropped
	// (0: the Mutex was free, or granted after asOf).
	MutexHolds int
	// RWHolds counts the live read and write holds of the RWMutex that were
	// dropped.
	RWHolds int
	// SemaphoreHolds counts the live holds of the Semaphore that were
	// dropped (their permits are free again).
	SemaphoreHolds int
}

// ForceRelease is an operator's escape hatch: it ends the holds of the
// Mutex, the RWMutex and the Semaphore called name that were granted at or
// before asOf, a server time such as LockState.ServerTime from an Inspect
// of the lock, and wakes the waiters, which then take the lock (or the
// permits) as after a release (FIFO waiters in their order). Holds
// granted after asOf are kept, so a re-sent or late call (a client's
// network retry) never ends a grant the operator did not see. The FIFO queue, waiting writers' intents and the last write
// fence are kept, so fences keep increasing; so are the semaphore's
// waiters and stored limit.
//
// The owners are not told: a lease with auto-refresh reports Lost at its
// next renewal (within a third of its TTL), and any lease's Extend, TTL or
// Unlock returns ErrExpired. Until then an owner that does not check may
// still act as the holder while a new owner holds the lock: use it only for
// an owner that is gone or stuck, and let the resource check fences.
//
// It blocks for two round trips, one for the mutex and the read-write
// lock and one for the semaphore (each retrying a passing server state
// while ctx lives). It fails with ErrClosed, ErrNilContext, ErrInvalidName,
// ErrInvalidOption (a zero asOf), ctx's error, the Scripter's error or
// ErrUnexpectedReply (when the semaphore's call fails, with the counts of
// the first call); after an error whose outcome is unknown it may have run,
// and calling it again with the same asOf is harmless.
func (c *Client) ForceRelease(ctx context.Context, name string, asOf time.Time) (Forced, error) {
	if err := c.check(ctx); err != nil {
		return Forced{}, err
	}
	if err := validName(name); err != nil {
		return Forced{}, err
	}
	if asOf.IsZero() {
		return Forced{}, fmt.Errorf("%w: ForceRelease needs asOf, a server time such as LockState.ServerTime", ErrInvalidOption)
	}
	if err := ctx.Err(); err != nil {
		return Forced{}, fmt.Errorf("locker: force release %q: %w", name, err)
	}
	k := c.Key(name)
	keys := []string{k + ":rw", k + ":rwr", k}
	args := []string{strconv.FormatInt(asOf.UnixMicro(), 10), k + ":wake"}
	r, _, err := c.retryTransient(ctx, scriptForce, func() (any, error) {
		return c.run(ctx, scriptForce, keys, args)
	})
	if err != nil {
		return Forced{}, fmt.Errorf("locker: force release %q: %w", name, err)
	}
	n, err := replyInts(scriptForce, r)
	if err != nil {
		return Forced{}, err
	}
	f := Forced{MutexHolds: int(n[0]), RWHolds: int(n[1])}
	skeys := []string{k + ":sem", k + ":semz"}
	r, _, err = c.retryTransient(ctx, scriptSemForce, func() (any, error) {
		return c.run(ctx, scriptSemForce, skeys, args)
	})
	if err != nil {
		return f, fmt.Errorf("locker: force release %q: semaphore: %w", name, err)
	}
	sem, err := replyInt(scriptSemForce, r)
	if err != nil {
		return f, err
	}
	f.SemaphoreHolds = int(sem)
	return f, nil
}
