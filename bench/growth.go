package bench

import (
	"context"
	"errors"
	"fmt"
)

// heldWhileTimed is the shape of the growth rows: before the timer starts
// it takes n leases with hold (64 at a time), then times r.n runs of op,
// and releases the leases after the timer stopped; one that was lost
// meanwhile fails the run. what names the lock in errors.
func heldWhileTimed(ctx context.Context, r *run, what string, n int, hold func(ctx context.Context) (Unlocker, error), op func(ctx context.Context) error) (err error) {
	held := make([]Unlocker, n)
	defer func() {
		bg := context.WithoutCancel(ctx)
		for i, u := range held {
			if u == nil {
				continue
			}
			if uerr := u.Unlock(bg); uerr != nil {
				err = errors.Join(err, fmt.Errorf("held lease %d of %s: %w (was it lost during the run?)", i, what, uerr))
				return
			}
		}
	}()
	if err := forEach(n, func(i int) error {
		u, err := hold(ctx)
		if err != nil {
			return fmt.Errorf("held lease %d of %s: %w", i, what, err)
		}
		held[i] = u
		return nil
	}); err != nil {
		return err
	}
	r.resetTimer()
	for range r.n {
		if err := op(ctx); err != nil {
			return fmt.Errorf("%s with %d held: %w", what, n, err)
		}
	}
	r.stopTimer()
	return nil
}
