package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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

	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	n := int64(r.n)
	r.resetTimer()
	for _, key := range keys {
		wg.Go(func() {
			for !failed.Load() && next.Add(1) <= n {
				if err := lockUnlockOnce(ctx, r.l, key); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	r.stopTimer()
	return first
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
