package bench

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"
)

// RW returns the scenario "op=rw/clients=<clients>/reads=<readPct>pct":
// a read-mostly read-write lock. clients goroutines share one key and n
// iterations (goroutine i does every clients-th one, so each does n/clients
// of them, give or take one); each iteration is a read lock (RLock then
// Unlock) with probability readPct/100, otherwise a write lock (WLock then
// Unlock), drawn from a pseudo-random sequence seeded by the goroutine's
// index, so a given n always makes the same mix. While holding, a
// goroutine only yields once (runtime.Gosched), which gives another
// holder, were the lock broken, time to show; ns/op is the wall time per
// lock+unlock pair.
//
// It reports read-p50-ns, read-p99-ns, write-p50-ns and write-p99-ns (from
// the RLock or WLock call to the grant; write figures only when a write
// was made) and writes/s (write grants per second of wall time).
// Exclusion is checked in-process: a writer that sees another holder, or a
// reader that sees a writer, fails the run.
//
// The Locker must implement RWLocker. Only scriptlock and the in-process
// sync.RWMutex run it: redsync, bsm/redislock and rueidislock have no
// read-write lock, and a mutex standing in for one would measure
// something else.
func RW(clients, readPct int) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=rw/clients=%d/reads=%dpct", clients, readPct),
		smokeN: 8 * clients,
		run: func(ctx context.Context, r *run) error {
			return rw(ctx, r, clients, readPct)
		},
	}
}

func rw(ctx context.Context, r *run, clients, readPct int) error {
	l, ok := r.l.(RWLocker)
	if !ok {
		return fmt.Errorf("%T does not implement RWLocker", r.l)
	}
	key := r.key("rw", 0)
	var readers, writers atomic.Int32 // holders inside the critical section
	cr, ctx := newCrew(ctx)
	reads := make([]latencies, clients)
	writes := make([]latencies, clients)
	rngs := make([]*rand.Rand, clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i), 0x5eed))
	}
	r.resetTimer()
	start := time.Now()
	for i := range clients {
		iters := r.n / clients
		if i < r.n%clients {
			iters++
		}
		rng, rd, wr := rngs[i], &reads[i], &writes[i]
		cr.wg.Go(func() {
			for range iters {
				if cr.failed.Load() {
					return
				}
				write := rng.IntN(100) >= readPct
				t0 := time.Now()
				var (
					u   Unlocker
					err error
				)
				if write {
					u, err = l.WLock(ctx, key)
				} else {
					u, err = l.RLock(ctx, key)
				}
				if err != nil {
					cr.fail(fmt.Errorf("lock %q (write %v): %w", key, write, err))
					return
				}
				if write {
					wr.add(time.Since(t0))
					w := writers.Add(1)
					runtime.Gosched()
					if rs := readers.Load(); w != 1 || rs != 0 {
						cr.fail(fmt.Errorf("exclusion broken: a writer of %q sees %d writers and %d readers", key, w, rs))
					}
					writers.Add(-1)
				} else {
					rd.add(time.Since(t0))
					readers.Add(1)
					runtime.Gosched()
					if w := writers.Load(); w != 0 {
						cr.fail(fmt.Errorf("exclusion broken: a reader of %q sees %d writers", key, w))
					}
					readers.Add(-1)
				}
				note := " (read)"
				if write {
					note = " (write)"
				}
				if !cr.unlock(ctx, u, key, note) {
					return
				}
			}
		})
	}
	elapsed, err := cr.wait(r, start)
	if err != nil {
		return err
	}

	var rd, wr latencies
	for i := range clients {
		rd.merge(&reads[i])
		wr.merge(&writes[i])
	}
	if r.smoke() && (rd.n == 0 || wr.n == 0) {
		return fmt.Errorf("%d reads and %d writes in %d iterations: the mix exercised one side only", rd.n, wr.n, r.n)
	}
	if rd.n > 0 {
		r.report(float64(rd.quantile(0.50)), "read-p50-ns")
		r.report(float64(rd.quantile(0.99)), "read-p99-ns")
	}
	if wr.n > 0 {
		r.report(float64(wr.quantile(0.50)), "write-p50-ns")
		r.report(float64(wr.quantile(0.99)), "write-p99-ns")
	}
	r.report(float64(wr.n)/elapsed.Seconds(), "writes/s")
	return nil
}

// latencies is a log-linear histogram of durations: exact below 64 ns,
// then 64 buckets per power of two, so a quantile is off by under 1%
// (bucket midpoints). Recording allocates nothing and the memory does not
// grow with the sample count, which for an in-process lock can be many
// millions. The zero value is empty.
type latencies struct {
	counts [latBuckets]uint64
	n      uint64
}

const (
	latSub     = 6                       // log2 of the buckets per power of two
	latBuckets = (64 - latSub) << latSub // enough for every non-negative int64
	latExact   = 1 << latSub             // below this a bucket is one ns
	latMask    = 1<<latSub - 1           // the mantissa bits of an index
)

func (h *latencies) add(d time.Duration) {
	h.counts[latIndex(uint64(max(d, 0)))]++
	h.n++
}

func (h *latencies) merge(o *latencies) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the nearest-rank p-quantile (0 < p <= 1), the midpoint
// of its bucket; 0 when h is empty.
func (h *latencies) quantile(p float64) time.Duration {
	rank := uint64(math.Ceil(float64(h.n) * p))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if c > 0 && seen >= rank {
			return latValue(i)
		}
	}
	return 0
}

// latIndex returns v's bucket: v itself below latExact, otherwise the
// bucket of v's leading latSub+1 bits and its power of two.
func latIndex(v uint64) int {
	if v < latExact {
		return int(v)
	}
	s := bits.Len64(v) - latSub - 1 // bits below the leading latSub+1
	return (s+1)<<latSub + int(v>>s) - latExact
}

// latValue returns the midpoint of bucket i.
func latValue(i int) time.Duration {
	if i < latExact {
		return time.Duration(i)
	}
	s := i>>latSub - 1
	lo := uint64(i&latMask+latExact) << s
	return time.Duration(lo + (uint64(1)<<s)/2)
}
