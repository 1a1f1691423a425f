package peers

import (
	"math"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/scriptlock/scriptlock/bench"
)

// Tuned waiting knobs (see the package doc).
const (
	// TunedRetryDelay is the fixed pause between attempts of the tuned
	// redsync and redislock rows.
	TunedRetryDelay = time.Millisecond
	// DefaultRedislockBackoff is the pause of the redislock row, from the
	// package's own retry example (redislock itself defaults to no retry).
	DefaultRedislockBackoff = 100 * time.Millisecond
)

// Targets returns the peers' rows, in order: redsync, redsync-tuned,
// redislock, redislock-tuned (all on go-redis), redsync on redigo (the
// uncontended rows only: redigo's peer for the 64-client performance target),
// rueidislock and rueidislock-tuned (on rueidis). None runs op=rw (no
// peer has a read-write lock); only rueidislock runs op=refresh (the
// others have no auto-refresh). valkey-go has no peer here: redsync
// reaches it through valkeycompat, which the module proxy does not serve.
func Targets() []bench.Target {
	contended := []bench.Scenario{bench.Contended(8, time.Millisecond)}
	return []bench.Target{
		{Lib: "redsync", Driver: "goredis", Scenarios: bench.Standard(), New: twice(func(tb testing.TB, addr string) bench.Locker {
			return Redsync(redsync.New(redsyncgoredis.NewPool(bench.NewGoRedis(tb, addr))), redsync.WithExpiry(bench.TTL))
		})},
		{Lib: "redsync-tuned", Driver: "goredis", Scenarios: contended, New: twice(func(tb testing.TB, addr string) bench.Locker {
			return Redsync(redsync.New(redsyncgoredis.NewPool(bench.NewGoRedis(tb, addr))), redsync.WithExpiry(bench.TTL),
				redsync.WithRetryDelay(TunedRetryDelay), redsync.WithTries(math.MaxInt32))
		})},
		{Lib: "redislock", Driver: "goredis", Scenarios: bench.Standard(), New: twice(func(tb testing.TB, addr string) bench.Locker {
			return Redislock(redislock.New(bench.NewGoRedis(tb, addr)), redislock.LinearBackoff(DefaultRedislockBackoff))
		})},
		{Lib: "redislock-tuned", Driver: "goredis", Scenarios: contended, New: twice(func(tb testing.TB, addr string) bench.Locker {
			return Redislock(redislock.New(bench.NewGoRedis(tb, addr)), redislock.LinearBackoff(TunedRetryDelay))
		})},
		{Lib: "redsync", Driver: "redigo", Scenarios: bench.Uncontended(), New: twice(func(tb testing.TB, addr string) bench.Locker {
			return Redsync(redsync.New(redsyncredigo.NewPool(bench.NewRedigoPool(tb, addr))), redsync.WithExpiry(bench.TTL))
		})},
		{Lib: "rueidislock", Driver: "rueidis", Scenarios: append(bench.Standard(), bench.Refresh(bench.RefreshLeases)), New: func(tb testing.TB, addr string) (bench.Locker, bench.Locker) {
			return RueidislockAutoRefresh(newRueidislock(tb, addr, false, bench.TTL), NewRueidislockRefresh(tb, addr, false)), Rueidislock(newRueidislock(tb, addr, false, bench.TTL))
		}},
		{Lib: "rueidislock-tuned", Driver: "rueidis", Scenarios: append(bench.Standard(), bench.Refresh(bench.RefreshLeases)), New: func(tb testing.TB, addr string) (bench.Locker, bench.Locker) {
			return RueidislockAutoRefresh(newRueidislock(tb, addr, true, bench.TTL), NewRueidislockRefresh(tb, addr, true)), Rueidislock(newRueidislock(tb, addr, true, bench.TTL))
		}},
	}
}

// ElectTargets returns the peers' election rows, each written the way the
// library's users write a leader election (bench.HandWritten): every
// candidate, on clients of its own, waits in the library's Lock at its
// documented default retry, and resigns with Unlock. redsync retries
// every 50 to 250 ms (its default); bsm/redislock at
// DefaultRedislockBackoff (it has no default retry); rueidislock's
// waiters are woken by a client-side-cache invalidation of the key.
func ElectTargets() []bench.Target {
	return []bench.Target{
		bench.ElectionTarget("redsync", "goredis", func(tb testing.TB, addr string, ttl time.Duration) bench.Candidate {
			c := bench.NewGoRedis(tb, addr)
			return bench.HandWritten(Redsync(redsync.New(redsyncgoredis.NewPool(c)), redsync.WithExpiry(ttl)), func() { _ = c.Close() })
		}),
		bench.ElectionTarget("redislock", "goredis", func(tb testing.TB, addr string, ttl time.Duration) bench.Candidate {
			c := bench.NewGoRedis(tb, addr)
			return bench.HandWritten(redislockTTL(redislock.New(c), redislock.LinearBackoff(DefaultRedislockBackoff), ttl), func() { _ = c.Close() })
		}),
		bench.ElectionTarget("rueidislock", "rueidis", func(tb testing.TB, addr string, ttl time.Duration) bench.Candidate {
			l := newRueidislock(tb, addr, false, ttl)
			// Its client first: Close alone can release a held lock on
			// the way out (once in six passes, a new leader 15 ms after
			// it), which a crash does not.
			return bench.HandWritten(Rueidislock(l), func() { l.Client().Close(); l.Close() })
		}),
	}
}

// twice builds the Locker under test and an independent second instance.
func twice(one func(tb testing.TB, addr string) bench.Locker) func(tb testing.TB, addr string) (bench.Locker, bench.Locker) {
	return func(tb testing.TB, addr string) (bench.Locker, bench.Locker) {
		return one(tb, addr), one(tb, addr)
	}
}

// newRueidislock returns a rueidislock Locker with KeyMajority 1 and
// KeyValidity validity, its client-side cache on (its default: waiters
// are woken by invalidations), closed by tb.Cleanup.
func newRueidislock(tb testing.TB, addr string, noLoop bool, validity time.Duration) rueidislock.Locker {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		KeyValidity:    validity,
		NoLoopTracking: noLoop,
	})
	if err != nil {
		tb.Fatalf("rueidislock: NewLocker(%s): %v", addr, err)
	}
	tb.Cleanup(l.Close)
	return l
}

// NewRueidislockRefresh returns the rueidislock Locker of the op=refresh
// scenario: as newRueidislock (KeyMajority 1, client-side cache on), with
// KeyValidity bench.RefreshTTL and ExtendInterval bench.RefreshInterval
// (its default would be half the validity), so it renews as often as
// scriptlock. Closed by tb.Cleanup.
func NewRueidislockRefresh(tb testing.TB, addr string, noLoop bool) rueidislock.Locker {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		KeyValidity:    bench.RefreshTTL,
		ExtendInterval: bench.RefreshInterval,
		NoLoopTracking: noLoop,
	})
	if err != nil {
		tb.Fatalf("rueidislock: NewLocker(%s): %v", addr, err)
	}
	tb.Cleanup(l.Close)
	return l
}
