package peers_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/bench"
	"github.com/scriptlock/scriptlock/bench/peers"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/redislog"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// TestMain fails the run when a scenario or a client leaves a goroutine
// behind once every test, benchmark and cleanup has finished. go-redis's
// log messages are counted, not shown: one summary line at the end.
func TestMain(m *testing.M) {
	logs := new(redislog.Counter)
	redis.SetLogger(logs)
	leak.VerifyTestMain(logs.After(m))
}

// BenchmarkLock runs every peer row against the redis-server named by
// SCRIPTLOCK_REDIS_ADDR (scripts/bench.sh sets it, so both binaries share
// one server), or one it starts.
func BenchmarkLock(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.Benchmark(b, srv.Addr, peers.Targets())
}

// TestSmoke runs every peer row (BenchmarkLock's and BenchmarkLockElect's)
// once with a tiny iteration count; it asserts no timing. Without
// SCRIPTLOCK_REDIS_ADDR it starts its own redis-server (and fails, naming
// the fix, when there is none).
func TestSmoke(t *testing.T) {
	srv := redisserver.StartStandalone(t)
	t.Run("Lock", func(t *testing.T) { bench.Smoke(t, srv.Addr, peers.Targets()) })
	t.Run("Elect", func(t *testing.T) { bench.Smoke(t, srv.Addr, peers.ElectTargets()) })
}

// BenchmarkLockElect runs the peers' election rows (peers.ElectTargets)
// against the redis-server named by SCRIPTLOCK_REDIS_ADDR, or one it
// starts.
func BenchmarkLockElect(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.Benchmark(b, srv.Addr, peers.ElectTargets())
}
