package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/locker"
)

// RefreshTTL is the lease TTL of the op=refresh scenario. It is short so
// that renewals come often (every RefreshInterval, 333 ms) and a short
// benchtime sees whole rounds of them, yet long enough that 10,000 leases
// on a busy 2-core machine keep up (30,000 renewals/s).
const RefreshTTL = time.Second

// RefreshInterval is the renewal period of the op=refresh scenario:
// scriptlock renews every locker.RefreshFraction (a third) of the TTL, and
// the peer rows are configured to renew as often, so every row sends the
// server the same number of renewals.
var RefreshInterval = time.Duration(math.Round(float64(RefreshTTL) * locker.RefreshFraction))

// refreshSmoke* shrink op=refresh for a smoke run: few leases, and a
// window of 4 rounds, longer than RefreshTTL, so a lease that was not
// renewed has expired by its end.
const (
	refreshSmokeLeases = 50
	refreshSmokeRounds = 4
)

// refreshSetUp is added to the row budget of op=refresh, on top of its
// window: acquiring and releasing its leases.
const refreshSetUp = 30 * time.Second

// refreshWorkers acquire and release the leases of op=refresh.
const refreshWorkers = 64

// Refresh returns the scenario "op=refresh/leases=<leases>": the cost of
// keeping leases alive with the library's own auto-refresh. It acquires
// leases leases on distinct keys (RefreshTTL, renewed every
// RefreshInterval), then, timed, waits a window of n refresh rounds (n ×
// RefreshInterval) while the library renews them, and checks that every
// lease is still held at its end (one lost lease fails the run). b.N
// counts rounds, so ns/op is the window per round, RefreshInterval by
// construction and no cost; allocs/op and B/op are the whole process's
// per round (divide by leases for one renewal). The leases are acquired
// before and released after the timed window, and the keys the run wrote
// are deleted: a key that still has a TTL after release (a lock the
// release left behind) fails the run; keys without one (scriptlock's fence
// counters) are expected.
//
// It reports cmds/s (EVAL and EVALSHA calls per second of the window,
// counted by the server in INFO commandstats: each renewal of either
// library is one script call; about leases/RefreshInterval when the
// library keeps up), cpu-ms/s (user+system CPU of the whole benchmark
// process per second of the window, from getrusage: 1000 is one core; not
// reported outside unix) and cpu-ns/refresh (that CPU divided by the
// script calls). A smoke run uses 50 leases and 4 rounds, and then also
// requires at least one script call per lease.
//
// The Locker must implement AutoRefresher: scriptlock (Mutex with
// AutoRefresh) and rueidislock (which extends every lock while held) do.
// redsync and bsm/redislock have only a manual Extend/Refresh, so they are
// left out rather than measured on a renewal loop written here.
func Refresh(leases int) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=refresh/leases=%d", leases),
		smokeN: refreshSmokeRounds,
		extra:  func(n int) time.Duration { return refreshSetUp + time.Duration(n)*RefreshInterval },
		run: func(ctx context.Context, r *run) error {
			return refresh(ctx, r, leases, RefreshTTL)
		},
	}
}

// RefreshScale returns the scenario "op=refresh/leases=<leases>/ttl=<ttl>":
// Refresh with another lease TTL (renewed every third of it), for the
// growth row that holds many leases for a long window (scripts/bench.sh
// runs it once, 50,000 leases of 2 s for 90 rounds: a minute). The Locker
// must implement TTLAutoRefresher.
func RefreshScale(leases int, ttl time.Duration) Scenario {
	return Scenario{
		Name:   fmt.Sprintf("op=refresh/leases=%d/ttl=%v", leases, ttl),
		smokeN: refreshSmokeRounds,
		extra: func(n int) time.Duration {
			return refreshSetUp + time.Duration(n)*time.Duration(math.Round(float64(ttl)*locker.RefreshFraction))
		},
		run: func(ctx context.Context, r *run) error {
			return refresh(ctx, r, leases, ttl)
		},
	}
}

