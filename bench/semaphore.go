package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// SemLocker is implemented by a Locker whose library has a counting
// semaphore; the op=semaphore scenario needs it. Acquire takes n of the
// permits permits of the semaphore on key, waiting until they are free or
// ctx is done; every caller of one key passes the same permits.
type SemLocker interface {
	Acquire(ctx context.Context, key string, permits, n int) (Unlocker, error)
}

// Semaphore returns the scenario
// "op=semaphore/clients=<clients>/permits=<permits>/hold=<hold>": clients
// goroutines share n acquisitions of one permit each from one semaphore
// of permits permits on one key, each holding it for hold (0: released at
// once). With one client it measures an uncontended Acquire+Unlock.
// Exclusion is checked in-process: more than permits holders at once fails
// the run. It reports wait-p50-ns and wait-p99-ns (from Acquire to the
// grant) and grants/s; with the server's figures (scriptlock), scripts/op
// is the script calls per grant (each Acquire's tries, refused or not,
// and its Unlock) and script-us/op their server time.
//
// The Locker must implement SemLocker: scriptlock, and the in-process
// reference (a buffered channel per key, lib=syncmutex). No Go peer has a
// semaphore.
func Semaphore(clients, permits int, hold time.Duration) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=semaphore/clients=%d/permits=%d/hold=%v", clients, permits, hold),
		smokeN: 4 * clients,
		run: func(ctx context.Context, r *run) error {
			return semaphore(ctx, r, clients, permits, hold)
		},
	}
}

func semaphore(ctx context.Context, r *run, clients, permits int, hold time.Duration) error {
	l, ok := r.l.(SemLocker)
	if !ok {
		return fmt.Errorf("%T does not implement SemLocker", r.l)
	}
	key := r.key("semaphore", clients)
	var next, inside atomic.Int64
	cr, ctx := newCrew(ctx)
	waits := make([]latencies, clients)
	n := int64(r.n)
	r.resetTimer()
	start := time.Now()
	for i := range clients {
		w := &waits[i]
		cr.wg.Go(func() {
			for !cr.failed.Load() && next.Add(1) <= n {
				t0 := time.Now()
				u, err := l.Acquire(ctx, key, permits, 1)
				if err != nil {
					cr.fail(fmt.Errorf("acquire %q: %w", key, err))
					return
				}
				w.add(time.Since(t0))
				if in := inside.Add(1); int(in) > permits {
					cr.fail(fmt.Errorf("semaphore broken: %d holders of %q with %d permits", in, key, permits))
				}
				if hold > 0 {
					time.Sleep(hold) // several hold at once: spinning would take every core (see holdFor)
				}
				inside.Add(-1)
				if !cr.unlock(ctx, u, key, "") {
					return
				}
			}
		})
	}
	elapsed, err := cr.wait(r, start)
	if err != nil {
		return err
	}
	var all latencies
	for i := range waits {
		all.merge(&waits[i])
	}
	r.report(float64(all.quantile(0.50)), "wait-p50-ns")
	r.report(float64(all.quantile(0.99)), "wait-p99-ns")
	r.report(float64(r.n)/elapsed.Seconds(), "grants/s")
	return nil
}

// chanSemaphores is the in-process semaphore reference: one buffered
// channel per key.
type chanSemaphores struct {
	sems sync.Map // key -> chan struct{}
}

func (s *chanSemaphores) Acquire(ctx context.Context, key string, permits, n int) (Unlocker, error) {
	v, ok := s.sems.Load(key)
	if !ok {
		v, _ = s.sems.LoadOrStore(key, make(chan struct{}, permits))
	}
	ch := v.(chan struct{})
	for i := range n {
		select {
		case ch <- struct{}{}:
		case <-ctx.Done():
			for range i {
				<-ch
			}
			return nil, ctx.Err()
		}
	}
	return chanUnlocker{ch: ch, n: n}, nil
}

type chanUnlocker struct {
	ch chan struct{}
	n  int
}

func (u chanUnlocker) Unlock(context.Context) error {
	for range u.n {
		<-u.ch
	}
	return nil
}

// SemHolders returns the scenario "op=sem-holders/holders=<holders>": how a
// semaphore's cost grows with its holders. Before the timer starts, the
// other Locker takes holders permits of a semaphore of holders+1 permits,
// one lease each; then, timed, one goroutine does n Acquire(1)+Unlock pairs
// on it. The server's script time per pair (script-us/op) is the figure.
// A smoke run holds 20.
func SemHolders(holders int) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=sem-holders/holders=%d", holders),
		smokeN: 4,
		run: func(ctx context.Context, r *run) error {
			return semHolders(ctx, r, holders)
		},
	}
}

func semHolders(ctx context.Context, r *run, holders int) error {
	l, other, err := both[SemLocker](r)
	if err != nil {
		return err
	}
	if r.smoke() {
		holders = min(holders, 20)
	}
	key := r.key("sem-holders", holders)
	return heldWhileTimed(ctx, r, fmt.Sprintf("semaphore %q", key), holders,
		func(ctx context.Context) (Unlocker, error) { return other.Acquire(ctx, key, holders+1, 1) },
		func(ctx context.Context) error {
			u, err := l.Acquire(ctx, key, holders+1, 1)
			if err != nil {
				return fmt.Errorf("acquire: %w", err)
			}
			return u.Unlock(ctx)
		})
}

// MultiLocker is implemented by a Locker whose library takes several keys
// as one lock; the op=multi scenario needs it.
type MultiLocker interface {
	MultiLock(ctx context.Context, keys []string) (Unlocker, error)
}

// Multi returns the scenario "op=multi/names=<names>": one goroutine takes
// and releases names keys as one lock, n times, uncontended (compare with
// op=lock-unlock/clients=1, one key).
func Multi(names int) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=multi/names=%d", names),
		smokeN: 4,
		run: func(ctx context.Context, r *run) error {
			l, ok := r.l.(MultiLocker)
			if !ok {
				return fmt.Errorf("%T does not implement MultiLocker", r.l)
			}
			keys := make([]string, names)
			for i := range keys {
				keys[i] = r.key("multi", i)
			}
			r.resetTimer()
			for range r.n {
				u, err := l.MultiLock(ctx, keys)
				if err != nil {
					return fmt.Errorf("multi-lock %q: %w", keys, err)
				}
				if err := u.Unlock(ctx); err != nil {
					return fmt.Errorf("unlock %q: %w", keys, err)
				}
			}
			r.stopTimer()
			return nil
		},
	}
}
