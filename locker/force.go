package locker

import (
	"context"
	"fmt"
	"strconv"
	"time"
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
// Mutex, RWMutex and Semaphore called name granted at or before asOf (a
// server time, such as LockState.ServerTime from an Inspect) and wakes
// their waiters; later holds, FIFO queues, fences and stored limits are
// kept. The owners are not told until their next refresh or call (Lost,
// ErrExpired). It blocks for two round trips and fails with ErrClosed,
// ErrNilContext, ErrInvalidName, ErrInvalidOption (a zero asOf), ctx's
// error, the Scripter's error or ErrUnexpectedReply; calling it again with
// the same asOf is harmless (docs/operations.md).
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