func refresh(ctx context.Context, r *run, leases int, ttl time.Duration) (err error) {
	lock := func(ctx context.Context, key string) (RefreshedLease, error) {
		return nil, fmt.Errorf("%T does not implement AutoRefresher", r.l)
	}
	if ar, ok := r.l.(AutoRefresher); ok && ttl == RefreshTTL {
		lock = ar.LockAutoRefresh
	} else if ar, ok := r.l.(TTLAutoRefresher); ok {
		lock = func(ctx context.Context, key string) (RefreshedLease, error) {
			return ar.LockAutoRefreshTTL(ctx, key, ttl)
		}
	} else if ttl != RefreshTTL {
		return fmt.Errorf("%T does not implement TTLAutoRefresher", r.l)
	}
	interval := time.Duration(math.Round(float64(ttl) * locker.RefreshFraction))
	if r.smoke() {
		leases = min(leases, refreshSmokeLeases)
	}
	srv := goredis.NewClient(&goredis.Options{Addr: r.addr}) // INFO and clean-up
	defer srv.Close()
	keys := make([]string, leases)
	for i := range keys {
		keys[i] = r.key("refresh", i)
	}

	held := make([]RefreshedLease, leases)
	defer func() {
		bg := context.WithoutCancel(ctx)
		err = errors.Join(err, releaseAll(bg, held), deleteKeys(bg, srv, r.prefix+"refresh:"))
	}()
	if err := forEach(leases, func(i int) error {
		l, err := lock(ctx, keys[i])
		if err != nil {
			return fmt.Errorf("lock %q: %w", keys[i], err)
		}
		held[i] = l
		return nil
	}); err != nil {
		return err
	}

	before, err := scriptCalls(ctx, srv)
	if err != nil {
		return err
	}
	cpu0, cpuOK := processCPU()
	r.resetTimer()
	start := time.Now()
	window := time.NewTimer(time.Duration(r.n) * interval)
	defer window.Stop()
	select {
	case <-window.C:
	case <-ctx.Done():
		return fmt.Errorf("window of %d rounds: %w", r.n, ctx.Err())
	}
	elapsed := time.Since(start)
	cpu1, _ := processCPU()
	r.stopTimer()
	after, err := scriptCalls(ctx, srv)
	if err != nil {
		return err
	}

	var lost []error
	for i, l := range held {
		if err := l.Err(); err != nil {
			lost = append(lost, fmt.Errorf("%q: %w", keys[i], err))
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%d of %d leases lost after %v of auto-refresh, first: %w", len(lost), leases, elapsed, lost[0])
	}
	calls := after - before
	if elapsed >= ttl && calls < int64(leases) {
		return fmt.Errorf("the server counted %d script calls for %d leases in %v, longer than their TTL", calls, leases, elapsed)
	}
	r.report(float64(calls)/elapsed.Seconds(), "cmds/s")
	if cpuOK {
		cpu := cpu1 - cpu0
		r.report(float64(cpu.Milliseconds())/elapsed.Seconds(), "cpu-ms/s")
		if calls > 0 {
			r.report(float64(cpu.Nanoseconds())/float64(calls), "cpu-ns/refresh")
		}
	}
	return nil
}

// forEach calls f(0) … f(n-1) on refreshWorkers goroutines and returns the
// first error; after one, the workers stop taking new indexes.
func forEach(n int, f func(i int) error) error {
	var (
		next atomic.Int64
		cr   crew // no context of its own: f's calls use their caller's
	)
	for range min(refreshWorkers, n) {
		cr.wg.Go(func() {
			for !cr.failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					cr.fail(err)
				}
			}
		})
	}
	cr.wg.Wait()
	return cr.err
}

// releaseAll unlocks every lease that was acquired (nil entries are
// skipped), all of them even after an error, and returns the first error.
func releaseAll(ctx context.Context, held []RefreshedLease) error {
	var (
		errOnce sync.Once
		first   error
	)
	_ = forEach(len(held), func(i int) error {
		if held[i] == nil {
			return nil
		}
		if err := held[i].Unlock(ctx); err != nil {
			errOnce.Do(func() { first = fmt.Errorf("unlock: %w", err) })
		}
		return nil
	})
	return first
}

// scriptCalls returns the server's count of script calls so far (EVAL,
// EVALSHA and their read-only forms, and FCALL), from INFO commandstats.
// Commands a script runs are counted under their own names, not here.
func scriptCalls(ctx context.Context, srv *goredis.Client) (int64, error) {
	info, err := srv.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO commandstats: %w", err)
	}
	var n int64
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch name {
		case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
		default:
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("INFO commandstats: cannot read %q", line)
		}
		n += c
	}
	return n, nil
}

// deleteKeys deletes every key whose name contains sub (whatever a library
// puts around the key it was given) and fails when one of them still had a
// TTL: a lock left behind by a release. Keys without a TTL (counters) are
// expected.
func deleteKeys(ctx context.Context, srv *goredis.Client, sub string) error {
	match := "*" + globEscape(sub) + "*"
	var leftover []string
	iter := srv.Scan(ctx, 0, match, 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		pttls := make([]*goredis.DurationCmd, len(batch))
		if _, err := srv.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, k := range batch {
				pttls[i] = p.PTTL(ctx, k)
			}
			p.Del(ctx, batch...)
			return nil
		}); err != nil {
			return fmt.Errorf("deleting %d keys matching %q: %w", len(batch), match, err)
		}
		for i, c := range pttls {
			if c.Val() >= 0 {
				leftover = append(leftover, batch[i])
			}
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("SCAN MATCH %q: %w", match, err)
	}
	if err := flush(); err != nil {
		return err
	}
	if len(leftover) > 0 {
		return fmt.Errorf("%d keys with a TTL left after release, such as %q", len(leftover), leftover[0])
	}
	return nil
}

// globEscape escapes the glob metacharacters of SCAN MATCH in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
