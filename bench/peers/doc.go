// Package peers runs scriptlock's shared benchmark scenarios (package
// github.com/scriptlock/scriptlock/bench) on peer libraries, so their rows
// sit next to scriptlock's in one benchstat table:
//
//   - lib=redsync: github.com/go-redsync/redsync/v4 on its go-redis v9 pool,
//     one pool (a single Redis), default waiting: 32 tries, 50-250 ms
//     random delay;
//   - lib=redislock: github.com/bsm/redislock on go-redis v9. Its default is
//     not to wait at all (NoRetry); the row uses LinearBackoff(100ms), the
//     interval of the package's own retry example, without its 3-try limit;
//   - lib=rueidislock: github.com/redis/rueidis/rueidislock with
//     KeyMajority 1 (one key, a single Redis), default waiting: woken by
//     client-side-cache invalidations.
//
// Both rueidislock rows bound each WithContext wait at RueidislockRewait
// and call it again when the bound passes (the rows report rewaits):
// rueidislock can miss the wake-up it waits for and then waits until its
// context ends, although the lock is free (see RueidislockRewait and
// bench/RESULTS.md). The guard costs a timer and a context per Lock.
//
// Each has a tuned row (lib=<name>-tuned) that turns the library's own
// waiting knob: redsync WithRetryDelay(1ms) and WithTries(MaxInt32),
// redislock LinearBackoff(1ms), rueidislock NoLoopTracking. Tuned rows of
// redsync and redislock run only the contended scenario, the only one the
// knob changes. Every lock uses bench.TTL; go-redis clients come from
// bench.NewGoRedis, the same settings as scriptlock's rows.
//
// No peer has a read-write lock, so none runs op=rw. Of the three, only
// rueidislock keeps a held lock alive by itself (one goroutine per lock
// extends it every ExtendInterval); both its rows run op=refresh on a
// second rueidislock Locker with KeyValidity bench.RefreshTTL and
// ExtendInterval bench.RefreshInterval, a third of the TTL as scriptlock
// renews (rueidislock's default is half). With its default tracking
// (lib=rueidislock) every extension's own key invalidation comes back to
// the client and triggers another extension at once, so held locks are
// extended back to back, as fast as the round trips allow, rather than
// once per interval; NoLoopTracking (lib=rueidislock-tuned) removes that
// loop. redsync and bsm/redislock have only a manual
// Extend/Refresh and are left out of op=refresh rather than run on a
// renewal loop written here.
//
// This is its own module so that scriptlock's users never download the
// peers. scripts/bench.sh runs its benchmark binary interleaved with the
// main module's; see bench/RESULTS.md.
package peers
