package peers_test

import (
	"testing"

	"github.com/scriptlock/scriptlock/bench"
	"github.com/scriptlock/scriptlock/bench/peers"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// BenchmarkPaired runs bench.Paired per driver: scriptlock's uncontended
// lock-unlock interleaved with the raw reference's on the same driver and
// the peer on that driver (bsm/redislock on go-redis, rueidislock on
// rueidis), against one redis-server it starts or the one named by
// SCRIPTLOCK_REDIS_ADDR. Its xraw and xredislock figures are the
// uncontended performance targets (see cmd/benchtargets).
func BenchmarkPaired(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	main, others := bench.Targets(), peers.Targets()
	peer := map[string]string{"goredis": "redislock", "rueidis": "rueidislock"}
	for _, d := range bench.Drivers {
		ts := []bench.Target{find(b, main, "scriptlock", d), find(b, main, "raw", d)}
		if p, ok := peer[d]; ok {
			ts = append(ts, find(b, others, p, d))
		}
		b.Run("driver="+d, func(b *testing.B) { bench.Paired(b, srv.Addr, ts) })
	}
}

// find returns the target of lib on driver d in ts.
func find(tb testing.TB, ts []bench.Target, lib, d string) bench.Target {
	for _, t := range ts {
		if t.Lib == lib && t.Driver == d {
			return t
		}
	}
	tb.Fatalf("no target lib=%s driver=%s", lib, d)
	return bench.Target{}
}
