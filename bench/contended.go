package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Contended returns the scenario
// "op=contended/clients=<clients>/hold=<hold>": clients goroutines loop on
// one key (Lock, hold it for hold, Unlock) until n grants were made in
// total. The goroutine that gets the n-th grant cancels the others' waits,
// so the run ends right after that grant's hold with every goroutine gone.
//
// It reports wait-p50-ns, wait-p99-ns and wait-max-ns (from the Lock call
// to the grant, over the n grants plus the waits still open at the end,
// counted with the time they had waited so far), handoffs/s (n divided by
// the wall time), fairness (fewest grants of one goroutine divided by the
// most), pending (waits still open at the end, including any that the
// library granted after the n-th grant; those release at once and are not
// counted as grants) and giveups (times a Lock gave up by itself and was
// called again), and hold-p50-us, the median hold as measured (the
// requested hold plus how late the holder's goroutine woke: see holdFor).
// A Locker that implements HandOverCounter also gets
// handovers/op: the fraction of grants that a release handed to a waiter
// (FIFO, or a waiter past its starvation threshold) rather than one that
// took a free lock. Two goroutines holding the key at once fail the run.
// The hold is written with "us" for µs (hold=100us).
func Contended(clients int, hold time.Duration) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=contended/clients=%d/hold=%s", clients, strings.ReplaceAll(hold.String(), "µs", "us")),
		smokeN: 2 * clients,
		run: func(ctx context.Context, r *run) error {
			return contended(ctx, r, clients, hold)
		},
	}
}

func contended(ctx context.Context, r *run, clients int, hold time.Duration) error {
	key := r.key("contended", 0)
	n := int64(r.n)
	var (
		waits    = make([]time.Duration, n) // indexed by grant number - 1
		held     = make([]time.Duration, n) // each grant's hold as measured, by grant number - 1
		grants   = make([]int64, clients)
		granted  atomic.Int64
		holders  atomic.Int32
		giveups  atomic.Int64
		endAt    atomic.Int64 // ns from start to the n-th grant
		mu       sync.Mutex   // guards censored
		censored []time.Duration
	)
	cr, waitCtx := newCrew(ctx)
	hc, counts := r.l.(HandOverCounter)
	var handed0 int64
	if counts {
		handed0 = hc.HandOvers()
	}
	r.resetTimer()
	start := time.Now()
	// open records a wait still open when the run ended.
	open := func(t0 time.Time) {
		w := time.Duration(endAt.Load()) - t0.Sub(start)
		mu.Lock()
		censored = append(censored, max(w, 0))
		mu.Unlock()
	}
	for i := range clients {
		cr.wg.Go(func() {
			for waitCtx.Err() == nil {
				t0 := time.Now()
				u, err := r.l.Lock(waitCtx, key)
				for errors.Is(err, ErrGaveUp) && waitCtx.Err() == nil {
					giveups.Add(1)
					u, err = r.l.Lock(waitCtx, key)
				}
				if err != nil {
					if waitCtx.Err() != nil && endAt.Load() != 0 {
						open(t0)
						return
					}
					cr.fail(fmt.Errorf("lock %q: %w", key, err))
					return
				}
				w := time.Since(t0)
				k := granted.Add(1)
				if k > n { // granted after the run's end: release at once
					open(t0)
					cr.unlock(ctx, u, key, "")
					return
				}
				waits[k-1] = w
				grants[i]++
				if k == n {
					endAt.Store(int64(time.Since(start)))
					cr.stop()
				}
				if h := holders.Add(1); h != 1 {
					cr.fail(fmt.Errorf("exclusion broken: %d goroutines hold %q at once", h, key))
				}
				h0 := time.Now()
				if r.smoke() {
					time.Sleep(hold) // a smoke run checks, it does not time: leave the cores to the tests beside it
				} else {
					holdFor(hold)
				}
				held[k-1] = time.Since(h0)
				holders.Add(-1)
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
	if g := granted.Load(); g < n {
		return fmt.Errorf("run ended after %d of %d grants: %w", g, n, context.Cause(ctx))
	}

	all := append(waits, censored...)
	slices.Sort(all)
	r.report(float64(percentile(all, 0.50)), "wait-p50-ns")
	r.report(float64(percentile(all, 0.99)), "wait-p99-ns")
	r.report(float64(all[len(all)-1]), "wait-max-ns")
	slices.Sort(held)
	r.report(float64(percentile(held, 0.50))/1e3, "hold-p50-us")
	r.report(float64(n)/elapsed.Seconds(), "handoffs/s")
	r.report(fairness(grants), "fairness")
	r.report(float64(len(censored)), "pending")
	r.report(float64(giveups.Load()), "giveups")
	if counts {
		r.report(float64(hc.HandOvers()-handed0)/float64(n), "handovers/op")
	}
	return nil
}

// HandOverCounter is implemented by a Locker that can tell how many of its
// Lock calls so far were granted by a hand-over: a release gave the lock
// straight to the waiting caller. The contended scenario reports it.
type HandOverCounter interface {
	HandOvers() int64
}

// percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted,
// which must not be empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// fairness returns the fewest grants divided by the most: 1 when every
// goroutine got as many grants, 0 when one got none.
func fairness(grants []int64) float64 {
	lo, hi := slices.Min(grants), slices.Max(grants)
	if hi == 0 {
		return 0
	}
	return float64(lo) / float64(hi)
}

// holdFor keeps the contended lock for d, as a holder's work would: it
// spins (yielding the processor) rather than sleeps. An idle Go process
// wakes from a sleep only as its poller's millisecond timeout allows, so a
// sleeping holder oversleeps by how idle its library leaves the process:
// on the 2-core benchmark machine a 100 µs time.Sleep took about 1.1 ms in
// up to half of the holds, and a 1 ms one 1,227 µs at the median under
// scriptlock (whose waiters sleep until woken) against 1,092 µs under
// bsm/redislock (whose waiters poll): rows with sleeping holders measure
// the timer as much as the locks.
// Only one goroutine holds the lock at a time, so the spin takes one core
// at most; a smoke run (a test, not a benchmark) sleeps instead, lest it
// take that core from the tests that run beside it.
func holdFor(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
		runtime.Gosched()
	}
}
