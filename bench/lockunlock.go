package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// LockUnlock returns the scenario "op=lock-unlock/clients=<clients>":
// clients goroutines, each on its own key, share n Lock+Unlock pairs (a
// shared counter hands them out, so the count is exact whatever the
// scheduling). With one client it runs on the benchmark's goroutine.
func LockUnlock(clients int) Scenario {
	return Scenario{
		Name:   "op=lock-unlock/clients=" + strconv.Itoa(clients),
		smokeN: 2 * clients,
		run: func(ctx context.Context, r *run) error {
			return lockUnlock(ctx, r, clients)
		},
	}
}

func lockUnlock(ctx context.Context, r *run, clients int) error {
	keys := make([]string, clients)
	for i := range keys {
		keys[i] = r.key("lock-unlock", i)
	}
	if clients == 1 {
		r.resetTimer()
		for range r.n {
			if err := lockUnlockOnce(ctx, r.l, keys[0]); err != nil {
				return err
			}
		}
		r.stopTimer()
		return nil
	}

	// The crew has no context of its own: the calls run under ctx as the
	// single client's do.
	var (
		next atomic.Int64
		cr   crew
	)
	n := int64(r.n)
	r.resetTimer()
	start := time.Now()
	for _, key := range keys {
		cr.wg.Go(func() {
			for !cr.failed.Load() && next.Add(1) <= n {
				if err := lockUnlockOnce(ctx, r.l, key); err != nil {
					cr.fail(err)
					return
				}
			}
		})
	}
	_, err := cr.wait(r, start)
	return err
}

// lockUnlockOnce acquires key, which nobody else uses, and releases it.
func lockUnlockOnce(ctx context.Context, l Locker, key string) error {
	u, err := l.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("lock %q, which nobody else uses: %w", key, err)
	}
	if err := u.Unlock(ctx); err != nil {
		return fmt.Errorf("unlock %q: %w", key, err)
	}
	return nil
}
