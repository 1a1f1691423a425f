package bench

import (
	"context"
	"fmt"
)

// TryLockHeld returns the scenario "op=trylock-held": a second instance of
// the library (playing another process) holds one key, and the benchmark
// calls TryLock on it n times; every call must say no. It measures the
// cost of saying no. The holder acquires before and releases after the
// timed part.
func TryLockHeld() Scenario {
	return Scenario{
		Name:   "op=trylock-held",
		smokeN: 2,
		run:    tryLockHeld,
	}
}

func tryLockHeld(ctx context.Context, r *run) (err error) {
	key := r.key("trylock-held", 0)
	h, err := r.other.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("holder: lock %q: %w", key, err)
	}
	defer func() {
		if uerr := h.Unlock(context.WithoutCancel(ctx)); uerr != nil && err == nil {
			err = fmt.Errorf("holder: unlock %q: %w", key, uerr)
		}
	}()
	r.resetTimer()
	for range r.n {
		u, ok, err := r.l.TryLock(ctx, key)
		if err != nil {
			return fmt.Errorf("trylock %q: %w", key, err)
		}
		if ok {
			_ = u.Unlock(ctx)
			return fmt.Errorf("trylock %q: acquired a key another owner holds", key)
		}
	}
	r.stopTimer()
	return nil
}
