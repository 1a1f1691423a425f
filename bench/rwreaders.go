package bench

import (
	"context"
	"fmt"
	"strconv"
)

// RWReaders returns the scenario "op=rw-readers/readers=<readers>": how a
// read-write lock's cost grows with the readers holding it. Before the
// timer starts, the other Locker takes readers read locks on one key (64
// at a time); then, timed, one goroutine does n RLock+Unlock pairs on that
// key, each call meeting every held reader. The held read locks are
// released after the timer stops; one that was lost meanwhile (TTL passed)
// fails the run. A smoke run holds 20 readers.
//
// The server's script time per pair (script-us/op, with scripts/op = 2) is
// the figure: it is constant in readers when no call scans them.
//
// The Locker must implement RWLocker (scriptlock and sync.RWMutex; only
// scriptlock's row makes sense, since the in-process lock has no server).
func RWReaders(readers int) Scenario {
	return Scenario{
		Name:   "op=rw-readers/readers=" + strconv.Itoa(readers),
		smokeN: 4,
		run: func(ctx context.Context, r *run) error {
			return rwReaders(ctx, r, readers)
		},
	}
}

func rwReaders(ctx context.Context, r *run, readers int) error {
	l, other, err := both[RWLocker](r)
	if err != nil {
		return err
	}
	if r.smoke() {
		readers = min(readers, 20)
	}
	key := r.key("rw-readers", 0)
	return heldWhileTimed(ctx, r, fmt.Sprintf("read-write lock %q", key), readers,
		func(ctx context.Context) (Unlocker, error) { return other.RLock(ctx, key) },
		func(ctx context.Context) error {
			u, err := l.RLock(ctx, key)
			if err != nil {
				return fmt.Errorf("rlock: %w", err)
			}
			return u.Unlock(ctx)
		})
}
