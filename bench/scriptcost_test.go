package bench_test

import (
	"testing"

	"github.com/scriptlock/scriptlock/bench"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// BenchmarkScriptCost measures the server's time per call of the commands
// of an uncontended Lock and Unlock, scriptlock's scripts and the raw
// reference's, from INFO commandstats (bench.ScriptCost), against one
// redis-server it starts or the one named by SCRIPTLOCK_REDIS_ADDR, which
// must be idle.
func BenchmarkScriptCost(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.ScriptCost(b, srv.Addr)
}
