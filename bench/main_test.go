package bench_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/redislog"
)

// TestMain fails the run when a scenario or a client leaves a goroutine
// behind once every test, benchmark and cleanup has finished. go-redis's
// log messages (a pooled connection that failed to dial) are counted, not
// shown: one summary line at the end.
func TestMain(m *testing.M) {
	logs := new(redislog.Counter)
	redis.SetLogger(logs)
	leak.VerifyTestMain(logs.After(m),
		// rueidis v1.0.79's cluster client leaves a 5 s sleep behind after
		// a slot refresh, even after Close (upstream; it ends by itself).
		leak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		// valkey-go v1.0.79, a fork of rueidis, does the same.
		leak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
	)
}
